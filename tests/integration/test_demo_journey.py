"""The README's first command, end to end: `make demo`'s journey script, run as a user runs it.

It starts its own local stack in a subprocess, buys a test licence, downloads and verifies the
corpus, and gates two hosted CI runs (a baseline, then a regression that must exit 2). The
script insists on every step's exit code itself; here we check it finished and said so.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_journey_runs_every_step() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "infra" / "demo_journey.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "demo: every step behaved as expected" in out
    assert "this run is now the baseline" in out
    assert "REGRESSION: exact fell" in out
    assert "in-sample" in out  # the honest-numbers note accompanies toolshim's score
    assert "TOOLCALL-300 adapter: integrator" in out  # both controls are shown (C1, C2)
    assert "tc300_" not in out  # the licence key is never echoed
    key_file = ROOT / ".toolcall300" / "demo" / "licence-key"  # but it is where the end says
    assert f"sign in with the key in {key_file.relative_to(ROOT)}" in out
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert key_file.read_text(encoding="utf-8").startswith("tc300_")
    assert "toolcall300 serve --state .toolcall300/demo" in out
    assert "LICENSE-COMMERCIAL.txt" in out  # download delivers the licence with the corpus
