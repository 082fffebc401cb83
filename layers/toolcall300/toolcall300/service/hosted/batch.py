"""The AWS path of hosted runs: job definitions per image digest, submission, Batch job events.

A team's adapter image is built ``FROM`` the harness image (``infra/harness/``), whose
entrypoint is the trusted harness and whose ``CMD`` the team sets to its adapter command. One
Batch job definition is registered per image digest, copied from the template's harness job
definition (Fargate, no public IP, the adapter task role that grants nothing) with only the
image changed, and cached by name. A job gets two presigned URLs: GET for the label-free
inputs (``id``, ``text``, ``tools`` only) and PUT for its answers; it has no AWS credentials
and, in subnets with no route out, no other reachable endpoint. Batch's job-state change
events (EventBridge) drive the run: RUNNING marks it running; SUCCEEDED reads the answers and
scores them in trusted code; FAILED maps Batch's reason onto the closed list. Not a Batch
client: the SDK calls are ``adapters.runs_aws.BatchApi``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from toolcall300.canonical import jsonl_bytes
from toolcall300.jobs import harness
from toolcall300.service.domain import runs

DEFINITION_PREFIX = "tc300-adapter-"
JOB_PREFIX = "tc300-run-"
PRESIGN_SECONDS = 4 * 3600  # covers queueing plus the job's own timeout
_DIGEST = re.compile(r"@sha256:([0-9a-f]{64})$")


class BatchPort(Protocol):
    """What this module asks of AWS Batch (``adapters.runs_aws.BatchApi``)."""

    def active_definition(self, name: str) -> str | None: ...
    def describe_definition(self, name_or_arn: str) -> dict[str, Any] | None: ...
    def register(self, **kwargs: Any) -> str: ...
    def submit(self, **kwargs: Any) -> str: ...
    def job_status(self, job_id: str) -> str | None: ...
    def describe_job(self, job_id: str) -> dict[str, Any] | None: ...


class Objects(Protocol):
    """Presigned links on the reports bucket (``adapters.runs_aws.ReportObjects`` + presign)."""

    def presign(self, method: str, key: str, *, seconds: int) -> str: ...
    def exists(self, key: str) -> bool: ...
    def put(self, key: str, body: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...


# ----------------------------------------------------------------------------- job definitions


def definition_name(image: str) -> str:
    """``tc300-adapter-<first 32 hex of the digest>``: one definition per digest."""
    match = _DIGEST.search(image)
    if not match:
        raise ValueError("image must be pinned by digest")
    return DEFINITION_PREFIX + match.group(1)[:32]


_CACHE: dict[str, str] = {}


def definition_for(image: str, base: Mapping[str, Any]) -> dict[str, Any]:
    """The register-job-definition request for ``image``, copied from the template's definition.

    Only the image changes: platform (Fargate), network (no public IP), the adapter's task
    role (grants nothing), resources and timeout stay as the template declares them.
    """
    props = dict(base.get("containerProperties") or {})
    props["image"] = image
    props.pop("command", None)  # the image's CMD is the adapter command
    request: dict[str, Any] = {
        "jobDefinitionName": definition_name(image),
        "type": "container",
        "containerProperties": props,
        "platformCapabilities": list(base.get("platformCapabilities") or ["FARGATE"]),
        "tags": {"toolcall300": "adapter", "image-digest": image.rsplit("@", 1)[1][:64]},
        "propagateTags": True,
    }
    if base.get("timeout"):
        request["timeout"] = base["timeout"]
    if base.get("retryStrategy"):
        request["retryStrategy"] = base["retryStrategy"]
    return request


def ensure_definition(api: BatchPort, image: str, base_definition: str) -> str:
    """The job definition ARN for ``image``: from the cache, from Batch, or registered now."""
    name = definition_name(image)
    if name in _CACHE:
        return _CACHE[name]
    arn = api.active_definition(name)
    if arn is None:
        base = api.describe_definition(base_definition)
        if base is None:
            raise LookupError(f"the harness job definition {base_definition!r} does not exist")
        arn = api.register(**definition_for(image, base))
    _CACHE[name] = arn
    return arn


def clear_cache() -> None:
    _CACHE.clear()


# ----------------------------------------------------------------------------- submission


def inputs_key(corpus_sha256: str) -> str:
    return f"inputs/{corpus_sha256}.jsonl"


def answers_key(run: runs.Run) -> str:
    return f"answers/{run.team}/{run.run_id}/attempt-{run.attempts + 1}.json"


def publish_inputs(objects: Objects, cases: list[dict[str, Any]], corpus_sha256: str) -> str:
    """Store the label-free inputs once per corpus version; returns their key."""
    key = inputs_key(corpus_sha256)
    if not objects.exists(key):
        objects.put(key, jsonl_bytes(harness.job_inputs(cases)))
    return key


@dataclass(frozen=True)
class Submitted:
    job_id: str
    definition_arn: str
    answers_key: str


def submit_run(
    api: BatchPort,
    objects: Objects,
    run: runs.Run,
    *,
    queue: str,
    base_definition: str,
    inputs: str,
    limits: harness.Limits | None = None,
) -> Submitted:
    """Submit one image run; its parameters carry links, never credentials or labels."""
    limits = limits or harness.Limits()
    image = str(run.adapter["image"])
    arn = ensure_definition(api, image, base_definition)
    answers = answers_key(run)
    env = {
        "TC300_RUN_ID": run.run_id,
        "TC300_INPUTS_URL": objects.presign("GET", inputs, seconds=PRESIGN_SECONDS),
        "TC300_ANSWERS_URL": objects.presign("PUT", answers, seconds=PRESIGN_SECONDS),
        "TC300_PER_CASE_TIMEOUT": str(limits.per_case_timeout),
        "TC300_TOTAL_TIMEOUT": str(limits.total_timeout),
        "TC300_MAX_OUTPUT_BYTES": str(limits.max_output_bytes),
    }
    job_id = api.submit(
        jobName=JOB_PREFIX + run.run_id[4:],
        jobQueue=queue,
        jobDefinition=arn,
        containerOverrides={
            "environment": [{"name": k, "value": v} for k, v in sorted(env.items())]
        },
        tags={"run_id": run.run_id, "team": run.team},
        propagateTags=True,
    )
    return Submitted(job_id, arn, answers)


# ----------------------------------------------------------------------------- job events


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


def failure_of(ev: JobEvent) -> dict[str, str]:
    """Batch's failure text -> the closed list of reasons (docs/runs-contract.md)."""
    text = f"{ev.reason} {ev.container_reason}"
    low = text.lower()
    if "cannotpullcontainer" in low or "pull image" in low or "image manifest" in low:
        reason = "image_pull_failed"
    elif "outofmemory" in low or "out of memory" in low or "memory usage" in low:
        reason = "out_of_memory"
    elif "timeout" in low or "duration exceeded" in low:
        reason = "job_timeout"
    elif (
        "cannotstartcontainer" in low or "essential container" in low or ev.exit_code in (126, 127)
    ):
        reason = "adapter_start_failed"
    else:
        reason = "infra_error"
    return runs.failure(reason, text.strip() or f"job {ev.status.lower()}")


