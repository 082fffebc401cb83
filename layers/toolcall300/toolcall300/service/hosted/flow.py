"""The hosted run's flow on AWS, bound to the production collaborators, and the scorer glue.

:func:`dispatch` hands a new image run to Batch, :func:`handle_batch_event` applies a job-state
event, :func:`sweep_now` is the scheduled sweeper, :func:`notify` the run-end callback.
:func:`summary_of` and :func:`compare` adapt ``toolcall300.scoring.report``'s report and
comparison to the API contract; no grading happens here, the scorer is the CLI's own. The
collaborators come from the composition root (``service.api.wiring``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from toolcall300.jobs.harness import CORPUS_FILE, INPUTS_POINTER, JobOutput
from toolcall300.scoring import report as scorer
from toolcall300.scoring.corpus import parse_corpus
from toolcall300.service.api.wiring import (
    batch_api,
    callback_resolver,
    job_inputs_objects,
    job_link_objects,
    own_ports,
    report_store,
    run_store,
    runs_settings,
    scoring_corpus,
)
from toolcall300.service.domain import callback, runs
from toolcall300.service.domain import corpus as corpus_manifest
from toolcall300.service.domain.runs import (
    ReportStore,
    Run,
    RunStore,
    Scoring,
    callback_document,
    finish_scored,
)
from toolcall300.service.errors import NotFound
from toolcall300.service.hosted import events, submit
from toolcall300.service.hosted.events import JobEvent
from toolcall300.service.observability import logger
from toolcall300.spec import SPEC_VERSION

# ----------------------------------------------------------------------------- scorer glue


@dataclass(frozen=True)
class Corpus:
    """The private corpus as the trusted side holds it: cases with labels, its pin, and the
    version its published manifest gives it (None: no manifest pins these bytes)."""

    cases: list[dict[str, Any]]
    sha256: str
    version: str | None = None


def load_corpus(read: Callable[[str], bytes], name: str = CORPUS_FILE) -> Corpus:
    """Read and parse the corpus with the scorer's own parser; its version is the one the
    uploaded manifest says (what ``GET /corpus`` serves), when that manifest pins it."""
    data = read(name)
    sha = hashlib.sha256(data).hexdigest()
    try:
        manifest = corpus_manifest.parse_manifest(read(corpus_manifest.MANIFEST))
    except NotFound:
        manifest = None
    pinned = manifest is not None and any(
        f["name"] == name and f["sha256"] == sha for f in manifest.files
    )
    return Corpus(parse_corpus(data), sha, manifest.version if manifest and pinned else None)


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``summary``: the counts and the per-category table of a scorer report."""
    summary: dict[str, Any] = {k: report[k] for k in scorer.COUNT_FIELDS}
    summary["categories"] = {
        k: {"n": v["n"], "pass": v["pass"]} for k, v in report["categories"].items()
    }
    return summary


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The scorer's gate, in the contract's shape (``deltas`` is called ``counts`` there)."""
    try:
        c = scorer.compare_reports(baseline, current)
    except scorer.VersionMismatch as exc:
        raise runs.BaselineRefused(str(exc)) from exc
    except scorer.ReportError as exc:
        raise runs.NotComparable(str(exc)) from exc
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
        corpus_version=corpus.version,
        timing={"total_seconds": output.diagnostics.get("elapsed_s")},
        errors=output.errors,
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


def batch_sandbox(diagnostics: dict[str, Any], *, network_isolated: bool) -> dict[str, Any]:
    """What isolation really held for a Batch job: the network's, and what the harness saw.

    On Fargate the harness cannot make namespaces (no SYS_ADMIN: unshare gets EPERM), so its
    own record says the adapter shared its network; the network isolation is the VPC's. That
    is true only of the network the template creates (``network_isolated``); an existing VPC
    the operator named is not verified here, and the record says so.
    """
    seen = diagnostics.get("sandbox")
    harness_saw = seen if isinstance(seen, dict) else {}
    notes = (
        ["AWS Batch on Fargate in the template's adapter network: no route out, endpoints "
         "only, S3 limited to this stack's objects, DNS firewall; the job has no task role"]
        if network_isolated
        else ["AWS Batch on Fargate in an existing VPC: its isolation is not verified by "
              "toolcall300; the job has no task role"]
    )  # fmt: skip
    if harness_saw and not harness_saw.get("network_isolated"):
        notes.append("inside the job, the adapter shares the harness's network namespace")
    return {
        "network_isolated": network_isolated,
        "method": "batch-fargate-network" if network_isolated else "batch-fargate",
        "notes": notes,
        "harness": {k: harness_saw.get(k) for k in ("network_isolated", "method", "uid_dropped")},
    }


@dataclass(frozen=True)
class _Sent:
    job_id: str
    corpus_sha256: str
    links_expire_at: int


def _sign_and_submit(run: Run, *, now: datetime, definition_arn: str | None = None) -> _Sent:
    """Submit ``run``'s job with two fresh links, signed as the link-signing role (a session
    whose end is known, so ``links_expire_at`` is true); reads only the job-inputs pointer."""
    conf = runs_settings()
    inputs = submit.read_inputs_pointer(job_inputs_objects().read(INPUTS_POINTER))
    links = job_link_objects(session_name=f"tc300-{run.run_id}")
    seconds = submit.link_lifetime(now, links.session_expires)
    sent = submit.submit_run(
        batch_api(),
        links.reports,
        run,
        queue=conf.batch_job_queue,
        base_definition=conf.batch_job_definition,
        inputs_url=links.corpus.presign(inputs.key, seconds=seconds),
        link_seconds=seconds,
        definition_arn=definition_arn,
    )
    return _Sent(sent.job_id, inputs.corpus_sha256, int(now.timestamp()) + seconds)


def dispatch(run: Run, *, now: datetime) -> Run:
    """Hand a new image run to AWS Batch; a submission that fails ends the run, never strands it.

    Reads only the job-inputs pointer (never the labelled corpus) and records on the run which
    corpus version its inputs came from.
    """
    try:
        sent = _sign_and_submit(run, now=now)
    except Exception as exc:
        logger.exception("batch submission failed", extra={"run_id": run.run_id})
        failed = runs.fail(
            run_store(),
            run.run_id,
            runs.failure("infra_error", f"could not submit the job: {type(exc).__name__}"),
            now=now,
        )
        return failed or run
    return (
        runs.set_job(
            run_store(),
            run.run_id,
            sent.job_id,
            corpus_sha256=sent.corpus_sha256,
            links_expire_at=sent.links_expire_at,
        )
        or run
    )


def renew_links(run: Run, *, now: datetime) -> Run | None:
    """Replace a queued run's job that has not started with one holding fresh links (the old
    links would die before the job could finish: docs/runs-contract.md, "Links").

    Submit first, on the job definition the old job had; then swap the run's job once
    (``runs.renew_job``, conditional); then end the old job. A job that started keeps its
    links; a swap another sweep won ends the job submitted here. None when nothing changed.
    """
    if not run.job_id:
        return None
    job = batch_api().describe_job(run.job_id)
    if job is None or job.get("status") not in submit.NOT_STARTED:
        return None  # started (its links are in use) or gone (the sweeper's other rules)
    successor = replace(run, job_renewals=run.job_renewals + 1)  # its own answers key
    sent = _sign_and_submit(successor, now=now, definition_arn=str(job["jobDefinition"]))
    swapped = runs.renew_job(
        run_store(),
        run.run_id,
        old_job_id=run.job_id,
        new_job_id=sent.job_id,
        links_expire_at=sent.links_expire_at,
        corpus_sha256=sent.corpus_sha256,
    )
    if swapped is None:
        batch_api().terminate(sent.job_id, "surplus: the run's job was renewed or moved on")
        return None
    try:  # the swap stands either way: the old job's events name another job and are ignored
        batch_api().terminate(run.job_id, "replaced by a job with fresh links (it queued too long)")
    except Exception:
        logger.exception("ending a replaced job failed", extra={"run_id": run.run_id})
    logger.info(
        "job links renewed",
        extra={"run_id": run.run_id, "job_id": sent.job_id, "renewals": swapped.job_renewals},
    )
    return swapped


def handle_batch_event(event: dict[str, Any], *, now: datetime | None = None) -> Run | None:
    """One EventBridge Batch job-state event -> the run's update (and its callback when it ends)."""
    parsed = events.parse_event(event)
    return handle_batch_event_parsed(parsed, now=now) if parsed is not None else None


