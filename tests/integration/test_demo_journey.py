"""The README's first command, end to end: `make demo`'s journey script, run as a user runs it.

It starts its own local stack in a subprocess, buys a test licence, downloads and verifies the
corpus, gates two hosted CI runs (a baseline, then a regression that must exit 2), issues a
member key, loads the dashboard and its runs, makes a paid check verified offline, and backs up
and restores the state. The
script insists on every step's exit code itself; here we check it finished and said so, and,
run with ``KEEP=1``, that its stack stays up with the demo's data until Ctrl-C.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from toolcall300.client.http import request_json

ROOT = Path(__file__).resolve().parents[2]


def test_demo_journey_runs_every_step_and_keeps_its_stack_until_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "infra" / "demo_journey.py")],
        cwd=ROOT,
        env={**os.environ, "KEEP": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job is
    )
    assert proc.stdout is not None
    guard = threading.Timer(900, proc.kill)  # only against a hang: the output ends either way
    guard.start()
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "keeps running" in line:  # KEEP=1: the stack is up with the demo's data
            key = (ROOT / ".toolcall300" / "demo" / "licence-key").read_text().strip()
            api = re.search(r"Dashboard: (http://\S+)/dashboard", "".join(seen))
            assert api is not None
            _, _, licence = request_json(
                "GET", f"{api.group(1)}/licence", headers={"Authorization": f"Bearer {key}"}
            )
            assert licence["tier"] == "team"
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    returncode = proc.wait()
    guard.cancel()
    out = "".join(seen)
    assert returncode == 0, out[-3000:]
    assert "keeps running" in out
    assert "demo: every step behaved as expected" in out
    assert "this run is now the baseline" in out
    assert "REGRESSION: exact fell" in out
    assert "in-sample" in out  # the honest-numbers note accompanies toolshim's score
    assert "TOOLCALL-300 adapter: integrator" in out  # both controls are shown (C1, C2)
    assert "tc300_" not in out  # the licence key is never echoed (nor the member key)
    # the whole journey README promises: member keys, the dashboard, a paid check, a backup
    assert ": 1 member key\n" in out
    assert "page served; the team's 2 runs, newest first:" in out
    assert "verified: tool-argument/v1 " in out
    assert "restored " in out and '"team_name": "demo-team"' in out
    key_file = ROOT / ".toolcall300" / "demo" / "licence-key"  # but it is where the end says
    assert f"sign in with the key in {key_file.relative_to(ROOT)}" in out
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert key_file.read_text(encoding="utf-8").startswith("tc300_")
    assert "toolcall300 serve --state .toolcall300/demo" in out
    assert "LICENSE-COMMERCIAL.txt" in out  # download delivers the licence with the corpus
