"""The hosted-runs domain: submissions, the state machine, idempotency, caps, baselines, verdicts."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.runs import small_corpus
from support.stores import CountingQuota, MemoryReports, MemoryRunStore

from toolcall300.scoring.report import score_cases
from toolcall300.service.domain import runs
from toolcall300.service.domain.runs import compare, summary_of
from toolcall300.service.errors import BadRequest, Conflict, NotFound, TooManyRequests
from toolcall300.spec import CORPUS_VERSION

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
IMAGE = "registry.example.com/team/adapter@sha256:" + "a" * 64
CASES = small_corpus(8)


def body(**over: Any) -> dict[str, Any]:
    return {"image": IMAGE, "ref": "refs/heads/main", "commit": "abc1234", **over}


def submit(
    store: MemoryRunStore,
    quota: CountingQuota | None = None,
    *,
    key: str | None = None,
    now: datetime = T0,
    team: str = "acme",
    **over: Any,
) -> runs.Run:
    sub = runs.parse_submission(body(**over), local=True)
    run, _ = runs.submit(
        store,
        sub,
        team=team,
        licence_id="lic_1",
        take_quota=quota or CountingQuota(),
        now=now,
        idempotency_key=key,
    )
    return run


def scoring(answers: dict[str, Any]) -> runs.Scoring:
    sha = "f" * 64
    report = score_cases(CASES, answers, adapter="test", corpus_sha256=sha)
    return runs.Scoring(report, sha, "v", {}, {"network_isolated": True, "notes": []})


GOOD = {c["id"]: c["expected"] for c in CASES}
WORSE = {k: (None if i % 2 == 0 else v) for i, (k, v) in enumerate(GOOD.items())}


def finish(
    store: MemoryRunStore,
    reports: MemoryReports,
    run: runs.Run,
    answers: dict[str, Any],
    now: datetime = T0,
) -> runs.Run:
    assert runs.claim(store, run.run_id, owner="w", now=now, lease_s=30) is not None
    done = runs.finish_scored(
        store,
        reports,
        run.run_id,
        scoring(answers),
        compare=compare,
        summarise=summary_of,
        now=now,
        owner="w",
    )
    assert done is not None
    return done


# ----------------------------------------------------------------------------- submissions


def test_submission_accepts_digest_image_and_defaults_baseline_to_main() -> None:
    sub = runs.parse_submission(body(), local=False)
    assert sub.adapter == {"kind": "image", "image": IMAGE, "platform": "linux/amd64"}
    assert sub.baseline == "main"


@pytest.mark.parametrize(
    "bad",
    [
        {"image": "registry/adapter:latest"},  # a tag, not a digest
        {"image": "registry/adapter@sha256:" + "a" * 63},
        {"commit": "xyz"},
        {"commit": "ABC1234"},  # upper-case hex is not how git prints it
        {"ref": ""},
        {"ref": "main; rm -rf /"},
        {"baseline": "a" * 65},
        {"callback_url": "ftp://example.com/hook"},
        {"callback_url": "https://user:pw@example.com/hook"},
        {"adapter_cmd": ["x"]},  # both image and adapter_cmd
    ],
)
def test_submission_rejects_malformed_fields(bad: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        runs.parse_submission(body(**bad), local=True)


def test_adapter_cmd_only_on_a_local_stack() -> None:
    sent = {
        "adapter_cmd": ["toolcall300", "toolshim", "--stream"],
        "ref": "main",
        "commit": "abc1234",
    }
    with pytest.raises(BadRequest) as err:
        runs.parse_submission(sent, local=False)
    assert err.value.code == "adapter_cmd_not_allowed"
    assert runs.parse_submission(sent, local=True).adapter == {
        "kind": "command",
        "command": sent["adapter_cmd"],
    }


@pytest.mark.parametrize("cmd", [[], [""], "toolcall300 toolshim", [1, 2], ["a\0b"]])
def test_adapter_cmd_must_be_a_list_of_strings(cmd: Any) -> None:
    with pytest.raises(BadRequest):
        runs.parse_submission({"adapter_cmd": cmd, "ref": "main", "commit": "abc1234"}, local=True)


def test_plain_http_callback_only_on_a_local_stack() -> None:
    with pytest.raises(BadRequest):
        runs.parse_submission(body(callback_url="http://127.0.0.1:9/hook"), local=False)
    assert runs.parse_submission(
        body(callback_url="http://127.0.0.1:9/hook"), local=True
    ).callback_url


# ----------------------------------------------------------------------------- ids, idempotency, caps


def test_run_ids_have_the_contract_shape_and_sort_by_time() -> None:
    a, b = runs.new_run_id(T0), runs.new_run_id(T0 + timedelta(milliseconds=5))
    assert runs.RUN_ID_RE.match(a) and runs.RUN_ID_RE.match(b)
    assert a < b
    assert runs.RUN_ID_RE.match(runs.idempotent_run_id("acme", "k"))


def test_same_idempotency_key_same_team_is_the_same_run_counted_once() -> None:
    store, quota = MemoryRunStore(), CountingQuota()
    first = submit(store, quota, key="ci-123")
    again = submit(store, quota, key="ci-123")
    assert again.run_id == first.run_id
    assert quota.taken == ["lic_1"]
    other_team = submit(store, quota, key="ci-123", team="other")
    assert other_team.run_id != first.run_id


def test_same_idempotency_key_with_another_body_is_a_conflict() -> None:
    store = MemoryRunStore()
    submit(store, key="ci-123")
    with pytest.raises(Conflict):
        submit(store, key="ci-123", commit="def5678")


def test_daily_cap_refuses_with_retry_after_and_creates_nothing() -> None:
    store, quota = MemoryRunStore(), CountingQuota(limit=1)
    submit(store, quota)
    with pytest.raises(TooManyRequests) as err:
        submit(store, quota)
    assert err.value.headers["Retry-After"]
    assert len(store.items) == 1


def test_another_teams_run_is_not_found() -> None:
    store = MemoryRunStore()
    run = submit(store)
    assert runs.get_for_team(store, run.run_id, "acme").run_id == run.run_id
    with pytest.raises(NotFound):
        runs.get_for_team(store, run.run_id, "other")
    with pytest.raises(NotFound):
        runs.get_for_team(store, "../etc/passwd", "acme")


def test_public_view_never_shows_the_callback_secret() -> None:
    store = MemoryRunStore()
    sub = runs.parse_submission(body(callback_url="https://ci.example.com/hook"), local=False)
    run, _ = runs.submit(
        store,
        sub,
        team="acme",
        licence_id="l",
        take_quota=CountingQuota(),
        now=T0,
        callback_secret="s3cret",
    )
    assert "s3cret" not in json.dumps(run.public())
    assert set(run.public()) >= {
        "run_id",
        "team",
        "status",
        "adapter",
        "failure",
        "sandbox",
        "verdict",
        "summary",
        "comparison",
        "report_url",
    }


# ----------------------------------------------------------------------------- state machine


def test_a_final_run_never_moves() -> None:
    for final in ("scored", "failed"):
        for target in ("queued", "running", "scored", "failed"):
            with pytest.raises(Conflict):
                runs.check_transition(final, target)


def test_only_one_worker_claims_a_run() -> None:
    store = MemoryRunStore()
    run = submit(store)
    assert runs.claim(store, run.run_id, owner="a", now=T0, lease_s=30) is not None
    assert runs.claim(store, run.run_id, owner="b", now=T0, lease_s=30) is None


def test_failure_reasons_are_a_closed_list() -> None:
    with pytest.raises(ValueError):
        runs.failure("it_broke", "x")
    assert (
        runs.failure("job_timeout", "x", "e" * 10000)["stderr_tail"] == "e" * runs.STDERR_TAIL_CHARS
    )


OPS = st.lists(
    st.sampled_from(
        ["claim_a", "claim_b", "beat_a", "fail_a", "fail", "sweep", "finish_a", "finish_b"]
    ),
    max_size=14,
)


@settings(max_examples=examples(60), deadline=None)
@given(ops=OPS, steps=st.lists(st.integers(0, 40), min_size=14, max_size=14))
def test_any_interleaving_keeps_the_state_machine(ops: list[str], steps: list[int]) -> None:
    """Whatever workers, sweepers and failures do, a run ends at most once and never leaves a final state."""
    store, reports = MemoryRunStore(), MemoryReports()
    run = submit(store)
    now = T0
    finals = 0
    seen_final: str | None = None
    for op, step in zip(ops, steps, strict=False):
        now += timedelta(seconds=step)
        result: runs.Run | None = None
        if op.startswith("claim"):
            result = runs.claim(store, run.run_id, owner=op[-1], now=now, lease_s=10)
        elif op == "beat_a":
            runs.heartbeat(store, run.run_id, owner="a", now=now, lease_s=10)
        elif op == "fail_a":
            result = runs.fail(
                store, run.run_id, runs.failure("output_malformed", "x"), now=now, owner="a"
            )
        elif op == "fail":
            result = runs.fail(store, run.run_id, runs.failure("infra_error", "x"), now=now)
        elif op == "sweep":
            for changed in runs.sweep(store, now=now, max_attempts=2):
                result = changed
        else:
            result = runs.finish_scored(
                store,
                reports,
                run.run_id,
                scoring(GOOD),
                compare=compare,
                summarise=summary_of,
                now=now,
                owner=op[-1],
            )
        current = runs.load(store, run.run_id)
        assert current is not None
        if seen_final is not None:
            assert current.status == seen_final
        if result is not None and result.status in runs.FINAL and seen_final is None:
            finals += 1
        if current.status in runs.FINAL:
            seen_final = current.status
        assert current.attempts <= 2 or current.status == "failed"
    assert finals <= 1
    history = runs.baseline_history(runs.team_runs(store, "acme"))
    assert len(history.get("main", [])) <= 1


# ----------------------------------------------------------------------------- worker loss


def test_a_dead_workers_run_is_retried_once_and_counted_once() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    run = submit(store)
    # Given a worker that claimed the run, stored its report, then died before recording it
    dead = runs.claim(store, run.run_id, owner="dead", now=T0, lease_s=10)
    assert dead is not None
    reports.put_once(runs.report_key(dead), b"{}")
    # When its lease expires, the sweeper puts the run back in the queue
    changed = runs.sweep(store, now=T0 + timedelta(seconds=11), max_attempts=2)
    assert [r.status for r in changed] == ["queued"]
    # Then a live worker finishes it (a new attempt, a new immutable report)
    later = T0 + timedelta(seconds=12)
    assert runs.claim(store, run.run_id, owner="live", now=later, lease_s=10) is not None
    done = runs.finish_scored(
        store,
        reports,
        run.run_id,
        scoring(GOOD),
        compare=compare,
        summarise=summary_of,
        now=later,
        owner="live",
    )
    assert done is not None and done.status == "scored" and done.attempts == 2
    # And the dead worker, waking up, cannot finish it again
    assert (
        runs.finish_scored(
            store,
            reports,
            run.run_id,
            scoring(WORSE),
            compare=compare,
            summarise=summary_of,
            now=later,
            owner="dead",
        )
        is None
    )
    assert (
        runs.fail(store, run.run_id, runs.failure("infra_error", "x"), now=later, owner="dead")
        is None
    )
    assert len(runs.baseline_history(runs.team_runs(store, "acme"))["main"]) == 1


def test_a_run_whose_workers_keep_dying_fails_instead_of_looping() -> None:
    store = MemoryRunStore()
    run = submit(store)
    now = T0
    for _ in range(2):
        assert runs.claim(store, run.run_id, owner="dead", now=now, lease_s=5) is not None
        now += timedelta(seconds=6)
        runs.sweep(store, now=now, max_attempts=2)
    final = runs.load(store, run.run_id)
    assert final is not None and final.status == "failed"
    assert final.failure is not None and final.failure["reason"] == "infra_error"


def test_a_run_whose_job_is_gone_fails() -> None:
    store = MemoryRunStore()
    run = submit(store)
    runs.mark_running(store, run.run_id, now=T0, job_id="job-1")
    changed = runs.sweep(store, now=T0, job_alive=lambda r: False if r.job_id == "job-1" else None)
    assert [r.status for r in changed] == ["failed"]


def test_queued_too_long_fails() -> None:
    store = MemoryRunStore()
    submit(store)
    assert runs.sweep(store, now=T0 + timedelta(minutes=30), queued_timeout_s=3600) == []
    changed = runs.sweep(store, now=T0 + timedelta(hours=2), queued_timeout_s=3600)
    assert [r.status for r in changed] == ["failed"]


# ----------------------------------------------------------------------------- baselines and verdicts


@pytest.mark.parametrize(
    ("regressed", "on_ref", "expected"),
    [
        (None, True, ("baseline_set", True)),
        (None, False, ("pass", False)),
        (False, True, ("pass", True)),
        (False, False, ("pass", False)),
        (True, True, ("regression", False)),
        (True, False, ("regression", False)),
    ],
)
def test_verdict_table(regressed: bool | None, on_ref: bool, expected: tuple[str, bool]) -> None:
    assert runs.decide_verdict(regressed=regressed, on_baseline_ref=on_ref) == expected


def test_baselines_move_forward_and_keep_history() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    first = finish(store, reports, submit(store), GOOD)
    assert first.verdict == "baseline_set" and first.comparison is None
    feature = finish(
        store,
        reports,
        submit(store, ref="refs/heads/feature", now=T0 + timedelta(minutes=1)),
        WORSE,
        T0 + timedelta(minutes=1),
    )
    assert feature.verdict == "regression"
    assert feature.comparison is not None and feature.comparison["baseline_run_id"] == first.run_id
    assert feature.comparison["flipped"]["broken"]
    bad_main = finish(
        store,
        reports,
        submit(store, commit="bbbbbbb", now=T0 + timedelta(minutes=2)),
        WORSE,
        T0 + timedelta(minutes=2),
    )
    assert bad_main.verdict == "regression" and bad_main.baseline_set_at is None
    good_main = finish(
        store,
        reports,
        submit(store, commit="ccccccc", now=T0 + timedelta(minutes=3)),
        GOOD,
        T0 + timedelta(minutes=3),
    )
    assert good_main.verdict == "pass" and good_main.baseline_set_at is not None
    doc = runs.baselines_document("acme", runs.team_runs(store, "acme"))
    assert [e["run_id"] for e in doc["baselines"]["main"]] == [first.run_id, good_main.run_id]
    # a separate baseline name has its own history
    rel = finish(
        store,
        reports,
        submit(store, ref="release-1.2", baseline="release-1.2", now=T0 + timedelta(minutes=4)),
        WORSE,
        T0 + timedelta(minutes=4),
    )
    assert rel.verdict == "baseline_set"


def test_the_stored_report_is_immutable_and_names_what_was_compared() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    first = finish(store, reports, submit(store), GOOD)
    second = finish(
        store,
        reports,
        submit(store, commit="ccccccc", now=T0 + timedelta(minutes=1)),
        GOOD,
        T0 + timedelta(minutes=1),
    )
    doc = json.loads(runs.stored_report(store, reports, second.run_id, "acme"))
    assert doc["baseline_run_id"] == first.run_id
    assert doc["corpus_sha256"] == "f" * 64 and doc["scorer_version"] == "v"
    assert doc["adapter"] == {"kind": "image", "image": IMAGE, "platform": "linux/amd64"}
    assert doc["score"]["exact"] == len(CASES)
    with pytest.raises(Exception):  # noqa: B017 - any refusal to overwrite will do
        reports.put_once(second.report_key or "", b"tampered")


def test_a_baseline_from_another_corpus_is_not_compared() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    finish(store, reports, submit(store), GOOD)
    run = submit(store, commit="ccccccc", now=T0 + timedelta(minutes=1))
    runs.claim(store, run.run_id, owner="w", now=T0, lease_s=30)
    other = scoring(GOOD)
    other = runs.Scoring(dict(other.report, corpus_sha256="0" * 64), "0" * 64, "v", {}, {})
    done = runs.finish_scored(
        store, reports, run.run_id, other, compare=compare, summarise=summary_of, now=T0, owner="w"
    )
    assert done is not None and done.verdict == "baseline_set" and done.comparison is None


def test_a_baseline_saved_on_corpus_version_1_fails_the_run_naming_both_versions() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    old = scoring(GOOD)
    legacy = {k: v for k, v in old.report.items() if k != "corpus_version"}
    legacy["spec_version"] = "toolcall300-grading/1.0"  # as reports were written on version 1
    first = submit(store)
    runs.claim(store, first.run_id, owner="w", now=T0, lease_s=30)
    runs.finish_scored(
        store,
        reports,
        first.run_id,
        runs.Scoring(legacy, old.corpus_sha256, "v", {}, {}),
        compare=compare,
        summarise=summary_of,
        now=T0,
        owner="w",
    )
    run = submit(store, commit="ccccccc", now=T0 + timedelta(minutes=1))
    runs.claim(store, run.run_id, owner="w", now=T0, lease_s=30)
    now = scoring(GOOD)
    current = runs.Scoring(
        dict(now.report, corpus_version=CORPUS_VERSION), now.corpus_sha256, "v", {}, {}
    )
    done = runs.finish_scored(
        store,
        reports,
        run.run_id,
        current,
        compare=compare,
        summarise=summary_of,
        now=T0,
        owner="w",
    )
    assert done is not None and done.status == "failed" and done.verdict is None
    assert done.failure is not None and done.failure["reason"] == "baseline_version"
    detail = done.failure["detail"]
    assert detail == (
        f"baseline was scored on corpus version 1.0, this run on version {CORPUS_VERSION}: "
        f"re-score the baseline on version {CORPUS_VERSION}"
    )
    assert runs.current_baseline(runs.team_runs(store, "acme"), "main") is not None
    assert runs.current_baseline(runs.team_runs(store, "acme"), "main").run_id == first.run_id


def test_summary_has_the_contract_fields() -> None:
    s = summary_of(scoring(GOOD).report)
    assert set(s) == {
        "cases",
        "exact",
        "refusal_cases",
        "refused_correctly",
        "invented_calls",
        "false_refusals",
        "schema_invalid_returns",
        "categories",
    }
    assert s["categories"]["type_coercion"] == {"n": 6, "pass": 6}


def test_callback_document_carries_the_outcome() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    done = finish(store, reports, submit(store), GOOD)
    doc = runs.callback_document(done)
    assert (
        doc["run_id"] == done.run_id
        and doc["verdict"] == "baseline_set"
        and doc["status"] == "scored"
    )


def test_runs_record_the_corpus_they_were_scored_on_and_compare_only_like_with_like() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    first = finish(store, reports, submit(store), GOOD)  # the baseline on corpus f...f
    assert first.corpus_sha256 == "f" * 64
    run = submit(store, commit="ccccccc", now=T0 + timedelta(minutes=1))
    runs.claim(store, run.run_id, owner="w", now=T0, lease_s=30)
    new = scoring(GOOD)
    new = runs.Scoring(dict(new.report, corpus_sha256="0" * 64), "0" * 64, "v", {}, {})
    on_new = runs.finish_scored(
        store, reports, run.run_id, new, compare=compare, summarise=summary_of, now=T0, owner="w"
    )
    assert on_new is not None and on_new.verdict == "baseline_set"  # the new corpus's first
    # A later run back on the first corpus is compared with that corpus's baseline, not the newer one
    back = finish(store, reports, submit(store, commit="ddddddd"), WORSE, now=T0 + timedelta(2))
    assert back.verdict == "regression"
    assert back.comparison is not None and back.comparison["baseline_run_id"] == first.run_id


class _NoHistoryPage(MemoryRunStore):
    """A store whose recent-runs page is empty: the baseline must come from the baseline index."""

    def by_team(self, team: str, *, limit: int) -> list[dict[str, Any]]:
        return []


def test_the_baseline_is_found_however_many_runs_came_after_it() -> None:
    store, reports = _NoHistoryPage(), MemoryReports()
    base = finish(store, reports, submit(store), GOOD)
    worse = finish(store, reports, submit(store, commit="ccccccc"), WORSE, now=T0 + timedelta(1))
    assert worse.verdict == "regression"
    assert worse.comparison is not None and worse.comparison["baseline_run_id"] == base.run_id


class _NoWholeHistory(MemoryRunStore):
    """Scoring may read a bounded page of recent baselines, never the team's whole history."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def baselines_page(
        self, team: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[dict[str, Any]]:
        assert after is None, "scoring reads the newest page only"
        self.asked.append(limit)
        return super().baselines_page(team, limit=limit, after=after)


