"""The service over real HTTP on the local stack: purchase, licence, download, checker, abuse."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from support.corpus import LICENCE, PRIVATE

from toolcall300.client import download as client

pytestmark = pytest.mark.slow


def test_purchase_claim_describe(local_stack: Any, buy_licence: Any) -> None:
    key = buy_licence("team", "acme")
    r = requests.get(
        f"{local_stack.url}/licence", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert r.status_code == 200
    me = r.json()
    assert me["tier"] == "team" and me["team_name"] == "acme" and me["status"] == "active"
    assert me["team"].startswith("team-")  # the identity the service made, not the name typed


def test_dev_purchase_shows_back_a_team_name_it_cannot_use(local_stack: Any) -> None:
    from toolcall300.client import dev as devtools

    argv = ["purchase", "--api", local_stack.url, "--tier", "team", "--team", "acme\ncorp"]
    out, err = io.StringIO(), io.StringIO()
    assert devtools.run(devtools.parse_args(argv), out, err) == 1
    assert "invalid_team_name" in err.getvalue() and "'acme\\ncorp'" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    argv[-1] = "acme_corp"  # a display name may be anything printable
    assert devtools.run(devtools.parse_args(argv), out, err) == 0, err.getvalue()
    assert "(acme_corp)" in out.getvalue()


def test_dev_purchase_of_a_check_pack_says_its_balance_not_a_team(local_stack: Any) -> None:
    from toolcall300.client import dev as devtools

    argv = ["purchase", "--api", local_stack.url, "--tier", "checks-500"]
    out, err = io.StringIO(), io.StringIO()
    assert devtools.run(devtools.parse_args(argv), out, err) == 0, err.getvalue()
    first = out.getvalue().splitlines()[0]
    assert first.endswith(": a check pack, 500 of 500 paid checks left (POST /check)"), first
    assert "team" not in first


def test_download_verifies_every_pin(
    local_stack: Any, buy_licence: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLCALL300_LICENCE", buy_licence())
    out, err = io.StringIO(), io.StringIO()
    args = client.parse_args(["--api", local_stack.url, "--out", str(tmp_path)])
    assert client.run(args, out, err) == 0, err.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "LICENSE-COMMERCIAL.txt",
        "manifest.json",
        "rationale.jsonl",
        "toolcall300.jsonl",
    ]
    assert "4 files verified" in out.getvalue()
    # the commercial licence travels with the corpus it governs (README, "Licence")
    assert (tmp_path / "LICENSE-COMMERCIAL.txt").read_bytes() == (PRIVATE / LICENCE).read_bytes()


def test_a_download_is_owner_only_checked_and_rebuilt_byte_identically(
    local_stack: Any, buy_licence: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's promise to a buyer: `toolcall300 download` delivers what `generate --check-only`
    and `--rebuild` need, verified by the manifest's pins, readable by its owner only."""
    from support.corpus import stack_corpus

    from toolcall300.cli import dispatch
    from toolcall300.service.domain import corpus as served
    from toolcall300.service.sdk.s3 import upload_corpus

    bucket = local_stack.context.edition.corpus_objects  # the stack's own: its state folder
    stored = local_stack.context.state_dir / "objects" / local_stack.context.names["CorpusBucket"]
    served_before = {p: p.read_bytes() for p in stored.rglob("*") if p.is_file()}
    upload_corpus(PRIVATE, bucket)  # the real corpus, with its recorded inputs
    served.clear_cache()
    try:
        monkeypatch.setenv("TOOLCALL300_LICENCE", buy_licence())
        bought, out, err = tmp_path / "bought", io.StringIO(), io.StringIO()
        args = client.parse_args(["--api", local_stack.url, "--out", str(bought)])
        assert client.run(args, out, err) == 0, err.getvalue()
    finally:
        stack_corpus(tmp_path / "small")  # what the stack served before, byte for byte
        upload_corpus(tmp_path / "small", bucket)
        served.clear_cache()
    # later modules share this stack: every object it served before (the tracks' corpora
    # included) is served again byte for byte, not the real corpus's
    assert {p: p.read_bytes() for p in served_before} == served_before
    files = [p for p in bought.rglob("*") if p.is_file()]
    assert {p.relative_to(bought).as_posix() for p in files} >= {
        "manifest.json", "toolcall300.jsonl", "inputs/recipe.json", "inputs/tools.json",
        "inputs/pools.json", "LICENSE-COMMERCIAL.txt",
    }  # fmt: skip
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {"0o600"}
    assert oct(bought.stat().st_mode & 0o777) == oct((bought / "inputs").stat().st_mode & 0o777)
    assert oct(bought.stat().st_mode & 0o777) == "0o700"
    assert "--check-only" in out.getvalue()
    code = dispatch(["generate", "--check-only", "--out", str(bought)], io.StringIO(), err)
    assert code == 0, err.getvalue()
    rebuilt = tmp_path / "rebuilt"
    code = dispatch(
        ["generate", "--rebuild", str(bought), "--out", str(rebuilt)], io.StringIO(), err
    )
    assert code == 0, err.getvalue()
    for made in (p for p in rebuilt.rglob("*") if p.is_file()):
        assert made.read_bytes() == (bought / made.relative_to(rebuilt)).read_bytes(), made
    assert (rebuilt / "toolcall300.jsonl").read_bytes() == (
        PRIVATE / "toolcall300.jsonl"
    ).read_bytes()


