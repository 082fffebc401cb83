"""The tool-argument/v1 endpoints through the real handler: free tier, licences, privacy."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.gateway import Call

from toolcall300.service.domain import usage
from toolcall300.service.domain.licences import issue_manual
from toolcall300.service.errors import PaymentRequired, TooManyRequests
from toolcall300.service.observability import logger as service_logger
from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable, UsageTable

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def body(arguments: Any, schema: dict[str, Any] = SCHEMA) -> bytes:
    return json.dumps({"schema": schema, "arguments": arguments}).encode()


class StoppedClock:
    """The free tier's clock, stopped at the test's start; ``advance`` moves it on."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture(autouse=True)
def clock(overrides: dict[Any, Any]) -> StoppedClock:
    """Every free-tier rule here ("5 s apart") is decided on this clock, not on how long a
    loaded machine took between two calls (a pattern check runs in a child process)."""
    from toolcall300.service.api import deps

    stopped = StoppedClock()
    overrides[deps.clock] = lambda: stopped
    return stopped


def test_check_gives_a_verdict_and_a_second_free_check_within_5s_is_429(call: Call) -> None:
    status, _, data = call(
        "POST", "/check", body=body({"n": "3"}), headers={"content-type": "application/json"}
    )
    assert status == 200 and data["verdict"] == "REPAIRED"
    status, headers, data = call("POST", "/check", body=body({"n": 3}))
    assert status == 429 and data["error"]["code"] == "too_soon"
    assert 1 <= int(headers["retry-after"]) <= 5


def test_free_tier_is_per_client(call: Call) -> None:
    assert call("POST", "/check", body=body({"n": 1}), ip="203.0.113.1")[0] == 200
    assert call("POST", "/check", body=body({"n": 1}), ip="203.0.113.2")[0] == 200


def _with_pack(aws: Any, checks: int = 10) -> str:
    """A licence key whose licence holds a pack of ``checks`` paid checks."""
    key, licence = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", team=None, now=datetime.now(UTC)
    )
    CheckLedgerTable(aws.names["CheckLedgerTable"]).grant(
        licence.licence_id, checks=checks, payment_id="cs_test", granted_at="2026-12-01"
    )
    return key


def test_a_licence_with_a_pack_lifts_the_free_tier(call: Call, aws: Any) -> None:
    key = _with_pack(aws)
    auth = {"authorization": f"Bearer {key}"}
    assert [call("POST", "/check", body=body({"n": 1}), headers=auth)[0] for _ in range(3)] == [
        200,
        200,
        200,
    ]
    assert (
        call("POST", "/check", body=body({"n": 1}), headers={"authorization": "Bearer nope"})[0]
        == 401
    )


def test_get_licence_says_the_pack_balance(call: Call, aws: Any) -> None:
    key = _with_pack(aws, checks=3)
    auth = {"authorization": f"Bearer {key}"}
    assert call("GET", "/licence", headers=auth)[2]["checks"] == {"remaining": 3, "granted": 3}
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 200
    assert call("GET", "/licence", headers=auth)[2]["checks"] == {"remaining": 2, "granted": 3}
    plain, _ = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", team=None, now=datetime.now(UTC)
    )
    answer = call("GET", "/licence", headers={"authorization": f"Bearer {plain}"})[2]
    assert answer["checks"] is None


REFUSALS = [
    (b"{bad", 400),
    (json.dumps({"arguments": {}}).encode(), 400),
    (b"x" * (256 * 1024 + 1), 413),
]


def test_refusals_keep_their_status_and_never_cost_a_paid_check(call: Call, aws: Any) -> None:
    key = _with_pack(aws, checks=1)
    auth = {"authorization": f"Bearer {key}"}
    for raw, status in REFUSALS:
        got, _, data = call("POST", "/check", body=raw, headers=auth)
        assert got == status and "refusal" in data
    # the pack's one check is still there after three refusals, then it is spent
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 200
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 402