def test_scoring_reads_a_bounded_page_of_baselines_never_the_whole_history() -> None:
    store, reports = _NoWholeHistory(), MemoryReports()
    base = finish(store, reports, submit(store), GOOD)
    for i in range(5):  # other baseline names set since, newest last
        finish(
            store,
            reports,
            submit(store, baseline=f"b{i}", ref=f"b{i}"),
            GOOD,
            now=T0 + timedelta(hours=i + 1),
        )
    worse = finish(store, reports, submit(store, commit="ccccccc"), WORSE, now=T0 + timedelta(1))
    assert worse.verdict == "regression"
    assert worse.comparison is not None and worse.comparison["baseline_run_id"] == base.run_id
    assert store.asked and set(store.asked) == {runs.BASELINE_WINDOW}


def test_recent_baselines_are_the_newest_first_and_no_more() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    made = [
        finish(
            store,
            reports,
            submit(store, baseline=f"b{i}", ref=f"b{i}"),
            GOOD,
            now=T0 + timedelta(hours=i),
        )
        for i in range(4)
    ]
    got = runs.recent_baselines(store, made[0].team, limit=2)
    assert [r.run_id for r in got] == [made[3].run_id, made[2].run_id]


def test_only_runs_in_flight_are_indexed_by_status_and_finished_ones_expire() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    queued = submit(store)
    assert queued.to_item()["active_status"] == "queued" and "expires_at" not in queued.to_item()
    base = finish(store, reports, queued, GOOD)
    assert "active_status" not in base.to_item()
    assert "expires_at" not in base.to_item()  # a baseline is history: it never expires
    other = finish(store, reports, submit(store, ref="feature/x", commit="ccccccc"), GOOD)
    assert "active_status" not in other.to_item()
    expected = int((T0 + timedelta(days=runs.RETENTION_DAYS)).timestamp())
    assert other.to_item()["expires_at"] == expected
    assert store.by_status("queued") == [] and store.by_status("running") == []


