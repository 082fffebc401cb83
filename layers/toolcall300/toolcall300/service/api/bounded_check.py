"""A tool-argument/v1 check under a CPU-time budget, for schemas whose ``pattern`` could stall it.

A caller supplies the schema, and Python's ``re`` has no time limit: nested repetition is
refused statically by the schema engine, but polynomial backtracking (``\\w*\\w*x`` on a long
string) is not something a static rule can catch without refusing ordinary patterns. So a
check whose schema has a ``pattern`` anywhere runs in a child interpreter with ``RLIMIT_CPU``
and a wall-clock limit; past either, the answer is the free refusal
``CAP-EXCEEDED:check_seconds`` and nothing is judged. A schema with no pattern is checked in
process (no child, no cost). This module is the service's guard; it is not a sandbox.

The child is not a new interpreter (importing the checker alone cost 49 ms, 50x a check):
:class:`PatternPool` keeps one warm process (the zygote, which has imported the checker and
never reads a request) holding a few children forked ahead of time. Each check takes one idle
child, which reads that one body over its own socket, sets its CPU limit, answers and exits:
one process per check as before, never reused, so nothing of one check reaches another; the
zygote forks a replacement after handing the child over. If the pool cannot be used, the check
runs in a fresh interpreter as before.

Criteria D26: each payer (a verified licence, or a free-tier client) runs at most one bounded
check at a time (:class:`PatternLanes`: a second one while the first is in the child is 429
``check_in_flight`` at once, never queued on a server thread), so one payer's backtracking
patterns hold at most one handler thread, and the paid checks of others never wait behind
them; the daily count of a payer's checks that ran past the budget is ``domain.usage``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolcall300.argcheck import check as argcheck
from toolcall300.service.errors import TooManyRequests

CHECK_SECONDS = 2

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); import json; "
    "from toolcall300.argcheck import check as argcheck; "
    "r = argcheck.check_body(sys.stdin.buffer.read(), precheck=sys.argv[2] == '1'); "
    "sys.stdout.write(json.dumps(r, ensure_ascii=True))"
)


#: The zygote: imports the checker, keeps ``size`` forked children idle, hands one to each
#: check it is asked for (the check's socket, received over the control socket) and forks
#: another. A child reads ``seconds``, ``precheck`` and the body's length (8 + 1 + 8 bytes),
#: then the body; sets its CPU limit; writes the answer; exits.
_ZYGOTE = r"""
import json, os, resource, signal, socket, struct, sys
sys.path.insert(0, sys.argv[1])
from toolcall300.argcheck import check as argcheck
control = socket.socket(fileno=int(sys.argv[2]))
size = int(sys.argv[3])
idle = []

def exact(conn, n):
    data = b""
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            raise EOFError
        data += more
    return data

def serve(channel):
    _, fds, _, _ = socket.recv_fds(channel, 1, 1)
    if not fds:
        return
    conn = socket.socket(fileno=fds[0])
    seconds, precheck, length = struct.unpack("!QBQ", exact(conn, 17))
    body = exact(conn, length)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    answer = argcheck.check_body(body, precheck=bool(precheck))
    conn.sendall(json.dumps(answer, ensure_ascii=True).encode())

def spawn():
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            control.close()
            ours.close()
            for _, channel in idle:
                channel.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            serve(theirs)
        finally:
            os._exit(0)
    theirs.close()
    idle.append((pid, ours))

signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
while len(idle) < size:
    spawn()
while True:
    _, fds, _, _ = socket.recv_fds(control, 1, 1)
    if not fds:
        break  # the service process is gone
    pid, channel = idle.pop(0)
    socket.send_fds(channel, [b"c"], fds)
    channel.close()
    os.close(fds[0])
    control.sendall(struct.pack("!q", pid))
    spawn()
