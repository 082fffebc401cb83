"""Unit-test fixtures for the service: moto in-process, resources created from template.yaml.

``aws`` opens ``mock_aws``, provisions every table, bucket and secret the template declares
(through the same code the local stack uses), points the functions' settings at them and
clears the data and caches between tests. ``call`` invokes the real Lambda handlers through the
local gateway's event builder, in-process. Webhook requests are built and signed, and
Stripe's API answered, by ``support.stripe``; ``stripe_api`` installs that fake API.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.gateway import Call
from support.stripe import OLD_SECRET, STRIPE_TEST_API_KEY, TEST_SECRET, StripeApi

from toolcall300.service.local.stack import FAKE_AWS_ENV, LOCAL_EDITION_ENV

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    from toolcall300.service.local.cfn import load_template

    return load_template(ROOT / "template.yaml")


FAKE_ENV = {
    **FAKE_AWS_ENV,
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

    from toolcall300.service.api import wiring
    from toolcall300.service.local.provision import provision

    saved = dict(os.environ)
    os.environ.update(FAKE_ENV)
    # The unit tier runs on moto: an in-process local stack still serving in this session
    # (the integration tier's session-scoped one) must not hand these tests its SQLite edition.
    for name in ("AWS_ENDPOINT_URL", *LOCAL_EDITION_ENV):
        os.environ.pop(name, None)
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
        # This module's own AWS edition, on moto; the process's edition before it (none, or
        # another suite's) is back, untouched, once the module is done.
        with wiring.installed():
            yield made
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
    from toolcall300.service.local.httpapi import bind_routes

    return bind_routes(ROOT, template)


@pytest.fixture
def overrides(routes: list[Any]) -> Iterator[dict[Any, Any]]:
    """Powertools' ``dependency_overrides`` of every function :func:`call` reaches, one table
    for all, empty again after the test: ``overrides[deps.clock] = lambda: stopped``."""
    table: dict[Any, Any] = {}
    apps = {id(b.app): b.app for b in routes if b.app is not None}.values()
    before = [(app, app.dependency_overrides) for app in apps]
    for app, _ in before:
        app.dependency_overrides = table
    try:
        yield table
    finally:
        for app, kept in before:
            app.dependency_overrides = kept


@pytest.fixture
def call(aws: Any, routes: list[Any]) -> Call:
    """``call("GET", "/licence", headers={...}, body=b"...", ip="1.2.3.4")`` -> (status, headers, json)."""
    from toolcall300.service.local.httpapi import invoke

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
