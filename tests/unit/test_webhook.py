"""POST /webhooks/stripe through the real handler (moto): signatures, once-only, arrival order."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.gateway import Call
from support.stores import MemoryLicenceStore
from support.stripe import (
    OLD_SECRET,
    dispute,
    paid_session,
    refunded_charge,
    signed,
    stripe_event,
)

from toolcall300.service.domain import licences, webhook
from toolcall300.service.sdk.dynamo import LicenceTable


def licences_in(aws: Any) -> list[dict[str, Any]]:
    """The licence items (not the payment references linked to them)."""
    items = LicenceTable(aws.names["LicencesTable"]).scan()
    return [i for i in items if not licences.is_reference(i)]


def post(call: Call, event: dict[str, Any] | str, **kw: Any) -> tuple[int, Any]:
    body, headers = signed(event, **kw)
    status, _, data = call("POST", "/webhooks/stripe", headers=headers, body=body)
    return status, data


def checkout(n: int = 1, created: int | None = None, **kw: Any) -> dict[str, Any]:
    """A paid checkout as ``POST /checkout`` would have made it (``team`` = display name)."""
    session = paid_session(session_id=f"cs_test_{n}", payment_intent=f"pi_{n}", **kw)
    return stripe_event(
        "checkout.session.completed", session, event_id=f"evt_co_{n}", created=created
    )


def claim(call: Call, n: int = 1) -> tuple[int, Any]:
    status, _, data = call("GET", f"/licence/claim?session_id=cs_test_{n}")
    return status, data


def test_paid_checkout_issues_a_claimable_licence(call: Call, aws: Any) -> None:
    assert post(call, checkout(tier="team", team="acme")) == (
        200,
        {"received": True, "applied": True},
    )
    status, data = claim(call)
    assert status == 200 and data["tier"] == "team" and data["status"] == "active"
    assert data["team_name"] == "acme" and licences.TEAM_RE.match(data["team"])
    status, _, me = call("GET", "/licence", headers={"authorization": f"Bearer {data['key']}"})
    assert status == 200 and me["licence_id"] == data["licence_id"] and "key" not in me
    [item] = licences_in(aws)
    assert data["key"] not in json.dumps(item)
    assert item["transitions"][0]["event_id"] == "evt_co_1"


def test_duplicate_event_changes_nothing(call: Call, aws: Any) -> None:
    post(call, checkout())
    before = licences_in(aws)
    assert post(call, checkout())[0] == 200
    assert licences_in(aws) == before


def test_redelivery_with_a_new_event_id_still_gives_one_licence(call: Call, aws: Any) -> None:
    post(call, checkout())
    again = checkout()
    again["id"] = "evt_co_redelivered"
    post(call, again)
    assert len(licences_in(aws)) == 1


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(
            lambda body, h: (
                body,
                {**h, "stripe-signature": h["stripe-signature"].replace("v1=", "v1=00")},
            ),
            id="forged",
        ),
        pytest.param(lambda body, h: (body.replace(b"single", b"team"), h), id="tampered"),
        pytest.param(lambda body, h: (body, {"content-type": "application/json"}), id="unsigned"),
        pytest.param(lambda body, h: (body, {**h, "stripe-signature": "garbage"}), id="garbled"),
    ],
)
def test_bad_signatures_are_refused_and_change_nothing(call: Call, aws: Any, forge: Any) -> None:
    body, headers = signed(checkout())
    body, headers = forge(body, headers)
    status, _, data = call("POST", "/webhooks/stripe", headers=headers, body=body)
    assert status == 400 and data["error"]["code"].startswith("signature")
    assert licences_in(aws) == []


def test_stale_signature_is_refused(call: Call, aws: Any) -> None:
    status, data = post(call, checkout(), timestamp=int(time.time()) - 301)
    assert status == 400 and data["error"]["code"] == "signature_invalid"
    assert licences_in(aws) == []


def test_a_signature_dated_ahead_is_refused(call: Call, aws: Any) -> None:
    """Before: an hour ahead was accepted (the stripe library bounds only the past), so a
    captured delivery stayed replayable for the hour."""
    status, data = post(call, checkout(), timestamp=int(time.time()) + 3600)
    assert status == 400 and data["error"]["code"] == "signature_invalid"
    assert licences_in(aws) == []
    assert post(call, checkout(), timestamp=int(time.time()) + 5)[0] == 200  # clock skew


def test_wrong_secret_is_refused_but_the_previous_secret_works_during_rotation(
    call: Call, aws: Any
) -> None:
    assert post(call, checkout(), secret="whsec_someone_else")[0] == 400
    assert post(call, checkout(), secret=OLD_SECRET)[0] == 200
    assert len(licences_in(aws)) == 1


def test_base64_encoded_body_is_decoded_before_verification(call: Call, aws: Any) -> None:
    body, headers = signed(checkout())
    headers["content-type"] = (
        "application/octet-stream"  # the gateway base64-encodes non-text bodies
    )
    status, _, _ = call("POST", "/webhooks/stripe", headers=headers, body=body)
    assert status == 200 and len(licences_in(aws)) == 1


@pytest.mark.parametrize("body", [b"not json at all", b"\xff\xfe\x00", b"[]", b'{"id": 1}'])
def test_signed_garbage_is_a_400_not_a_500(call: Call, aws: Any, body: bytes) -> None:
    import stripe

    text = body.decode("latin-1")
    header = stripe.WebhookSignature.generate_signature_header(text, "whsec_unit_current_secret")
    status, _, data = call(
        "POST", "/webhooks/stripe", headers={"stripe-signature": header}, body=body
    )
    assert status == 400 and "error" in data


def test_refund_before_checkout_still_ends_revoked(call: Call, aws: Any) -> None:
    refund = stripe_event(
        "charge.refunded", refunded_charge(payment_intent="pi_1"), event_id="evt_re", created=200
    )
    post(call, refund)
    post(call, checkout())
    [item] = licences_in(aws)
    assert item["status"] == "revoked"
    assert {t["event_id"] for t in item["transitions"]} == {"evt_re", "evt_co_1"}
    assert claim(call)[0] == 403


def test_partial_refund_of_a_corpus_licence_is_recorded_with_its_amount_and_keeps_it(
    call: Call, aws: Any
) -> None:
    post(call, checkout())
    post(
        call,
        stripe_event(
            "charge.refunded", refunded_charge(payment_intent="pi_1", full=False), event_id="evt_p"
        ),
    )
    [item] = licences_in(aws)
    assert item["status"] == "active"
    assert (item["transitions"][-1]["effect"], item["transitions"][-1]["amount"]) == (
        "partial_refund",
        1,
    )


def test_dispute_suspends_won_reinstates_and_key_follows(call: Call, aws: Any) -> None:
    post(call, checkout(created=100))
    key = claim(call)[1]["key"]
    auth = {"authorization": f"Bearer {key}"}
    post(
        call,
        stripe_event(
            "charge.dispute.created", dispute(payment_intent="pi_1"), event_id="evt_d1", created=200
        ),
    )
    status, _, data = call("GET", "/licence", headers=auth)
    assert status == 403 and data["error"]["code"] == "licence_suspended"
    won = stripe_event(
        "charge.dispute.closed",
        dispute(payment_intent="pi_1", status="won"),
        event_id="evt_d2",
        created=300,
    )
    post(call, won)
    assert call("GET", "/licence", headers=auth)[0] == 200


def test_dispute_lost_revokes(call: Call, aws: Any) -> None:
    post(call, checkout())
    lost = stripe_event(
        "charge.dispute.closed", dispute(payment_intent="pi_1", status="lost"), event_id="evt_l"
    )
    post(call, lost)
    assert licences_in(aws)[0]["status"] == "revoked"


def test_unpaid_checkout_issues_nothing_until_async_payment_succeeds(call: Call, aws: Any) -> None:
    session = paid_session(session_id="cs_test_1", payment_intent="pi_1")
    session["payment_status"] = "unpaid"
    post(call, stripe_event("checkout.session.completed", session, event_id="evt_u"))
    assert licences_in(aws) == []
    session["payment_status"] = "paid"
    post(call, stripe_event("checkout.session.async_payment_succeeded", session, event_id="evt_a"))
    assert licences_in(aws)[0]["status"] == "active"


def test_unknown_event_types_are_acknowledged_and_ignored(call: Call, aws: Any) -> None:
    from support.stripe import fixture

    assert post(call, fixture("event")) == (200, {"received": True, "applied": False})
    assert licences_in(aws) == []


def test_interpret_uses_the_lookup_for_a_charge_without_payment_intent() -> None:
    charge = refunded_charge(payment_intent="pi_9")
    charge["payment_intent"] = None
    event = stripe_event("charge.refunded", charge, event_id="evt_x")
    store = MemoryLicenceStore()
    assert webhook.interpret(event, store=store) is None
    found = webhook.interpret(
        event, store=store, lookup=lambda cid: "pi_9" if cid == charge["id"] else None
    )
    assert found is not None and found[0].transition.effect == "revoke"


def test_team_sale_made_outside_checkout_gets_a_deterministic_team() -> None:
    event = checkout(tier="team", team="acme")
    store = MemoryLicenceStore()
    a, b = webhook.interpret(event, store=store), webhook.interpret(event, store=store)
    assert a is not None and b is not None and a[0].checkout["team"] == b[0].checkout["team"]
    assert licences.TEAM_RE.match(str(a[0].checkout["team"]))
    assert a[0].checkout["team_name"] == "acme"


def test_two_buyers_typing_the_same_team_name_get_two_teams(call: Call, aws: Any) -> None:
    post(call, checkout(1, tier="team", team="Bravo-X"))
    post(call, checkout(2, tier="team", team="  BRAVO-X "))
    one, two = claim(call, 1)[1], claim(call, 2)[1]
    assert one["team"] != two["team"]
    assert one["team_name"] == "Bravo-X" and two["team_name"] == "BRAVO-X"


def test_the_team_identity_comes_from_the_service_set_metadata(call: Call, aws: Any) -> None:
    post(call, checkout(tier="team", team="acme", team_id="team-0123456789abcdef"))
    assert claim(call)[1]["team"] == "team-0123456789abcdef"


@pytest.mark.parametrize(
    ("tier", "amount", "currency"),
    [("team", 1, "jpy"), ("team", 2900, "eur"), ("team", 9900, "usd"), ("single", 2899, "eur")],
)
def test_a_checkout_that_did_not_pay_the_price_issues_nothing_and_alerts(
    call: Call, aws: Any, caplog: pytest.LogCaptureFixture, tier: str, amount: int, currency: str
) -> None:
    event = checkout(tier=tier, team="acme")
    event["data"]["object"].update(amount_total=amount, currency=currency)
    assert post(call, event) == (200, {"received": True, "applied": False})
    assert licences_in(aws) == []
    assert any(
        r.levelname == "ERROR" and getattr(r, "session_id", None) == "cs_test_1"
        for r in caplog.records
    )


@pytest.mark.parametrize("product", ["gold", "", None, ["team"], "TEAM"])
def test_an_unknown_product_issues_nothing_and_never_becomes_single(
    call: Call, aws: Any, product: object
) -> None:
    event = checkout()
    event["data"]["object"]["metadata"] = {"product": product, "tier": product}
    assert post(call, event) == (200, {"received": True, "applied": False})
    assert licences_in(aws) == []


def _odd(edit: Any) -> dict[str, Any]:
    event = stripe_event(
        "charge.refunded", refunded_charge(payment_intent="pi_1"), event_id="evt_odd"
    )
    edit(event)
    return event


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(_odd(lambda e: e.update(data="x")), id="data-string"),
        pytest.param(_odd(lambda e: e.update(created="yesterday")), id="created-string"),
        pytest.param(_odd(lambda e: e.update(created=1e300)), id="created-huge"),
        pytest.param(
            _odd(lambda e: e["data"]["object"].update(metadata=["a"])), id="metadata-list"
        ),
        pytest.param(_odd(lambda e: e["data"]["object"].update(metadata="a")), id="metadata-str"),
        pytest.param(_odd(lambda e: e["data"]["object"].update(amount={})), id="amount-object"),
        pytest.param(
            _odd(lambda e: e.update(type="checkout.session.completed", data={"object": []})),
            id="checkout-object-list",
        ),
        pytest.param(
            _odd(lambda e: e["data"]["object"].update(payment_intent=7)), id="payment-intent-int"
        ),
    ],
)
def test_signed_but_odd_events_are_a_400_and_change_nothing(
    call: Call, aws: Any, event: dict[str, Any]
) -> None:
    post(call, checkout())
    before = licences_in(aws)
    status, data = post(call, event)
    assert status == 400 and data["error"]["code"] == "invalid_event"
    assert licences_in(aws) == before
    assert post(call, checkout())[0] == 200  # and the webhook still works


def test_a_checkout_with_an_expanded_payment_intent_is_revoked_by_its_refund(
    call: Call, aws: Any
) -> None:
    from support.stripe import fixture

    intent = {"id": "pi_x", "object": "payment_intent", "latest_charge": "ch_x"}
    session = paid_session(session_id="cs_test_1", payment_intent=intent)
    post(call, stripe_event("checkout.session.completed", session, event_id="evt_co"))
    charge = fixture("charge") | {"id": "ch_x", "payment_intent": None, "refunded": True}
    post(call, stripe_event("charge.refunded", charge, event_id="evt_re"))
    [item] = licences_in(aws)
    assert item["status"] == "revoked"


def test_a_checkout_without_payment_intent_is_found_by_its_refund_through_stripe(
    call: Call, aws: Any, stripe_api: Any
) -> None:
    """The session's payment is asked of Stripe (through the stripe library's HTTP client)."""
    stripe_api.answer(
        "get",
        "/v1/checkout/sessions/cs_test_1",
        {"id": "cs_test_1", "object": "checkout.session",
         "payment_intent": {"id": "pi_late", "object": "payment_intent", "latest_charge": "ch_late"}},
    )  # fmt: skip
    session = paid_session(session_id="cs_test_1", payment_intent=None)
    post(call, stripe_event("checkout.session.completed", session, event_id="evt_co"))
    post(
        call,
        stripe_event(
            "charge.refunded", refunded_charge(payment_intent="pi_late"), event_id="evt_re"
        ),
    )
    [item] = licences_in(aws)
    assert item["status"] == "revoked"
    assert stripe_api.requests[0][:2] == ("get", "/v1/checkout/sessions/cs_test_1")


@pytest.mark.parametrize(("opened", "won"), [("evt_z", "evt_a"), ("evt_a", "evt_z")])
def test_a_dispute_opened_and_won_in_the_same_second_ends_active(
    call: Call, aws: Any, opened: str, won: str
) -> None:
    post(call, checkout(created=100))
    key = claim(call)[1]["key"]
    for event_id, status, etype in ((opened, "needs_response", "created"), (won, "won", "closed")):
        d = dispute(payment_intent="pi_1", status=status)
        post(call, stripe_event(f"charge.dispute.{etype}", d, event_id=event_id, created=200))
    assert call("GET", "/licence", headers={"authorization": f"Bearer {key}"})[0] == 200


def test_webhook_secret_never_reaches_a_response_or_log(
    call: Call, aws: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    post(call, checkout())
    post(call, checkout(), secret="whsec_wrong")
    out = capsys.readouterr()
    assert "whsec_unit_current_secret" not in out.out + out.err
    base64.b64encode(b"")  # keep the import honest for the base64 test above


_ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
_FIELDS = st.sampled_from(
    ["id", "amount", "amount_total", "amount_refunded", "currency", "payment_intent", "charge",
     "metadata", "payment_status", "refunded", "status", "created"]
)  # fmt: skip


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    etype=st.sampled_from(
        ["checkout.session.completed", "charge.refunded", "charge.dispute.created",
         "charge.dispute.closed", "checkout.session.async_payment_succeeded"]
    ),
    edits=st.dictionaries(_FIELDS, _ODD_VALUES, max_size=4),
    created=st.one_of(st.integers(min_value=0, max_value=2_000_000_000), _ODD_VALUES),
)  # fmt: skip
def test_no_signed_event_shape_makes_the_webhook_answer_500(
    call: Call, aws: Any, etype: str, edits: dict[str, Any], created: Any
) -> None:
    """Property: whatever the fields of a signed event hold, the answer is 200 or a 400 with
    a code, never a 500; a 400 writes nothing."""
    obj = paid_session(session_id="cs_test_p", payment_intent="pi_p", tier="team", team="p")
    event = stripe_event(etype, {**obj, **edits}, event_id=f"evt_p_{abs(hash(repr(edits)))}")
    event["created"] = created
    before = licences_in(aws)
    status, data = post(call, event)
    assert status in (200, 400), (status, data)
    if status == 400:
        assert data["error"]["code"] == "invalid_event" and licences_in(aws) == before
