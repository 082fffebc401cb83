"""Unit-test fixtures for the service: moto in-process, resources created from template.yaml.

``aws`` opens ``mock_aws``, provisions every table, bucket and secret the template declares
(through the same code the local stack uses), points the functions' settings at them and
clears the data and caches between tests. ``call`` invokes the real Lambda handlers through the
local gateway's event builder, in-process. ``stripe_event``/``signed`` build webhook requests
from Stripe's own example objects (fixtures/stripe, MIT) and sign them with the stripe library.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "stripe"
TEST_SECRET = "whsec_unit_current_secret"
OLD_SECRET = "whsec_unit_previous_secret"


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    from toolcall300.service.local.cfn import load_template

    return load_template(ROOT / "template.yaml")


FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


@pytest.fixture(scope="module")
def aws_session(template: dict[str, Any]) -> Iterator[Any]:
    """One ``mock_aws`` and one provisioning per test module (creating clients and tables is
    the slow part); ``aws`` empties the data between tests. Module scope, not session: the mock
    patches botocore process-wide and the environment is process-wide, so both must be gone
    before another module's (or the integration suite's real-HTTP) tests run."""
    from moto import mock_aws

    from toolcall300.service.api import wiring as ports
    from toolcall300.service.local.provision import provision

    saved = dict(os.environ)
    os.environ.update(FAKE_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    ports.clear_ports()
    with mock_aws():
        made = provision(
            template,
            prefix="tc300-unit",
            secret_values={
                "StripeWebhookSecret": json.dumps({"current": TEST_SECRET, "previous": OLD_SECRET}),
                "StripeApiKeySecret": json.dumps({"api_key": ""}),
            },
        )
        os.environ.update(made.environment)
        ports.clear_ports()
        yield made
        ports.clear_ports()
    os.environ.clear()
    os.environ.update(saved)


def _wipe(made: Any) -> None:
    """Delete every item and object the previous test left behind."""
    from toolcall300.service.sdk.aws import client, dynamodb_table

    for logical, name in made.names.items():
        if logical.endswith("Table"):
            table = dynamodb_table(name)
            keys = [k["AttributeName"] for k in table.key_schema]
            for item in table.scan()["Items"]:
                table.delete_item(Key={k: item[k] for k in keys})
        elif logical.endswith("Bucket"):
            s3 = client("s3")
            for v in s3.list_object_versions(Bucket=name).get("Versions", []):
                s3.delete_object(Bucket=name, Key=v["Key"], VersionId=v["VersionId"])


@pytest.fixture
def aws(aws_session: Any) -> Iterator[Any]:
    from toolcall300.service.domain import corpus
    from toolcall300.service.sdk.secrets import clear_secret_cache

    _wipe(aws_session)
    corpus.clear_cache()
    clear_secret_cache()
    yield aws_session
    corpus.clear_cache()


@pytest.fixture(scope="session")
def routes(template: dict[str, Any]) -> list[Any]:
    from toolcall300.service.local.gateway import bind_routes

    return bind_routes(ROOT, template)


Call = Callable[..., tuple[int, dict[str, str], Any]]


@pytest.fixture
def call(aws: Any, routes: list[Any]) -> Call:
    """``call("GET", "/licence", headers={...}, body=b"...", ip="1.2.3.4")`` -> (status, headers, json)."""
    from toolcall300.service.local.gateway import invoke

    def _call(
        method: str,
        target: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
        ip: str = "198.51.100.7",
    ) -> tuple[int, dict[str, str], Any]:
        status, out_headers, data = invoke(
            routes,
            method=method,
            target=target,
            headers=list((headers or {}).items()),
            body=body,
            source_ip=ip,
        )
        return status, out_headers, json.loads(data) if data else None

    return _call


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


def refunded_charge(*, payment_intent: str, full: bool = True) -> dict[str, Any]:
    charge = fixture("charge")
    charge.update(
        {
            "payment_intent": payment_intent,
            "refunded": full,
            "amount_refunded": charge["amount"] if full else 1,
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


@pytest.fixture
def stripe_api(aws: Any) -> Iterator[StripeApi]:
    """A Stripe API for the service (its restricted key stored), answered by ``StripeApi``."""
    import stripe

    from toolcall300.service.sdk.aws import client
    from toolcall300.service.sdk.secrets import clear_secret_cache

    name = aws.names["StripeApiKeySecret"]
    sm = client("secretsmanager")
    sm.put_secret_value(SecretId=name, SecretString=json.dumps({"api_key": STRIPE_TEST_API_KEY}))
    clear_secret_cache()
    api, previous = StripeApi(), stripe.default_http_client
    stripe.default_http_client = api.client
    try:
        yield api
    finally:
        stripe.default_http_client = previous
        sm.put_secret_value(SecretId=name, SecretString=json.dumps({"api_key": ""}))
        clear_secret_cache()
