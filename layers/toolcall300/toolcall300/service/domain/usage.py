"""Usage limits and aggregate counters: the free tier, the daily download cap, /metrics.

Each limit is one atomic conditional update on a per-day counter (the store port's ``take``);
when it is refused, the counter is read back and :func:`refusal_for` decides, purely, whether
the caller is too early (429 + Retry-After) or out of allowance (402 for checks, 429 for
downloads). Counters expire through the table's TTL two days after their day. Client ids
are hashes; nothing submitted to the checker is ever stored here, only verdicts and defect
codes (the tool-argument/v1 criteria's ``custody``, ``GET /criteria``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from toolcall300.service.domain.records import day_of
from toolcall300.service.errors import BackendError, PaymentRequired, StoreConflict, TooManyRequests

METRICS_COUNTER = "metrics#argcheck"


class LaneStore(Protocol):
    """Who holds each payer's one lane for a check with a pattern (criteria D26), shared by
    every process that serves the same state: ``take`` claims ``payer``'s lane for ``holder``
    until ``until`` (epoch seconds) unless another holder has it and its time has not run out
    (a holder that died frees it at ``until``), and says whether it did; ``drop`` frees it
    if ``holder`` still has it."""

    def take(self, payer: str, holder: str, *, until: float, now: float) -> bool: ...
    def drop(self, payer: str, holder: str) -> None: ...


class UsageStore(Protocol):
    def get(self, counter_id: str) -> dict[str, Any] | None: ...
    def take(
        self, counter_id: str, *, limit: int, now_ms: int, min_gap_ms: int, expires_at: int
    ) -> None: ...
    def add(self, counter_id: str, names: list[str]) -> None: ...


def seconds_to_midnight(now: datetime) -> int:
    """Seconds until the next UTC day, when daily allowances reset (at least 1)."""
    now = now.astimezone(UTC)
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, math.ceil((tomorrow - now).total_seconds()))


def client_id(source_ip: str, salt: bytes) -> str:
    """A stable pseudonymous id for a free-tier client: an HMAC of the IP under a secret salt,
    so neither the IP nor (without the salt) a guess at it can be read back from a stored id."""
    return hmac.new(salt, source_ip.encode(), hashlib.sha256).hexdigest()[:32]


def refusal_for(
    item: dict[str, Any] | None,
    *,
    limit: int,
    now: datetime,
    min_gap_s: int,
    spent: type[BackendError],
) -> BackendError:
    """Why a ``take`` was refused: spent for the day, or too soon after the last use."""
    used = int((item or {}).get("used", 0))
    if used >= limit:
        wait = seconds_to_midnight(now)
        return spent(
            f"the daily allowance of {limit} is spent; it resets at 00:00 UTC",
            code="daily_limit",
            headers={"Retry-After": str(wait)},
        )
    last_ms = int((item or {}).get("last_ms", 0))
    now_ms = int(now.timestamp() * 1000)
    wait = max(1, math.ceil((last_ms + min_gap_s * 1000 - now_ms) / 1000))
    return TooManyRequests(
        f"free checks must be at least {min_gap_s} s apart",
        code="too_soon",
        headers={"Retry-After": str(wait)},
    )


def take(
    store: UsageStore,
    counter: str,
    *,
    limit: int,
    now: datetime,
    min_gap_s: int = 0,
    spent: type[BackendError] = TooManyRequests,
) -> None:
    """Count one use against ``counter`` for today, or raise the matching refusal."""
    counter_id = f"{counter}#{day_of(now)}"
    expires = int(now.timestamp()) + 2 * 86400
    try:
        store.take(
            counter_id,
            limit=limit,
            now_ms=int(now.timestamp() * 1000),
            min_gap_ms=min_gap_s * 1000,
            expires_at=expires,
        )
    except StoreConflict:
        raise refusal_for(
            store.get(counter_id), limit=limit, now=now, min_gap_s=min_gap_s, spent=spent
        ) from None


def take_free_check(
    store: UsageStore, client: str, *, per_day: int, min_gap_s: int, now: datetime
) -> None:
    """The tool-argument/v1 free tier (docs/api.md): ``per_day`` checks a day, ``min_gap_s`` apart; 429 too soon, 402 spent.

    ``client`` is already pseudonymous (:func:`client_id`); no address reaches the store."""
    take(
        store,
        f"free#{client}",
        limit=per_day,
        now=now,
        min_gap_s=min_gap_s,
        spent=PaymentRequired,
    )


#: Criteria D26: the daily counter of one payer's checks that ran past the CPU budget.
CHECK_SECONDS_COUNTER = "check_seconds"


def check_seconds_left(store: UsageStore, payer: str, *, per_day: int, now: datetime) -> None:
    """Criteria D26: 429 ``check_seconds_spent`` (Retry-After: to 00:00 UTC) once ``payer``'s
    checks ran past the CPU budget ``per_day`` times today; read before any bounded work."""
    item = store.get(f"{CHECK_SECONDS_COUNTER}#{payer}#{day_of(now)}")
    if int((item or {}).get("used", 0)) >= per_day:
        raise TooManyRequests(
            f"{per_day} checks of this caller ran past the CPU budget today; a schema with a "
            "pattern is checked again from 00:00 UTC (schemas without one are unaffected)",
            code="check_seconds_spent",
            headers={"Retry-After": str(seconds_to_midnight(now))},
        )


def count_check_seconds(store: UsageStore, payer: str, *, per_day: int, now: datetime) -> None:
    """Count one check of ``payer`` that ran past the CPU budget (D26); at the limit already
    (a concurrent one counted first) there is nothing more to count."""
    with contextlib.suppress(TooManyRequests):
        take(store, f"{CHECK_SECONDS_COUNTER}#{payer}", limit=per_day, now=now)


def take_download(store: UsageStore, licence_id: str, *, per_day: int, now: datetime) -> None:
    """Corpus downloads are capped per licence per day (429 + Retry-After past it)."""
    take(store, f"download#{licence_id}", limit=per_day, now=now)


def metric_names(summary: dict[str, Any]) -> list[str]:
    """Counter names for one check's status summary: its verdict and each defect code."""
    names = []
    verdict = summary.get("verdict")
    if isinstance(verdict, str):
        names.append(f"verdict:{verdict}")
    refusal = summary.get("refusal")
    if isinstance(refusal, str):
        names.append(f"refusal:{refusal}")
    codes = summary.get("defect_codes", summary.get("defects", []))
    if isinstance(codes, list):
        names.extend(f"defect:{c}" for c in sorted({c for c in codes if isinstance(c, str)}))
    return names


