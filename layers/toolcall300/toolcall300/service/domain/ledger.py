"""Paid argument checks: prepaid packs, the payments ledger and the kill-line tripwires.

A licence key pays for checks from its pack (bought through ``POST /checkout``; criteria D23, docs/argcheck-payment.md):
each paid check is one atomic write that takes one check from the pack and stores the
check's ledger record, conditional on both (a pack with checks left, no record for this check
id yet), so a retry with the same ``Idempotency-Key`` is counted once and two racing requests
cannot spend one check twice. A fully refunded pack or revoked licence stops: auth refuses the key.
A partial refund takes back the checks it paid for (:func:`refund_part`, criteria D23).

The ledger record holds the criteria's closed field list, adapted to Stripe
(``criteria.LEDGER_FIELDS``), and nothing else: never an argument value, key, path or fragment.
The tripwires are daily counters read over a rolling 30-day window (:func:`window_metrics`).
SDK-free: the store is a port (``service/sdk/dynamo.CheckLedgerTable`` backs it).
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from toolcall300.argcheck import criteria
from toolcall300.argcheck.criteria import (
    CURRENCY,
    PACK_AMOUNT,
    PACK_CHECKS,
    PACK_PRODUCT,
    PRICE_PER_CHECK,
)
from toolcall300.service.domain.licences import Effect, Licence
from toolcall300.service.domain.records import day_of, retry_on_conflict
from toolcall300.service.errors import PaymentRequired, StoreConflict

WINDOW_DAYS = 30
REFUND_SHARE_LIMIT = 0.05  # the criteria's kill line: refunds over 5% of paid calls
FREE_TO_PAID_LIMIT = 10  # and free use over 10x paid use
LEDGER_FIELDS = tuple(name for name, _ in criteria.LEDGER_FIELDS)


class CheckLedger(Protocol):
    def pack(self, payer: str) -> dict[str, Any] | None: ...
    def grant(self, payer: str, *, checks: int, payment_id: str, granted_at: str) -> None: ...
    def charge(self, payer: str, check_id: str, record: dict[str, Any]) -> None: ...
    def record(self, check_id: str) -> dict[str, Any] | None: ...
    def settle(
        self,
        payer: str,
        *,
        before: dict[str, Any],
        after: dict[str, int | bool],
        day: str,
        refunded: int,
    ) -> None: ...
    def count(self, day: str, amounts: dict[str, int]) -> None: ...
    def days(self, days: list[str]) -> list[dict[str, Any]]: ...


def payment_details() -> dict[str, Any]:
    """What a 402 says about paying: the price and where to buy."""
    return {
        "price": {"amount": PRICE_PER_CHECK, "currency": CURRENCY, "basis": "per check"},
        "buy": {
            "method": "POST",
            "path": "/checkout",
            "body": {"product": PACK_PRODUCT},
            "checks": PACK_CHECKS,
            "amount": PACK_AMOUNT,
            "currency": CURRENCY,
        },
    }


def no_paid_checks(message: str) -> PaymentRequired:
    return PaymentRequired(message, code="no_paid_checks", details=payment_details())


def check_id(payer: str, idempotency_key: str | None, digest: str, fresh: str) -> str:
    """The ledger id of one paid check: the same for a retry (same payer, ``Idempotency-Key``
    and request digest), a new one (``fresh`` randomness) for a call without the header."""
    basis = f"{payer}\n{idempotency_key}\n{digest}" if idempotency_key else f"{payer}\n{fresh}"
    return hashlib.sha256(basis.encode()).hexdigest()[:40]


def verdict_line(summary: dict[str, Any]) -> str:
    """One line from a status summary (verdict, counts, codes; nothing of the blob)."""
    verdict = summary.get("verdict")
    if verdict == "VALID":
        return "VALID: no repair was needed"
    if verdict == "REPAIRED":
        return f"REPAIRED: {summary.get('repairs', 0)} repair(s)"
    codes = ", ".join(summary.get("defect_codes", []))
    return f"UNREPAIRABLE: {summary.get('defects', 0)} defect(s) ({codes})"


def ledger_record(
    *,
    payer: str,
    now: datetime,
    payment_id: str,
    criteria_version: str,
    summary: dict[str, Any],
    house: bool,
) -> dict[str, Any]:
    """The ledger record of one paid check: exactly :data:`LEDGER_FIELDS`."""
    now = now.astimezone(UTC)
    record = {
        "payer": payer,
        "timestamp": now.isoformat(timespec="seconds"),
        "day": day_of(now),
        "price": PRICE_PER_CHECK,
        "currency": CURRENCY,
        "payment_id": payment_id,
        "criteria_version": criteria_version,
        "op": "check",
        "verdict_line": verdict_line(summary),
        "status_summary": {
            k: summary[k] for k in ("verdict", "repairs", "defects", "defect_codes") if k in summary
        },
        "house": house,
    }
    assert tuple(record) == LEDGER_FIELDS
    return record


def charge_check(
    ledger: CheckLedger, *, payer: str, check: str, record: dict[str, Any], house: bool
) -> bool:
    """Take one check from ``payer``'s pack and store ``record`` under ``check``, once.

    True when this call charged; False when ``check`` was already charged (a retry); raises
    the 402 ``no_paid_checks`` (with the price and where to buy) when the pack is empty."""
    try:
        ledger.charge(payer, check, record)
    except StoreConflict:
        if ledger.record(check) is not None:
            return False
        raise no_paid_checks(
            "this licence has no paid checks left; buy a pack of "
            f"{PACK_CHECKS} through POST /checkout, or send no key for the free tier"
        ) from None
    ledger.count(record["day"], {"house" if house else "paid": 1})
    return True


def count_free(ledger: CheckLedger, now: datetime) -> None:
    """One free-tier check with a verdict, for the free-to-paid tripwire."""
    ledger.count(day_of(now), {"free": 1})


def checks_paid_by(amount: int) -> int:
    """How many checks ``amount`` (minor units) pays for, rounded up: a refund of one cent
    takes back a whole check, so a pack never keeps a check its payment no longer covers.

    >>> checks_paid_by(1), checks_paid_by(2), checks_paid_by(3), checks_paid_by(PACK_AMOUNT)
    (1, 1, 2, 500)
    """
    return -(-amount // PRICE_PER_CHECK)


def _settle(
    ledger: CheckLedger, payer: str, now: datetime, *, refunded_amount: int | None
) -> int | None:
    """Apply a refund to ``payer``'s pack in one conditional write (retried on a race with a
    check being charged); the paid checks it counted as refunded, or None when the pack is
    missing or ended. ``refunded_amount`` is Stripe's cumulative ``amount_refunded`` (a partial
    refund); None ends the pack (a full refund or a lost dispute: all its money is back).

    The checks a refund covers come first out of those not yet used (``withdrawn``: never
    delivered, so never paid calls); only what it covers beyond them were delivered checks
    whose money came back (``refunded_spent``), and those are what the refund tripwire counts.
    A pack remembers the highest ``amount_refunded`` it applied, so the same event twice, or
    an earlier partial refund arriving after a later one, takes nothing more.
    """
    day = day_of(now)

    def attempt() -> int | None:
        pack = ledger.pack(payer)
        if pack is None or pack.get("ended"):
            return None
        granted, remaining = int(pack.get("granted", 0)), int(pack.get("remaining", 0))
        withdrawn, spent_back = int(pack.get("withdrawn", 0)), int(pack.get("refunded_spent", 0))
        applied = int(pack.get("refunded_amount", 0))
        if refunded_amount is None:  # all of it: every check is covered, the pack ends
            covered, amount = granted, applied
        elif refunded_amount <= applied:
            return 0  # a replay, or an earlier partial refund arriving late
        else:
            covered, amount = min(granted, checks_paid_by(refunded_amount)), refunded_amount
        more = max(0, covered - withdrawn - spent_back)
        unused = min(remaining, more)
        after: dict[str, int | bool] = {
            "remaining": remaining - unused,
            "withdrawn": withdrawn + unused,
            "refunded_spent": spent_back + more - unused,
            "refunded_amount": amount,
        }
        if refunded_amount is None:
            after.update(remaining=0, ended=True)
        ledger.settle(payer, before=pack, after=after, day=day, refunded=more - unused)
        return more - unused

    return retry_on_conflict(attempt, what="the pack")


def refund_pack(ledger: CheckLedger, payer: str, now: datetime) -> int:
    """A fully refunded (or lost-dispute) pack stops; its used checks not yet counted by a
    partial refund count as refunded. ``StoreConflict`` when there is no pack or it has ended."""
    spent_back = _settle(ledger, payer, now, refunded_amount=None)
    if spent_back is None:
        raise StoreConflict("no pack to end, or it has ended already")
    return spent_back


def refund_part(ledger: CheckLedger, payer: str, amount_refunded: int, now: datetime) -> int:
    """A partial refund (Stripe's cumulative ``amount_refunded`` on the pack's charge) takes
    back :func:`checks_paid_by` that amount, unused checks first; the pack stays open, and is
    simply empty when nothing is left. Returns the used checks it counted as refunded."""
    return _settle(ledger, payer, now, refunded_amount=amount_refunded) or 0


def window_metrics(ledger: CheckLedger, now: datetime) -> dict[str, Any]:
    """The criteria's tripwires over the 30 days ending today (house checks excluded)."""
    today = now.astimezone(UTC).date()
    days = [(today - timedelta(days=i)).isoformat() for i in range(WINDOW_DAYS)]
    paid = free = refunded = 0
    for item in ledger.days(days):
        paid += int(item.get("paid", 0))
        free += int(item.get("free", 0))
        refunded += int(item.get("refunded", 0))
    refund_share = refunded / paid if paid else 0.0
    return {
        "window_days": WINDOW_DAYS,
        "from": days[-1],
        "to": days[0],
        "paid_checks": paid,
        "refunded_checks": refunded,
        "free_checks": free,
        "refund_share": round(refund_share, 6),
        "free_to_paid": round(free / paid, 6) if paid else None,
        "tripwires": {
            "refunds_over_5_percent": refund_share > REFUND_SHARE_LIMIT,
            "free_over_10x_paid": free > FREE_TO_PAID_LIMIT * paid,
        },
    }


