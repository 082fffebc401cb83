"""One contract per port, run against both adapter sets: SQLite and files (the one-machine
edition, ``statefolder.sqlite``, ``statefolder.files``) and the moto-backed DynamoDB and S3 ones (AWS), so
the two editions cannot drift apart (docs/local-stack.md).

Each test states a guarantee the domain relies on (a versioned put refuses a stale version,
a paid check is charged once and only from a pack with checks left, a refund settles only
against the pack as read, the listing is the newest N, a report is written once) and runs it
on ``edition.sqlite`` and ``edition.aws``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolcall300.service.errors import NotFound, StoreConflict

EDITIONS = ("sqlite", "aws")


@dataclass
class Ports:
    licences: Any
    usage: Any
    ledger: Any
    runs: Any
    reports: Any
    corpus: Any
    idempotency: Any
    name: str


def _ports(edition: Any, name: str, names: dict[str, str], idempotency: Any) -> Ports:
    """Every port of one adapter set, through the members ``api.wiring.Adapters`` declares (a
    new port: one member there and in each set, one field of :class:`Ports`, its contract
    here; :func:`test_every_port_is_in_both_adapter_sets_and_under_contract` holds that)."""
    return Ports(
        edition.licences,
        edition.usage_for(names["UsageTable"]),
        edition.ledger,
        edition.runs,
        edition.reports(names["ReportsBucket"]),
        edition.corpus(names["CorpusBucket"]),
        idempotency,
        name,
    )


@pytest.fixture(params=EDITIONS)
def ports(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ports]:
    if request.param == "sqlite":
        from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

        edition = LocalAdapters(StateFolder(tmp_path / "state"), public_url=lambda: "http://stack")
        names = {"UsageTable": "", "ReportsBucket": "tc300-reports", "CorpusBucket": "tc300-corpus"}
        try:
            yield _ports(edition, "sqlite", names, edition.idempotency())
        finally:
            edition.close()
        return
    made = request.getfixturevalue("aws")
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from toolcall300.service.api import wiring

    persistence = DynamoDBPersistenceLayer(table_name=made.names["IdempotencyTable"])
    yield _ports(wiring.edition().adapters, "aws", made.names, persistence)


# ----------------------------------------------------------------------------- licences


def licence(licence_id: str, version: int, **extra: Any) -> dict[str, Any]:
    return {
        "licence_id": licence_id,
        "source": "manual",
        "transitions": [],
        "version": version,
        **extra,
    }


def test_a_licence_put_is_conditional_on_its_version(ports: Ports) -> None:
    ports.licences.put(licence("lic_a", 1, key_hash="h1", team="team-1"), expected_version=None)
    with pytest.raises(StoreConflict):  # must not exist yet
        ports.licences.put(licence("lic_a", 1), expected_version=None)
    with pytest.raises(StoreConflict):  # a stale version
        ports.licences.put(licence("lic_a", 2), expected_version=7)
    ports.licences.put(licence("lic_a", 2, key_hash="h2", team="team-1"), expected_version=1)
    assert ports.licences.get("lic_a") == licence("lic_a", 2, key_hash="h2", team="team-1")
    assert ports.licences.get("lic_missing") is None
    with pytest.raises(StoreConflict):  # a versioned put of a licence that does not exist
        ports.licences.put(licence("lic_b", 2), expected_version=1)


def test_licence_lookups_answer_only_a_unique_match(ports: Ports) -> None:
    ports.licences.put(
        licence("lic_a", 1, key_hash="h", session_id="cs_1", team="team-1"), expected_version=None
    )
    ports.licences.put(licence("lic_b", 1, key_hash="shared", team="team-1"), expected_version=None)
    ports.licences.put(licence("lic_c", 1, key_hash="shared", team="team-2"), expected_version=None)
    assert ports.licences.find_by_key_hash("h")["licence_id"] == "lic_a"
    assert ports.licences.find_by_session("cs_1")["licence_id"] == "lic_a"
    assert ports.licences.find_by_key_hash("shared") is None  # two: neither
    assert ports.licences.find_by_key_hash("nothing") is None
    assert sorted(i["licence_id"] for i in ports.licences.by_team("team-1")) == ["lic_a", "lic_b"]
    assert sorted(i["licence_id"] for i in ports.licences.scan()) == ["lic_a", "lic_b", "lic_c"]


def test_a_teams_badge_setting_is_kept_beside_its_licences_and_never_listed_as_one(
    ports: Ports,
) -> None:
    from datetime import UTC, datetime

    from toolcall300.service.domain import licences as domain

    now = datetime(2026, 12, 1, tzinfo=UTC)
    _, owner = domain.issue_manual(ports.licences, tier="team", team_name="acme", now=now)
    team = str(owner.team)
    assert domain.badge_public(ports.licences, team) is False  # private by default
    assert domain.set_badge_public(ports.licences, owner, team, True) is True
    assert domain.badge_public(ports.licences, team) is True
    assert domain.set_badge_public(ports.licences, owner, team, False) is False
    assert domain.badge_public(ports.licences, team) is False
    assert ports.licences.get(f"team#{team}")["version"] == 2
    assert [i["licence_id"] for i in ports.licences.by_team(team)] == [owner.licence_id]
    assert [lic.licence_id for lic in domain.list_licences(ports.licences)] == [owner.licence_id]
    assert domain.badge_public(ports.licences, "team#" + team) is False  # not a team: private


def test_any_key_of_the_team_reads_its_badge_setting_and_no_other_teams_key_does(
    ports: Ports,
) -> None:
    """What the dashboard shows a member key: the setting, which its purchase key changes."""
    from datetime import UTC, datetime

    from toolcall300.service.domain import licences as domain
    from toolcall300.service.errors import Forbidden

    now = datetime(2026, 12, 1, tzinfo=UTC)
    _, owner = domain.issue_manual(ports.licences, tier="team", team_name="acme", now=now)
    _, other = domain.issue_manual(ports.licences, tier="team", team_name="other", now=now)
    team = str(owner.team)
    _, member = domain.issue_member(ports.licences, owner, team, now=now)
    assert domain.team_badge_public(ports.licences, member, team) is False
    domain.set_badge_public(ports.licences, owner, team, True)
    assert domain.team_badge_public(ports.licences, owner, team) is True
    assert domain.team_badge_public(ports.licences, member, team) is True
    with pytest.raises(Forbidden) as refused:
        domain.team_badge_public(ports.licences, other, team)
    assert refused.value.code == "wrong_team"
    with pytest.raises(Forbidden) as owner_only:
        domain.set_badge_public(ports.licences, member, team, False)
    assert owner_only.value.code == "owner_only"
    assert domain.team_badge_public(ports.licences, member, team) is True


# ----------------------------------------------------------------------------- usage


def test_a_counter_is_taken_under_its_limit_and_gap(ports: Ports) -> None:
    take = ports.usage.take
    take("free#c#2026-12-01", limit=2, now_ms=10_000, min_gap_ms=5_000, expires_at=99)
    with pytest.raises(StoreConflict):  # too soon
        take("free#c#2026-12-01", limit=2, now_ms=12_000, min_gap_ms=5_000, expires_at=99)
    take("free#c#2026-12-01", limit=2, now_ms=15_000, min_gap_ms=5_000, expires_at=99)
    with pytest.raises(StoreConflict):  # spent
        take("free#c#2026-12-01", limit=2, now_ms=99_000, min_gap_ms=5_000, expires_at=99)
    item = ports.usage.get("free#c#2026-12-01")
    assert (item["used"], item["last_ms"], item["expires_at"]) == (2, 15_000, 99)
    # without a gap, uses whose clocks commit out of order are all counted (racing requests)
    take("runs#l#2026-12-01", limit=3, now_ms=20_000, min_gap_ms=0, expires_at=99)
    take("runs#l#2026-12-01", limit=3, now_ms=19_000, min_gap_ms=0, expires_at=99)
    take("runs#l#2026-12-01", limit=3, now_ms=19_500, min_gap_ms=0, expires_at=99)
    with pytest.raises(StoreConflict):
        take("runs#l#2026-12-01", limit=3, now_ms=30_000, min_gap_ms=0, expires_at=99)
    ports.usage.add("metrics#x", ["verdict:VALID", "defect:a"])
    ports.usage.add("metrics#x", ["verdict:VALID"])
    got = ports.usage.get("metrics#x")
    assert (got["verdict:VALID"], got["defect:a"]) == (2, 1)
    assert ports.usage.get("nothing") is None


# ----------------------------------------------------------------------------- the ledger


RECORD = {"payer": "lic_p", "day": "2026-12-01", "op": "check"}


def test_a_paid_check_is_charged_once_and_only_from_a_pack_with_checks(ports: Ports) -> None:
    ledger = ports.ledger
    with pytest.raises(StoreConflict):  # no pack
        ledger.charge("lic_p", "c0", RECORD)
    ledger.grant("lic_p", checks=2, payment_id="pi_1", granted_at="2026-12-01T00:00:00+00:00")
    with pytest.raises(StoreConflict):  # the same payment again
        ledger.grant("lic_p", checks=2, payment_id="pi_1", granted_at="2026-12-01T00:00:00+00:00")
    ledger.charge("lic_p", "c1", RECORD)
    with pytest.raises(StoreConflict):  # the same check again
        ledger.charge("lic_p", "c1", RECORD)
    ledger.charge("lic_p", "c2", RECORD)
    with pytest.raises(StoreConflict):  # empty
        ledger.charge("lic_p", "c3", RECORD)
    pack = ledger.pack("lic_p")
    assert (pack["remaining"], pack["granted"], pack["payments"]) == (0, 2, {"pi_1"})
    assert ledger.record("c1") == {"id": "check#c1", **RECORD, "payment_id": "pi_1"}
    assert ledger.record("c3") is None
    ledger.grant("lic_p", checks=3, payment_id="pi_2", granted_at="2026-12-02T00:00:00+00:00")
    assert ledger.pack("lic_p")["remaining"] == 3


def test_a_refund_settles_only_against_the_pack_as_read(ports: Ports) -> None:
    ledger = ports.ledger
    ledger.grant("lic_p", checks=5, payment_id="pi_1", granted_at="t")
    before = ledger.pack("lic_p")
    ledger.charge("lic_p", "c1", RECORD)  # the pack moved after it was read
    after = {"remaining": 0, "withdrawn": 5, "refunded_spent": 0, "refunded_amount": 10}
    with pytest.raises(StoreConflict):
        ledger.settle("lic_p", before=before, after=after, day="2026-12-01", refunded=1)
    before = ledger.pack("lic_p")
    ledger.settle(
        "lic_p", before=before, after={**after, "withdrawn": 4}, day="2026-12-01", refunded=1
    )
    with pytest.raises(StoreConflict):  # refunded_amount changed since
        ledger.settle("lic_p", before=before, after=after, day="2026-12-01", refunded=1)
    again = ledger.pack("lic_p")
    ledger.settle(
        "lic_p", before=again, after={"remaining": 0, "ended": True}, day="2026-12-01", refunded=0
    )
    with pytest.raises(StoreConflict):  # ended
        ledger.settle(
            "lic_p", before=ledger.pack("lic_p"), after=after, day="2026-12-01", refunded=0
        )
    ledger.count("2026-12-01", {"paid": 2, "free": 1})
    days = ledger.days(["2026-12-01", "2026-11-30"])
    assert len(days) == 1 and (days[0]["refunded"], days[0]["paid"], days[0]["free"]) == (1, 2, 1)


@pytest.mark.parametrize("ports", ["sqlite"], indirect=True)
def test_racing_charges_never_spend_more_than_the_pack(ports: Ports) -> None:
    """SQLite only: moto's TransactWriteItems is not atomic under threads (it copies the
    tables and writes the copy back, losing a write), so the moto edition cannot be raced; real
    DynamoDB serialises transactions itself."""
    ports.ledger.grant("lic_p", checks=10, payment_id="pi_1", granted_at="t")
    charged: list[str] = []

    def charge(i: int) -> None:
        try:
            ports.ledger.charge("lic_p", f"c{i % 14}", RECORD)
            charged.append(f"c{i % 14}")
        except StoreConflict:
            pass

    threads = [threading.Thread(target=charge, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(charged) == len(set(charged)) == 10
    assert ports.ledger.pack("lic_p")["remaining"] == 0


# ----------------------------------------------------------------------------- runs


def run(run_id: str, team: str, created_at: str, version: int = 1, **extra: Any) -> dict[str, Any]:
    return {"run_id": run_id, "team": team, "created_at": created_at, "version": version, **extra}


def test_a_run_put_is_conditional_and_the_queries_read_their_indexes(ports: Ports) -> None:
    store = ports.runs
    for i in range(7):
        store.put(
            run(f"run_{i}", "team-a", f"2026-12-01T00:00:0{i}Z", active_status="queued"),
            expected_version=None,
        )
    store.put(run("run_x", "team-b", "2026-12-01T00:00:09Z"), expected_version=None)
    with pytest.raises(StoreConflict):
        store.put(run("run_0", "team-a", "2026-12-01T00:00:00Z"), expected_version=None)
    with pytest.raises(StoreConflict):
        store.put(run("run_0", "team-a", "2026-12-01T00:00:00Z", 3), expected_version=2)
    store.put(
        run("run_0", "team-a", "2026-12-01T00:00:00Z", 2, baseline_set_at="2026-12-01T01:00:00Z"),
        expected_version=1,
    )
    assert store.get("run_0")["version"] == 2 and store.get("run_nope") is None
    assert [i["run_id"] for i in store.by_team("team-a", limit=3)] == ["run_6", "run_5", "run_4"]
    assert [i["run_id"] for i in store.by_team("team-b", limit=50)] == ["run_x"]
    assert sorted(i["run_id"] for i in store.by_status("queued")) == [
        f"run_{i}" for i in range(1, 7)
    ]
    assert [i["run_id"] for i in store.baselines_page("team-a", limit=50, after=None)] == ["run_0"]
    assert store.baselines_page("team-b", limit=50, after=None) == []
    with pytest.raises(ValueError):
        store.by_status("scored")


def test_recent_baselines_are_the_newest_set_and_no_more(ports: Ports) -> None:
    """What scoring reads (runs.BASELINE_WINDOW): the newest by baseline_set_at, bounded."""
    store = ports.runs
    for i in range(5):
        set_at = f"2026-12-01T0{i}:00:00Z"
        store.put(
            run(f"run_c{i}", "team-c", "2026-12-01T00:00:00Z", baseline_set_at=set_at),
            expected_version=None,
        )
    store.put(run("run_c9", "team-c", "2026-12-01T09:00:00Z"), expected_version=None)  # not one
    store.put(
        run("run_d0", "team-d", "2026-12-01T00:00:00Z", baseline_set_at="2026-12-02T00:00:00Z"),
        expected_version=None,
    )
    assert [i["run_id"] for i in store.baselines_page("team-c", limit=3, after=None)] == [
        "run_c4",
        "run_c3",
        "run_c2",
    ]
    assert [i["run_id"] for i in store.baselines_page("team-c", limit=50, after=None)] == [
        f"run_c{i}" for i in (4, 3, 2, 1, 0)
    ]
    assert [i["run_id"] for i in store.baselines_page("team-d", limit=3, after=None)] == ["run_d0"]


def test_baseline_pages_resume_after_their_last_run_and_skip_none_set_in_the_same_second(
    ports: Ports,
) -> None:
    """GET /teams/{team}/baselines pages: following ``after`` = the last (baseline_set_at,
    run_id) of each page yields every baseline of the team once, newest first, even when
    several were set in the same second (a plain time cursor would skip them); another
    team's baselines never appear, whatever the position."""
    store = ports.runs
    set_ats = ["2026-12-01T01:00:00Z"] * 4 + ["2026-12-01T02:00:00Z"] * 3 + ["2026-12-01T03:00:00Z"]
    for i, set_at in enumerate(set_ats):
        store.put(
            run(f"run_e{i}", "team-e", "2026-12-01T00:00:00Z", baseline_set_at=set_at),
            expected_version=None,
        )
    store.put(
        run("run_f0", "team-f", "2026-12-01T00:00:00Z", baseline_set_at="2026-12-01T01:30:00Z"),
        expected_version=None,
    )
    for size in (1, 2, 3, 8):
        seen: list[dict[str, Any]] = []
        after: tuple[str, str] | None = None
        while True:
            page = store.baselines_page("team-e", limit=size, after=after)
            assert len(page) <= size
            seen.extend(page)
            if len(page) < size:
                break
            after = (page[-1]["baseline_set_at"], page[-1]["run_id"])
        ids = [i["run_id"] for i in seen]
        assert sorted(ids) == sorted(f"run_e{i}" for i in range(8)), (size, ids)
        times = [i["baseline_set_at"] for i in seen]
        assert times == sorted(times, reverse=True)
    # a position taken from another team's page reads only this team's older baselines
    assert [
        i["run_id"]
        for i in store.baselines_page("team-f", limit=50, after=("2026-12-01T02:00:00Z", "run_e5"))
    ] == ["run_f0"]
    assert store.baselines_page("team-f", limit=50, after=("2026-12-01T01:00:00Z", "run_e0")) == []


