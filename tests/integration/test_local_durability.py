"""``toolcall300 serve`` as a process: its state survives ``kill -9``, a run it was running ends
``failed`` with a reason and a callback, and Ctrl-C stops it at once leaving nothing behind.

Each test starts its own ``serve`` subprocess on a small corpus (tests/support/corpus.py) with
a state folder under pytest's temporary directory, and talks to it over real HTTP.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes
from support.corpus import make_corpus
from support.dashboard import wait_for_serve_url

from toolcall300.client import dev as devtools
from toolcall300.client.http import request_json
from toolcall300.service.local import worker

ROOT = Path(__file__).resolve().parents[2]
#: Reads its input and never answers, ignoring SIGTERM: only a kill ends it.
STUBBORN_TOKEN = "tc300-durable-" + os.urandom(4).hex()
STUBBORN = [
    "python3",
    "-c",
    f"import signal,sys,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n'{STUBBORN_TOKEN}'\n"
    "sys.stdin.read(); time.sleep(3600)\n",
]


class Serve:
    """One ``toolcall300 serve`` process."""

    def __init__(self, corpus: Path, state_dir: Path) -> None:
        command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0"]
        command += ["--corpus", str(corpus), "--state", str(state_dir)]
        self.proc = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.url = wait_for_serve_url(self.proc, timeout_s=120)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    make_corpus(tmp_path / "corpus")
    return tmp_path / "corpus"


@pytest.fixture()
def hook() -> Iterator[tuple[str, list[tuple[bytes, dict[str, str]]]]]:
    """A callback endpoint and what it is sent."""
    with fakes.callback_receiver() as received:
        yield received


def buy(url: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    args = devtools.parse_args(["purchase", "--api", url, "--tier", "team", "--team", "Durable"])
    assert devtools.run(args, out, err) == 0, err.getvalue()
    return out.getvalue().splitlines()[-1]


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def submit(url: str, key: str, command: list[str], **extra: Any) -> str:
    body = {"adapter_cmd": command, "ref": "main", "commit": "abc1234", **extra}
    _, _, answer = request_json(
        "POST", f"{url}/runs", headers=auth(key), body=json.dumps(body).encode()
    )
    return str(answer["run_id"])


def poll(check: Any, what: str, timeout: float = 120) -> Any:
    """Poll ``check()`` until it gives something truthy (the timeout only guards a hang)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


def run_doc(url: str, key: str, run_id: str) -> dict[str, Any]:
    return dict(request_json("GET", f"{url}/runs/{run_id}", headers=auth(key))[2])


def adapter_pids() -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read()
        except OSError:
            continue
        if argv.startswith(b"python3\0") and STUBBORN_TOKEN.encode() in argv:
            found.append(int(pid))  # the adapter itself (not its sandbox's wrappers)
    return found