def test_one_busy_run_does_not_stop_the_sweep() -> None:
    store = MemoryRunStore()
    stuck = submit(store, commit="1111111", now=T0 - timedelta(hours=2))
    other = submit(store, commit="2222222", now=T0 - timedelta(hours=2))

    def alive(run: runs.Run) -> bool | None:
        if run.run_id == stuck.run_id:
            raise Conflict("busy", code="busy")
        return None

    changed = runs.sweep(store, now=T0, job_alive=alive)
    assert [(r.run_id, r.status) for r in changed] == [(other.run_id, "failed")]


def test_the_hosted_corpus_version_is_the_uploaded_manifests_when_it_pins_the_corpus() -> None:
    from pathlib import Path

    from toolcall300.service.domain.runs import load_corpus

    private = Path(__file__).resolve().parents[2] / "corpus_private"
    files = {n: (private / n).read_bytes() for n in ("toolcall300.jsonl", "manifest.json")}

    def read_from(held: dict[str, bytes]) -> Any:
        def read(key: str) -> bytes:
            if key not in held:
                raise NotFound("the corpus is not published yet", code="corpus_missing")
            return held[key]

        return read

    assert load_corpus(read_from(files)).version == CORPUS_VERSION
    assert load_corpus(read_from({"toolcall300.jsonl": files["toolcall300.jsonl"]})).version is None
    other = dict(files, **{"toolcall300.jsonl": files["toolcall300.jsonl"] + b""})
    other["manifest.json"] = files["manifest.json"].replace(
        f'"{CORPUS_VERSION}"'.encode(), b'"9.9"', 1
    )
    assert load_corpus(read_from(other)).version == "9.9"
    unpinned = json.loads(files["manifest.json"])
    unpinned["files"]["toolcall300.jsonl"]["sha256"] = "0" * 64
    files["manifest.json"] = json.dumps(unpinned).encode()
    assert load_corpus(read_from(files)).version is None  # it pins other bytes


ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/acme/adapter@sha256:" + "a" * 64


