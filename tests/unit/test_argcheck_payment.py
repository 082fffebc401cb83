"""Paid argument checks through the real handler: packs, exactly-once charging, the ledger's
closed field list, the 30-day tripwires (toolcall300.service.domain.ledger)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from support.gateway import Call

from toolcall300.service.domain import ledger
from toolcall300.service.domain.licences import issue_manual
from toolcall300.service.errors import StoreConflict
from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def body(arguments: Any, schema: dict[str, Any] = SCHEMA) -> bytes:
    return json.dumps({"schema": schema, "arguments": arguments}).encode()


def buyer(aws: Any, checks: int | None) -> tuple[dict[str, str], str, CheckLedgerTable]:
    """A licence key (as an Authorization header), its id and the ledger, with a pack of
    ``checks`` (None: no pack, a corpus licence only)."""
    key, licence = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", team=None, now=datetime.now(UTC)
    )
    book = CheckLedgerTable(aws.names["CheckLedgerTable"])
    if checks is not None:
        book.grant(
            licence.licence_id,
            checks=checks,
            payment_id="cs_test_pack",
            granted_at=datetime.now(UTC).isoformat(),
        )
    return {"authorization": f"Bearer {key}"}, licence.licence_id, book


def test_a_pack_pays_for_exactly_its_checks_then_402_says_the_price_and_where_to_buy(
    call: Call, aws: Any
) -> None:
    auth, payer, book = buyer(aws, 2)
    assert [call("POST", "/check", body=body({"n": i}), headers=auth)[0] for i in (1, 2)] == [
        200,
        200,
    ]
    status, _, data = call("POST", "/check", body=body({"n": 3}), headers=auth)
    assert status == 402 and data["error"]["code"] == "no_paid_checks"
    assert data["error"]["price"] == {"amount": 2, "currency": "usd", "basis": "per check"}
    assert data["error"]["buy"]["path"] == "/checkout"
    assert data["error"]["buy"]["amount"] == data["error"]["buy"]["checks"] * 2
    assert (book.pack(payer) or {})["remaining"] == 0
    # Refusals stay free for a key holder too.
    assert call("POST", "/check", body=b"{bad", headers=auth)[0] == 400


def test_a_corpus_licence_without_a_pack_does_not_get_unlimited_checks(
    call: Call, aws: Any
) -> None:
    auth, _, _ = buyer(aws, None)
    status, _, data = call("POST", "/check", body=body({"n": 1}), headers=auth)
    assert status == 402 and data["error"]["code"] == "no_paid_checks"
    assert call("POST", "/check", body=body({"n": 1}))[0] == 200  # the free tier is unchanged


def test_a_retry_with_the_same_idempotency_key_is_charged_once(call: Call, aws: Any) -> None:
    auth, payer, book = buyer(aws, 1)
    retry = {**auth, "idempotency-key": "order-17-check-1"}
    first = call("POST", "/check", body=body({"n": "3"}), headers=retry)
    again = call("POST", "/check", body=body({"n": "3"}), headers=retry)
    assert first[0] == again[0] == 200
    assert first[2]["request_digest"] == again[2]["request_digest"]
    assert (book.pack(payer) or {})["remaining"] == 0
    # A different request under the same key is another check: the pack is empty now.
    assert call("POST", "/check", body=body({"n": 4}), headers=retry)[0] == 402
    bad = {**auth, "idempotency-key": "x" * 129}
    assert call("POST", "/check", body=body({"n": 1}), headers=bad)[0] == 400


def test_a_refunded_pack_stops_and_counts_against_the_refund_tripwire(call: Call, aws: Any) -> None:
    auth, payer, book = buyer(aws, 10)
    for i in range(4):
        assert call("POST", "/check", body=body({"n": i}), headers=auth)[0] == 200
    assert ledger.refund_pack(book, payer, datetime.now(UTC)) == 4
    with pytest.raises(StoreConflict):  # a second revoke (a lost dispute after a refund)
        ledger.refund_pack(book, payer, datetime.now(UTC))
    assert call("POST", "/check", body=body({"n": 9}), headers=auth)[0] == 402
    window = call("GET", "/metrics")[2]["window"]
    # house licences are excluded from paid use: an operator's own checks are not sales.
    assert window["paid_checks"] == 0 and window["refunded_checks"] == 4


def test_window_metrics_flag_the_criteria_thresholds() -> None:
    class Days:
        def __init__(self, items: dict[str, dict[str, int]]) -> None:
            self.items = items

        def days(self, days: list[str]) -> list[dict[str, Any]]:
            return [self.items[d] for d in days if d in self.items]

    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    today, old = "2026-12-01", (now - timedelta(days=30)).strftime("%Y-%m-%d")
    calm = ledger.window_metrics(Days({today: {"paid": 100, "refunded": 5, "free": 1000}}), now)  # type: ignore[arg-type]
    assert calm["tripwires"] == {"refunds_over_5_percent": False, "free_over_10x_paid": False}
    hot = ledger.window_metrics(Days({today: {"paid": 100, "refunded": 6, "free": 1001}}), now)  # type: ignore[arg-type]
    assert hot["tripwires"] == {"refunds_over_5_percent": True, "free_over_10x_paid": True}
    assert hot["refund_share"] == 0.06 and hot["free_to_paid"] == 10.01
    # Day 31 is outside the window.
    out = ledger.window_metrics(Days({old: {"paid": 1, "refunded": 1}}), now)  # type: ignore[arg-type]
    assert out["paid_checks"] == 0 and out["from"] == "2026-11-02"
    none_paid = ledger.window_metrics(Days({today: {"free": 1}}), now)  # type: ignore[arg-type]
    assert none_paid["free_to_paid"] is None and none_paid["tripwires"]["free_over_10x_paid"]


def test_paid_and_free_checks_are_counted_in_the_window(call: Call, aws: Any) -> None:
    auth, payer, _ = buyer(aws, 5)
    # A bought pack is not a house licence: mark this one as a Stripe purchase.
    table = boto3.resource("dynamodb").Table(aws.names["LicencesTable"])
    table.update_item(
        Key={"licence_id": payer},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "source"},
        ExpressionAttributeValues={":s": "stripe"},
    )
    call("POST", "/check", body=body({"n": 1}), headers=auth)
    call("POST", "/check", body=body({"n": 1}), ip="203.0.113.50")
    window = call("GET", "/metrics")[2]["window"]
    assert (window["paid_checks"], window["free_checks"]) == (1, 1)
    record = next(
        i
        for i in boto3.resource("dynamodb").Table(aws.names["CheckLedgerTable"]).scan()["Items"]
        if str(i["id"]).startswith("check#")
    )
    assert set(record) - {"id"} == set(ledger.LEDGER_FIELDS)
    assert record["payer"] == payer and record["payment_id"] == "cs_test_pack"
    assert record["house"] is False and record["verdict_line"] == "VALID: no repair was needed"


MARKER = "zq7MARKERq7z"


def test_no_argument_value_or_key_reaches_any_stored_item_or_log_line(
    call: Call, aws: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The criteria's custody: blobs and schemas are processed in memory only."""
    auth, _, _ = buyer(aws, 20)
    schema = {
        "type": "object",
        "properties": {
            MARKER: {"type": "integer", "maximum": 3},
            f"{MARKER}s": {"type": "array", "items": {"type": "string", "enum": [MARKER]}},
            f"{MARKER}b": {"type": "boolean"},
        },
        "required": [f"{MARKER}r"],
        "additionalProperties": False,
    }
    submissions = [
        {MARKER: f"{MARKER}", f"{MARKER}s": [MARKER.upper()]},  # UNREPAIRABLE
        {MARKER: "2", f"{MARKER}s": MARKER.upper(), f"{MARKER}r": MARKER},  # REPAIRED
        {MARKER: 9, f"{MARKER}x": MARKER},  # defects naming keys
    ]
    with caplog.at_level(logging.DEBUG):
        for args in submissions:
            for headers in (auth, {}):
                call("POST", "/check", body=body(args, schema), headers=headers, ip="203.0.113.60")
                call("POST", "/precheck", body=body(args, schema), headers=headers)
        text = json.dumps({"schema": schema, "arguments_text": f'{{"{MARKER}": 1,'})
        call("POST", "/check", body=text.encode(), headers=auth)
        call("POST", "/check", body=f'{{"{MARKER}": '.encode(), headers=auth)  # refusal
        call("GET", "/metrics")
    assert MARKER.lower() not in caplog.text.lower()
    dynamodb = boto3.client("dynamodb")
    scanned = 0
    for name in dynamodb.list_tables()["TableNames"]:
        for item in boto3.resource("dynamodb").Table(name).scan()["Items"]:
            scanned += 1
            assert MARKER.lower() not in json.dumps(item, default=str).lower(), name
    assert scanned > 0
    s3 = boto3.client("s3")
    for bucket in s3.list_buckets()["Buckets"]:
        for obj in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            data = s3.get_object(Bucket=bucket["Name"], Key=obj["Key"])["Body"].read()
            assert MARKER.lower().encode() not in data.lower()


