"""Batch's job-state change events (EventBridge) applied to runs, and their replay by the sweeper.

RUNNING marks a run running; SUCCEEDED reads the answers and scores them in trusted code (the
caller's ``score``); FAILED maps Batch's reason onto the closed list of failure reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from toolcall300.canonical import loads_strict
from toolcall300.jobs import harness
from toolcall300.jobs.failures import HARNESS_EXITS
from toolcall300.scoring.protocol import error_tail
from toolcall300.service.domain import runs
from toolcall300.service.domain.runs.objects import answers_key
from toolcall300.service.errors import NotFound, PayloadTooLarge
from toolcall300.service.hosted.batch import BatchPort, Objects
from toolcall300.service.hosted.submit import JOB_PREFIX

# ----------------------------------------------------------------------------- job events

#: The answers file is written from inside the job (a presigned PUT allows up to 5 GB). The
#: harness keeps at most ``max_output_bytes`` of adapter output, so a bigger file is not its.
MAX_ANSWERS_BYTES = harness.Limits().max_output_bytes + 1024 * 1024


@dataclass(frozen=True)
class JobEvent:
    """The part of a "Batch Job State Change" event a run needs."""

    job_id: str
    run_id: str | None
    status: str
    reason: str
    exit_code: int | None
    container_reason: str


def parse_event(event: Mapping[str, Any]) -> JobEvent | None:
    """Read an EventBridge Batch event; None for anything else (ignored, never an error)."""
    if event.get("source") != "aws.batch" or event.get("detail-type") != "Batch Job State Change":
        return None
    detail = event.get("detail") or {}
    job_id, name = detail.get("jobId"), str(detail.get("jobName") or "")
    if not isinstance(job_id, str):
        return None
    run_id = (detail.get("tags") or {}).get("run_id")
    if not run_id and name.startswith(JOB_PREFIX):
        run_id = "run_" + name[len(JOB_PREFIX) :]
    container = detail.get("container") or {}
    attempts = detail.get("attempts") or []
    last = (attempts[-1].get("container") or {}) if attempts else {}
    exit_code = container.get("exitCode", last.get("exitCode"))
    return JobEvent(
        job_id=job_id,
        run_id=run_id if isinstance(run_id, str) else None,
        status=str(detail.get("status") or ""),
        reason=str(detail.get("statusReason") or ""),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        container_reason=str(container.get("reason") or last.get("reason") or ""),
    )


#: Fragments of Batch's ``statusReason`` and the container's ``reason`` (the ECS / Fargate
#: stopped-task error messages, platform 1.4) -> the reason, first match wins. The order
#: matters: registry auth is a ResourceInitializationError that means the image was not
#: pulled, and a logging-driver "i/o timeout" is the network's, never the job's time limit.
STOPPED_REASONS: tuple[tuple[str, str], ...] = (
    (
        "outofmemoryerror",
        "out_of_memory",
    ),  # "OutOfMemoryError: Container killed due to memory usage"
    ("cannotpullcontainererror", "image_pull_failed"),  # pull access denied, manifest unknown, ...
    ("unable to pull secrets or registry auth", "image_pull_failed"),  # ECR auth (endpoint, policy)
    ("cannotstartcontainererror", "adapter_start_failed"),  # the image's entrypoint cannot start
    ("resourceinitializationerror", "infra_error"),  # logging driver, ENI, volumes: the platform's
    ("containerruntimetimeouterror", "infra_error"),  # could not transition to running/stopped
    ("dockertimeouterror", "infra_error"),  # the same, platform 1.3 and before
    ("cannotcreatevolumeerror", "infra_error"),
    ("cannotinspectcontainererror", "infra_error"),
    ("job attempt duration exceeded timeout", "job_timeout"),  # Batch's attemptDurationSeconds
)
_CANNOT_EXEC = (126, 127)  # the shell's "not executable" and "not found": the image is broken


def failure_of(ev: JobEvent) -> dict[str, str]:
    """Batch's failure text -> the closed list of reasons (docs/runs-contract.md).

    The container's reason is more specific than the job's, so both are searched with the
    table above; when neither names a cause, the harness's exit code does (its own codes in
    ``jobs.failures.HARNESS_EXITS``); anything else is ``infra_error``: never the team's
    fault unless something says it is.
    """
    text = " | ".join(t for t in (ev.container_reason, ev.reason) if t)
    low = text.casefold()
    for fragment, reason in STOPPED_REASONS:
        if fragment in low:
            return runs.failure(reason, text)
    if ev.exit_code in HARNESS_EXITS:
        reason, detail = HARNESS_EXITS[ev.exit_code]
        return runs.failure(reason, f"{detail} ({text})" if text else detail)
    if ev.exit_code in _CANNOT_EXEC:
        return runs.failure(
            "adapter_start_failed", f"the image's entrypoint could not run ({text})"
        )
    detail = text or f"job {ev.status.lower()}"
    if ev.exit_code is not None:
        detail = f"{detail} (exit code {ev.exit_code})"
    return runs.failure("infra_error", detail)


def read_answers(raw: bytes) -> harness.JobOutput:
    """Validate the job's answers file (string ids only; a bad file is output_malformed).

    The file comes from inside the team's container, so it is treated as untrusted input, and
    read by the suite's one strict reader (E1): the harness writes only strict JSON, so a file
    with NaN or a repeated key was not written by it, and is never graded.
    """
    try:
        doc = loads_strict(raw)
    except (ValueError, RecursionError):  # not strict JSON (UnicodeDecodeError is one), or too deep
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("answers"), dict):
        bad = runs.failure("output_malformed", "the job's answers file is not valid")
        return harness.JobOutput({}, {}, bad)
    answers = {k: v for k, v in doc["answers"].items() if isinstance(k, str)}
    raw_diag = doc.get("diagnostics")
    diagnostics: dict[str, Any] = raw_diag if isinstance(raw_diag, dict) else {}
    errors = _errors_of(doc.get("errors"), answers)
    fail = doc.get("failure")
    if isinstance(fail, dict) and fail.get("reason") in runs.FAILURE_REASONS:
        failure = runs.failure(
            str(fail["reason"]), str(fail.get("detail", "")), str(fail.get("stderr_tail", ""))
        )
        return harness.JobOutput(answers, diagnostics, failure, errors)
    return harness.JobOutput(answers, diagnostics, None, errors)


def _errors_of(raw: Any, answers: Mapping[str, Any]) -> dict[str, str]:
    """The file's adapter errors, kept only for ids it answered ``null`` or with a list (a
    deltas case's records, ``jobs.deltas_job``: a broken stream is that stream refused): an
    error is a refusal that broke, never a grade; each cut to the scorer's tail length."""
    if not isinstance(raw, dict):
        return {}
    return {
        key: error_tail(text)
        for key, text in raw.items()
        if isinstance(key, str)
        and isinstance(text, str)
        and key in answers
        and (answers[key] is None or isinstance(answers[key], list))
    }


