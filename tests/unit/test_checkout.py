"""``POST /checkout`` and a team's member keys, through the real handlers (moto) and the stripe
library, whose HTTP client (``stripe_api``) answers instead of Stripe."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.gateway import Call
from support.stripe import STRIPE_TEST_API_KEY

from toolcall300.service.domain import licences
from toolcall300.service.domain.products import PRODUCTS
from toolcall300.service.sdk.dynamo import LicenceTable

SESSION = {
    "id": "cs_test_new",
    "object": "checkout.session",
    "url": "https://checkout.stripe.com/c/pay/cs_test_new",
}


def start(call: Call, body: object, **headers: str) -> tuple[int, Any]:
    status, _, data = call(
        "POST",
        "/checkout",
        headers={"content-type": "application/json", "host": "api.example.com", **headers},
        body=json.dumps(body).encode(),
    )
    return status, data


@pytest.fixture
def stripe_sessions(stripe_api: Any) -> Any:
    stripe_api.answer("post", "/v1/checkout/sessions", SESSION)
    return stripe_api


def sent(stripe_api: Any) -> dict[str, str]:
    [(method, path, form, headers)] = stripe_api.requests
    assert (method, path) == ("post", "/v1/checkout/sessions")
    assert headers["Authorization"] == f"Bearer {STRIPE_TEST_API_KEY}"
    return dict(form)


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_checkout_asks_stripe_for_the_products_price_with_the_services_metadata(
    call: Call, stripe_sessions: Any, product: str
) -> None:
    status, data = start(call, {"product": product, "team_name": "Acme Corp"})
    assert status == 200 and data["session_id"] == "cs_test_new"
    assert data["checkout_url"] == SESSION["url"]
    form = sent(stripe_sessions)
    price = PRODUCTS[product]
    assert form["line_items[0][price_data][unit_amount]"] == str(price.amount)
    assert form["line_items[0][price_data][currency]"] == price.currency
    assert form["line_items[0][quantity]"] == "1" and form["mode"] == "payment"
    assert form["metadata[product]"] == product and form["metadata[tier]"] == price.tier
    assert form["success_url"] == (
        "http://api.example.com/licence/claim?session_id={CHECKOUT_SESSION_ID}"
    )
    assert form["client_reference_id"]
    if price.needs_team:
        assert licences.TEAM_RE.match(form["metadata[team_id]"])
        assert form["metadata[team_name]"] == "Acme Corp" == data["team_name"]
        assert form["client_reference_id"] == form["metadata[team_id]"] == data["team"]
    else:
        assert "metadata[team_id]" not in form and data["team"] is None


def test_two_checkouts_naming_the_same_team_get_two_identities(
    call: Call, stripe_sessions: Any
) -> None:
    one = start(call, {"product": "team", "team_name": "acme"})[1]["team"]
    two = start(call, {"product": "team", "team_name": "acme"})[1]["team"]
    assert one != two


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "tab\there", "x" * 65, None])
def test_an_unusable_team_name_is_said_back_not_replaced(
    call: Call, stripe_sessions: Any, name: object
) -> None:
    body = {"product": "team", **({"team_name": name} if name is not None else {})}
    status, data = start(call, body)
    assert status == 400 and data["error"]["code"] == "invalid_team_name"
    assert repr(name) in data["error"]["message"]
    assert stripe_sessions.requests == []


@pytest.mark.parametrize(
    "body",
    [{"product": "gold"}, {"product": 3}, {}, [], "team", {"product": "team", "team_name": 5}],
)
def test_a_bad_checkout_request_is_a_400_and_never_reaches_stripe(
    call: Call, stripe_sessions: Any, body: object
) -> None:
    status, data = start(call, body)
    assert status == 400 and data["error"]["code"] in ("invalid_request", "unknown_product")
    assert stripe_sessions.requests == []


def test_stripe_failing_is_a_503(call: Call, stripe_api: Any) -> None:
    stripe_api.answer(
        "post", "/v1/checkout/sessions", {"error": {"type": "api_error", "message": "x"}}, 500
    )
    status, data = start(call, {"product": "single"})
    assert status == 503 and data["error"]["code"] == "stripe_unavailable"


def owner_key(aws: Any, name: str = "acme") -> tuple[str, licences.Licence]:
    from datetime import UTC, datetime

    return licences.issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="team", team_name=name, now=datetime.now(UTC)
    )


def test_a_checkout_started_with_a_team_key_buys_a_seat_of_that_team(
    call: Call, aws: Any, stripe_sessions: Any
) -> None:
    key, owner = owner_key(aws)
    status, data = start(
        call, {"product": "team", "team_name": "ignored"}, authorization=f"Bearer {key}"
    )
    assert status == 200 and data["team"] == owner.team
    assert sent(stripe_sessions)["metadata[team_id]"] == owner.team
    assert start(call, {"product": "team"}, authorization="Bearer tc300_" + "x" * 32)[0] == 401


def test_a_member_key_buys_no_seat_and_revoking_it_leaves_no_key_it_made(
    call: Call, aws: Any, stripe_sessions: Any
) -> None:
    """docs/tenancy.md: only the purchase key buys seats and makes members. A member that
    tries both is refused before Stripe is asked, and once the owner revokes it, no live key
    of the team is one the owner did not make (the seat a member bought was one)."""
    key, owner = owner_key(aws)
    base = f"/teams/{owner.team}/keys"
    status, member = keys_call(call, "POST", base, key)
    assert status == 201
    status, data = start(call, {"product": "team"}, authorization=f"Bearer {member['key']}")
    assert (status, data["error"]["code"]) == (403, "owner_only")
    assert stripe_sessions.requests == []  # no checkout session was started for it
    assert keys_call(call, "POST", base, member["key"])[1]["error"]["code"] == "owner_only"
    assert keys_call(call, "DELETE", f"{base}/{member['key_id']}", key)[0] == 200
    assert keys_call(call, "GET", "/licence", member["key"])[0] == 401
    table = LicenceTable(aws.names["LicencesTable"])
    alive = [
        lic
        for lic in (licences.Licence.from_item(i) for i in table.by_team(str(owner.team)))
        if lic.status == "active"
    ]
    assert [lic.licence_id for lic in alive] == [owner.licence_id]


def keys_call(call: Call, method: str, path: str, key: str) -> tuple[int, Any]:
    status, _, data = call(method, path, headers={"authorization": f"Bearer {key}"})
    return status, data


def test_a_team_key_issues_lists_and_revokes_member_keys(call: Call, aws: Any) -> None:
    key, owner = owner_key(aws)
    base = f"/teams/{owner.team}/keys"
    status, made = keys_call(call, "POST", base, key)
    assert status == 201 and made["team"] == owner.team and made["key"].startswith("tc300_")
    status, me = keys_call(call, "GET", "/licence", made["key"])
    assert status == 200 and me["team"] == owner.team and me["team_name"] == "acme"
    status, listing = keys_call(call, "GET", base, key)
    assert status == 200 and [k["key_id"] for k in listing["keys"]] == [made["key_id"]]
    assert "key" not in listing["keys"][0]
    # a member cannot make members; another team (same display name) cannot touch them
    assert keys_call(call, "POST", base, made["key"])[1]["error"]["code"] == "owner_only"
    rival_key, rival = owner_key(aws)
    assert keys_call(call, "GET", base, rival_key)[0] == 403
    assert keys_call(call, "DELETE", f"{base}/{made['key_id']}", rival_key)[0] == 403
    assert (
        keys_call(call, "DELETE", f"/teams/{rival.team}/keys/{made['key_id']}", rival_key)[0] == 404
    )
    status, gone = keys_call(call, "DELETE", f"{base}/{made['key_id']}", key)
    assert status == 200 and gone["status"] == "revoked"
    assert keys_call(call, "GET", "/licence", made["key"])[0] == 401


@pytest.mark.parametrize("path", ["/teams/acme/keys", "/teams/team-0123456789abcdef%0A/keys"])
def test_member_key_routes_take_only_team_identities(call: Call, aws: Any, path: str) -> None:
    key, _ = owner_key(aws)
    assert keys_call(call, "POST", path, key)[0] == 400
