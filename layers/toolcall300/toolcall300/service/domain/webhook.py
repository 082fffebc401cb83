"""Stripe events -> licence changes: which events matter and what each one does.

Pure reading of already-verified event dicts (signature checking lives in ``sdk.stripe``;
once-only processing is Powertools idempotency plus the per-licence event-id check in
``licences.apply_change``). The rules (docs/tenancy.md): a paid checkout issues a licence only
when it paid the configured price of a known product (``domain.products``); the team is the
identity the service put in the session's metadata, the typed name only its display name; a
full refund revokes; a partial refund is recorded with its cumulative amount (a pack of checks
gives back what it paid for, docs/argcheck-payment.md); a dispute suspends until it closes
(won: reinstated, lost: revoked); unknown event types are acknowledged and ignored. A signed event whose fields have the wrong
shape is refused (400 ``invalid_event``) before anything is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from toolcall300.service.domain.licences import (
    Change,
    Effect,
    Licence,
    LicenceStore,
    Transition,
    licence_id_for,
    link_references,
    record_change,
    resolve_reference,
    team_id_or_none,
    team_name_problem,
)
from toolcall300.service.domain.products import paid_mismatch, product_named
from toolcall300.service.errors import BadRequest

#: charge id -> payment intent id, for a charge or dispute event that does not carry one.
PaymentLookup = Callable[[str], str | None]
#: session id -> the payment ids Stripe knows for it (payment intent, charge), for a checkout
#: event that arrived without them.
SessionLookup = Callable[[str], list[str]]
#: (message, structured fields) -> None: the composition root passes the service's logger,
#: so this module stays free of Powertools (the domain rule in tests/core/test_import_rules.py).
EventLog = Callable[[str, dict[str, Any]], None]

CHECKOUT_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded")
DISPUTE_EVENTS = ("charge.dispute.created", "charge.dispute.closed")
#: Stripe's ``created`` is epoch seconds; anything past this (year 2514) is not a real time.
MAX_CREATED = 17_000_000_000


def _no_log(_message: str, _fields: dict[str, Any]) -> None:
    return None


def _no_lookup(_charge_id: str) -> str | None:
    return None


def _no_session_lookup(_session_id: str) -> list[str]:
    return []


def _invalid(what: str) -> BadRequest:
    return BadRequest(f"signed event has an invalid {what}", code="invalid_event")


def _object_of(event: dict[str, Any]) -> dict[str, Any]:
    """The event's ``data.object``, refusing every other shape (and a non-integer ``created``)."""
    created = event.get("created")
    if type(created) is not int or not 0 <= created <= MAX_CREATED:
        raise _invalid("'created' (epoch seconds)")
    data = event.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    if not isinstance(obj, dict):
        raise _invalid("'data.object'")
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _invalid("'metadata'")
    return obj


def _id_of(value: object, what: str) -> str | None:
    """A Stripe id given as a string, an expanded object with an ``id``, or null."""
    if isinstance(value, dict):
        value = value.get("id")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _invalid(f"'{what}'")
    return value


def _amount(obj: dict[str, Any], name: str) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise _invalid(f"'{name}'")
    return value


def _transition(event: dict[str, Any], effect: Effect, subject: str | None = None) -> Transition:
    return Transition(str(event["id"]), str(event["type"]), int(event["created"]), effect, subject)