def test_a_run_keeps_its_callback_secret(ports: Ports) -> None:
    ports.runs.put(run("run_s", "team-a", "t", callback_secret="s3cret"), expected_version=None)
    assert ports.runs.get("run_s")["callback_secret"] == "s3cret"


# ----------------------------------------------------------------------------- objects


def test_a_report_is_written_once(ports: Ports) -> None:
    ports.reports.put_once("reports/team-a/run_1/attempt-1.json", b"{}")
    with pytest.raises(StoreConflict):
        ports.reports.put_once("reports/team-a/run_1/attempt-1.json", b'{"other":1}')
    assert ports.reports.get("reports/team-a/run_1/attempt-1.json") == b"{}"
    with pytest.raises(NotFound):
        ports.reports.get("reports/team-a/run_1/attempt-2.json")


def test_a_missing_corpus_object_is_not_found(ports: Ports) -> None:
    with pytest.raises(NotFound) as caught:
        ports.corpus.read("manifest.json")
    assert ports.name == "aws" or caught.value.code == "corpus_missing"
    assert ports.corpus.presign("manifest.json", seconds=60).startswith("http")


# ----------------------------------------------------------------------------- idempotency


@pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")
def test_an_event_is_processed_once(ports: Ports) -> None:
    from toolcall300.service.sdk.idempotency import once_per_event_id

    calls: list[str] = []

    def process(event: dict[str, Any]) -> dict[str, Any]:
        calls.append(event["id"])
        return {"done": event["id"]}

    once = once_per_event_id(process, table="", expires_after_s=600, persistence=ports.idempotency)
    assert once({"id": "evt_1"}) == {"done": "evt_1"}
    assert once({"id": "evt_1"}) == {"done": "evt_1"}
    assert once({"id": "evt_2"}) == {"done": "evt_2"}
    assert calls == ["evt_1", "evt_2"]


