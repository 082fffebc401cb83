"""The main job on the embedded local default, as a user would run it, one CLI after another.

`make demo` runs this: check the corpus, score the two controls (naive, integrator) and the
reference normaliser, then start the local stack (its SQLite state folder, the local gateway, the sandboxed worker),
buy a test team licence with a signed Stripe event, download the licensed corpus and verify
its pins, and gate two hosted CI runs: the reference normaliser (sets the baseline) and an
adapter handed over as a folder of its own that refuses everything (a regression: exit 2);
then the team's member keys, the dashboard (its page and the runs it shows), a check pack and
one paid check whose signed report is verified offline, and a backup of the running stack's
state restored into a new folder.
Every step is the public command; the script only strings them together. The stack keeps its state in ``.toolcall300/demo`` (emptied
first) and the team key goes to ``.toolcall300/demo/licence-key`` (mode 600; the key is never
echoed), so the dashboard can be visited afterwards with the demo's runs: ``KEEP=1`` (``make
demo KEEP=1``) leaves the stack running until Ctrl-C, else ``toolcall300 serve --state
.toolcall300/demo`` brings it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TOOL = str(BIN / "toolcall300")
STATE = ROOT / ".toolcall300" / "demo"
KEY_FILE = STATE / "licence-key"
# Adapter commands run inside the sandbox: names on its own PATH (`toolcall300`, `python3`), or
# the adapter's own files, handed over with the run and seen at /adapter (docs/local-sandbox.md).
REFUSE_ALL = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    print(json.dumps({'id': json.loads(line)['id'], 'call': None}), flush=True)\n"
)


def step(
    title: str, argv: list[str], *, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> str:
    """Run one public command, echo it and its output, and insist on its exit code."""
    shown = " ".join(shlex.quote(a) for a in argv).replace(str(BIN) + "/", "")
    print(f"\n$ {shown}    # {title}", flush=True)
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout
    if any(line.startswith("tc300_") for line in out.splitlines()):  # never echo a key
        out = "\n".join(
            line if not line.startswith("tc300_") else "(licence key hidden)"
            for line in out.splitlines()
        )
    sys.stdout.write(out if out.endswith("\n") or not out else out + "\n")
    if done.returncode not in ok:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"demo: step failed ({title}): exit {done.returncode}")
    print(f"  (exit {done.returncode})", flush=True)
    return done.stdout


def start_stack() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [TOOL, "serve", "--port", "0", "--state", str(STATE)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        print(line, end="", flush=True)
        if "local stack at " in line:
            for pipe in (proc.stdout, proc.stderr):  # keep draining: a full pipe would block it
                if pipe is not None:
                    threading.Thread(target=pipe.read, daemon=True).start()
            return proc, line.split("local stack at ", 1)[1].strip()
    proc.kill()
    raise SystemExit(
        f"demo: the local stack did not start: {proc.stderr.read() if proc.stderr else ''}"
    )


def stop_stack(proc: subprocess.Popen[str]) -> None:
    """Ctrl-C, as a user stops it (the stack ends its runs and removes its scratch)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def main() -> int:
    shutil.rmtree(STATE, ignore_errors=True)  # each demo starts from nothing
    step(
        "re-run every integrity check on the corpus",
        [TOOL, "generate", "--check-only", "--out", "corpus_private"],
    )
    corpus = "corpus_private/toolcall300.jsonl"
    step(
        "the naive control (C1): parse and pass on",
        [TOOL, "score", "--corpus", corpus, "--adapter", "naive"],
    )
    step(
        "the integrator control (C2): what an SDK's documentation gets",
        [TOOL, "score", "--corpus", corpus, "--adapter", "integrator"],
    )
    step(
        "the reference normaliser (in-sample!)",
        [TOOL, "score", "--corpus", corpus, "--adapter", "toolshim", "--show-failures"],
    )

    print("\n$ toolcall300 serve --port 0    # the local stack, in the background", flush=True)
    proc, api = start_stack()
    keep = os.environ.get("KEEP", "") not in ("", "0")
    try:
        bought = step(
            "buy a test team licence",
            [TOOL, "dev", "purchase", "--api", api, "--tier", "team", "--team", "demo-team"],
        )
        key = bought.strip().splitlines()[-1]
        fd = os.open(KEY_FILE, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(key + "\n")
        print(f"  (the key is in {KEY_FILE.relative_to(ROOT)}, mode 600)", flush=True)
        env = {**os.environ, "TOOLCALL300_LICENCE": key}
        with tempfile.TemporaryDirectory() as tmp:
            step(
                "download the licensed corpus, verify every pin",
                [TOOL, "download", "--api", api, "--out", tmp],
                env=env,
            )
        shim = "toolcall300 toolshim --stream"
        step(
            "hosted CI run of the reference normaliser: sets the baseline",
            [
                TOOL,
                "ci",
                "--api",
                api,
                "--adapter-cmd",
                shim,
                "--ref",
                "main",
                "--commit",
                "a1b2c3d",
                "--wait",
            ],
            env=env,
        )
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "refuse-all"
            folder.mkdir()
            (folder / "adapter.py").write_text(REFUSE_ALL, encoding="utf-8")
            step(
                "hosted CI run of an adapter handed over as a folder, that refuses everything: "
                "a regression, exit 2",
                [
                    TOOL,
                    "ci",
                    "--api",
                    api,
                    "--adapter-files",
                    str(folder),
                    "--adapter-cmd",
                    "python3 /adapter/adapter.py",
                    "--ref",
                    "main",
                    "--commit",
                    "d4e5f60",
                    "--wait",
                ],
                env=env,
                ok=(2,),
            )
        step(
            "the team's purchase key issues a member key (shown once)",
            [TOOL, "team", "keys", "issue", "--api", api],
            env=env,
        )
        step(
            "and lists the team's member keys",
            [TOOL, "team", "keys", "list", "--api", api],
            env=env,
        )
        dashboard(api, key)
        paid_check(api)
        backup_and_restore()
        if keep:
            print(closing_words(api, keep=True), flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                proc.wait()
    finally:
        stop_stack(proc)
    if not keep:
        print(closing_words(api, keep=False))
    print("\ndemo: every step behaved as expected")
    return 0


def _http(method: str, url: str, *, key: str | None = None, body: bytes | None = None) -> bytes:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as answer:
        data: bytes = answer.read()
        return data


def dashboard(api: str, key: str) -> None:
    """The team dashboard: the page itself, and the data it shows (the team's runs), as the
    page's own calls fetch them with the key."""
    print(f"\n$ GET {api}/dashboard    # the team dashboard (open it in a browser)", flush=True)
    page = _http("GET", f"{api}/dashboard").decode("utf-8")
    assert "TOOLCALL-300 team dashboard" in page, "the dashboard page did not load"
    team = json.loads(_http("GET", f"{api}/licence", key=key))["team"]
    runs = json.loads(_http("GET", f"{api}/teams/{team}/runs", key=key))["runs"]
    print(f"  page served; the team's {len(runs)} runs, newest first:", flush=True)
    for run in runs:
        print(f"  {run['run_id']}  {run['status']:<7} {run.get('verdict')}", flush=True)
    assert [r.get("verdict") for r in runs] == ["regression", "baseline_set"], runs


def paid_check(api: str) -> None:
    """A check pack bought with a signed Stripe event, one paid POST /check whose answer is a
    signed report, and that report verified offline against the service's published keys."""
    bought = step(
        "buy a test check pack (500 paid argument checks)",
        [TOOL, "dev", "purchase", "--api", api, "--tier", "checks-500"],
    )
    pack_key = bought.strip().splitlines()[-1]
    request = {
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "arguments_text": '{"city": "Lisbon", "days": "3"}',
    }
    print(f"\n$ POST {api}/check    # one paid check: a signed report", flush=True)
    answer = json.loads(
        _http("POST", f"{api}/check", key=pack_key, body=json.dumps(request).encode())
    )
    print(f"  verdict {answer.get('verdict')}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        report, keys = Path(tmp) / "report.json", Path(tmp) / "jwks.json"
        report.write_text(json.dumps(answer), encoding="utf-8")
        keys.write_bytes(_http("GET", f"{api}/.well-known/jwks.json"))
        step(
            "verify the signed report offline, against the service's published keys",
            [TOOL, "check", "verify", str(report), "--jwks", str(keys)],
        )


def backup_and_restore() -> None:
    """A backup of the running stack's state, restored into a new folder and read back."""
    with tempfile.TemporaryDirectory() as tmp:
        copy, restored = Path(tmp) / "backup", Path(tmp) / "restored"
        step(
            "back up the stack's state while it serves",
            [TOOL, "admin", "--state", str(STATE), "backup", "--out", str(copy)],
        )
        step(
            "restore it into a new state folder",
            [TOOL, "admin", "--state", str(restored), "restore", "--from", str(copy)],
        )
        listed = step(
            "the restored folder holds the licences (never their keys)",
            [TOOL, "admin", "--state", str(restored), "licence", "list"],
        )
        assert '"team_name": "demo-team"' in listed, listed


def closing_words(api: str, *, keep: bool) -> str:
    """Where to see the demo's runs: the running stack's dashboard with ``KEEP=1``; otherwise
    (the stack has stopped, so its URL is dead) how to bring it back with the demo's data."""
    where = KEY_FILE.relative_to(ROOT)
    sign_in = f"sign in with the key in {where}: `cat {where}`"
    again = f"toolcall300 serve --state {STATE.relative_to(ROOT)}"
    if keep:
        return (
            f"\nDashboard: {api}/dashboard ({sign_in})\n"
            f"To look around later with the demo's data:\n  {again}\n"
            "The stack keeps running with the demo's data; Ctrl-C stops it."
        )
    return (
        "\nThe demo's stack has stopped. To see its runs on the dashboard:\n"
        f"  {again}   (or: make demo KEEP=1)\n"
        f"then open the URL it prints followed by /dashboard and {sign_in}"
    )


if __name__ == "__main__":
    sys.exit(main())