@pytest.mark.parametrize(("raw", "status"), REFUSALS)
@pytest.mark.parametrize("path", ["/check", "/precheck"])
def test_an_unauthenticated_refusal_takes_its_free_slot_before_any_work(
    call: Call, monkeypatch: pytest.MonkeyPatch, path: str, raw: bytes, status: int
) -> None:
    """Decision D24: the attempt is counted first, so a second one within 5 s is refused
    before the checker sees its body, whatever the first one answered."""
    from toolcall300.service.api import bounded_check

    seen: list[bytes] = []
    real = bounded_check.check_body_bounded

    def spy(body_bytes: bytes, **kw: Any) -> dict[str, Any]:
        seen.append(body_bytes)
        return real(body_bytes, **kw)

    monkeypatch.setattr(bounded_check, "check_body_bounded", spy)
    ip = f"198.51.100.{len(raw) % 200}"
    assert call("POST", path, body=raw, ip=ip)[0] == status
    got, headers, data = call("POST", path, body=raw, ip=ip)
    assert got == 429 and data["error"]["code"] == "too_soon" and "retry-after" in headers
    assert len(seen) == 1  # the refused second attempt did no work


def test_precheck_gives_no_verdict_and_is_free_with_a_licence(call: Call, aws: Any) -> None:
    auth = {"authorization": f"Bearer {_with_pack(aws, checks=1)}"}
    for _ in range(3):
        status, _, data = call("POST", "/precheck", body=body({"n": "x"}), headers=auth)
        assert status == 200 and data.get("assessable") is True and "verdict" not in data
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 200  # pack untouched
    status, _, data = call("POST", "/precheck", body=body({"n": "x"}), ip="198.51.100.250")
    assert status == 200 and data.get("assessable") is True and "verdict" not in data


def test_metrics_hold_counts_by_verdict_and_code_only(call: Call, aws: Any) -> None:
    call("POST", "/check", body=body({"n": "abc"}), ip="203.0.113.9")
    call("POST", "/check", body=b"[", ip="203.0.113.10")
    operator, _ = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", team=None, now=datetime.now(UTC)
    )
    status, _, data = call("GET", "/metrics", headers={"authorization": f"Bearer {operator}"})
    assert status == 200
    window = data.pop("window")
    assert data == {
        "verdicts": {"UNREPAIRABLE": 1},
        "defects": {"type_mismatch": 1},
        "refusals": {"invalid_request_body": 1},
    }
    # free use counts attempts, the refusal included (D24)
    assert (window["free_checks"], window["paid_checks"], window["window_days"]) == (2, 0, 30)


def test_metrics_without_an_operators_key_show_shares_and_tripwires_not_volumes(
    call: Call, aws: Any
) -> None:
    """Before: anyone read the business's volumes (paid, free and refunded checks, counts by
    verdict). The criteria list GET /metrics with no tier: without a key it shows what the
    criteria promise in public, the shares and the tripwires; a customer's key sees the same
    (the counts are for the operator's own licences, those issued by hand)."""
    for i, ip in enumerate(["203.0.113.21", "203.0.113.22", "203.0.113.23", "203.0.113.24"]):
        call("POST", "/check", body=body({"n": "abc" if i else 1}), ip=ip)
    from toolcall300.service.domain.licences import issue_member

    store, now = LicenceTable(aws.names["LicencesTable"]), datetime.now(UTC)
    _, owner = issue_manual(store, tier="team", team_name="Customers", now=now)
    member, _ = issue_member(store, owner, str(owner.team), now=now)  # a customer's own key
    customer = {"authorization": f"Bearer {member}"}
    for headers in ({}, customer):
        status, _, data = call("GET", "/metrics", headers=headers)
        assert status == 200
        assert data["verdicts"] == {"UNREPAIRABLE": 0.75, "VALID": 0.25}
        assert set(data["window"]) == {
            "window_days", "from", "to", "refund_share", "free_to_paid", "tripwires",
        }  # fmt: skip
        assert "free_checks" not in json.dumps(data) and "paid_checks" not in json.dumps(data)
    assert call("GET", "/metrics", headers={"authorization": "Bearer nope"})[0] == 401