@pytest.mark.parametrize("query", ["LATEST_RUNS", "RECENT_BASELINES", "BASELINES_AFTER"])
def test_the_sqlite_pages_read_an_index_in_order_and_sort_nothing(
    tmp_path: Path, query: str
) -> None:
    """A team's latest runs and latest baselines are bounded by the store: SQLite walks an
    index already in the page's order (no temporary B-tree, which would read every row of the
    team first), so the page costs the same after 10,000 runs (bench/bench_local_store.py)."""
    from toolcall300.service.statefolder import sqlite

    db = sqlite.Database(tmp_path / "state.db")
    sql = getattr(sqlite, query)
    args = ("t", 50) if query != "BASELINES_AFTER" else ("t", "2026-12-01T00:00:00Z", "run_1", 50)
    plan = " | ".join(str(row[3]) for row in db.rows("EXPLAIN QUERY PLAN " + sql, args))
    db.close()
    assert "USING INDEX" in plan and "TEMP B-TREE" not in plan, plan
    if query == "BASELINES_AFTER":  # a seek to the cursor, not a walk of the newer ones
        assert "(baseline_set_at,run_id)<(?,?)" in plan.replace(" ", ""), plan


def test_opening_the_database_deletes_what_a_ttl_would_have(tmp_path: Path) -> None:
    """DynamoDB's TTL deletes expired counters, finished runs past retention and idempotency
    records; SQLite does it each time the database is opened (the stack's start)."""
    from toolcall300.service.statefolder import sqlite

    clock = [1_000.0]
    db = sqlite.Database(tmp_path / "state.db", clock=lambda: clock[0])
    usage, runs = sqlite.SqliteUsage(db), sqlite.SqliteRuns(db)
    usage.take("free#a", limit=5, now_ms=0, min_gap_ms=0, expires_at=1_500)
    usage.take("free#b", limit=5, now_ms=0, min_gap_ms=0, expires_at=3_000)
    usage.add("metrics#argcheck", ["verdict:VALID"])  # no TTL: kept
    runs.put(run("run_old", "t", "c", expires_at=1_500), expected_version=None)
    runs.put(run("run_kept", "t", "c"), expected_version=None)
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO idempotency (id, status, expiration) VALUES ('k', 'COMPLETED', 1500)"
        )
    db.close()
    clock[0] = 2_000.0
    db = sqlite.Database(tmp_path / "state.db", clock=lambda: clock[0])
    usage, runs = sqlite.SqliteUsage(db), sqlite.SqliteRuns(db)
    assert usage.get("free#a") is None and usage.get("free#b") is not None
    assert usage.get("metrics#argcheck") is not None
    assert runs.get("run_old") is None and runs.get("run_kept") is not None
    assert db.rows("SELECT count(*) FROM idempotency") == [(0,)]
    db.close()