@pytest.mark.parametrize(
    "image",
    [
        "registry.example.com/team/adapter@sha256:" + "a" * 64,  # not ECR: unreachable
        "public.ecr.aws/acme/adapter@sha256:" + "a" * 64,  # ECR Public needs the internet
        "123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/adapter@sha256:" + "a" * 64,  # region
    ],
)
def test_on_aws_an_image_must_be_in_ecr_in_the_stacks_region(image: str) -> None:
    with pytest.raises(BadRequest) as refused:
        runs.parse_submission(body(image=image), local=False, ecr_region="us-east-1")
    assert refused.value.code == "image_registry_not_allowed"


def test_an_ecr_image_of_any_account_in_the_region_is_accepted_with_its_platform() -> None:
    other_account = ECR.replace("123456789012", "210987654321")  # cross-account, by policy
    sub = runs.parse_submission(body(image=other_account), local=False, ecr_region="us-east-1")
    assert sub.adapter == {"kind": "image", "image": other_account, "platform": "linux/amd64"}
    arm = runs.parse_submission(
        body(image=ECR, platform="linux/arm64"), local=False, ecr_region="us-east-1"
    )
    assert arm.adapter["platform"] == "linux/arm64" and arm.fingerprint() != sub.fingerprint()
    with pytest.raises(BadRequest) as refused:
        runs.parse_submission(
            body(image=ECR, platform="linux/386"), local=False, ecr_region="us-east-1"
        )
    assert refused.value.code == "invalid_platform"