def handle_batch_event_parsed(parsed: JobEvent, *, now: datetime | None = None) -> Run | None:
    """Apply one parsed job event (from EventBridge or replayed by the sweeper)."""
    when = now or datetime.now(UTC)

    def score(run: Run, output: JobOutput) -> Run | None:
        corpus = scoring_corpus()
        if run.corpus_sha256 and run.corpus_sha256 != corpus.sha256:
            changed = runs.failure(
                "infra_error",
                f"the corpus changed while the run was queued (its inputs are from "
                f"{run.corpus_sha256[:12]}, the corpus is now {corpus.sha256[:12]}): submit it again",
            )
            return runs.fail(run_store(), run.run_id, changed, now=when)
        return score_output(
            run_store(),
            report_store(),
            run,
            output,
            corpus=corpus,
            sandbox=batch_sandbox(
                output.diagnostics, network_isolated=runs_settings().adapter_network_isolated
            ),
            now=when,
        )

    ended = events.handle_event(parsed, run_store(), report_store(), score=score, now=when)
    if ended is not None:
        notify(ended)
    return ended


def notify(run: Run) -> None:
    """Fire the run's signed callback (retried with backoff; never raises)."""
    if not run.callback_url or not run.callback_secret:
        return
    try:
        outcome = callback.deliver(
            run.callback_url,
            callback_document(run),
            run.callback_secret,
            attempts=runs_settings().callback_attempts,
            base_delay=runs_settings().callback_base_delay_s,
            post=callback.guarded_post(
                local=runs_settings().toolcall300_local_stack,
                resolve=callback_resolver(),
                own_ports=own_ports(),
            ),
        )
    except Exception:
        logger.exception("callback failed", extra={"run_id": run.run_id})
        return
    logger.info(
        "callback delivered" if outcome.delivered else "callback undelivered",
        extra={"run_id": run.run_id, "attempts": outcome.attempts, "status": outcome.last_status},
    )