def test_port_calls_made_together_are_one_commit_and_a_failed_condition_undoes_only_its_own(
    tmp_path: Path,
) -> None:
    """``LocalAdapters.together``: a paid check's charge, its day's count and its metrics are
    one SQLite commit; a charge refused inside it (the retry of a check already charged) undoes
    nothing (its condition is checked before its writes), an error leaving the block undoes
    every write in it, and a joined call that fails after writing rolls the whole back even
    when its caller goes on (no half-done write is ever committed)."""
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    edition = LocalAdapters(StateFolder(tmp_path / "state"), public_url=lambda: "http://stack")
    ledger, usage = edition.ledger, edition.usage_for("")
    try:
        ledger.grant("lic_p", checks=2, payment_id="pi_1", granted_at="t")
        before = edition.db.commits
        with edition.together():
            ledger.charge("lic_p", "c1", RECORD)
            with pytest.raises(StoreConflict):  # the same check again: refused, nothing undone
                ledger.charge("lic_p", "c1", RECORD)
            ledger.count("2026-12-01", {"paid": 1})
            usage.add("metrics#argcheck", ["verdict:VALID"])
        assert edition.db.commits == before + 1
        with pytest.raises(RuntimeError), edition.together():
            ledger.charge("lic_p", "c2", RECORD)
            usage.add("metrics#argcheck", ["verdict:VALID"])
            raise RuntimeError("the answer failed after the charge")
        assert edition.db.commits == before + 1
        assert ledger.pack("lic_p")["remaining"] == 1
        assert ledger.record("c1") is not None and ledger.record("c2") is None
        assert ledger.days(["2026-12-01"])[0]["paid"] == 1
        assert usage.get("metrics#argcheck")["verdict:VALID"] == 1

        def half_done() -> None:
            with edition.db.transaction() as db:
                db.execute("INSERT INTO ledger (id, item) VALUES ('half', '{}')")
                raise StoreConflict("failed after its write")

        with pytest.raises(StoreConflict), edition.together():
            usage.add("metrics#argcheck", ["verdict:VALID"])
            with pytest.raises(StoreConflict):
                half_done()
            usage.add("metrics#argcheck", ["verdict:VALID"])  # the caller goes on: refused
        assert edition.db.commits == before + 1
        assert ledger.record("half") is None and ledger._get("half") is None
        assert usage.get("metrics#argcheck")["verdict:VALID"] == 1
        with edition.together():  # the next transaction starts clean
            usage.add("metrics#argcheck", ["verdict:VALID"])
        assert usage.get("metrics#argcheck")["verdict:VALID"] == 2
    finally:
        edition.close()