def test_a_queued_run_whose_links_would_die_before_it_could_finish_fails_now() -> None:
    store = MemoryRunStore()
    run = submit(store)
    expires = int(T0.timestamp()) + 1000
    assert runs.set_job(store, run.run_id, "job-1", links_expire_at=expires) is not None
    # 900 s of work left in the links: a job needing 1,200 s could start but not deliver
    assert runs.sweep(store, now=T0, job_alive=lambda _r: True, link_need_s=100) == []
    changed = runs.sweep(store, now=T0, job_alive=lambda _r: True, link_need_s=1200)
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "failed")]
    assert changed[0].failure is not None and "links" in changed[0].failure["detail"]


def test_a_queued_run_whose_links_would_die_is_renewed_when_the_sweeper_can() -> None:
    store = MemoryRunStore()
    short, fine = submit(store), submit(store, commit="beef123")
    stamp = int(T0.timestamp())
    runs.set_job(store, short.run_id, "job-1", links_expire_at=stamp + 1000)
    runs.set_job(store, fine.run_id, "job-2", links_expire_at=stamp + 5000)
    asked: list[str] = []

    def renew(run: runs.Run) -> runs.Run | None:
        asked.append(run.run_id)
        return runs.renew_job(
            store, run.run_id, old_job_id="job-1", new_job_id="job-3", links_expire_at=stamp + 3540
        )

    changed = runs.sweep(
        store, now=T0, job_alive=lambda _r: True, link_need_s=2100, renew=renew, max_renewals=2
    )
    assert asked == [short.run_id]  # the run whose links still last is not touched
    assert [(r.run_id, r.status, r.job_id, r.job_renewals) for r in changed] == [
        (short.run_id, "queued", "job-3", 1)
    ]
    # A renewal that changes nothing (the job started, or another sweep won) fails nothing
    again = runs.sweep(
        store, now=T0 + timedelta(seconds=3000), job_alive=lambda _r: True, link_need_s=2100,
        renew=lambda _r: None, max_renewals=2,
    )  # fmt: skip
    assert again == []
    assert all(r["status"] == "queued" for r in (store.get(short.run_id), store.get(fine.run_id)))
    # the swap happens once: a stale renewal of the same old job is refused
    assert (
        runs.renew_job(
            store, short.run_id, old_job_id="job-1", new_job_id="job-4", links_expire_at=stamp
        )
        is None
    )
    # past its renewals a run that cannot start in time fails, as without a renewer
    late = runs.sweep(
        store, now=T0 + timedelta(seconds=3000), job_alive=lambda _r: True, link_need_s=2100,
        renew=renew, max_renewals=1,
    )  # fmt: skip
    assert [(r.run_id, r.status) for r in late] == [(short.run_id, "failed")]  # renewed once
    assert late[0].failure is not None and "did not start in time" in late[0].failure["detail"]