def _renew_isolated(run: Run, *, now: datetime) -> Run | None:
    """:func:`renew_links` for one run; a failure (STS, Batch, the inputs pointer) is logged and
    leaves the run for the next sweep instead of stopping the others."""
    try:
        return renew_links(run, now=now)
    except Exception:
        logger.exception("renewing a job's links failed", extra={"run_id": run.run_id})
        return None


def sweep_now(*, now: datetime | None = None) -> list[Run]:
    """The scheduled sweeper: replay lost job ends, then reconcile runs whose job has gone.

    Each run is reconciled on its own: one run whose replay fails (a bad answers file, S3
    refusing) is logged and left for the next sweep, and never stops the others.
    """
    when = now or datetime.now(UTC)
    replayed: list[Run] = []
    for status in ("queued", "running"):
        for item in run_store().by_status(status):
            run = Run.from_item(item)
            try:
                ev = events.missed_event(run, batch_api())
                ended = handle_batch_event_parsed(ev, now=when) if ev is not None else None
            except Exception:  # isolate this run's reconciliation; the next sweep retries it
                logger.exception("replaying a job's end failed", extra={"run_id": run.run_id})
                continue
            if ended is not None:
                replayed.append(ended)
    changed = runs.sweep(
        run_store(),
        now=when,
        max_attempts=runs_settings().max_attempts,
        job_alive=events.job_alive(batch_api()),
        link_need_s=submit.LINK_NEED_SECONDS + submit.SWEEP_INTERVAL_SECONDS,
        renew=lambda run: _renew_isolated(run, now=when),
        max_renewals=submit.MAX_JOB_RENEWALS,
    )
    for run in changed:
        if run.status in runs.FINAL:
            notify(run)
    return replayed + changed
