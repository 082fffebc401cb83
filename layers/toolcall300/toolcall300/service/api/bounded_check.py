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
never reads a request) that forks children ahead of time, and holds a few of them ready. Each
check takes one ready child, which reads that one body over its own socket, sets its CPU
limit, answers and exits: one process per check as before, never reused, so nothing of one
check reaches another; the zygote forks a replacement meanwhile. If the pool cannot be used,
the check runs in a fresh interpreter as before.

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
import secrets
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
from toolcall300.service.domain.usage import LaneStore
from toolcall300.service.errors import TooManyRequests

CHECK_SECONDS = 2

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); import json; "
    "from toolcall300.argcheck import check as argcheck; "
    "r = argcheck.check_body(sys.stdin.buffer.read(), precheck=sys.argv[2] == '1'); "
    "sys.stdout.write(json.dumps(r, ensure_ascii=True))"
)


#: The zygote: imports the checker, runs it on a constant body of its own (so the lazily built
#: parts of the checker exist before any fork, not once per child), freezes what it holds
#: for the garbage collector (a child's collections then never walk, and so never copy, the
#: pages it shares with the zygote), then forks one child per byte it reads on the control
#: socket and sends back the child's pid with the service's end of the child's own socket.
#: A child reads ``seconds``, ``precheck`` and the body's length (8 + 1 + 8 bytes), then the
#: body; sets its CPU limit; writes the answer's length (8 bytes) and the answer; exits. It
#: never reads a second body. The length lets the service take the answer as soon as it is
#: written, not when the child's exit closes the socket.
_ZYGOTE = r"""
import contextlib, gc, json, os, resource, signal, socket, struct, sys
sys.path.insert(0, sys.argv[1])
from toolcall300.argcheck import check as argcheck
control = socket.socket(fileno=int(sys.argv[2]))
warm_up = sys.argv[3].encode()
for _ in range(3):
    argcheck.check_body(warm_up)
gc.freeze()

def exact(conn, n):
    data = b""
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            raise EOFError
        data += more
    return data

def serve(conn):
    seconds, precheck, length = struct.unpack("!QBQ", exact(conn, 17))
    body = exact(conn, length)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    answer = json.dumps(argcheck.check_body(body, precheck=bool(precheck)), ensure_ascii=True)
    conn.sendall(struct.pack("!Q", len(answer)) + answer.encode())

def fork():
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            control.close()
            ours.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            serve(theirs)
        finally:
            os._exit(0)
    theirs.close()
    socket.send_fds(control, [struct.pack("!q", pid)], [ours.fileno()])
    ours.close()

signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
# an empty read or a broken control socket: the service process is gone, so the zygote ends
with contextlib.suppress(OSError):
    while control.recv(1):
        fork()
"""