def test_download_refuses_a_tampered_file(
    local_stack: Any, buy_licence: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = local_stack.context.names["CorpusBucket"]
    stored = local_stack.context.state_dir / "objects" / bucket / "rationale.jsonl"
    original = stored.read_bytes()
    stored.write_bytes(original + b"tampered\n")
    try:
        monkeypatch.setenv("TOOLCALL300_LICENCE", buy_licence())
        out, err = io.StringIO(), io.StringIO()
        args = client.parse_args(["--api", local_stack.url, "--out", str(tmp_path)])
        assert client.run(args, out, err) == 1
        assert "does not match the pin" in err.getvalue()
        assert not (tmp_path / "rationale.jsonl").exists()
    finally:
        stored.write_bytes(original)


def test_rationale_over_http(local_stack: Any, buy_licence: Any) -> None:
    auth = {"Authorization": f"Bearer {buy_licence()}"}
    r = requests.get(f"{local_stack.url}/cases/tc300-0003/rationale", headers=auth, timeout=10)
    assert r.status_code == 200 and r.json()["rationale"] == "why 3"
    for bad in ("..%2F..%2Fmanifest.json", "tc300-03", "%2e%2e"):
        r = requests.get(f"{local_stack.url}/cases/{bad}/rationale", headers=auth, timeout=10)
        assert r.status_code in (400, 404) and "error" in r.json()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer tc300_" + "Z" * 32}, 401),
        ({"Authorization": "Token x"}, 401),
    ],
)
def test_no_or_wrong_key_is_a_json_401(
    local_stack: Any, headers: dict[str, str], status: int
) -> None:
    for path in ("/licence", "/corpus", "/cases/tc300-0001/rationale"):
        r = requests.get(local_stack.url + path, headers=headers, timeout=10)
        assert r.status_code == status and r.headers["content-type"].startswith("application/json")
        assert r.json()["error"]["code"]


