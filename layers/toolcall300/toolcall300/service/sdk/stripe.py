"""Stripe adapter: webhook signature verification, Checkout Session creation, two lookups.

``stripe`` is imported inside the functions that use it (about 0.3 s of cold start, paid only
by the webhook function). Verification runs on the raw body before anything else, with every
configured secret (current and previous during a rotation) and Stripe's tolerance.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from toolcall300.canonical import loads_strict
from toolcall300.service.domain.products import Product
from toolcall300.service.errors import BadRequest, UpstreamUnavailable


def verify_event(
    payload: bytes, signature_header: str | None, secrets: list[str], *, tolerance: int
) -> dict[str, Any]:
    """The event dict if ``signature_header`` signs ``payload`` with one of ``secrets``.

    Raises ``BadRequest`` for an absent, forged, tampered or stale signature, one dated more
    than ``tolerance`` ahead, and for a correctly signed body that is not a JSON event.
    """
    import stripe

    if not signature_header:
        raise BadRequest("missing Stripe-Signature header", code="signature_missing")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest("body is not UTF-8", code="invalid_event") from exc
    for secret in (s for s in secrets if s):
        try:
            stripe.WebhookSignature.verify_header(text, signature_header, secret, tolerance)
        except stripe.SignatureVerificationError:
            continue
        if _signed_at(signature_header) > time.time() + tolerance:
            # the library bounds only the past: a header dated ahead would stay replayable
            # for as long as it is ahead
            raise BadRequest("the signature is dated in the future", code="signature_invalid")
        try:  # strictly: a duplicate "id" would dedupe on one id and apply the other
            event = loads_strict(text)
        except (ValueError, RecursionError):  # not JSON, not strict JSON, or nested past the stack
            raise BadRequest("signed body is not strict JSON", code="invalid_event") from None
        if (
            not isinstance(event, dict)
            or not isinstance(event.get("id"), str)
            or not isinstance(event.get("type"), str)
        ):
            raise BadRequest("signed body is not a Stripe event", code="invalid_event")
        return event
    raise BadRequest("signature verification failed", code="signature_invalid")


def _signed_at(signature_header: str) -> int:
    """The header's ``t=`` (it verified, so it has exactly the one the library used)."""
    for item in signature_header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t" and value.isdigit():
            return int(value)
    return 0


def charge_payment_intent(charge_id: str, *, api_key: str) -> str | None:
    """The payment intent of a charge (for refund/dispute events that omit it), or None."""
    import stripe

    if not api_key:
        return None
    try:
        charge = stripe.Charge.retrieve(charge_id, api_key=api_key)
    except stripe.InvalidRequestError:
        return None
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    pi = getattr(charge, "payment_intent", None)
    return pi if isinstance(pi, str) else None


def _unavailable(exc: Exception) -> UpstreamUnavailable:
    return UpstreamUnavailable("Stripe is unavailable; retry", code="stripe_unavailable")


def create_checkout_session(
    product: Product,
    *,
    api_key: str,
    metadata: Mapping[str, str],
    client_reference_id: str,
    success_url: str,
    idempotency_key: str,
) -> tuple[str, str]:
    """(session id, hosted page URL) of a new one-item Checkout Session for ``product``.

    The price comes from the product table, never from the buyer; ``metadata`` (set by the
    service) is copied onto the payment intent too, so the payment carries it. Stripe fills
    ``{CHECKOUT_SESSION_ID}`` in ``success_url``.
    """
    import stripe

    if not api_key:
        raise UpstreamUnavailable("checkout is not configured", code="checkout_unavailable")
    try:
        session = stripe.checkout.Session.create(
            api_key=api_key,
            idempotency_key=idempotency_key,
            mode="payment",
            line_items=[
                {
                    "quantity": 1,
                    "price_data": {
                        "currency": product.currency,
                        "unit_amount": product.amount,
                        "product_data": {"name": product.name},
                    },
                }
            ],
            metadata=dict(metadata),
            payment_intent_data={"metadata": dict(metadata)},
            client_reference_id=client_reference_id,
            success_url=success_url,
        )
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    if not isinstance(session.id, str) or not isinstance(session.url, str):
        raise UpstreamUnavailable("Stripe answered without a session", code="stripe_unavailable")
    return session.id, session.url


def session_payment_ids(session_id: str, *, api_key: str) -> list[str]:
    """The payment intent and charge ids of a session (for a checkout event without them)."""
    import stripe

    if not api_key:
        return []
    try:
        session = stripe.checkout.Session.retrieve(
            session_id, api_key=api_key, expand=["payment_intent"]
        )
    except stripe.InvalidRequestError:
        return []
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    pi = getattr(session, "payment_intent", None)
    if isinstance(pi, str):
        return [pi]
    if pi is None:
        return []
    charge = getattr(pi, "latest_charge", None)
    charge_id = charge if isinstance(charge, str) else getattr(charge, "id", None)
    return [str(i) for i in (getattr(pi, "id", None), charge_id) if isinstance(i, str)]