def test_a_payers_lane_is_held_by_one_holder_until_dropped_or_its_time_runs_out(
    tmp_path: Path,
) -> None:
    """Criteria D26 across the stack's processes (``SqliteLanes``): a second holder is refused
    while the first holds the lane, gets it once the first drops it, and gets a lane whose
    holder died (never dropped) once its time has run out; another payer is never held up."""
    from toolcall300.service.statefolder import sqlite

    db = sqlite.Database(tmp_path / "state.db")
    lanes = sqlite.SqliteLanes(db)
    try:
        assert lanes.take("p", "a", until=110.0, now=100.0)
        assert not lanes.take("p", "b", until=111.0, now=101.0)
        assert lanes.take("q", "b", until=111.0, now=101.0)
        lanes.drop("p", "b")  # not b's: nothing changes
        assert not lanes.take("p", "b", until=111.0, now=101.0)
        lanes.drop("p", "a")
        assert lanes.take("p", "b", until=112.0, now=102.0)  # b holds it; b dies here
        assert not lanes.take("p", "c", until=120.0, now=111.9)
        assert lanes.take("p", "c", until=122.0, now=112.0)
    finally:
        db.close()


# ----------------------------------------------------------------------------- the ports themselves

#: Members of ``api.wiring.Adapters`` that are not a store under a contract above, and why.
NOT_STORES = {
    "secret_json": "read-only files or Secrets Manager (tests/unit/test_local_files.py, the webhook tests)",
    "report_mac_for": "the signing seed or KMS (tests/unit/test_report_keys.py, test_local_files.py)",
    "together": "a transaction or nothing (test_port_calls_made_together_are_one_commit...)",
    "lanes": "shared lanes or none (test_a_payers_lane_is_held_by_one_holder...)",
    "wake": "the worker pool's bell (the local stack's tests)",
    "close": "the end of the adapters' life",
}