def public_window(window: dict[str, Any]) -> dict[str, Any]:
    """The window without its counts: its dates, the two ratios and the tripwires."""
    kept = ("window_days", "from", "to", "refund_share", "free_to_paid", "tripwires")
    return {k: window[k] for k in kept}


#: The CloudWatch metrics the scheduled measure publishes (``service/tripwires.py``); the
#: template's tripwire alarms read the ``Tripwire_*`` ones.
WINDOW_FIGURES = ("paid_checks", "refunded_checks", "free_checks", "refund_share")


def window_figures(window: dict[str, Any]) -> dict[str, float]:
    """Metric name -> value for one :func:`window_metrics`: each tripwire as 1 (crossed) or 0,
    and the window's figures, so a dashboard shows how close each is to its line."""
    figures = {
        f"Tripwire_{name}": 1.0 if crossed else 0.0 for name, crossed in window["tripwires"].items()
    }
    figures.update({f"Window_{name}": float(window[name]) for name in WINDOW_FIGURES})
    return figures


def refunded_amount(licence: Licence) -> int:
    """The most Stripe has said was refunded of this licence's payment (its partial refunds'
    cumulative ``amount_refunded``), 0 when none."""
    return max(
        (t.amount or 0 for t in licence.transitions if t.effect == "partial_refund"), default=0
    )


def on_licence_change(
    ledger: CheckLedger, licence: Licence, effect: Effect, *, now: datetime
) -> None:
    """The webhook's hook: a paid ``checks`` licence gets its pack; a partial refund takes back
    the checks it paid for; a revoked one (a full refund or a lost dispute) ends it. A partial
    refund that arrived before its checkout is applied when the pack is granted."""
    if licence.tier != "checks":
        return
    if effect == "issue":
        payment = licence.payment_intent or licence.session_id or licence.licence_id
        with suppress(StoreConflict):  # this payment's pack was granted already (a replay)
            ledger.grant(
                licence.licence_id,
                checks=PACK_CHECKS,
                payment_id=payment,
                granted_at=now.astimezone(UTC).isoformat(timespec="seconds"),
            )
    if effect in ("issue", "partial_refund") and refunded_amount(licence):
        refund_part(ledger, licence.licence_id, refunded_amount(licence), now)
    elif effect == "revoke":
        with suppress(StoreConflict):  # no pack was ever granted, or it ended already
            refund_pack(ledger, licence.licence_id, now)