class PatternPool:
    """Warm, bounded children for checks with a pattern (see the module's docstring): this
    process holds up to ``size`` children already forked, each with its own socket, and asks
    the zygote for a replacement as it takes one, so a check costs the check and one hand-over
    of its body, not a start or a fork."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._ready: list[tuple[int, socket.socket]] = []
        self._pending = 0  # children asked for and not yet received
        self._owner = os.getpid()

    def _control_socket(self) -> socket.socket:
        if self._owner != os.getpid():  # a forked copy of a process that had a pool: its own
            self._owner, self._zygote, self._control, self._ready = os.getpid(), None, None, []
        if self._zygote is not None and self._zygote.poll() is None and self._control:
            return self._control
        if self._control is not None:
            self._control.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._zygote = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, _PACKAGE_PARENT, str(theirs.fileno()), _WARM_UP],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=_CHILD_ENV,
        )
        theirs.close()
        self._control, self._pending = ours, 0
        return ours

    def _receive(self, control: socket.socket, *, wait: bool) -> bool:
        """One child the zygote sent, into :attr:`_ready`; False when none is there yet."""
        try:
            control.settimeout(10 if wait else 0)
            message, fds, _, _ = socket.recv_fds(control, 8, 1)
        except BlockingIOError:
            return False
        if len(message) != 8 or len(fds) != 1:
            raise OSError("the zygote sent no child")
        self._pending -= 1
        self._ready.append((int(struct.unpack("!q", message)[0]), socket.socket(fileno=fds[0])))
        return True

    def take(self) -> tuple[int, socket.socket]:
        """An idle child (its pid and socket), asking the zygote for its replacement."""
        with self._lock:
            try:
                control = self._control_socket()
                while self._pending and self._receive(control, wait=False):
                    pass
                if not self._ready:
                    if not self._pending:
                        control.send(b"n")
                        self._pending += 1
                    self._receive(control, wait=True)
                child = self._ready.pop(0)
                while len(self._ready) + self._pending < self.size:
                    control.send(b"n")
                    self._pending += 1
            except OSError:
                if self._zygote is not None:
                    self._zygote.kill()
                self._zygote = None
                raise
        return child

    def check(self, body: bytes, *, precheck: bool, seconds: int) -> dict[str, Any]:
        """:func:`argcheck.check_body` in a child of the pool; OSError if the pool failed."""
        pid, conn = self.take()
        with conn:
            deadline = time.monotonic() + seconds * 2 + 1
            try:
                conn.settimeout(seconds * 2 + 1)
                conn.sendall(struct.pack("!QBQ", seconds, int(precheck), len(body)) + body)
                head = _read_exact(conn, 8, deadline)
                answer = _read_exact(conn, struct.unpack("!Q", head)[0], deadline) if head else b""
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


def _read_exact(conn: socket.socket, size: int, deadline: float) -> bytes:
    """``size`` bytes from ``conn`` by ``deadline`` (TimeoutError past it); fewer (``b""``) when
    the child closed its end first, as one ended by its CPU limit does."""
    chunks, left = [], size
    while left:
        conn.settimeout(max(0.001, deadline - time.monotonic()))
        more = conn.recv(min(left, 1 << 20))
        if not more:
            return b""
        chunks.append(more)
        left -= len(more)
    return b"".join(chunks)


#: The process's pool (one Lambda environment, or one process of the one-machine stack).
POOL = PatternPool()
_CHILD_ENV = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"}
#: The zygote's own body before any fork: a schema with a pattern, arguments it repairs.
_WARM_UP = json.dumps(
    {
        "schema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "id": {"type": "string", "pattern": "^[a-z]{3}$", "maxLength": 8},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            },
            "required": ["n"],
        },
        "arguments": {"n": "42", "id": "abc", "tags": ["a"]},
    }
)


def _has_pattern(node: Any, depth: int = 0) -> bool:
    if depth > 200:
        return True  # deeper than any covered schema: let the bounded child refuse it
    if isinstance(node, dict):
        return "pattern" in node or any(_has_pattern(v, depth + 1) for v in node.values())
    if isinstance(node, list):
        return any(_has_pattern(v, depth + 1) for v in node)
    return False


def needs_bound(body: bytes) -> bool:
    """Whether the request's schema uses ``pattern`` (decoded, so ``\\u0070attern`` counts too).

    A body with neither ``pattern`` nor ``\\u`` in its bytes has no key ``pattern`` however it
    parses (JSON writes a letter of a key as itself or as a ``\\u`` escape; UTF-8 has no other
    encoding of it; UTF-16 and -32 bodies are not JSON text here), so it is not parsed here."""
    if len(body) > argcheck.MAX_BODY_BYTES:
        return False  # refused for size before any pattern runs
    if b"pattern" not in body and b"\\u" not in body:
        return False
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
    """One bounded check in flight per payer (criteria D26), in this process and, given a
    ``shared`` store (``domain.usage.LaneStore``), in every process that serves the same state
    (the one-machine stack's processes share its database).

    The payer is the one the route verified (a licence id, or the free tier's pseudonymous
    client id), never a header's name. A payer's second bounded check while its first is in
    the child is refused at once (429 ``check_in_flight``, Retry-After the child's wall-clock
    limit) rather than queued, so it holds no server thread either. A shared lane is held
    until the check ends, or at most the refusal's Retry-After if its process dies first.
    """

    def __init__(self, shared: LaneStore | None = None) -> None:
        self._lock = threading.Lock()
        self._busy: set[str] = set()
        self._shared = shared

    @staticmethod
    def _refusal(seconds: int) -> TooManyRequests:
        return TooManyRequests(
            "a check with a pattern of this caller is still running; one at a time",
            code="check_in_flight",
            headers={"Retry-After": str(seconds * 2 + 1)},
        )

    @contextmanager
    def lane(self, payer: str, *, seconds: int = CHECK_SECONDS) -> Iterator[None]:
        with self._lock:
            if payer in self._busy:
                raise self._refusal(seconds)
            self._busy.add(payer)
        try:
            with self._shared_lane(payer, seconds):
                yield
        finally:
            with self._lock:
                self._busy.discard(payer)

    @contextmanager
    def _shared_lane(self, payer: str, seconds: int) -> Iterator[None]:
        if self._shared is None:
            yield
            return
        holder, now = f"{os.getpid()}:{secrets.token_hex(8)}", time.time()
        if not self._shared.take(payer, holder, until=now + seconds * 2 + 1, now=now):
            raise self._refusal(seconds)
        try:
            yield
        finally:
            self._shared.drop(payer, holder)