def _session_refs(session: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The session's payment intent and every Stripe id a later refund or dispute may name."""
    raw_pi = session.get("payment_intent")
    pi = _id_of(raw_pi, "payment_intent")
    refs = [r for r in (pi, _id_of(session.get("id"), "id")) if r]
    if isinstance(raw_pi, dict):  # expanded: its charge is named by refunds and disputes
        charge = _id_of(raw_pi.get("latest_charge"), "payment_intent.latest_charge")
        refs += [charge] if charge else []
    return pi, refs


def _team_of(metadata: dict[str, Any], licence_id: str) -> tuple[str, str | None]:
    """(team identity, display name): the identity the service put in the metadata, or one
    derived from the licence (a session made outside ``POST /checkout``); never the typed name."""
    team = team_id_or_none(metadata.get("team_id"))
    if team is None:
        team = "team-" + hashlib.sha256(f"team:{licence_id}".encode()).hexdigest()[:16]
    name = metadata.get("team_name", metadata.get("team"))
    return team, name.strip() if isinstance(name, str) and team_name_problem(name) is None else None


def _checkout_change(
    event: dict[str, Any],
    session: dict[str, Any],
    *,
    session_lookup: SessionLookup,
    alert: EventLog,
) -> tuple[Change, list[str]] | None:
    if session.get("payment_status") != "paid":
        return None  # async methods complete unpaid first; async_payment_succeeded follows
    sid = _id_of(session.get("id"), "id")
    if sid is None:
        raise _invalid("'id'")
    pi, refs = _session_refs(session)
    if pi is None:
        looked_up = session_lookup(sid)
        pi = next((r for r in looked_up if r.startswith("pi_")), None)
        refs += looked_up
    metadata = session.get("metadata") or {}
    product = product_named(metadata.get("product", metadata.get("tier")))
    fields = {"event_id": event["id"], "session_id": sid}
    if product is None:
        alert("paid checkout names no product we sell; no licence issued", fields)
        return None
    mismatch = paid_mismatch(product, session)
    if mismatch is not None:
        alert(
            "paid checkout does not match its product's price; no licence issued",
            {**fields, "product": product.product, "reason": mismatch},
        )
        return None
    licence_id = licence_id_for(payment_intent=pi, session_id=sid)
    team, team_name = _team_of(metadata, licence_id) if product.needs_team else (None, None)
    checkout = {
        "tier": product.tier,
        "team": team,
        "team_name": team_name,
        "session_id": sid,
        "payment_intent": pi,
    }
    return Change(licence_id, _transition(event, "issue"), checkout), refs


def _payment_licence(
    store: LicenceStore, named: Iterable[str | None], charge: str | None, lookup: PaymentLookup
) -> str | None:
    """The licence a refund or dispute is about: through any id its checkout recorded, else its
    payment intent (asked of Stripe when only the charge is named)."""
    ids = [i for i in named if i]
    for ref in ids:
        found = resolve_reference(store, ref)
        if found:
            return found
    pi = next((i for i in ids if i.startswith("pi_")), None)
    if pi is None and charge:
        pi = lookup(charge)
    return licence_id_for(payment_intent=pi, session_id=None) if pi else None


def _dispute_effect(event_type: str, dispute: dict[str, Any]) -> Effect | None:
    if event_type == "charge.dispute.created":
        return "suspend"
    if event_type == "charge.dispute.closed":
        # won: reinstate; lost: the money is gone, so revoke; warning_closed (an inquiry that
        # never became a chargeback): reinstate.
        return "revoke" if dispute.get("status") == "lost" else "reinstate"
    return None


def interpret(
    event: dict[str, Any],
    *,
    store: LicenceStore,
    lookup: PaymentLookup = _no_lookup,
    session_lookup: SessionLookup = _no_session_lookup,
    alert: EventLog = _no_log,
) -> tuple[Change, list[str]] | None:
    """(change, Stripe ids to link to it) that one verified event asks for, or None to ignore.

    Raises ``BadRequest`` for a handled event whose fields have the wrong shape.
    """
    etype = event.get("type")
    if not isinstance(event.get("id"), str):
        raise _invalid("'id'")
    if etype not in (*CHECKOUT_EVENTS, "charge.refunded", *DISPUTE_EVENTS):
        return None
    obj = _object_of(event)
    if etype in CHECKOUT_EVENTS:
        return _checkout_change(event, obj, session_lookup=session_lookup, alert=alert)
    if etype == "charge.refunded":
        amount, refunded = _amount(obj, "amount"), _amount(obj, "amount_refunded")
        full = obj.get("refunded") is True or (
            amount is not None and refunded is not None and refunded >= amount
        )
        charge = _id_of(obj.get("id"), "id")
        pi = _id_of(obj.get("payment_intent"), "payment_intent")
        licence_id = _payment_licence(store, (pi, charge), charge, lookup)
        if licence_id is None:
            return None
        if full:
            return Change(licence_id, _transition(event, "revoke")), []
        # A partial refund carries Stripe's cumulative amount_refunded: a pack gives back the
        # checks it paid for (ledger.refund_part); a corpus licence stays as it is.
        partial = _transition(event, "partial_refund" if refunded else "note")
        return Change(licence_id, replace(partial, amount=refunded or None)), []
    effect = _dispute_effect(str(etype), obj)
    charge = _id_of(obj.get("charge"), "charge")
    pi = _id_of(obj.get("payment_intent"), "payment_intent")
    if isinstance(obj.get("charge"), dict) and pi is None:
        pi = _id_of(obj["charge"].get("payment_intent"), "charge.payment_intent")
    licence_id = _payment_licence(store, (pi, charge), charge, lookup)
    if effect is None or licence_id is None:
        return None
    subject = _id_of(obj.get("id"), "id")
    return Change(licence_id, _transition(event, effect, subject)), []


def process_event(
    event: dict[str, Any],
    *,
    store: LicenceStore,
    lookup: PaymentLookup = _no_lookup,
    session_lookup: SessionLookup = _no_session_lookup,
    log: EventLog = _no_log,
    alert: EventLog = _no_log,
    on_change: Callable[[Licence, Effect], None] | None = None,
) -> dict[str, Any]:
    """Apply one verified event; the JSON-able result is what idempotency replays on a retry.

    ``log`` records what happened; ``alert`` is for what the operator must look at (a paid
    checkout that issued nothing); ``on_change`` sees each licence a change recorded (the
    argument checker's packs are granted on issue and ended on revoke, docs/argcheck-payment.md).
    """
    found = interpret(event, store=store, lookup=lookup, session_lookup=session_lookup, alert=alert)
    if found is None:
        log("stripe event ignored", {"event_id": event.get("id"), "event_type": event.get("type")})
        return {"received": True, "applied": False}
    change, refs = found
    licence, changed = record_change(store, change)
    link_references(store, change.licence_id, refs)
    if changed and licence is not None and on_change is not None:
        on_change(licence, change.transition.effect)
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