def test_links_live_no_longer_than_the_credentials_that_signed_them() -> None:
    from toolcall300.service.hosted import submit as hosted_submit

    assert hosted_submit.link_lifetime(T0, None) == hosted_submit.PRESIGN_SECONDS
    soon = T0 + timedelta(minutes=30)
    assert hosted_submit.link_lifetime(T0, soon) == 30 * 60 - 60
    assert hosted_submit.link_lifetime(T0, T0) == 1  # already expired: the sweeper fails it


def test_a_submission_over_the_daily_cap_keeps_nothing() -> None:
    """``keep`` (the launcher storing the adapter's files) runs only once the quota is taken:
    a refused submission leaves no data behind."""
    store, kept = MemoryRunStore(), []
    sub = runs.parse_submission(body(), local=True)
    with pytest.raises(TooManyRequests):
        runs.submit(
            store, sub, team="acme", licence_id="lic_1", take_quota=CountingQuota(limit=0),
            now=T0, keep=lambda: kept.append(1),
        )  # fmt: skip
    assert kept == [] and store.items == {}
    runs.submit(
        store, sub, team="acme", licence_id="lic_1", take_quota=CountingQuota(),
        now=T0, keep=lambda: kept.append(1),
    )  # fmt: skip
    assert kept == [1]