def record_metrics(store: UsageStore, summary: dict[str, Any]) -> None:
    """Add one check to the aggregate counters (verdict and defect codes only)."""
    store.add(METRICS_COUNTER, metric_names(summary))


def shares(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Each group's counts as shares of its total (3 decimals): the distribution without the
    volume, what ``GET /metrics`` shows without an operator's key.

    >>> shares({"verdicts": {"VALID": 3, "REPAIRED": 1}, "defects": {}})
    {'verdicts': {'REPAIRED': 0.25, 'VALID': 0.75}, 'defects': {}}
    """
    out: dict[str, dict[str, float]] = {}
    for group, by_code in counts.items():
        total = sum(by_code.values())
        out[group] = {code: round(n / total, 3) for code, n in sorted(by_code.items()) if total}
    return out


def read_metrics(store: UsageStore) -> dict[str, dict[str, int]]:
    """``GET /metrics``: counts by verdict, by defect code and by refusal code."""
    item = store.get(METRICS_COUNTER) or {}
    out: dict[str, dict[str, int]] = {"verdicts": {}, "defects": {}, "refusals": {}}
    groups = {"verdict": "verdicts", "defect": "defects", "refusal": "refusals"}
    for name, value in sorted(item.items()):
        group, _, code = name.partition(":")
        if group in groups and code:
            out[groups[group]][code] = int(value)
    return out