def test_revoked_key_is_401(local_stack: Any, buy_licence: Any) -> None:
    import io as _io

    from toolcall300.service import admin

    key = buy_licence()
    r = requests.get(
        f"{local_stack.url}/licence", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    out = _io.StringIO()
    state = str(local_stack.context.state_dir)
    assert (
        admin.run(
            admin.parse_args(["--state", state, "licence", "revoke", r.json()["licence_id"]]),
            out,
            _io.StringIO(),
        )
        == 0
    )
    r = requests.get(
        f"{local_stack.url}/licence", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert r.status_code == 401 and r.json()["error"]["code"] == "licence_revoked"


def test_webhook_refuses_unsigned_and_stale(local_stack: Any) -> None:
    from support.stripe import paid_session, signed, stripe_event

    session = paid_session(session_id="cs_test_stale", payment_intent="pi_stale")
    event = stripe_event("checkout.session.completed", session, event_id="evt_stale")
    payload = json.dumps(event).encode()
    r = requests.post(f"{local_stack.url}/webhooks/stripe", data=payload, timeout=10)
    assert r.status_code == 400
    stale = int(time.time()) - 3600
    body, headers = signed(event, local_stack.context.webhook_secret, timestamp=stale)
    r = requests.post(f"{local_stack.url}/webhooks/stripe", data=body, headers=headers, timeout=10)
    assert r.status_code == 400
    session_id = event["data"]["object"]["id"]
    assert (
        requests.get(
            f"{local_stack.url}/licence/claim", params={"session_id": session_id}, timeout=10
        ).status_code
        == 404
    )


@pytest.mark.parametrize(
    ("method", "path", "body", "statuses"),
    [
        ("POST", "/check", b"{not json", {400}),
        ("POST", "/check", b'{"schema": 1, "arguments": {}}', {400}),
        ("POST", "/check", b"x" * (300 * 1024), {413}),
        ("POST", "/precheck", b"\xff\xfe", {400}),
        ("GET", "/licence/claim?session_id=../../etc", b"", {400}),
        ("GET", "/licence/claim", b"", {400}),
        ("POST", "/webhooks/stripe", b"x" * (600 * 1024), {413}),
        ("GET", "/nowhere", b"", {404}),
    ],
)
def test_bad_input_is_4xx_never_500(
    local_stack: Any, buy_licence: Any, method: str, path: str, body: bytes, statuses: set[int]
) -> None:
    headers = {"content-type": "application/json"}
    if path in ("/check", "/precheck"):
        # with a key, a refusal takes nothing; without one every attempt takes the client's
        # free slot (D24), and these tests all come from one address
        headers["authorization"] = f"Bearer {buy_licence()}"
    r = requests.request(method, local_stack.url + path, data=body, timeout=10, headers=headers)
    assert r.status_code in statuses, r.text
    assert "error" in r.json() or "refusal" in r.json()


def test_oversized_request_is_refused_by_the_gateway(local_stack: Any) -> None:
    r = requests.post(f"{local_stack.url}/check", data=b"x" * (10 * 1024 * 1024 + 1), timeout=30)
    assert r.status_code == 413


def test_openapi_document_lists_every_route(local_stack: Any) -> None:
    doc = requests.get(f"{local_stack.url}/openapi.json", timeout=10).json()
    assert doc["openapi"].startswith("3.1")
    assert {"/webhooks/stripe", "/licence/claim", "/licence", "/corpus", "/cases/{id}/rationale", "/criteria",
            "/precheck", "/check", "/metrics"} <= set(doc["paths"])  # fmt: skip


def test_a_check_pack_bought_over_http_pays_for_signed_reports_verified_offline(
    local_stack: Any, buy_licence: Any, tmp_path: Path
) -> None:
    """docs/argcheck-payment.md and docs/argcheck-report.md, end to end over real HTTP."""
    from toolcall300.cli import dispatch

    key = buy_licence("checks-500")
    request = {
        "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "arguments": {"n": "3"},
    }
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "it-1"}
    first = requests.post(f"{local_stack.url}/check", json=request, headers=headers, timeout=30)
    again = requests.post(f"{local_stack.url}/check", json=request, headers=headers, timeout=30)
    assert first.status_code == again.status_code == 200, first.text
    jwks = requests.get(f"{local_stack.url}/.well-known/jwks.json", timeout=30)
    assert jwks.status_code == 200 and jwks.json()["keys"][0]["alg"] == "EdDSA"
    report, keys = tmp_path / "report.json", tmp_path / "jwks.json"
    report.write_bytes(first.content)
    keys.write_bytes(jwks.content)
    out, err = io.StringIO(), io.StringIO()
    assert dispatch(["check", "verify", str(report), "--jwks", str(keys)], out, err) == 0, err
    assert out.getvalue().startswith("verified: tool-argument/v1 REPAIRED")
    report.write_bytes(first.content.replace(b'"n":3', b'"n":4'))
    assert dispatch(["check", "verify", str(report), "--jwks", str(keys)], out, err) == 1
    # The pack key opens nothing but the checker; the window counts the paid check once.
    corpus = requests.get(
        f"{local_stack.url}/corpus", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert corpus.status_code == 403
    me = requests.get(
        f"{local_stack.url}/licence", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert me.status_code == 200 and me.json()["tier"] == "checks"
    # the counts are the operator's to read (an operator's own licence, issued by hand)
    from toolcall300.service import admin

    made = io.StringIO()
    argv = ["--state", str(local_stack.context.state_dir), "licence", "issue", "--tier", "single"]
    assert admin.run(admin.parse_args(argv), made, io.StringIO()) == 0
    operator = {"Authorization": f"Bearer {made.getvalue().splitlines()[-1]}"}
    metrics = requests.get(f"{local_stack.url}/metrics", headers=operator, timeout=30)
    assert metrics.json()["window"]["paid_checks"] >= 1


def test_a_keyless_refusal_over_http_takes_the_free_slot_before_the_next_attempt(
    local_stack: Any,
) -> None:
    """D24 at the real edge: the attempt after a refusal, from the same address, is 429."""
    first = requests.post(f"{local_stack.url}/check", data=b"{bad", timeout=10)
    second = requests.post(f"{local_stack.url}/precheck", data=b"{bad", timeout=10)
    assert first.status_code in (400, 429)  # 429 if an earlier keyless test just used the slot
    assert second.status_code == 429 and second.json()["error"]["code"] == "too_soon"
    assert int(second.headers["retry-after"]) >= 1


def test_partial_refunds_over_http_leave_a_pack_only_the_checks_still_paid_for(
    local_stack: Any,
) -> None:
    """docs/argcheck-payment.md "Refunds": signed events through the real gateway; 9.98 of a
    10.00 pack back leaves one check, whatever Stripe resends."""
    from support.stripe import paid_session, refunded_charge, signed, stripe_event

    def post(event: dict[str, Any]) -> None:
        body, headers = signed(event, local_stack.context.webhook_secret)
        r = requests.post(
            f"{local_stack.url}/webhooks/stripe", data=body, headers=headers, timeout=30
        )
        assert r.status_code == 200, r.text

    session = paid_session(session_id="cs_it_part", payment_intent="pi_it_part", tier="checks-500")
    post(stripe_event("checkout.session.completed", session, event_id="evt_it_part"))
    claimed = requests.get(
        f"{local_stack.url}/licence/claim", params={"session_id": "cs_it_part"}, timeout=30
    )
    assert claimed.status_code == 200, claimed.text
    auth = {"Authorization": f"Bearer {claimed.json()['key']}"}

    def refund(amount_refunded: int, event_id: str) -> dict[str, Any]:
        charge = refunded_charge(
            payment_intent="pi_it_part", full=False, amount=1000, amount_refunded=amount_refunded
        )
        return stripe_event("charge.refunded", charge, event_id=event_id)

    first = refund(400, "evt_it_refund_1")
    post(first)
    post(first)  # Stripe's retry of the same event
    post(refund(998, "evt_it_refund_2"))  # the charge's new cumulative total
    post(refund(400, "evt_it_refund_1_late"))
    request = {"schema": {"type": "object"}, "arguments": {}}
    one = requests.post(f"{local_stack.url}/check", json=request, headers=auth, timeout=30)
    two = requests.post(f"{local_stack.url}/check", json=request, headers=auth, timeout=30)
    assert one.status_code == 200, one.text
    assert two.status_code == 402 and two.json()["error"]["code"] == "no_paid_checks"


def test_team_keys_issue_list_and_revoke_from_the_cli(
    local_stack: Any, buy_licence: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolcall300 team keys ...` does what curl did: issue (shown once), list, revoke."""
    from toolcall300.cli import dispatch

    owner = buy_licence("team", "cli-team")

    def team(*argv: str, key: str = owner) -> tuple[int, str, str]:
        monkeypatch.setenv("TOOLCALL300_LICENCE", key)
        out, err = io.StringIO(), io.StringIO()
        code = dispatch(["team", "keys", *argv, "--api", local_stack.url], out, err)
        return code, out.getvalue(), err.getvalue()

    code, out, err = team("issue")
    assert code == 0, err
    member = out.splitlines()[-1]
    key_id = out.split()[2]
    assert member.startswith("tc300_") and key_id.startswith("lic_k")
    auth = {"Authorization": f"Bearer {member}"}
    seen = requests.get(f"{local_stack.url}/licence", headers=auth, timeout=10).json()
    assert seen["tier"] == "team" and seen["manages_members"] is False
    code, out, _ = team("list")
    assert code == 0 and f"{key_id}  active" in out and member not in out
    code, _, err = team("issue", key=member)  # a member key manages nothing
    assert code == 1 and "owner_only" in err
    code, out, _ = team("revoke", key_id)
    assert code == 0 and out == f"member key {key_id}: revoked\n"
    assert requests.get(f"{local_stack.url}/licence", headers=auth, timeout=10).status_code == 401
    assert f"{key_id}  revoked" in team("list")[1]
