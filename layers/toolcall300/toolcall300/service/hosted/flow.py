"""The hosted run's flow on AWS: submit to Batch, apply its job events, sweep, renew links.

:class:`BatchLauncher` checks an image in ECR and hands a new run to Batch (:func:`dispatch`),
:func:`handle_batch_event` applies a job-state event, :func:`sweep_now` is the scheduled
sweeper. Every collaborator comes in a :class:`HostedDeps`, built once by the composition
root (``service.api.wiring.Edition.hosted_deps``), which this package never imports. Scoring is the
shared glue in ``domain.runs.scoring``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from toolcall300.jobs.harness import JobOutput
from toolcall300.scoring.tracks import DEFAULT_TRACK
from toolcall300.service.domain import runs
from toolcall300.service.domain.images import ImageFacts, image_problem
from toolcall300.service.domain.runs import (
    Corpus,
    Run,
    RunStore,
    score_output,
)
from toolcall300.service.domain.runs.scoring import inputs_pointer
from toolcall300.service.domain.runs.submission import Submission
from toolcall300.service.errors import BadRequest
from toolcall300.service.hosted import events, submit
from toolcall300.service.hosted.batch import BatchPort, Objects
from toolcall300.service.hosted.events import JobEvent
from toolcall300.service.observability import logger


class Presigner(Protocol):
    """The corpus bucket as a link signer sees it (``service.sdk.s3.CorpusObjects``)."""

    def presign(self, key: str, *, seconds: int) -> str: ...


@dataclass(frozen=True)
class JobLinks:
    """The two buckets as one job's link signer sees them, and when its session ends."""

    corpus: Presigner
    reports: Objects
    session_expires: datetime | None


class ReportObjects(Protocol):
    """The reports bucket: reports stored once (a ``ReportStore``), answers read and links
    signed (``hosted.batch.Objects``): ``service.sdk.runs.ReportObjects``."""

    def put_once(self, key: str, body: bytes) -> None: ...
    def get(self, key: str, *, max_bytes: int | None = None) -> bytes: ...
    def presign(self, method: str, key: str, *, seconds: int) -> str: ...


@dataclass(frozen=True)
class HostedDeps:
    """Everything the AWS path needs, passed in (``api.wiring.Edition.hosted_deps`` builds the
    production ones once, as ``local.worker.WorkerDeps`` are for the local stack)."""

    store: RunStore
    reports: ReportObjects
    batch: BatchPort
    #: The corpus bucket's ``job-inputs/`` as the runs function may read it (never the labels).
    read_inputs: Callable[[str], bytes]
    #: A fresh link-signing session named for one job (never cached: each gets its hour).
    job_links: Callable[[str], JobLinks]
    #: The labelled corpus of a sha256 (a run's ``corpus_sha256``; None: the current one) the
    #: trusted side scores against (``domain.runs.PinnedCorpora``; the batch-events function only).
    corpus: Callable[..., Corpus]
    #: What ECR says about an image (None: not there, or not readable by this stack).
    describe_image: Callable[[str], ImageFacts | None]
    #: A run's end -> its signed callback (never raises).
    notify: Callable[[Run], None]
    queue: str
    base_definition: str
    max_attempts: int
    #: True only when the template created the adapter network (``RunsSettings``).
    network_isolated: bool


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


def _sign_and_submit(
    deps: HostedDeps, run: Run, *, now: datetime, definition_arn: str | None = None
) -> _Sent:
    """Submit ``run``'s job with two fresh links, signed as the link-signing role (a session
    whose end is known, so ``links_expire_at`` is true); reads only the job-inputs pointer."""
    inputs = submit.read_inputs_pointer(deps.read_inputs(inputs_pointer(run.track)))
    links = deps.job_links(f"tc300-{run.run_id}")
    seconds = submit.link_lifetime(now, links.session_expires)
    sent = submit.submit_run(
        deps.batch,
        links.reports,
        run,
        queue=deps.queue,
        base_definition=deps.base_definition,
        inputs_url=links.corpus.presign(inputs.key, seconds=seconds),
        link_seconds=seconds,
        definition_arn=definition_arn,
    )
    return _Sent(sent.job_id, inputs.corpus_sha256, int(now.timestamp()) + seconds)


def dispatch(deps: HostedDeps, run: Run, *, now: datetime) -> Run:
    """Hand a new image run to AWS Batch; a submission that fails ends the run, never strands it.

    Reads only the job-inputs pointer (never the labelled corpus) and records on the run which
    corpus version its inputs came from.
    """
    try:
        sent = _sign_and_submit(deps, run, now=now)
    except Exception as exc:
        logger.exception("batch submission failed", extra={"run_id": run.run_id})
        failed = runs.fail(
            deps.store,
            run.run_id,
            runs.failure("infra_error", f"could not submit the job: {type(exc).__name__}"),
            now=now,
        )
        return failed or run
    return (
        runs.set_job(
            deps.store,
            run.run_id,
            sent.job_id,
            corpus_sha256=sent.corpus_sha256,
            links_expire_at=sent.links_expire_at,
        )
        or run
    )