def _declared(protocol: type) -> set[str]:
    """The members a Protocol declares (its own attributes, methods and properties)."""
    return {name for name in vars(protocol) if not name.startswith("_")} | set(
        getattr(protocol, "__annotations__", {})
    )


def test_every_port_is_in_both_adapter_sets_and_under_contract(tmp_path: Path) -> None:
    """A port is added whole or not at all: every member ``Adapters`` declares is provided by
    both adapter sets (looked up without building anything), and is either a field of
    :class:`Ports`, which every contract above runs on both sets, or named in
    :data:`NOT_STORES` with the test that holds it."""
    import dataclasses
    import inspect

    from toolcall300.service.api import wiring
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    declared = _declared(wiring.Adapters)
    assert {"licences", "ledger", "runs", "usage_for", "corpus", "reports"} <= declared
    local = LocalAdapters(StateFolder(tmp_path / "state"), public_url=lambda: "")
    try:
        for adapters in (wiring.AwsAdapters(lambda kind: None), local):
            missing = set()
            for name in declared:
                try:
                    inspect.getattr_static(adapters, name)
                except AttributeError:
                    missing.add(name)
            assert not missing, f"{type(adapters).__name__} lacks {sorted(missing)}"
    finally:
        local.close()
    fields = {f.name for f in dataclasses.fields(Ports)} - {"name"}
    covered = {"usage_for" if f == "usage" else f for f in fields}
    assert declared - covered == set(NOT_STORES), "a port with neither a contract nor a reason"
    assert not covered - declared, "a contract over a member Adapters does not declare"


def test_a_new_edition_is_a_new_set_of_ports_and_the_one_before_is_left_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resetting is building a new edition: ``installed`` puts a new one in place for a block
    and then the one before back, open (a local stack's, whose worker pool still uses its
    database), and closes only its own."""
    from toolcall300.service.api import wiring
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    monkeypatch.setenv("TOOLCALL300_STATE_DIR", str(tmp_path / "stack"))
    stack = wiring.choose()  # the stack's edition, held as the stack holds it
    assert isinstance(stack.adapters, LocalAdapters)
    monkeypatch.delenv("TOOLCALL300_STATE_DIR")
    try:
        with wiring.installed(
            wiring.Edition(LocalAdapters(StateFolder(tmp_path / "t"), lambda: ""))
        ) as mine:
            assert wiring.edition() is mine and mine.licences is not stack.licences
            wiring.renew()  # a test that changed its environment: another edition again
            assert wiring.edition() is not mine
        assert stack.runs.by_team("team-1", limit=1) == []  # still open: nothing closed it
    finally:
        stack.close()