def test_submitted_values_are_never_logged_or_stored(
    call: Call, aws: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    marker_key, marker_value, marker_enum = (
        "k_SECRETKEY_81f2",
        "v_SECRETVALUE_77aa",
        "e_SECRETENUM_190c",
    )
    schema = {
        "type": "object",
        "properties": {marker_key: {"type": "string", "enum": [marker_enum]}},
        "additionalProperties": False,
    }
    requests = [
        body({marker_key: marker_value}, schema),
        body({marker_key: marker_enum.upper()}, schema),
        json.dumps(
            {"schema": schema, "arguments_text": '{"' + marker_key + '": "' + marker_value + '",'}
        ).encode(),
        b'{"schema": {"' + marker_key.encode() + b'": 1}, "arguments": ',
    ]
    # The service's logger writes to the stream it was built with, which capsys does not
    # replace: point its handler at a buffer for the duration.
    service_log = io.StringIO()
    handler = service_logger.registered_handler
    previous = handler.setStream(service_log)
    try:
        for i, raw in enumerate(requests):
            call("POST", "/check", body=raw, ip=f"192.0.2.{i}")
            call("POST", "/precheck", body=raw, ip=f"192.0.2.{i}")
        # a second verdict from one address inside the free tier's 5 s spacing is refused and
        # that refusal is logged: proof that the lines searched below are the service's log
        assert call("POST", "/check", body=requests[0], ip="192.0.2.0")[0] == 429
        call("GET", "/metrics")
    finally:
        handler.setStream(previous)
    captured = capsys.readouterr()
    logs = service_log.getvalue() + captured.out + captured.err + caplog.text
    stored = json.dumps(UsageTable(aws.names["UsageTable"]).table.scan()["Items"], default=str)
    assert "request refused" in logs and "too_soon" in logs  # it logged, structured
    for marker in (marker_key, marker_value, marker_enum, "SECRET"):
        assert marker not in logs
        assert marker not in stored


def test_a_counter_without_a_gap_counts_takes_written_out_of_clock_order(aws: Any) -> None:
    """Two requests at once (the runs quota, downloads) read their clocks in one order and
    write in the other: with no minimum gap, the second write is counted, not "too soon"."""
    store = UsageTable(aws.names["UsageTable"])
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    usage.take(store, "runs#lic", limit=5, now=now + timedelta(milliseconds=5))
    usage.take(store, "runs#lic", limit=5, now=now)  # the older clock, written second
    assert (store.get("runs#lic#2026-12-01") or {}).get("used") == 2
    with pytest.raises(TooManyRequests):  # a gap still holds
        usage.take(store, "free#c", limit=5, now=now + timedelta(seconds=1), min_gap_s=5)
        usage.take(store, "free#c", limit=5, now=now, min_gap_s=5)


class MemoryUsage:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def get(self, counter_id: str) -> dict[str, Any] | None:
        return self.items.get(counter_id)

    def take(
        self, counter_id: str, *, limit: int, now_ms: int, min_gap_ms: int, expires_at: int
    ) -> None:
        from toolcall300.service.errors import StoreConflict

        item = self.items.get(counter_id)
        if item and not (item["used"] < limit and item["last_ms"] <= now_ms - min_gap_ms):
            raise StoreConflict("refused")
        self.items[counter_id] = {"used": (item or {"used": 0})["used"] + 1, "last_ms": now_ms}

    def add(self, counter_id: str, names: list[str]) -> None:
        item = self.items.setdefault(counter_id, {})
        for n in names:
            item[n] = item.get(n, 0) + 1


def test_free_tier_100_a_day_5s_apart_then_402_until_midnight() -> None:
    store = MemoryUsage()
    start = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)
    for i in range(100):
        usage.take_free_check(
            store, "1.2.3.4", per_day=100, min_gap_s=5, now=start + timedelta(seconds=5 * i)
        )
    with pytest.raises(PaymentRequired) as spent:
        usage.take_free_check(
            store, "1.2.3.4", per_day=100, min_gap_s=5, now=start + timedelta(seconds=600)
        )
    assert spent.value.status == 402 and int(spent.value.headers["Retry-After"]) == 86400 - 600
    usage.take_free_check(store, "1.2.3.4", per_day=100, min_gap_s=5, now=start + timedelta(days=1))


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 4999))
def test_too_soon_waits_the_rest_of_the_interval(gap_ms: int) -> None:
    store = MemoryUsage()
    t0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    usage.take_free_check(store, "ip", per_day=100, min_gap_s=5, now=t0)
    with pytest.raises(TooManyRequests) as soon:
        usage.take_free_check(
            store, "ip", per_day=100, min_gap_s=5, now=t0 + timedelta(milliseconds=gap_ms)
        )
    assert 1 <= int(soon.value.headers["Retry-After"]) <= 5
    assert int(soon.value.headers["Retry-After"]) >= (5000 - gap_ms) / 1000