def test_a_killed_stack_keeps_its_keys_and_fails_the_run_it_was_running(
    tmp_path: Path, corpus: Path, hook: tuple[str, list[tuple[bytes, dict[str, str]]]]
) -> None:
    hook_url, received = hook
    state_dir = tmp_path / "state"
    first = Serve(corpus, state_dir)
    try:
        rival = subprocess.run(  # a second stack on the same folder would corrupt it
            [sys.executable, "-m", "toolcall300", "serve", "--port", "0", "--state", str(state_dir)],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert rival.returncode == 1 and "in use by another" in rival.stderr
        assert rival.stderr.count("\n") == 1
        key = buy(first.url)
        run_id = submit(first.url, key, STUBBORN, callback_url=hook_url)
        poll(lambda: run_doc(first.url, key, run_id)["status"] == "running", "the run to start")
        poll(adapter_pids, "the adapter to start")
    finally:
        first.end()  # When the stack is killed (SIGKILL: no word to anyone)
    poll(lambda: not adapter_pids(), "the adapter to die with its stack")
    assert oct(state_dir.stat().st_mode & 0o777) == "0o700"
    assert oct((state_dir / "state.db").stat().st_mode & 0o777) == "0o600"
    second = Serve(corpus, state_dir)  # Then, restarted on the same state folder
    try:
        _, _, licence = request_json("GET", f"{second.url}/licence", headers=auth(key))
        assert licence["tier"] == "team"  # the key still works
        run = poll(
            lambda: (doc := run_doc(second.url, key, run_id))["status"] == "failed" and doc,
            "the run to be failed",
        )
        assert run["failure"]["reason"] == "infra_error"
        assert run["failure"]["detail"] == worker.STOPPED_DETAIL
        poll(lambda: received, "the callback")
        sent = json.loads(received[-1][0])
        assert (sent["run_id"], sent["status"]) == (run_id, "failed")
        # and the restored stack still scores runs
        echo = ["toolcall300", "toolshim", "--stream"]
        fresh = submit(second.url, key, echo)
        poll(lambda: run_doc(second.url, key, fresh)["status"] == "scored", "a new run scored")
    finally:
        second.end()


def test_ctrl_c_with_a_busy_worker_stops_at_once_and_leaves_nothing(
    tmp_path: Path, corpus: Path
) -> None:
    state_dir = tmp_path / "state"
    serve = Serve(corpus, state_dir)
    try:
        key = buy(serve.url)
        run_id = submit(serve.url, key, STUBBORN)
        pid = poll(adapter_pids, "the adapter to start")[0]
        scratch = Path(os.readlink(f"/proc/{pid}/cwd"))
        assert scratch.name.startswith("tc300-run-") and scratch.exists()
        started = time.monotonic()
        serve.proc.send_signal(signal.SIGINT)  # When the user presses Ctrl-C
        assert serve.proc.wait(timeout=120) == 0
        took = time.monotonic() - started
    finally:
        serve.end()
    print(f"serve stopped {took:.2f} s after Ctrl-C with a busy worker")  # the figure, not a bound
    assert adapter_pids() == []
    assert not scratch.exists() and not scratch.parent.exists()  # no scratch left behind
    again = Serve(corpus, state_dir)
    try:
        run = run_doc(again.url, key, run_id)  # the stop already ended it, with its reason
        assert (run["status"], run["failure"]["detail"]) == ("failed", worker.STOPPED_DETAIL)
    finally:
        again.end()


def test_serve_refuses_a_corpus_folder_that_is_not_one_in_one_line(tmp_path: Path) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0", "--no-state"]
        return subprocess.run(
            [*command, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
        )

    missing = serve("--corpus", str(tmp_path / "nonexistent"))
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1 and "no manifest.json" in missing.stderr
    bad = tmp_path / "bad"
    make_corpus(bad)
    with (bad / "toolcall300.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("\n")  # the pin no longer matches
    mismatch = serve("--corpus", str(bad))
    assert mismatch.returncode == 1
    assert mismatch.stderr.count("\n") == 1 and "sha256" in mismatch.stderr
    assert "Traceback" not in missing.stderr + mismatch.stderr


CLONED_RUN = """
import io, json, sys, time
from pathlib import Path
import toolcall300
from toolcall300.client import dev as devtools
from toolcall300.client.http import request_json
from toolcall300.service.local.stack import start_local_stack

clone = Path(sys.argv[1])
assert Path(toolcall300.__file__).resolve().is_relative_to(clone), toolcall300.__file__
stack = start_local_stack(port=0, root=clone)
try:
    out, err = io.StringIO(), io.StringIO()
    args = devtools.parse_args(["purchase", "--api", stack.url, "--tier", "team", "--team", "C"])
    assert devtools.run(args, out, err) == 0, err.getvalue()
    headers = {"Authorization": "Bearer " + out.getvalue().splitlines()[-1],
               "Content-Type": "application/json"}
    body = {"adapter_cmd": ["toolcall300", "toolshim", "--stream"], "ref": "main", "commit": "abc1234"}
    run_id = request_json("POST", stack.url + "/runs", headers=headers,
                          body=json.dumps(body).encode())[2]["run_id"]
    while (run := request_json("GET", f"{stack.url}/runs/{run_id}", headers=headers)[2])[
        "status"] not in ("scored", "failed"):
        time.sleep(0.2)
    print("RUN " + json.dumps(run), flush=True)
finally:
    stack.stop()
"""


def test_a_checkout_in_a_private_folder_runs_hosted_runs(tmp_path: Path) -> None:
    # Given the checkout copied into a folder only root may enter (as mktemp -d or a home makes)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    # Built artefacts stay behind: build/ holds the harness image's root filesystem, and links
    # are copied as links (following them copied a whole Debian tree, and more, into tmp).
    skip = shutil.ignore_patterns(
        ".git", ".venv", ".sam-venv", ".toolcall300", "*_cache", "node_modules", "__pycache__",
        "build", "dist", ".aws-sam",
    )  # fmt: skip
    clone = Path(shutil.copytree(ROOT, private / "checkout", ignore=skip, symlinks=True))
    private.chmod(0o700)
    env = {**os.environ, "PYTHONPATH": str(clone / "layers" / "toolcall300")}
    # When a hosted run of the reference normaliser runs on its local stack
    done = subprocess.run(
        [sys.executable, "-c", CLONED_RUN, str(clone)],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # The run's own line: the service's JSON log lines share stdout, and the worker's "run
    # finished" (with a status but no summary) may be written after the client read the run.
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RUN ")]
    run = json.loads(line.removeprefix("RUN "))
    # Then it is scored: the sandboxed uid 65534 ran the kit's copy, not the private checkout
    assert run["status"] == "scored", run.get("failure")
    assert run["summary"]["exact"] > 0