def renew_links(deps: HostedDeps, run: Run, *, now: datetime) -> Run | None:
    """Replace a queued run's job that has not started with one holding fresh links (the old
    links would die before the job could finish: docs/runs-contract.md, "Links").

    Submit first, on the job definition the old job had; then swap the run's job once
    (``runs.renew_job``, conditional); then end the old job. A job that started keeps its
    links; a swap another sweep won ends the job submitted here. None when nothing changed.
    """
    if not run.job_id:
        return None
    job = deps.batch.describe_job(run.job_id)
    if job is None or job.get("status") not in submit.NOT_STARTED:
        return None  # started (its links are in use) or gone (the sweeper's other rules)
    successor = replace(run, job_renewals=run.job_renewals + 1)  # its own answers key
    sent = _sign_and_submit(deps, successor, now=now, definition_arn=str(job["jobDefinition"]))
    swapped = runs.renew_job(
        deps.store,
        run.run_id,
        old_job_id=run.job_id,
        new_job_id=sent.job_id,
        links_expire_at=sent.links_expire_at,
        corpus_sha256=sent.corpus_sha256,
    )
    if swapped is None:
        deps.batch.terminate(sent.job_id, "surplus: the run's job was renewed or moved on")
        return None
    try:  # the swap stands either way: the old job's events name another job and are ignored
        deps.batch.terminate(run.job_id, "replaced by a job with fresh links (it queued too long)")
    except Exception:
        logger.exception("ending a replaced job failed", extra={"run_id": run.run_id})
    logger.info(
        "job links renewed",
        extra={"run_id": run.run_id, "job_id": sent.job_id, "renewals": swapped.job_renewals},
    )
    return swapped


def handle_batch_event(
    deps: HostedDeps, event: dict[str, Any], *, now: datetime | None = None
) -> Run | None:
    """One EventBridge Batch job-state event -> the run's update (and its callback when it ends)."""
    parsed = events.parse_event(event)
    return handle_batch_event_parsed(deps, parsed, now=now) if parsed is not None else None


def handle_batch_event_parsed(
    deps: HostedDeps, parsed: JobEvent, *, now: datetime | None = None
) -> Run | None:
    """Apply one parsed job event (from EventBridge or replayed by the sweeper)."""
    when = now or datetime.now(UTC)

    def score(run: Run, output: JobOutput) -> Run | None:
        try:  # the version the run's inputs came from, whatever was uploaded since
            if run.track == DEFAULT_TRACK:
                corpus = deps.corpus(run.corpus_sha256)
            else:  # the run's own track's corpus (docs/tracks.md)
                corpus = deps.corpus(run.corpus_sha256, run.track)
        except runs.CorpusVersionGone as exc:
            gone = runs.failure("infra_error", f"{exc}: submit it again")
            return runs.fail(deps.store, run.run_id, gone, now=when)
        return score_output(
            deps.store,
            deps.reports,
            run,
            output,
            corpus=corpus,
            sandbox=batch_sandbox(output.diagnostics, network_isolated=deps.network_isolated),
            now=when,
        )

    ended = events.handle_event(parsed, deps.store, deps.reports, score=score, now=when)
    if ended is not None:
        deps.notify(ended)
    return ended


def _renew_isolated(deps: HostedDeps, run: Run, *, now: datetime) -> Run | None:
    """:func:`renew_links` for one run; a failure (STS, Batch, the inputs pointer) is logged and
    leaves the run for the next sweep instead of stopping the others."""
    try:
        return renew_links(deps, run, now=now)
    except Exception:
        logger.exception("renewing a job's links failed", extra={"run_id": run.run_id})
        return None


def sweep_now(deps: HostedDeps, *, now: datetime | None = None) -> list[Run]:
    """The scheduled sweeper: replay lost job ends, then reconcile runs whose job has gone.

    Each run is reconciled on its own: one run whose replay fails (a bad answers file, S3
    refusing) is logged and left for the next sweep, and never stops the others.
    """
    when = now or datetime.now(UTC)
    replayed: list[Run] = []
    for status in ("queued", "running"):
        for item in deps.store.by_status(status):
            run = Run.from_item(item)
            try:
                ev = events.missed_event(run, deps.batch)
                ended = handle_batch_event_parsed(deps, ev, now=when) if ev is not None else None
            except Exception:  # isolate this run's reconciliation; the next sweep retries it
                logger.exception("replaying a job's end failed", extra={"run_id": run.run_id})
                continue
            if ended is not None:
                replayed.append(ended)
    changed = runs.sweep(
        deps.store,
        now=when,
        max_attempts=deps.max_attempts,
        job_alive=events.job_alive(deps.batch),
        link_need_s=submit.LINK_NEED_SECONDS + submit.SWEEP_INTERVAL_SECONDS,
        renew=lambda run: _renew_isolated(deps, run, now=when),
        max_renewals=submit.MAX_JOB_RENEWALS,
    )
    for run in changed:
        if run.status in runs.FINAL:
            _end_job(deps, run)
            deps.notify(run)
    return replayed + changed


def _end_job(deps: HostedDeps, run: Run) -> None:
    """End the Batch job of a run the sweeper failed (its link renewals spent, or queued too
    long): left queued it would start later, pay for Fargate and fail to upload. Ending a job
    that has already ended or gone does nothing; a refusal is logged, not raised."""
    if not run.job_id:
        return
    try:
        deps.batch.terminate(run.job_id, "the run failed before its job started")
    except Exception:
        logger.exception("ending a failed run's job failed", extra={"run_id": run.run_id})


@dataclass(frozen=True)
class BatchLauncher:
    """AWS: images only, checked in ECR before a run exists, then submitted to Batch
    (``domain.runs.launch.Launcher``)."""

    deps: HostedDeps

    def admit(self, sub: Submission, *, team: str) -> None:
        # parse_submission(local=False) admits images only (adapter_cmd_not_allowed)
        refused = image_problem(
            self.deps.describe_image(sub.adapter["image"]), sub.adapter["platform"]
        )
        if refused is not None:
            raise BadRequest(refused[1], code=refused[0])

    def keep(self, sub: Submission, *, team: str) -> None:
        """Nothing to keep: the image stays in the team's ECR repository."""

    def launch(self, run: Run, *, now: datetime) -> Run:
        return dispatch(self.deps, run, now=now)
