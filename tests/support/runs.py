"""Test doubles for hosted runs: a small scored corpus and misbehaving adapter programs.

Shared by the runs, batch, harness, sandbox and worker tests (the in-memory stores they run
against are in ``support.stores``). Adapters are ``python3 -c`` programs (no files: the
sandbox's uid 65534 cannot read pytest's private temp directories).
"""

from __future__ import annotations

import errno
import http.server
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolcall300.client.http import request_json

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]


def small_corpus(n: int = 8) -> list[dict[str, Any]]:
    """``n`` cases: most carry their expected call as text (the echo adapter passes them),
    every fourth is unrecoverable (the echo adapter refuses it, correctly)."""
    cases = []
    for i in range(n):
        if i % 4 == 3:
            cases.append(
                {
                    "id": f"t-{i:03d}",
                    "category": "unrecoverable",
                    "text": "I could not decide which tool to call.",
                    "tools": TOOLS,
                    "expected_kind": "unrecoverable",
                    "expected": None,
                }
            )
            continue
        call = {"name": "get_weather", "arguments": {"city": f"City{i}", "days": i}}
        cases.append(
            {
                "id": f"t-{i:03d}",
                "category": "type_coercion",
                "text": json.dumps(call),
                "tools": TOOLS,
                "expected_kind": "value",
                "expected": call,
            }
        )
    return cases


def corpus_bytes(cases: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(c, sort_keys=True) + "\n" for c in cases).encode()


_LOOP = "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
_ECHO = (
    "    try:\n        call=json.loads(item['text'])\n    except ValueError:\n        call=None\n"
)
_ANSWER = "    print(json.dumps({'id':item['id'],'call':call}),flush=True)\n"


def py(code: str) -> list[str]:
    return ["python3", "-c", code]


#: Answers every case with the call its text holds (None when the text is not JSON).
ECHO = py(_LOOP + _ECHO + _ANSWER)
#: Like ECHO but refuses every case whose id ends in an even digit (a worse adapter).
WORSE = py(_LOOP + _ECHO + "    if int(item['id'][-1])%2==0: call=None\n" + _ANSWER)
#: Answers three cases, then crashes.
CRASH_HALF = py(
    "import json,sys\nn=0\nfor line in sys.stdin:\n    item=json.loads(line)\n"
    + _ECHO
    + _ANSWER
    + "    n+=1\n    if n==3:\n        sys.stderr.write('boom: adapter crashed\\n'); sys.exit(3)\n"
)
#: Reads everything and never answers.
HANG = py("import sys,time\nsys.stdin.read()\ntime.sleep(600)\n")
#: Writes without end (no newline).
FLOOD = py("import sys\nwhile True:\n    sys.stdout.write('x'*65536)\n")
#: Answers each case, plus an id it was never asked.
UNKNOWN_IDS = py(
    _LOOP
    + _ECHO
    # Before the real answer: after the last real answer the harness may stop reading, so a
    # stray line written after it would race; written before, every one is read and counted.
    + "    print(json.dumps({'id':'nobody-asked','call':None}),flush=True)\n"
    + _ANSWER
)
#: A non-JSON line before every answer.
NOISY = py(_LOOP + _ECHO + "    print('thinking...',flush=True)\n" + _ANSWER)
#: Only non-JSON.
NON_JSON = py("import sys\nfor line in sys.stdin:\n    print('not json at all',flush=True)\n")
#: Runs out of memory (the sandbox's RLIMIT_AS).
OOM = py("import sys\nsys.stdin.readline()\nx=bytearray(8*1024**3)\n")
#: Not a program at all.
MISSING = ["/nonexistent/adapter-binary", "--stream"]


def network_probe(port: int) -> list[str]:
    """Tries to connect to 127.0.0.1:``port`` first; answers like ECHO only if that failed."""
    return py(
        "import json,socket,sys\n"
        "s=socket.socket(); s.settimeout(2)\n"
        f"ok=s.connect_ex(('127.0.0.1',{port}))==0\n"
        "sys.stderr.write('network reachable\\n' if ok else 'network unreachable\\n')\n"
        + "for line in sys.stdin:\n    item=json.loads(line)\n"
        + _ECHO
        + "    call=None if ok else call\n"
        + _ANSWER
    )


def pids_with(token: str) -> list[int]:
    """Every live process whose command line contains ``token`` (adapters carry one in their
    code), so a test can wait for an adapter to start or check that none survived."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (its sockets in /proc/net/tcp{,6}, state 0A)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def wait_for_run(base_url: str, key: str, run_id: str, *, timeout_s: float = 180) -> dict[str, Any]:
    """Poll ``GET /runs/{run_id}`` until the run is scored or failed, and return it."""
    headers = {"Authorization": f"Bearer {key}"}
    deadline = time.monotonic() + timeout_s
    run: Any = None
    while time.monotonic() < deadline:
        _, _, run = request_json("GET", f"{base_url}/runs/{run_id}", headers=headers)
        if run["status"] in ("scored", "failed"):
            return dict(run)
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish within {timeout_s} s: {run}")


@contextmanager
def callback_receiver() -> Iterator[tuple[str, list[tuple[bytes, dict[str, str]]]]]:
    """A callback endpoint on 127.0.0.1: its URL, and each POST's (body, headers) as it came."""
    received: list[tuple[bytes, dict[str, str]]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((body, dict(self.headers.items())))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


class ProbeCommands:
    """Stands in for ``sandbox.run_probe_command``: each probed program answers from its own
    script of outcomes, in order: ``"timeout"`` (did not finish within the bound asked),
    ``"busy"`` (could not be started: EAGAIN) or an exit code. ``asked`` records each call as
    (program, bound), so a test sees the bounds without waiting for any of them."""

    def __init__(self, **scripts: list[int | str]) -> None:
        self.scripts = {name: list(outcomes) for name, outcomes in scripts.items()}
        self.asked: list[tuple[str, float]] = []

    def __call__(self, argv: list[str], *, timeout: float, **_kwargs: Any) -> Any:
        program = argv[0] if argv[0] in ("bwrap", "unshare") else "seccomp"
        self.asked.append((program, timeout))
        if not self.scripts.get(program):
            raise AssertionError(f"{program} probed unexpectedly (after {self.asked[:-1]})")
        outcome = self.scripts[program].pop(0)
        if outcome == "timeout":
            raise subprocess.TimeoutExpired(argv, timeout)
        if outcome == "busy":
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        if program == "seccomp" and outcome == 0:
            Path(argv[-1]).write_bytes(b"")  # the filter's file, as the real script writes it
        return subprocess.CompletedProcess(argv, outcome, b"", b"")
