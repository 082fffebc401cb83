"""Stripe events -> licence changes: which events matter and what each one does.

Pure reading of already-verified event dicts (signature checking lives in
``adapters.stripe_api``; once-only processing is Powertools idempotency plus the per-licence
event-id check in ``licences.apply_change``). The rules (docs/api.md, ``POST /webhooks/stripe``): a paid checkout issues (tier from
``metadata.tier``, team from ``metadata.team``), a full refund revokes, a dispute suspends, a
dispute won reinstates (lost: revokes); unknown event types are acknowledged and ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolcall300.service.domain.licences import (
    Change,
    Effect,
    LicenceStore,
    Transition,
    licence_id_for,
    normalise_team,
    record_change,
)

#: charge id -> payment intent id, for a charge or dispute event that does not carry one.
PaymentLookup = Callable[[str], str | None]
#: (message, structured fields) -> None: the composition root passes the service's logger,
#: so this module stays free of Powertools (the domain rule in tests/core/test_import_rules.py).
EventLog = Callable[[str, dict[str, Any]], None]


def _no_log(_message: str, _fields: dict[str, Any]) -> None:
    return None


CHECKOUT_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded")


def _no_lookup(_charge_id: str) -> str | None:
    return None


def _checkout_change(event: dict[str, Any], session: dict[str, Any]) -> Change | None:
    if session.get("payment_status") != "paid":
        return None  # async methods complete unpaid first; async_payment_succeeded follows
    metadata = session.get("metadata") or {}
    tier = metadata.get("tier") if metadata.get("tier") in ("single", "team") else "single"
    pi, sid = session.get("payment_intent"), session.get("id")
    licence_id = licence_id_for(payment_intent=pi, session_id=sid)
    team = normalise_team(metadata.get("team"))
    if tier == "team" and team is None:
        # A paid team sale with no usable team name still gets its licence; the operator can
        # rename. Deterministic, so a redelivered event lands on the same name.
        team = "team-" + licence_id[4:16]
    checkout = {
        "tier": tier,
        "team": team if tier == "team" else None,
        "session_id": sid,
        "payment_intent": pi,
    }
    return Change(licence_id, _transition(event, "issue"), checkout)


def _transition(event: dict[str, Any], effect: Effect) -> Transition:
    return Transition(str(event["id"]), str(event["type"]), int(event.get("created", 0)), effect)


def _payment_of(obj: dict[str, Any], charge_id: str | None, lookup: PaymentLookup) -> str | None:
    pi = obj.get("payment_intent")
    if isinstance(pi, dict):  # expanded object
        pi = pi.get("id")
    if not pi and charge_id:
        pi = lookup(charge_id)
    return pi if isinstance(pi, str) and pi else None


def _dispute_effect(event_type: str, dispute: dict[str, Any]) -> Effect | None:
    if event_type == "charge.dispute.created":
        return "suspend"
    if event_type == "charge.dispute.closed":
        # won: reinstate; lost: the money is gone, so revoke; warning_closed (an inquiry that
        # never became a chargeback): reinstate.
        return "revoke" if dispute.get("status") == "lost" else "reinstate"
    return None


def interpret(event: dict[str, Any], *, lookup: PaymentLookup = _no_lookup) -> Change | None:
    """The licence change one verified event asks for, or None to acknowledge and ignore."""
    etype = event.get("type")
    obj = (event.get("data") or {}).get("object") or {}
    if not isinstance(obj, dict) or not isinstance(event.get("id"), str):
        return None
    if etype in CHECKOUT_EVENTS:
        return _checkout_change(event, obj)
    if etype == "charge.refunded":
        full = obj.get("refunded") is True or int(obj.get("amount_refunded") or 0) >= int(
            obj.get("amount") or 1
        )
        pi = _payment_of(obj, obj.get("id"), lookup)
        if pi is None:
            return None
        # A full refund revokes; a partial refund is recorded and changes nothing.
        return Change(
            licence_id_for(payment_intent=pi, session_id=None),
            _transition(event, "revoke" if full else "note"),
        )
    if etype in ("charge.dispute.created", "charge.dispute.closed"):
        effect = _dispute_effect(etype, obj)
        pi = _payment_of(obj, obj.get("charge"), lookup)
        if effect is None or pi is None:
            return None
        return Change(
            licence_id_for(payment_intent=pi, session_id=None), _transition(event, effect)
        )
    return None


def process_event(
    event: dict[str, Any],
    *,
    store: LicenceStore,
    lookup: PaymentLookup = _no_lookup,
    log: EventLog = _no_log,
) -> dict[str, Any]:
    """Apply one verified event; the JSON-able result is what idempotency replays on a retry."""
    change = interpret(event, lookup=lookup)
    if change is None:
        log("stripe event ignored", {"event_id": event.get("id"), "event_type": event.get("type")})
        return {"received": True, "applied": False}
    licence, changed = record_change(store, change)
    log(
        "stripe event recorded",
        {
            "event_id": change.transition.event_id,
            "event_type": change.transition.kind,
            "effect": change.transition.effect,
            "licence_id": change.licence_id,
            "status": licence.status if licence else None,
            "changed": changed,
        },
    )
    return {"received": True, "applied": changed}
