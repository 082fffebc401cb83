"""Stripe adapter: webhook signature verification and one read-only lookup.

``stripe`` is imported inside the functions that use it (about 0.3 s of cold start, paid only
by the webhook function). Verification runs on the raw body before anything else, with every
configured secret (current and previous during a rotation) and Stripe's tolerance.
"""

from __future__ import annotations

import json
from typing import Any

from toolcall300.service.errors import BadRequest, UpstreamUnavailable


def verify_event(
    payload: bytes, signature_header: str | None, secrets: list[str], *, tolerance: int
) -> dict[str, Any]:
    """The event dict if ``signature_header`` signs ``payload`` with one of ``secrets``.

    Raises ``BadRequest`` for an absent, forged, tampered or stale signature, and for a
    correctly signed body that is not a JSON event.
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
        try:
            event = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadRequest("signed body is not JSON", code="invalid_event") from exc
        if (
            not isinstance(event, dict)
            or not isinstance(event.get("id"), str)
            or not isinstance(event.get("type"), str)
        ):
            raise BadRequest("signed body is not a Stripe event", code="invalid_event")
        return event
    raise BadRequest("signature verification failed", code="signature_invalid")


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
        raise UpstreamUnavailable(
            "Stripe is unavailable; retry", code="stripe_unavailable"
        ) from exc
    pi = getattr(charge, "payment_intent", None)
    return pi if isinstance(pi, str) else None