def test_client_ids_are_keyed_pseudonyms() -> None:
    salt, other = b"salt-one", b"salt-two"
    assert "198.51.100.7" not in usage.client_id("198.51.100.7", salt)
    assert usage.client_id("a", salt) != usage.client_id("b", salt)
    assert usage.client_id("a", salt) == usage.client_id("a", salt)  # stable: counters add up
    # Without the salt, an id cannot be matched by hashing candidate addresses.
    assert usage.client_id("198.51.100.7", salt) != usage.client_id("198.51.100.7", other)


def test_the_salt_is_generated_at_provisioning_and_never_an_address(aws: Any) -> None:
    from toolcall300.service.api import wiring as ports

    salt = ports.edition().client_id_salt()
    assert len(salt) >= 32
    assert ports.edition().client_id_salt() == salt  # one secret, cached


def test_dynamodb_counter_enforces_interval_and_allowance(aws: Any) -> None:
    # The adapter's conditional update, not the fake: 3 a day, 5 s apart, 402 once spent.
    store = UsageTable(aws.names["UsageTable"])
    t0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    usage.take_free_check(store, "ip", per_day=3, min_gap_s=5, now=t0)
    with pytest.raises(TooManyRequests):
        usage.take_free_check(store, "ip", per_day=3, min_gap_s=5, now=t0 + timedelta(seconds=4))
    usage.take_free_check(store, "ip", per_day=3, min_gap_s=5, now=t0 + timedelta(seconds=5))
    usage.take_free_check(store, "ip", per_day=3, min_gap_s=5, now=t0 + timedelta(seconds=10))
    with pytest.raises(PaymentRequired):
        usage.take_free_check(store, "ip", per_day=3, min_gap_s=5, now=t0 + timedelta(seconds=60))
    [item] = store.table.scan()["Items"]
    assert int(item["used"]) == 3 and int(item["expires_at"]) > t0.timestamp() + 86400


BACKTRACKING = {
    "type": "object",
    "properties": {"s": {"type": "string", "pattern": "^\\w*\\w*\\w*\\w*x$"}},
}


def test_a_backtracking_pattern_is_a_422_refusal_not_a_stall(call: Call) -> None:
    # Criteria D20: polynomial backtracking (\w*\w*\w*x against a long run of letters).
    raw = body({"s": "a" * 5000}, BACKTRACKING)
    status, _, data = call("POST", "/check", body=raw, ip="192.0.2.200")
    assert status == 422 and data["refusal"]["code"] == "CAP-EXCEEDED:check_seconds"