"""


class PatternPool:
    """Warm, bounded children for checks with a pattern (see the module's docstring): at most
    ``size`` idle children are kept; a check costs a hand-over and the check, not a start."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None

    def _control_socket(self) -> socket.socket:
        if self._zygote is not None and self._zygote.poll() is None and self._control:
            return self._control
        if self._control is not None:
            self._control.close()
        ours, theirs = socket.socketpair()
        self._zygote = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, _PACKAGE_PARENT, str(theirs.fileno()), str(self.size)],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=_CHILD_ENV,
        )
        theirs.close()
        self._control = ours
        return ours

    def _hand_over(self, conn: socket.socket) -> int:
        """Give ``conn`` to an idle child; its pid."""
        with self._lock:
            control = self._control_socket()
            try:
                control.settimeout(10)  # the zygote answers at once; a start takes longer
                socket.send_fds(control, [b"c"], [conn.fileno()])
                pid = b""
                while len(pid) < 8:
                    more = control.recv(8 - len(pid))
                    if not more:
                        raise OSError("the zygote closed its socket")
                    pid += more
            except OSError:
                if self._zygote is not None:
                    self._zygote.kill()
                self._zygote = None
                raise
        return int(struct.unpack("!q", pid)[0])

    def check(self, body: bytes, *, precheck: bool, seconds: int) -> dict[str, Any]:
        """:func:`argcheck.check_body` in a child of the pool; OSError if the pool failed."""
        ours, theirs = socket.socketpair()
        with ours:
            try:
                pid = self._hand_over(theirs)
            finally:
                theirs.close()
            deadline = time.monotonic() + seconds * 2 + 1
            ours.settimeout(seconds * 2 + 1)
            answer = b""
            try:
                ours.sendall(struct.pack("!QBQ", seconds, int(precheck), len(body)) + body)
                while more := ours.recv(65536):
                    answer += more
                    ours.settimeout(max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)  # past the wall-clock limit
                return over_budget(seconds)
            except OSError:
                return over_budget(seconds)  # the child died at its CPU limit mid-write
        if not answer:
            return over_budget(seconds)  # SIGXCPU / SIGKILL from the CPU limit
        result: dict[str, Any] = json.loads(answer)
        return result


#: The process's pool (one Lambda environment, or one process of the one-machine stack).
POOL = PatternPool()
_CHILD_ENV = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"}


def _has_pattern(node: Any, depth: int = 0) -> bool:
    if depth > 200:
        return True  # deeper than any covered schema: let the bounded child refuse it
    if isinstance(node, dict):
        return "pattern" in node or any(_has_pattern(v, depth + 1) for v in node.values())
    if isinstance(node, list):
        return any(_has_pattern(v, depth + 1) for v in node)
    return False


def needs_bound(body: bytes) -> bool:
    """Whether the request's schema uses ``pattern`` (decoded, so ``\\u0070attern`` counts too)."""
    if len(body) > argcheck.MAX_BODY_BYTES:
        return False  # refused for size before any pattern runs
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return False  # refused as invalid_request_body before any pattern runs
    return isinstance(request, dict) and _has_pattern(request.get("schema"))


def _limit_cpu(seconds: int) -> Any:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))

    return apply


def over_budget(seconds: int = CHECK_SECONDS) -> dict[str, Any]:
    """The refusal for a check that ran past its budget (no value of the request is echoed)."""
    return {
        "refusal": {
            "code": argcheck.CAP_CHECK,
            "message": f"the check ran past its {seconds} s CPU budget: a pattern in the schema "
            "backtracks on this input; nothing was judged",
        }
    }


def check_body_bounded(
    body: bytes, *, precheck: bool = False, seconds: int = CHECK_SECONDS
) -> dict[str, Any]:
    """:func:`argcheck.check_body`, run in a CPU-bounded child when the schema has a pattern."""
    if not needs_bound(body):
        return argcheck.check_body(body, precheck=precheck)
    if os.name == "posix":
        with contextlib.suppress(OSError):
            return POOL.check(body, precheck=precheck, seconds=seconds)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, _PACKAGE_PARENT, "1" if precheck else "0"],
            input=body,
            capture_output=True,
            timeout=seconds * 2 + 1,
            preexec_fn=_limit_cpu(seconds) if os.name == "posix" else None,
            env=_CHILD_ENV,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return over_budget(seconds)
    if done.returncode != 0:
        return over_budget(seconds)  # SIGXCPU / SIGKILL from the CPU limit
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def ran_over(response: dict[str, Any]) -> bool:
    """Whether ``response`` is the refusal of a check that ran past its CPU budget."""
    refusal = response.get("refusal")
    return isinstance(refusal, dict) and refusal.get("code") == argcheck.CAP_CHECK


class PatternLanes:
    """One bounded check in flight per payer (criteria D26), in this process.

    The payer is the one the route verified (a licence id, or the free tier's pseudonymous
    client id), never a header's name. A payer's second bounded check while its first is in
    the child is refused at once (429 ``check_in_flight``, Retry-After the child's wall-clock
    limit) rather than queued, so it holds no server thread either.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    @contextmanager
    def lane(self, payer: str, *, seconds: int = CHECK_SECONDS) -> Iterator[None]:
        with self._lock:
            if payer in self._busy:
                raise TooManyRequests(
                    "a check with a pattern of this caller is still running; one at a time",
                    code="check_in_flight",
                    headers={"Retry-After": str(seconds * 2 + 1)},
                )
            self._busy.add(payer)
        try:
            yield
        finally:
            with self._lock:
                self._busy.discard(payer)


#: The process's lanes (one Lambda environment, or the one-machine stack's handler threads).
LANES = PatternLanes()
