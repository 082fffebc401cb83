"""``toolcall300 serve`` takes the operator's configuration over template.yaml's defaults
(docs/local-stack.md, "Configuration"): the report-key rotation of docs/argcheck-report.md,
run as a process over real HTTP on one state folder, and the line ``serve`` prints.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
from support.corpus import make_corpus

from toolcall300.argcheck.report import verify_report
from toolcall300.client import dev as devtools

ROOT = Path(__file__).resolve().parents[2]
CHECK = {
    "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "arguments": {"n": 1},
}


@contextmanager
def serve(state_dir: Path, corpus: Path, generations: str | None) -> Iterator[tuple[str, str]]:
    """One ``serve`` process with ``REPORT_KEY_GENERATIONS`` set (or unset): (url, its banner)."""
    env = {k: v for k, v in os.environ.items() if k != "REPORT_KEY_GENERATIONS"}
    if generations is not None:
        env["REPORT_KEY_GENERATIONS"] = generations
    command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0"]
    command += ["--state", str(state_dir), "--corpus", str(corpus)]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        banner = read_banner(proc, timeout_s=120)
        url = re.search(r"local stack at (http://\S+)", banner)
        assert url, f"toolcall300 serve did not start:\n{banner}"
        yield url.group(1), banner
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def read_banner(proc: subprocess.Popen[str], *, timeout_s: float) -> str:
    """``serve``'s output up to its last banner line (``Ctrl-C stops it``), or all of it if it
    exits first; a thread goes on draining so the server never blocks on a full pipe."""
    seen: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("Ctrl-C"):
                done.set()
        done.set()

    threading.Thread(target=read, daemon=True).start()
    done.wait(timeout_s)
    return "".join(seen)


def kids(url: str) -> list[str]:
    jwks = requests.get(f"{url}/.well-known/jwks.json", timeout=30)
    assert jwks.status_code == 200, jwks.text
    return [key["kid"] for key in jwks.json()["keys"]]


def signed_check(url: str) -> tuple[dict[str, Any], str]:
    """A paid check's signed report and the kid its signature names."""
    out, err = io.StringIO(), io.StringIO()
    args = devtools.parse_args(["purchase", "--api", url, "--tier", "checks-500"])
    assert devtools.run(args, out, err) == 0, err.getvalue()
    key = out.getvalue().splitlines()[-1]
    answer = requests.post(
        f"{url}/check", json=CHECK, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    report = answer.json()
    header = report["signature"].split(".")[0]
    kid = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    return report, kid


def test_the_operators_key_generations_win_over_the_template_and_a_rotation_withdraws_a_key(
    tmp_path: Path,
) -> None:
    make_corpus(tmp_path / "corpus")
    state, corpus = tmp_path / "state", tmp_path / "corpus"
    with serve(state, corpus, None) as (url, default_banner):
        (first,) = kids(url)  # template.yaml's default, "1"
    with serve(state, corpus, "2,1") as (url, rotating_banner):
        published = kids(url)
        assert len(published) == 2 and published[1] == first and published[0] != first
        report, kid = signed_check(url)
        assert kid == published[0]  # generation 2 signs
        jwks = requests.get(f"{url}/.well-known/jwks.json", timeout=30).json()
        assert verify_report(report, jwks)
    with serve(state, corpus, "2") as (url, withdrawn_banner):
        assert kids(url) == [published[0]]  # generation 1 withdrawn, 2 the same key
        jwks = requests.get(f"{url}/.well-known/jwks.json", timeout=30).json()
        assert verify_report(report, jwks)  # a report signed under 2 still verifies
    # serve says what it used, and where each value came from.
    assert "REPORT_KEY_GENERATIONS=1 (template.yaml)" in default_banner
    assert "REPORT_KEY_GENERATIONS=2,1 (yours)" in rotating_banner
    assert "REPORT_KEY_GENERATIONS=2 (yours)" in withdrawn_banner


def test_serve_refuses_a_generation_list_the_settings_refuse_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "REPORT_KEY_GENERATIONS": "1,1"}
    done = subprocess.run(
        [sys.executable, "-m", "toolcall300", "serve", "--port", "0", "--no-state"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("toolcall300 serve: REPORT_KEY_GENERATIONS: ")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