# ----------------------------------------------------------------------------- tracks


def submit_track(store: MemoryRunStore, track: str, *, now: datetime = T0, **over: Any) -> runs.Run:
    """A run of ``track`` (built past the hosted-tracks check: these tests are the domain's)."""
    sub = replace(runs.parse_submission(body(**over), local=True), track=track)
    run, _ = runs.submit(
        store, sub, team="acme", licence_id="lic_1", take_quota=CountingQuota(), now=now
    )
    return run


@pytest.mark.parametrize("sent", ["parallel", "deltas", "single"])
def test_a_submission_names_its_track_and_the_run_and_report_keep_it(sent: str) -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    run = submit_track(store, sent)
    assert run.track == sent and run.public()["track"] == sent and run.listing()["track"] == sent
    done = finish(store, reports, run, GOOD)
    assert json.loads(runs.stored_report(store, reports, done.run_id, "acme"))["track"] == sent
    assert runs.callback_document(done)["track"] == sent


def test_a_submission_without_a_track_is_the_single_call_track_with_its_old_fingerprint() -> None:
    sub = runs.parse_submission(body(), local=True)
    assert sub.track == "single"
    # an idempotent retry of a run stored before tracks still matches its stored hash
    assert (
        sub.fingerprint() == runs.parse_submission(body(track="single"), local=True).fingerprint()
    )
    assert sub.fingerprint() != replace(sub, track="deltas").fingerprint()
    assert (
        runs.Run.from_item(
            {
                "run_id": "r",
                "team": "t",
                "licence_id": "l",
                "adapter": {},
                "ref": "main",
                "commit": "abc1234",
            }
        ).track
        == "single"
    )


@pytest.mark.parametrize("bad", ["Parallel", "multi", "", 3, ["parallel"]])
def test_an_unknown_track_is_a_specific_400(bad: Any) -> None:
    with pytest.raises(BadRequest) as err:
        runs.parse_submission(body(track=bad), local=True)
    assert err.value.code == "invalid_track"
    assert "single, parallel, deltas" in str(err.value)


