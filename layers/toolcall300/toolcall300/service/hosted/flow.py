"""Hosted runs' settings, production collaborators, and the glue to the CLI's scorer.

The settings model is built from the environment on first use (the template's ``Globals``
pass table and bucket names; Batch names come from the runs functions' own variables).
:func:`summary_of` and :func:`compare` adapt ``toolcall300.scoring.report``'s report and comparison
to the API contract; no grading happens here, the scorer is the CLI's own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from toolcall300.jobs.harness import JobOutput
from toolcall300.scoring import report as scorer
from toolcall300.scoring.corpus import parse_corpus
from toolcall300.service.domain import usage
from toolcall300.service.domain.runs import (
    ReportStore,
    Run,
    RunStore,
    Scoring,
    callback_document,
    finish_scored,
)
from toolcall300.service.errors import TooManyRequests
from toolcall300.service.hosted.batch import JobEvent
from toolcall300.service.observability import logger
from toolcall300.service.sdk.runs import BatchApi, ReportObjects, RunTable
from toolcall300.spec import SPEC_VERSION

CORPUS_FILE = "toolcall300.jsonl"


class RunsSettings(BaseSettings):
    """What the runs functions, the worker and the sweeper need."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    runs_table: str
    reports_bucket: str
    corpus_bucket: str = ""
    usage_table: str = ""
    licences_table: str = ""
    runs_per_day: int = Field(default=50, ge=1)
    #: Set only by the local stack: accept ``adapter_cmd`` and plain-http callbacks.
    toolcall300_local_stack: bool = False
    batch_job_queue: str = ""
    batch_job_definition: str = ""  # the template's harness job definition (name or ARN)
    batch_adapter_role_arn: str = ""
    callback_attempts: int = Field(default=4, ge=1, le=10)
    callback_base_delay_s: float = Field(default=1.0, ge=0)
    max_attempts: int = Field(default=2, ge=1, le=5)


@cache
def settings() -> RunsSettings:
    return RunsSettings()  # type: ignore[call-arg]  # filled from the environment


@cache
def run_store() -> RunTable:
    return RunTable(settings().runs_table)


@cache
def report_store() -> ReportObjects:
    return ReportObjects(settings().reports_bucket)


@cache
def batch_api() -> BatchApi:
    return BatchApi()


def clear() -> None:
    """Forget settings and collaborators (tests, the local stack after setting the environment)."""
    for fn in (settings, run_store, report_store, batch_api):
        fn.cache_clear()


def quota_taker(now: datetime | None = None) -> Callable[[str], None]:
    """Count one run against a licence's daily cap (429 + Retry-After when it is spent)."""
    from toolcall300.service.sdk.dynamo import UsageTable

    table = UsageTable(settings().usage_table)
    limit = settings().runs_per_day

    def take(licence_id: str) -> None:
        usage.take(
            table,
            f"runs#{licence_id}",
            limit=limit,
            now=now or datetime.now(UTC),
            spent=TooManyRequests,
        )

    return take


# ----------------------------------------------------------------------------- scorer glue


@dataclass(frozen=True)
class Corpus:
    """The private corpus as the trusted side holds it: cases with labels, and its pin."""

    cases: list[dict[str, Any]]
    sha256: str


def load_corpus(read: Callable[[str], bytes], name: str = CORPUS_FILE) -> Corpus:
    """Read and parse the corpus with the scorer's own parser."""
    data = read(name)
    return Corpus(parse_corpus(data), hashlib.sha256(data).hexdigest())


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``summary``: the counts and the per-category table of a scorer report."""
    summary: dict[str, Any] = {k: report[k] for k in scorer.COUNT_FIELDS}
    summary["categories"] = {
        k: {"n": v["n"], "pass": v["pass"]} for k, v in report["categories"].items()
    }
    return summary


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The scorer's gate, in the contract's shape (``deltas`` is called ``counts`` there)."""
    c = scorer.compare_reports(baseline, current)
    return {
        "regressed": c["regressed"],
        "reasons": c["reasons"],
        "counts": c["deltas"],
        "categories": c["categories"],
        "flipped": c["flipped"],
    }


SCORER_VERSION = f"{scorer.REPORT_VERSION} ({SPEC_VERSION})"


