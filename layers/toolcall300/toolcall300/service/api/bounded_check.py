"""A tool-argument/v1 check under a CPU-time budget, for schemas whose ``pattern`` could stall it.

A caller supplies the schema, and Python's ``re`` has no time limit: nested repetition is
refused statically by the schema engine, but polynomial backtracking (``\\w*\\w*x`` on a long
string) is not something a static rule can catch without refusing ordinary patterns. So a
check whose schema has a ``pattern`` anywhere runs in a child interpreter with ``RLIMIT_CPU``
and a wall-clock limit; past either, the answer is the free refusal
``CAP-EXCEEDED:check_seconds`` and nothing is judged. A schema with no pattern is checked in
process (no child, no cost). This module is the service's guard; it is not a sandbox.

Criteria D26: each payer (a verified licence, or a free-tier client) runs at most one bounded
check at a time (:class:`PatternLanes`: a second one while the first is in the child is 429
``check_in_flight`` at once, never queued on a server thread), so one payer's backtracking
patterns hold at most one handler thread, and the paid checks of others never wait behind
them; the daily count of a payer's checks that ran past the budget is ``domain.usage``'s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
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
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, _PACKAGE_PARENT, "1" if precheck else "0"],
            input=body,
            capture_output=True,
            timeout=seconds * 2 + 1,
            preexec_fn=_limit_cpu(seconds) if os.name == "posix" else None,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"},
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
