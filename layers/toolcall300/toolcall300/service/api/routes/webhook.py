"""``POST /webhooks/stripe``: verify the signature on the raw body, then process once per event id."""

from __future__ import annotations

from pydantic import BaseModel

from toolcall300.service.api import deps
from toolcall300.service.api.resolver import error_responses, make_router, ok_response, raw_body
from toolcall300.service.errors import PayloadTooLarge
from toolcall300.service.observability import count
from toolcall300.service.sdk.stripe import verify_event

router = make_router()

#: Stripe events are a few KB; anything far larger is not one of theirs.
MAX_EVENT_BYTES = 512 * 1024


class WebhookAck(BaseModel):
    received: bool
    applied: bool


@router.post(
    "/webhooks/stripe",
    summary="Stripe events: paid checkouts issue licences, refunds and disputes revoke or suspend them",
    responses={**ok_response(WebhookAck, "received"), **error_responses(400, 409, 413, 503)},
    tags=["licences"],
)
def stripe_webhook(served: deps.TheEdition, settings: deps.Webhook) -> WebhookAck:
    payload = raw_body(router.current_event.raw_event)
    if len(payload) > MAX_EVENT_BYTES:
        raise PayloadTooLarge("event too large", code="event_too_large")
    # Signature first, on the exact bytes Stripe signed, before any parsing.
    event = verify_event(
        payload,
        router.current_event.headers.get("stripe-signature"),
        served.webhook_secrets(),
        tolerance=settings.webhook_tolerance_s,
    )
    ack = WebhookAck.model_validate(served.stripe_event_processor(event, router.lambda_context))
    if ack.applied:
        count("StripeEventsApplied")
    return ack
