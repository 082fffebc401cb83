"""Paid argument checks through the real handler: packs, exactly-once charging, the ledger's
closed field list, the 30-day tripwires (toolcall300.service.domain.ledger)."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.gateway import Call

from toolcall300.service.domain import ledger
from toolcall300.service.domain.licences import issue_manual
from toolcall300.service.errors import StoreConflict
from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def body(arguments: Any, schema: dict[str, Any] = SCHEMA) -> bytes:
    return json.dumps({"schema": schema, "arguments": arguments}).encode()


def operator(aws: Any) -> dict[str, str]:
    """An operator's own licence (issued by hand): ``GET /metrics`` shows it the counts."""
    key, _ = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", team=None, now=datetime.now(UTC)
    )
    return {"authorization": f"Bearer {key}"}


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
    window = call("GET", "/metrics", headers=operator(aws))[2]["window"]
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
    window = call("GET", "/metrics", headers=operator(aws))[2]["window"]
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
        call("GET", "/metrics", headers=operator(aws))
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
    window = call("GET", "/metrics", headers=operator(aws))[2]["window"]
    assert (window["paid_checks"], window["refunded_checks"]) == (1, 1)
    assert window["tripwires"]["refunds_over_5_percent"] is True


# ------------------------------------------------------------------ partial refunds (D23)


def _bought_pack(call: Call, aws: Any, *, pi: str) -> tuple[dict[str, str], str, CheckLedgerTable]:
    """A pack bought through a signed checkout event, its key claimed: (auth, licence, ledger)."""
    from support.stripe import paid_session, stripe_event

    session = paid_session(session_id=f"cs_{pi}", payment_intent=pi, tier="checks-500")
    assert (
        _post_event(call, stripe_event("checkout.session.completed", session, event_id=f"evt_{pi}"))
        == 200
    )
    status, _, claimed = call("GET", f"/licence/claim?session_id=cs_{pi}")
    assert status == 200
    return (
        {"authorization": f"Bearer {claimed['key']}"},
        claimed["licence_id"],
        CheckLedgerTable(aws.names["CheckLedgerTable"]),
    )


def _refund(pi: str, amount_refunded: int, event_id: str) -> dict[str, Any]:
    """``charge.refunded`` for the pack's charge with Stripe's cumulative ``amount_refunded``."""
    from support.stripe import refunded_charge, stripe_event

    charge = refunded_charge(
        payment_intent=pi,
        full=False,
        amount=ledger.PACK_AMOUNT,
        amount_refunded=amount_refunded,
    )
    return stripe_event("charge.refunded", charge, event_id=event_id)


def _remaining(book: CheckLedgerTable, payer: str) -> int:
    return int((book.pack(payer) or {})["remaining"])


def test_partial_refunds_take_back_the_checks_they_paid_for_once_each(call: Call, aws: Any) -> None:
    auth, payer, book = _bought_pack(call, aws, pi="pi_part")
    for i in range(3):
        assert call("POST", "/check", body=body({"n": i}), headers=auth)[0] == 200
    assert _remaining(book, payer) == 497

    # USD 2.00 back pays for 100 checks: they leave the 497 unused ones; no used check was
    # refunded, so the refund tripwire counts nothing.
    first = _refund("pi_part", 200, "evt_refund_1")
    assert _post_event(call, first) == 200
    assert _remaining(book, payer) == 397
    assert _post_event(call, first) == 200  # Stripe resends the same event
    assert _remaining(book, payer) == 397
    # A second partial refund: Stripe sends the charge's new total, 5.00 (250 checks in all).
    assert _post_event(call, _refund("pi_part", 500, "evt_refund_2")) == 200
    assert _remaining(book, payer) == 247
    # The first refund's event arriving again, late, under another delivery: nothing more.
    assert _post_event(call, _refund("pi_part", 200, "evt_refund_1_late")) == 200
    assert _remaining(book, payer) == 247
    # 1 cent rounds up to a whole check.
    assert _post_event(call, _refund("pi_part", 501, "evt_refund_3")) == 200
    assert _remaining(book, payer) == 246
    window = call("GET", "/metrics", headers=operator(aws))[2]["window"]
    assert (window["paid_checks"], window["refunded_checks"]) == (3, 0)
    assert call("POST", "/check", body=body({"n": 9}), headers=auth)[0] == 200  # still open

    # 9.99 back covers all 500 checks: the 245 unused go, and the 4 used ones were refunded.
    assert _post_event(call, _refund("pi_part", 999, "evt_refund_4")) == 200
    assert _remaining(book, payer) == 0
    status, _, data = call("POST", "/check", body=body({"n": 1}), headers=auth)
    assert status == 402 and data["error"]["code"] == "no_paid_checks"
    window = call("GET", "/metrics", headers=operator(aws))[2]["window"]
    assert (window["paid_checks"], window["refunded_checks"]) == (4, 4)
    # The last cent (refunded: true) revokes; every used check is counted once, not twice.
    from support.stripe import refunded_charge, stripe_event

    full = refunded_charge(payment_intent="pi_part", amount=ledger.PACK_AMOUNT)
    assert _post_event(call, stripe_event("charge.refunded", full, event_id="evt_refund_5")) == 200
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 401
    window = call("GET", "/metrics", headers=operator(aws))[2]["window"]
    assert (window["paid_checks"], window["refunded_checks"]) == (4, 4)
    pack = book.pack(payer) or {}
    assert (pack["withdrawn"], pack["refunded_spent"], pack["ended"]) == (496, 4, True)