def read_answers(raw: bytes) -> harness.JobOutput:
    """Validate the job's answers file (string ids only; a bad file is output_malformed).

    The file comes from inside the team's container, so it is treated as untrusted input.
    """
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("answers"), dict):
        bad = runs.failure("output_malformed", "the job's answers file is not valid")
        return harness.JobOutput({}, {}, bad)
    answers = {k: v for k, v in doc["answers"].items() if isinstance(k, str)}
    raw_diag = doc.get("diagnostics")
    diagnostics: dict[str, Any] = raw_diag if isinstance(raw_diag, dict) else {}
    fail = doc.get("failure")
    if isinstance(fail, dict) and fail.get("reason") in runs.FAILURE_REASONS:
        failure = runs.failure(
            str(fail["reason"]), str(fail.get("detail", "")), str(fail.get("stderr_tail", ""))
        )
        return harness.JobOutput(answers, diagnostics, failure)
    return harness.JobOutput(answers, diagnostics, None)


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
        raw = objects.get(f"answers/{run.team}/{run.run_id}/attempt-{run.attempts}.json")
    except Exception:
        missing = runs.failure("output_malformed", "the job ended without writing its answers")
        return runs.fail(store, run.run_id, missing, now=when)
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
    """For the sweeper: is a run's Batch job still alive? None for runs without a job."""

    def alive(run: runs.Run) -> bool | None:
        if not run.job_id:
            return None
        status = api.job_status(run.job_id)
        return status in ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")

    return alive