#: (run, job output) -> the run after scoring (the caller binds corpus, scorer and stores).
ScoreFn = Callable[[runs.Run, harness.JobOutput], runs.Run | None]


def handle_event(
    ev: JobEvent,
    store: runs.RunStore,
    objects: Objects,
    *,
    score: ScoreFn,
    now: datetime | None = None,
) -> runs.Run | None:
    """Apply one job event to its run; returns the run when it just ended (fire the callback).

    Events may arrive out of order or twice: a late RUNNING after the end is a no-op, a
    SUCCEEDED without a RUNNING first marks the run running, and a final run never moves.
    """
    when = now or datetime.now(UTC)
    if ev.run_id is None:
        return None
    run = runs.load(store, ev.run_id)
    if run is None or run.status in runs.FINAL or (run.job_id and run.job_id != ev.job_id):
        return None
    if ev.status in ("STARTING", "RUNNING"):
        runs.mark_running(store, run.run_id, now=when, job_id=ev.job_id)
        return None
    if ev.status not in ("SUCCEEDED", "FAILED"):
        return None
    if run.status == "queued":
        run = runs.mark_running(store, run.run_id, now=when, job_id=ev.job_id) or run
    if ev.status == "FAILED":
        return runs.fail(store, run.run_id, failure_of(ev), now=when)
    try:
        raw = objects.get(answers_key(run, attempt=run.attempts), max_bytes=MAX_ANSWERS_BYTES)
    except NotFound:  # anything else (S3 down, access denied) propagates: the event is retried
        missing = runs.failure("output_malformed", "the job ended without writing its answers")
        return runs.fail(store, run.run_id, missing, now=when)
    except PayloadTooLarge:
        detail = f"the job's answers file is larger than {MAX_ANSWERS_BYTES} bytes"
        return runs.fail(store, run.run_id, runs.failure("output_malformed", detail), now=when)
    output = read_answers(raw)  # the scorer looks up only the corpus's own ids
    if output.failure is not None:
        return runs.fail(store, run.run_id, output.failure, now=when)
    return score(run, output)


def missed_event(run: runs.Run, api: BatchPort) -> JobEvent | None:
    """The final event of a run's job if Batch says it ended but the run never heard.

    EventBridge delivers at least once but may still drop an event after its retries; the
    sweeper replays the job's end from ``describe_jobs`` so the run is scored or failed by
    the same code path, instead of being failed for a job that in fact finished.
    """
    if not run.job_id or run.status in runs.FINAL:
        return None
    job = api.describe_job(run.job_id)
    if job is None or job.get("status") not in ("SUCCEEDED", "FAILED"):
        return None
    detail = dict(job, tags={"run_id": run.run_id})
    return parse_event(
        {"source": "aws.batch", "detail-type": "Batch Job State Change", "detail": detail}
    )


def job_alive(api: BatchPort) -> Callable[[runs.Run], bool | None]:
    """For the sweeper: may a run's Batch job still end it? None for runs without a job.

    A job Batch still knows is alive for this purpose even once it SUCCEEDED or FAILED: its end
    is the event handler's (or the sweeper's replay of it, :func:`missed_event`) to record, and
    failing the run as "gone" meanwhile would race scoring that is in flight. Only a job Batch
    no longer knows is gone.
    """

    def alive(run: runs.Run) -> bool | None:
        if not run.job_id:
            return None
        return api.job_status(run.job_id) is not None

    return alive