def test_a_partial_refund_after_the_pack_ended_or_before_its_checkout_is_applied_once(
    call: Call, aws: Any
) -> None:
    # Stripe does not order events: a partial refund that arrives before its checkout is
    # applied when the pack is granted.
    assert _post_event(call, _refund("pi_early", 300, "evt_early_refund")) == 200
    auth, payer, book = _bought_pack(call, aws, pi="pi_early")
    assert _remaining(book, payer) == ledger.PACK_CHECKS - 150
    # A lost dispute ends the pack (every unused check withdrawn); a partial refund after
    # that changes nothing.
    from support.stripe import dispute, stripe_event

    lost = dispute(payment_intent="pi_early", status="lost")
    assert (
        _post_event(call, stripe_event("charge.dispute.closed", lost, event_id="evt_lost")) == 200
    )
    assert _post_event(call, _refund("pi_early", 600, "evt_after_end")) == 200
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 401
    pack = book.pack(payer) or {}
    assert (pack["remaining"], pack["withdrawn"], pack.get("refunded_amount")) == (0, 500, 300)


def test_a_check_charged_while_a_refund_is_applied_is_neither_lost_nor_refunded_twice(
    aws: Any,
) -> None:
    """The refund is one conditional write on the pack as read: a check charged between the
    read and the write makes it read again (the store's transaction, not a lost update)."""
    book = CheckLedgerTable(aws.names["CheckLedgerTable"])
    book.grant("lic_race", checks=10, payment_id="pi_race", granted_at="2026-12-01T00:00:00+00:00")
    now = datetime.now(UTC)
    record = ledger.ledger_record(
        payer="lic_race",
        now=now,
        payment_id="",
        criteria_version="1",
        summary={"verdict": "VALID"},
        house=False,
    )

    class Racing:
        """The real table, with one check charged just after the refund first reads the pack."""

        def __init__(self) -> None:
            self.raced = False

        def __getattr__(self, name: str) -> Any:
            return getattr(book, name)

        def pack(self, payer: str) -> dict[str, Any] | None:
            read = book.pack(payer)
            if not self.raced:
                self.raced = True
                assert ledger.charge_check(
                    book, payer=payer, check="c1", record=record, house=False
                )
            return read

    racing = Racing()
    # 10 cents: 5 checks; the pack had 10 unused when read, 9 when written.
    assert ledger.refund_part(racing, "lic_race", 10, now) == 0  # type: ignore[arg-type]
    pack = book.pack("lic_race") or {}
    assert racing.raced and (pack["remaining"], pack["withdrawn"]) == (4, 5)
    assert ledger.refund_pack(book, "lic_race", now) == 1  # the one used check, counted once


_AMOUNTS = st.lists(
    st.integers(min_value=1, max_value=ledger.PACK_AMOUNT - 1), min_size=1, max_size=4
)


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(used=st.integers(min_value=0, max_value=6), totals=_AMOUNTS, data=st.data())
def test_any_order_and_repetition_of_partial_refunds_leaves_what_the_highest_total_says(
    aws: Any, used: int, totals: list[int], data: st.DataObject
) -> None:
    """Stripe resends events and does not order them: whatever arrives, in whatever order and
    however often, the pack ends as the highest cumulative ``amount_refunded`` says, and the
    refund tripwire counts each used check at most once."""
    book = CheckLedgerTable(aws.names["CheckLedgerTable"])
    payer = f"lic_prop_{uuid.uuid4().hex}"
    now = datetime.now(UTC)
    book.grant(payer, checks=ledger.PACK_CHECKS, payment_id="pi_prop", granted_at=now.isoformat())
    record = ledger.ledger_record(
        payer=payer, now=now, payment_id="", criteria_version="1", summary={"verdict": "VALID"},
        house=False,
    )  # fmt: skip
    for i in range(used):
        ledger.charge_check(book, payer=payer, check=f"{payer}-{i}", record=record, house=False)
    # Stripe's totals only grow; deliveries may repeat and arrive in any order.
    cumulative = sorted(set(totals))
    deliveries = data.draw(
        st.permutations(cumulative + data.draw(st.lists(st.sampled_from(cumulative), max_size=3)))
    )
    counted = sum(ledger.refund_part(book, payer, amount, now) for amount in deliveries)
    covered = ledger.checks_paid_by(max(cumulative))
    withdrawn = min(ledger.PACK_CHECKS - used, covered)
    pack = book.pack(payer) or {}
    assert pack["remaining"] == ledger.PACK_CHECKS - used - withdrawn
    assert (pack["withdrawn"], pack["refunded_spent"]) == (withdrawn, covered - withdrawn)
    assert counted == covered - withdrawn <= used
    # A full refund afterwards counts only the used checks not counted yet.
    assert ledger.refund_pack(book, payer, now) == used - counted