# ------------------------------------------------------------------------- buying a pack


def _post_event(call: Call, event: dict[str, Any]) -> int:
    from support.stripe import signed

    raw, headers = signed(event)
    return call("POST", "/webhooks/stripe", headers=headers, body=raw)[0]


def test_a_pack_bought_through_checkout_pays_for_checks_only_and_a_refund_ends_it(
    call: Call, aws: Any
) -> None:
    from support.stripe import paid_session, refunded_charge, stripe_event

    from toolcall300.argcheck.report import verify_report
    from toolcall300.service.domain.products import product_named

    pack = product_named(ledger.PACK_PRODUCT)
    assert pack is not None and (pack.amount, pack.currency) == (1000, "usd")
    session = paid_session(session_id="cs_test_pack", payment_intent="pi_pack", tier="checks-500")
    event = stripe_event("checkout.session.completed", session, event_id="evt_pack")
    assert _post_event(call, event) == 200
    assert _post_event(call, {**event, "id": "evt_pack_again"}) == 200  # a replay grants nothing
    status, _, claimed = call("GET", "/licence/claim?session_id=cs_test_pack")
    assert status == 200 and claimed["tier"] == "checks"
    auth = {"authorization": f"Bearer {claimed['key']}"}
    book = CheckLedgerTable(aws.names["CheckLedgerTable"])
    assert (book.pack(claimed["licence_id"]) or {})["remaining"] == ledger.PACK_CHECKS

    status, _, answer = call("POST", "/check", body=body({"n": "7"}), headers=auth)
    assert status == 200 and verify_report(answer, call("GET", "/.well-known/jwks.json")[2])
    assert (book.pack(claimed["licence_id"]) or {})["remaining"] == ledger.PACK_CHECKS - 1
    status, _, refused = call("GET", "/corpus", headers=auth)
    assert status == 403 and refused["error"]["code"] == "tier_insufficient"

    refund = stripe_event(
        "charge.refunded", refunded_charge(payment_intent="pi_pack"), event_id="evt_refund"
    )
    assert _post_event(call, refund) == 200
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 401
    window = call("GET", "/metrics")[2]["window"]
    assert (window["paid_checks"], window["refunded_checks"]) == (1, 1)
    assert window["tripwires"]["refunds_over_5_percent"] is True