@pytest.mark.parametrize("path", ["/check", "/precheck"])
def test_a_free_attempt_that_runs_a_pattern_is_counted_before_the_work(
    call: Call, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """A too-soon unauthenticated attempt is refused before the bounded child starts, and the
    refused backtracking attempt itself took the slot; a licensed caller is not counted."""
    from toolcall300.service.api import bounded_check

    runs: list[bytes] = []
    real = bounded_check.check_body_bounded

    def spy(raw: bytes, **kw: Any) -> dict[str, Any]:
        if not bounded_check.needs_bound(raw):
            return real(raw, **kw)
        runs.append(raw)  # what the bounded child answers past its budget, without the wait
        return bounded_check.over_budget()

    monkeypatch.setattr(bounded_check, "check_body_bounded", spy)
    slow = body({"s": "a" * 5000}, BACKTRACKING)
    assert call("POST", path, body=slow, ip="192.0.2.201")[0] == 422
    status, _, data = call("POST", path, body=body({"s": "ax"}, BACKTRACKING), ip="192.0.2.201")
    assert status == 429 and data["error"]["code"] == "too_soon"
    assert len(runs) == 1  # the second attempt did no work
    # a cheap refusal takes its slot too (D24): a stream of them is not free work
    assert call("POST", path, body=b"{bad", ip="192.0.2.202")[0] == 400
    assert call("POST", path, body=b"{bad", ip="192.0.2.202")[0] == 429


# ------------------------------------------------------------------------- signed reports


def test_a_paid_check_is_a_signed_report_that_verifies_against_the_published_keys(
    call: Call, aws: Any
) -> None:
    from toolcall300.argcheck.report import request_digest, verify_report

    key = _with_pack(aws)
    request = {"schema": SCHEMA, "arguments": {"n": "3"}}
    status, _, answer = call(
        "POST",
        "/check",
        body=json.dumps(request).encode(),
        headers={"authorization": f"Bearer {key}"},
    )
    status_keys, headers, jwks = call("GET", "/.well-known/jwks.json")
    assert status == 200 and status_keys == 200 and "max-age" in headers["cache-control"]
    payload = verify_report(answer, jwks)
    assert payload["verdict"] == "REPAIRED" and payload["arguments"] == {"n": 3}
    assert payload["request_digest"] == request_digest(request)
    assert payload["corpus"]["id"] == "toolcall300-argument-vectors/v1"
    assert payload["criteria_id"] == "tool-argument/v1" and payload["criteria_version"]
    assert [k["kty"] for k in jwks["keys"]] == ["OKP"] and "d" not in jwks["keys"][0]


def test_a_free_check_is_answered_unsigned(call: Call) -> None:
    status, _, answer = call("POST", "/check", body=body({"n": 1}), ip="203.0.113.77")
    assert status == 200 and "signature" not in answer and answer["repair_needed"] is False


def test_an_answer_that_fails_its_replay_is_withheld_and_not_charged(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from toolcall300.service.api import bounded_check

    real = bounded_check.check_body_bounded

    def inventing(raw: bytes, **kw: Any) -> dict[str, Any]:
        answer = real(raw, **kw)
        if answer.get("verdict") == "REPAIRED":
            answer["arguments"]["n"] = 999_999  # a value the caller never sent
        return answer

    monkeypatch.setattr(bounded_check, "check_body_bounded", inventing)
    with caplog.at_level(logging.INFO):
        status, _, data = call("POST", "/check", body=body({"n": "3"}), ip="203.0.113.78")
    assert status == 503 and data["error"]["code"] == "answer_withheld"
    assert "999999" not in caplog.text and "999_999" not in caplog.text
    auth = {"authorization": f"Bearer {_with_pack(aws, checks=1)}"}
    status, _, data = call("POST", "/check", body=body({"n": "3"}), headers=auth)
    assert status == 503 and data["error"]["code"] == "answer_withheld"
    monkeypatch.setattr(bounded_check, "check_body_bounded", real)
    # the pack's one check was not spent by the withheld answer
    assert [call("POST", "/check", body=body({"n": 1}), headers=auth)[0] for _ in (1, 2)] == [
        200,
        402,
    ]
    # The attempt took its free slot before the work (D24); nothing else was spent, and the
    # next client is answered.
    assert call("POST", "/check", body=body({"n": 1}), ip="203.0.113.78")[0] == 429
    assert call("POST", "/check", body=body({"n": 1}), ip="203.0.113.79")[0] == 200


def test_a_free_check_with_a_pattern_is_counted_once_and_answered(
    call: Call, clock: StoppedClock
) -> None:
    from toolcall300.service.api import wiring
    from toolcall300.service.settings import ArgcheckSettings

    status, _, data = call("POST", "/check", body=body({"s": "ax"}, BACKTRACKING), ip="192.0.2.203")
    assert status == 200 and data["verdict"] == "VALID" and "signature" not in data
    # however long the bounded child took, the next attempt is at the same instant: too soon
    status, _, data = call("POST", "/check", body=body({"s": "ax"}, BACKTRACKING), ip="192.0.2.203")
    assert status == 429 and data["error"]["code"] == "too_soon"
    # once the interval has passed, the same client is answered again
    clock.advance(wiring.edition().settings(ArgcheckSettings).free_min_interval_s)
    status, _, data = call("POST", "/check", body=body({"s": "ax"}, BACKTRACKING), ip="192.0.2.203")
    assert status == 200 and data["verdict"] == "VALID"


def test_a_free_check_spending_its_budget_never_holds_up_a_licensed_check(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While an unauthenticated pattern check is inside the bounded child, a licensed check
    is answered (the local gateway runs the checker as several Lambda environments would)."""
    import threading

    from toolcall300.service.api import bounded_check

    inside, release, child_done = threading.Event(), threading.Event(), threading.Event()
    real = bounded_check.check_body_bounded

    def slow_child(raw: bytes, **kw: Any) -> dict[str, Any]:
        if not bounded_check.needs_bound(raw):
            return real(raw, **kw)
        inside.set()
        release.wait(timeout=20)  # hang guard only: the licensed check releases it
        child_done.set()
        return bounded_check.over_budget()

    monkeypatch.setattr(bounded_check, "check_body_bounded", slow_child)
    free: dict[str, int] = {}
    slow = body({"s": "a" * 5000}, BACKTRACKING)
    worker = threading.Thread(
        target=lambda: free.update(status=call("POST", "/check", body=slow, ip="192.0.2.204")[0])
    )
    worker.start()
    assert inside.wait(timeout=60)
    key = _with_pack(aws)
    status, _, data = call(
        "POST", "/check", body=body({"n": 1}), headers={"authorization": f"Bearer {key}"}
    )
    answered_while_blocked = not child_done.is_set()
    release.set()
    worker.join()
    assert status == 200 and data["verdict"] == "VALID" and answered_while_blocked
    assert free == {"status": 422}


# ------------------------------------------------------- refusals that cost real work (D26)


class BlockingChild:
    """Stands in for the bounded child: a pattern check answers ``over_budget`` (what a
    backtracking pattern gets after its CPU budget) at once, except the first, which waits
    inside until ``release`` (so a test can act while it is in the child)."""

    def __init__(self, block_first: bool = False) -> None:
        import threading

        from toolcall300.service.api import bounded_check

        self.module = bounded_check
        self.real = bounded_check.check_body_bounded
        self.inside, self.release = threading.Event(), threading.Event()
        self.block_first = block_first
        self.runs = 0

    def __call__(self, raw: bytes, **kw: Any) -> dict[str, Any]:
        if not self.module.needs_bound(raw):
            return self.real(raw, **kw)
        self.runs += 1
        if self.block_first and self.runs == 1:
            self.inside.set()
            self.release.wait(timeout=30)  # hang guard only: the test releases it
        return self.module.over_budget()


@pytest.fixture
def child(monkeypatch: pytest.MonkeyPatch) -> BlockingChild:
    from toolcall300.service.api import bounded_check

    fake = BlockingChild()
    monkeypatch.setattr(bounded_check, "check_body_bounded", fake)
    return fake


@pytest.fixture
def two_overruns_a_day(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from toolcall300.service.api import wiring

    monkeypatch.setenv("CHECK_SECONDS_REFUSALS_PER_DAY", "2")
    wiring.renew()
    yield
    wiring.renew()


SLOW = body({"s": "a" * 5000}, BACKTRACKING)


def test_a_keys_checks_past_the_cpu_budget_are_bounded_per_day(
    call: Call, aws: Any, child: BlockingChild, two_overruns_a_day: None, clock: StoppedClock
) -> None:
    """D26: after its day's overruns a key's pattern checks are refused before any child runs
    (both routes), its pattern-free checks are answered, and another key has its own count."""
    auth = {"authorization": f"Bearer {_with_pack(aws)}"}
    assert [call("POST", "/check", body=SLOW, headers=auth)[0] for _ in (1, 2)] == [422, 422]
    for path in ("/check", "/precheck"):
        status, headers, data = call("POST", path, body=SLOW, headers=auth)
        assert (status, data["error"]["code"]) == (429, "check_seconds_spent"), path
        assert 1 <= int(headers["retry-after"]) <= 86400
    assert child.runs == 2  # the refused attempts did no work
    assert call("POST", "/check", body=body({"n": 1}), headers=auth)[0] == 200
    other = {"authorization": f"Bearer {_with_pack(aws)}"}
    assert call("POST", "/check", body=SLOW, headers=other)[0] == 422
    clock.advance(86400)  # the next UTC day: the key's count starts again
    assert call("POST", "/check", body=SLOW, headers=auth)[0] == 422


def test_a_free_clients_checks_past_the_cpu_budget_are_bounded_per_day(
    call: Call, child: BlockingChild, two_overruns_a_day: None, clock: StoppedClock
) -> None:
    from toolcall300.service.api import wiring
    from toolcall300.service.settings import ArgcheckSettings

    gap = wiring.edition().settings(ArgcheckSettings).free_min_interval_s
    answers = []
    for _ in range(3):
        answers.append(call("POST", "/check", body=SLOW, ip="192.0.2.230")[0])
        clock.advance(gap)
    assert answers == [422, 422, 429] and child.runs == 2
    assert call("POST", "/check", body=SLOW, ip="192.0.2.231")[0] == 422  # another client


def _in_background(fn: Any) -> tuple[Any, dict[str, Any]]:
    import threading

    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.update(answer=fn()))
    thread.start()
    return thread, out


def test_one_pattern_check_at_a_time_per_key_and_it_never_holds_up_a_paid_check(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D26: while a key's backtracking check is in the child, its next pattern check is
    refused at once (not queued on a server thread); another key's pattern check and any
    pattern-free paid check are answered meanwhile."""
    from toolcall300.service.api import bounded_check

    child = BlockingChild(block_first=True)
    monkeypatch.setattr(bounded_check, "check_body_bounded", child)
    auth = {"authorization": f"Bearer {_with_pack(aws)}"}
    thread, first = _in_background(lambda: call("POST", "/check", body=SLOW, headers=auth))
    try:
        assert child.inside.wait(timeout=60)
        status, headers, data = call("POST", "/check", body=SLOW, headers=auth)
        assert (status, data["error"]["code"]) == (429, "check_in_flight")
        assert int(headers["retry-after"]) >= 1
        other = {"authorization": f"Bearer {_with_pack(aws)}"}
        assert call("POST", "/check", body=SLOW, headers=other)[0] == 422
        status, _, data = call("POST", "/check", body=body({"n": 1}), headers=auth)
        assert status == 200 and data["verdict"] == "VALID"
        still_inside = not first
    finally:
        child.release.set()
        thread.join()
    assert still_inside and first["answer"][0] == 422
    # the lane is free again once the first check is answered
    assert call("POST", "/check", body=SLOW, headers=auth)[0] == 422


def test_a_teams_member_keys_share_its_purchases_lane_and_daily_count(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch, two_overruns_a_day: None
) -> None:
    """Member keys are free and unlimited in number: before, each had its own lane and its
    own daily count, so 16 of them ran 16 backtracking children at once and made another
    customer's paid check take 3.7 s instead of 0.01 s. Now the payer
    is the purchase, so the team holds one lane and one count whatever its keys."""
    from toolcall300.service.api import bounded_check
    from toolcall300.service.domain.licences import issue_member

    store = LicenceTable(aws.names["LicencesTable"])
    now = datetime.now(UTC)
    owner_key, owner = issue_manual(store, tier="team", team_name="Many keys", now=now)
    members = [issue_member(store, owner, str(owner.team), now=now)[0] for _ in range(3)]
    child = BlockingChild(block_first=True)
    monkeypatch.setattr(bounded_check, "check_body_bounded", child)
    thread, first = _in_background(
        lambda: call("POST", "/check", body=SLOW, headers={"authorization": f"Bearer {owner_key}"})
    )
    try:
        assert child.inside.wait(timeout=60)
        for key in members:  # the purchase's lane is taken, whichever key asks
            status, _, data = call(
                "POST", "/check", body=SLOW, headers={"authorization": f"Bearer {key}"}
            )
            assert (status, data["error"]["code"]) == (429, "check_in_flight")
    finally:
        child.release.set()
        thread.join()
    assert first["answer"][0] == 422  # one overrun counted on the purchase
    assert (
        call("POST", "/check", body=SLOW, headers={"authorization": f"Bearer {members[0]}"})[0]
        == 422
    )
    status, _, data = call(
        "POST", "/precheck", body=SLOW, headers={"authorization": f"Bearer {members[1]}"}
    )
    assert (status, data["error"]["code"]) == (429, "check_seconds_spent")  # two a day, shared


def test_a_basic_authorization_header_makes_a_caller_free_tier_never_licensed(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lane and the allowance are chosen by a verified key, not by the header's name:
    ``Authorization: Basic`` is a keyless caller (free tier, its own lane), and its pattern
    check in the child never holds up a licensed check or a licensed key's pattern lane."""
    from toolcall300.service.api import bounded_check

    child = BlockingChild(block_first=True)
    monkeypatch.setattr(bounded_check, "check_body_bounded", child)
    basic = {"authorization": "Basic " + "dXNlcjpwYXNz"}
    thread, first = _in_background(
        lambda: call("POST", "/check", body=SLOW, headers=basic, ip="192.0.2.240")
    )
    try:
        assert child.inside.wait(timeout=60)
        auth = {"authorization": f"Bearer {_with_pack(aws)}"}
        status, _, data = call("POST", "/check", body=body({"n": 1}), headers=auth)
        assert status == 200 and "signature" in data  # a paid, signed answer meanwhile
        assert call("POST", "/check", body=SLOW, headers=auth)[0] == 422  # its own lane
        # the Basic caller took a free slot: its next attempt is too soon, before any work
        status, _, data = call("POST", "/check", body=SLOW, headers=basic, ip="192.0.2.240")
        assert (status, data["error"]["code"]) == (429, "too_soon")
        still_inside = not first
    finally:
        child.release.set()
        thread.join()
    assert still_inside and first["answer"][0] == 422
    assert child.runs == 2


def test_the_served_d26_decision_names_the_services_daily_bound(call: Call) -> None:
    from toolcall300.argcheck import criteria
    from toolcall300.service import settings

    assert settings.CHECK_SECONDS_REFUSALS_PER_DAY == criteria.CHECK_SECONDS_REFUSALS_PER_DAY
    status, _, doc = call("GET", "/criteria")
    [d26] = [d for d in doc["decisions"] if d["id"] == "D26-expensive-refusals"]
    assert status == 200 and f"after {settings.CHECK_SECONDS_REFUSALS_PER_DAY}," in d26["decision"]
    assert "check_seconds_spent" in d26["decision"] and "check_in_flight" in d26["decision"]


@pytest.mark.parametrize("path", ["/criteria", "/openapi.json"])
def test_a_constant_document_is_served_with_an_etag_and_304_when_it_is_named(
    call: Call, path: str
) -> None:
    status, headers, doc = call("GET", path)
    etag = headers.get("ETag") or headers.get("etag")
    assert status == 200 and doc and etag and etag.startswith('"') and etag.endswith('"')
    again = call("GET", path, headers={"If-None-Match": etag})
    assert again[0] == 304 and again[2] is None
    weak_in_a_list = call("GET", path, headers={"If-None-Match": f'"other", W/{etag}'})
    assert weak_in_a_list[0] == 304
    other = call("GET", path, headers={"If-None-Match": '"other"'})
    assert other[0] == 200 and other[2] == doc


def test_a_constant_document_is_built_and_encoded_once() -> None:
    from toolcall300.service.api.resolver import ConstantDocument

    builds = []
    constant = ConstantDocument(lambda: builds.append(1) or {"a": [1, 2]})
    first = constant.response({})
    assert constant.response({}).body == first.body == '{"a":[1,2]}'
    assert constant.response({"if-none-match": first.headers["ETag"]}).status_code == 304
    assert builds == [1]