def score_output(
    store: RunStore,
    reports: ReportStore,
    run: Run,
    output: JobOutput,
    *,
    corpus: Corpus,
    sandbox: dict[str, Any],
    now: datetime,
    owner: str | None = None,
) -> Run | None:
    """Score a job's answers in trusted code and record the run (the worker's and Batch's end)."""
    adapter = run.adapter.get("image") or "command: " + " ".join(run.adapter.get("command") or [])
    report = scorer.score_cases(
        corpus.cases,
        output.answers,
        adapter=str(adapter),
        corpus_sha256=corpus.sha256,
        timing={"total_seconds": output.diagnostics.get("elapsed_s")},
    )
    scoring = Scoring(report, corpus.sha256, SCORER_VERSION, output.diagnostics, sandbox)
    return finish_scored(
        store,
        reports,
        run.run_id,
        scoring,
        compare=compare,
        summarise=summary_of,
        now=now,
        owner=owner,
    )


# ----------------------------------------------------------------------------- the AWS path

#: Isolation of a Batch job: Fargate task in subnets with no route out (template.yaml).
BATCH_SANDBOX = {
    "network_isolated": True,
    "method": "batch-fargate",
    "notes": ["AWS Batch on Fargate: private subnets with no route out; task role grants nothing"],
}


@cache
def corpus() -> Corpus:
    """The private corpus from the corpus bucket (once per process)."""
    from toolcall300.service.sdk.s3 import CorpusObjects

    return load_corpus(CorpusObjects(settings().corpus_bucket).read)


def dispatch(run: Run, *, now: datetime) -> Run:
    """Hand a new image run to AWS Batch; a submission that fails ends the run, never strands it."""
    from toolcall300.service.domain import runs
    from toolcall300.service.hosted import batch

    conf = settings()
    try:
        held = corpus()
        inputs = batch.publish_inputs(report_store(), held.cases, held.sha256)
        sent = batch.submit_run(
            batch_api(),
            report_store(),
            run,
            queue=conf.batch_job_queue,
            base_definition=conf.batch_job_definition,
            inputs=inputs,
        )
    except Exception as exc:
        logger.exception("batch submission failed", extra={"run_id": run.run_id})
        failed = runs.fail(
            run_store(),
            run.run_id,
            runs.failure("infra_error", f"could not submit the job: {type(exc).__name__}"),
            now=now,
        )
        return failed or run
    return runs.set_job(run_store(), run.run_id, sent.job_id) or run


def handle_batch_event(event: dict[str, Any], *, now: datetime | None = None) -> Run | None:
    """One EventBridge Batch job-state event -> the run's update (and its callback when it ends)."""
    from toolcall300.service.hosted import batch

    parsed = batch.parse_event(event)
    return handle_batch_event_parsed(parsed, now=now) if parsed is not None else None


def handle_batch_event_parsed(parsed: JobEvent, *, now: datetime | None = None) -> Run | None:
    """Apply one parsed job event (from EventBridge or replayed by the sweeper)."""
    from toolcall300.service.hosted import batch

    when = now or datetime.now(UTC)

    def score(run: Run, output: JobOutput) -> Run | None:
        return score_output(
            run_store(),
            report_store(),
            run,
            output,
            corpus=corpus(),
            sandbox=BATCH_SANDBOX,
            now=when,
        )

    ended = batch.handle_event(parsed, run_store(), report_store(), score=score, now=when)
    if ended is not None:
        notify(ended)
    return ended


def notify(run: Run) -> None:
    """Fire the run's signed callback (retried with backoff; never raises)."""
    from toolcall300.service.domain import callback

    if not run.callback_url or not run.callback_secret:
        return
    try:
        outcome = callback.deliver(
            run.callback_url,
            callback_document(run),
            run.callback_secret,
            attempts=settings().callback_attempts,
            base_delay=settings().callback_base_delay_s,
        )
    except Exception:
        logger.exception("callback failed", extra={"run_id": run.run_id})
        return
    logger.info(
        "callback delivered" if outcome.delivered else "callback undelivered",
        extra={"run_id": run.run_id, "attempts": outcome.attempts, "status": outcome.last_status},
    )


def sweep_now(*, now: datetime | None = None) -> list[Run]:
    """The scheduled sweeper: reconcile runs whose job or worker has gone."""
    from toolcall300.service.domain import runs
    from toolcall300.service.hosted import batch

    when = now or datetime.now(UTC)
    replayed: list[Run] = []
    for status in ("queued", "running"):
        for item in run_store().by_status(status):
            ev = batch.missed_event(Run.from_item(item), batch_api())
            ended = handle_batch_event_parsed(ev, now=when) if ev is not None else None
            if ended is not None:
                replayed.append(ended)
    changed = runs.sweep(
        run_store(),
        now=when,
        max_attempts=settings().max_attempts,
        job_alive=batch.job_alive(batch_api()),
    )
    for run in changed:
        if run.status in runs.FINAL:
            notify(run)
    return replayed + changed
