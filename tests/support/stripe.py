"""Stripe for tests: Stripe's own example objects, signed with the stripe library, and a
fake Stripe API behind the library's own HTTP-client hook.

The objects are Stripe's published fixtures (``tests/unit/fixtures/stripe``, MIT); each helper
copies one and sets only what a test needs. ``signed`` signs with ``TEST_SECRET`` (or the
previous secret of a rotation): no network, no live keys. The ``stripe_api`` fixture that
installs :class:`StripeApi` is in ``tests/unit/conftest.py``.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "stripe"
TEST_SECRET = "whsec_unit_current_secret"
OLD_SECRET = "whsec_unit_previous_secret"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def stripe_event(
    event_type: str, obj: dict[str, Any], *, event_id: str, created: int | None = None
) -> dict[str, Any]:
    """An event in Stripe's own shape (fixtures/stripe/event.json) wrapping ``obj``."""
    event = fixture("event")
    event.update({"id": event_id, "type": event_type, "created": created or int(time.time())})
    event["data"] = {"object": copy.deepcopy(obj)}
    return event


def paid_session(
    *,
    session_id: str,
    payment_intent: str | dict[str, Any] | None,
    tier: str = "single",
    team: str | None = None,
    team_id: str | None = None,
) -> dict[str, Any]:
    """A paid session as ``POST /checkout`` makes them: the product's price, the service's
    metadata (``team`` is the display name; ``team_id`` the identity, when the test fixes it)."""
    from toolcall300.service.domain.products import PRODUCTS

    session = fixture("checkout_session")
    session.update(
        {
            "id": session_id,
            "payment_intent": payment_intent,
            "payment_status": "paid",
            "status": "complete",
            "amount_total": PRODUCTS[tier].amount,
            "currency": PRODUCTS[tier].currency,
        }
    )
    session["metadata"] = {
        "product": tier,
        "tier": tier,
        **({"team_name": team} if team else {}),
        **({"team_id": team_id} if team_id else {}),
    }
    return session


def refunded_charge(
    *,
    payment_intent: str,
    full: bool = True,
    amount: int | None = None,
    amount_refunded: int | None = None,
) -> dict[str, Any]:
    """A charge as ``charge.refunded`` carries it: ``amount_refunded`` is the cumulative total
    refunded so far (each partial refund sends the charge again with the new total), and
    ``refunded`` is true only once all of ``amount`` is back."""
    charge = fixture("charge")
    total = charge["amount"] if amount is None else amount
    back = total if full else (1 if amount_refunded is None else amount_refunded)
    charge.update(
        {
            "payment_intent": payment_intent,
            "amount": total,
            "amount_captured": total,
            "refunded": back >= total,
            "amount_refunded": back,
        }
    )
    return charge


def dispute(*, payment_intent: str, status: str = "needs_response") -> dict[str, Any]:
    d = fixture("dispute")
    d.update({"payment_intent": payment_intent, "status": status})
    return d


def signed(
    event: dict[str, Any] | str, secret: str = TEST_SECRET, timestamp: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """(body, headers) for POST /webhooks/stripe, signed with the stripe library."""
    import stripe

    payload = event if isinstance(event, str) else json.dumps(event)
    header = stripe.WebhookSignature.generate_signature_header(payload, secret, timestamp=timestamp)
    return payload.encode(), {"stripe-signature": header, "content-type": "application/json"}


class StripeApi:
    """The stripe library's HTTP client for a test: canned answers, every request recorded.

    Installed as ``stripe.default_http_client`` (the library's own hook), so the service's
    Stripe calls run through the real library and never reach the network.
    """

    def __init__(self) -> None:
        import stripe

        class _Client(stripe.HTTPClient):
            name = "unit-test"

            def request(
                inner,
                method: str,
                url: str,
                headers: Any,
                post_data: Any = None,
                *,
                _usage: Any = None,
            ) -> tuple[str, int, dict[str, str]]:
                from urllib.parse import parse_qsl, urlsplit

                parts = urlsplit(url)
                form = post_data.decode() if isinstance(post_data, bytes) else (post_data or "")
                self.requests.append(
                    (method, parts.path, dict(parse_qsl(form or parts.query)), headers)
                )
                body, status = self.answers.get(
                    (method, parts.path),
                    (
                        {"error": {"type": "invalid_request_error", "message": "no such object"}},
                        404,
                    ),
                )
                return json.dumps(body), status, {"Content-Type": "application/json"}

            def close(inner) -> None:
                return None

        self.client = _Client()
        self.answers: dict[tuple[str, str], tuple[dict[str, Any], int]] = {}
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []

    def answer(self, method: str, path: str, body: dict[str, Any], status: int = 200) -> None:
        self.answers[(method, path)] = (body, status)


STRIPE_TEST_API_KEY = "sk_test_unit_only"
