"""What every stored record of ours shares: one timestamp format and one optimistic-update loop.

Licences and runs are versioned items: a write names the version it read and fails with
``StoreConflict`` when someone else wrote first; :func:`retry_on_conflict` reads again and
retries a few times before answering 409 ``busy``. Timestamps are written by :func:`iso`
only, as RFC 3339 UTC with a ``Z`` (``2026-11-30T12:00:00Z``), so two records never disagree
on the format and string order is time order. No SDK here: the stores are the callers'.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from toolcall300.service.errors import Conflict, StoreConflict

T = TypeVar("T")
RETRIES = 5


def iso(ts: datetime) -> str:
    """``ts`` in UTC to the second with a ``Z``.

    >>> iso(datetime(2026, 11, 30, 13, 0, 5, 999, tzinfo=UTC))
    '2026-11-30T13:00:05Z'
    """
    return ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def day_of(now: datetime) -> str:
    """The UTC day ``now`` falls on, as the daily counters and the ledger key it.

    >>> day_of(datetime(2026, 11, 30, 23, 30, tzinfo=UTC))
    '2026-11-30'
    """
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def retry_on_conflict(attempt: Callable[[], T], *, what: str) -> T:
    """Run ``attempt`` (read, edit, conditional write) until no ``StoreConflict``; 409 after a few.

    ``what`` names the record in the 409's message ("the run", "licence").
    """
    for _ in range(RETRIES):
        try:
            return attempt()
        except StoreConflict:
            continue
    raise Conflict(f"{what} is being updated concurrently; retry", code="busy")