def test_a_known_track_the_hosted_runs_cannot_score_yet_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every track is hosted today; a track registered before its job harness exists would
    be refused by name, on a local stack and on AWS."""
    from toolcall300.service.domain.runs import submission

    assert set(runs.HOSTED_TRACKS) == set(runs.TRACKS) == set(submission.AWS_TRACKS)
    monkeypatch.setattr(submission, "HOSTED_TRACKS", ("single", "parallel"))
    monkeypatch.setattr(submission, "AWS_TRACKS", ("single", "parallel"))
    for local in (True, False):
        with pytest.raises(BadRequest) as err:
            runs.parse_submission(body(track="deltas"), local=local)
        assert err.value.code == "track_not_hosted" and "'deltas'" in str(err.value)


def test_baselines_are_kept_per_track_and_another_tracks_is_never_compared() -> None:
    store, reports = MemoryRunStore(), MemoryReports()
    single = finish(store, reports, submit(store), GOOD)
    assert single.verdict == "baseline_set"
    # the same team, branch and baseline name on another track: its own first baseline
    later = T0 + timedelta(minutes=1)
    parallel = finish(store, reports, submit_track(store, "parallel", now=later), WORSE, later)
    assert parallel.verdict == "baseline_set" and parallel.comparison is None
    # a worse single-track run is compared with the single baseline, not the parallel one
    later = T0 + timedelta(minutes=2)
    worse = finish(store, reports, submit(store, commit="bbbbbbb", now=later), WORSE, later)
    assert worse.verdict == "regression"
    assert worse.comparison is not None and worse.comparison["baseline_run_id"] == single.run_id
    # and a parallel run on a feature branch compares with the parallel baseline only
    later = T0 + timedelta(minutes=3)
    feature = finish(
        store, reports, submit_track(store, "parallel", ref="feature", now=later), WORSE, later
    )
    assert feature.comparison is not None
    assert feature.comparison["baseline_run_id"] == parallel.run_id
    doc = runs.baselines_document("acme", runs.team_runs(store, "acme"))
    assert [(e["run_id"], e["track"]) for e in doc["baselines"]["main"]] == [
        (single.run_id, "single"),
        (parallel.run_id, "parallel"),
    ]


@pytest.mark.parametrize("track", ["parallel", "deltas"])
def test_each_track_is_hosted_on_a_local_stack_and_on_aws(track: str) -> None:
    """The deltas track was refused (``track_not_hosted``) until the job harness spoke its
    process protocol (``jobs.harness.run_track_job``)."""
    assert runs.parse_submission(body(track=track), local=True).track == track
    assert runs.parse_submission(body(track=track), local=False).track == track


def test_a_deltas_runs_job_inputs_hold_its_streams_and_never_a_label() -> None:
    """What the worker and the Batch job are handed for a deltas run: the track's
    ``adapter_items`` (events, fragment, partitions, tools), the fields the harness keeps."""
    from support.corpus import PRIVATE

    from toolcall300.jobs import harness
    from toolcall300.scoring.tracks import read_corpus
    from toolcall300.service.domain.runs.scoring import Corpus, job_inputs

    _, cases = read_corpus((PRIVATE / "deltas" / "deltas.jsonl").read_bytes())
    rows = job_inputs(Corpus(cases[:40], "x", track="deltas"))
    assert [r["id"] for r in rows] == [c["id"] for c in cases[:40]]
    assert all(set(r) == set(harness.input_fields("deltas")) for r in rows)
    assert not {"expected", "expected_kind", "category"} & set(harness.input_fields("deltas"))
    assert all(r["partitions"] == c["partitions"] for r, c in zip(rows, cases, strict=False))


def test_a_deltas_summary_keeps_its_commit_lead_beside_its_counts() -> None:
    """The commit lead is a headline figure of the deltas track but no count: the summary kept
    counts only, so the dashboard could not draw it (docs/runs-contract.md)."""
    from toolcall300.scoring.tracks import deltas

    report: dict[str, Any] = {k: 7 for k in deltas.COUNT_FIELDS}
    report.update(track="deltas", commit_lead=0.4125, per_case=[], forms={})
    report["categories"] = {"type_coercion": {"n": 3, "pass": 2}}
    s = summary_of(report)
    assert s["commit_lead"] == 0.4125
    assert set(s) == {*deltas.COUNT_FIELDS, "commit_lead", "categories"}
    single = summary_of(scoring(GOOD).report)
    assert "commit_lead" not in single
