"""Submitting one image run to AWS Batch: the label-free inputs, the job's two presigned links.

A job gets two presigned URLs: GET for the label-free inputs (``id``, ``text``, ``tools``
only) and PUT for its answers; it has no AWS credentials and, in subnets with no route out,
no other reachable endpoint.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from toolcall300.jobs import harness
from toolcall300.service.domain import runs
from toolcall300.service.domain.runs.objects import answers_key
from toolcall300.service.hosted.batch import BatchPort, Objects, ensure_definition

JOB_PREFIX = "tc300-run-"
#: The longest a link is asked for; the signing session (one hour, ``sdk.aws.signing_client``)
#: usually ends sooner, and a link dies with the session that signed it.
PRESIGN_SECONDS = 4 * 3600
#: The job definition's attemptDurationSeconds (template.yaml, HarnessJobDefinition): AWS stops
#: a started job by then, image pull and upload included.
JOB_TIMEOUT_SECONDS = 1800
#: How long a started job may still need its links: its whole attempt.
LINK_NEED_SECONDS = JOB_TIMEOUT_SECONDS
#: The sweeper's period (template.yaml, SweeperFunction's schedule): a queued job whose links
#: would not last ``LINK_NEED_SECONDS`` past the next sweep is given fresh ones at this one.
SWEEP_INTERVAL_SECONDS = 300
#: How many times one run's queued job is given fresh links: each lasts about 24 minutes of
#: queueing (an hour's links less the 35 minutes a started job and the next sweep need), so a
#: run waits at most about three hours for capacity before it fails (``infra_error``).
MAX_JOB_RENEWALS = 8
#: Batch statuses of a job that has not started (its links are not in use yet).
NOT_STARTED = frozenset({"SUBMITTED", "PENDING", "RUNNABLE"})


#: How many fair-share identifiers the teams are spread over. A fair-share queue admits at
#: most 500 active share identifiers ("AWS Batch service quotas"); with one per team, team 501
#: would be refused by SubmitJob (a 503 that names nothing). Teams hashed into this many
#: shares keep every queue under that quota whatever the number of teams; two teams that
#: land in one share split its turn, which is still fair to every other share.
SHARES = 256


def share_identifier(team: str) -> str:
    """The team's fair-share identifier on the job queue (template.yaml, AdapterSchedulingPolicy):
    ``team_`` and one of :data:`SHARES` numbers, from a hash of the team (stable across runs
    and deployments), so the number of active identifiers stays bounded.

    >>> share_identifier("team-0123456789abcdef") == share_identifier("team-0123456789abcdef")
    True
    """
    digest = hashlib.sha256(team.encode("utf-8")).digest()
    return f"team_{int.from_bytes(digest[:8], 'big') % SHARES:03d}"


def scheduling_priority(run: runs.Run) -> int:
    """A renewed job's place: a successor is submitted at the back of the queue, so under a
    backlog it would wait its whole new link lifetime again and starve. On the fair-share
    queue a higher ``schedulingPriorityOverride`` is scheduled first within its share, so each
    renewal goes ahead of the team's jobs that came after it (0 to 9999, Batch's range); a run
    whose renewals are spent fails (``MAX_JOB_RENEWALS``)."""
    return min(9999, run.job_renewals)


def link_lifetime(now: datetime, credentials_expire: datetime | None) -> int:
    """Seconds the job's presigned links are valid: ``PRESIGN_SECONDS``, or less when the
    signer's credentials expire sooner (a presigned link dies with the session that signed it).

    >>> from datetime import UTC, timedelta
    >>> t = datetime(2026, 12, 1, tzinfo=UTC)
    >>> link_lifetime(t, None), link_lifetime(t, t + timedelta(hours=1))
    (14400, 3540)
    """
    if credentials_expire is None:
        return PRESIGN_SECONDS
    left = int((credentials_expire - now).total_seconds()) - 60  # a minute's margin
    return max(1, min(PRESIGN_SECONDS, left))


@dataclass(frozen=True)
class JobInputs:
    """The label-free inputs a job reads: which corpus version they came from, and their key."""

    corpus_sha256: str
    key: str


def read_inputs_pointer(raw: bytes) -> JobInputs:
    """The pointer the corpus upload wrote (``jobs.harness.INPUTS_POINTER``)."""
    doc = json.loads(raw)
    if not isinstance(doc, dict) or not all(
        isinstance(doc.get(k), str) for k in ("corpus_sha256", "key")
    ):
        raise ValueError("the job-inputs pointer is malformed")
    return JobInputs(str(doc["corpus_sha256"]), str(doc["key"]))


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
    inputs_url: str,
    link_seconds: int = PRESIGN_SECONDS,
    limits: harness.Limits | None = None,
    definition_arn: str | None = None,
) -> Submitted:
    """Submit one image run; its parameters carry links, never credentials or labels.

    ``inputs_url`` is the presigned GET of the label-free inputs (signed by the caller, on the
    corpus bucket); the answers link is signed here, on ``objects`` (the reports bucket).
    ``definition_arn``: the job definition a replaced job had (none is looked up or registered).
    """
    limits = limits or harness.Limits()
    image = str(run.adapter["image"])
    platform = str(run.adapter.get("platform") or "linux/amd64")  # runs before platforms
    arn = definition_arn or ensure_definition(api, image, base_definition, platform)
    answers = answers_key(run, attempt=run.attempts + 1)
    env = {
        "TC300_RUN_ID": run.run_id,
        "TC300_TRACK": run.track,  # which input fields and protocol (harness.run_track_job)
        "TC300_INPUTS_URL": inputs_url,
        "TC300_ANSWERS_URL": objects.presign("PUT", answers, seconds=link_seconds),
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
        shareIdentifier=share_identifier(run.team),
        schedulingPriorityOverride=scheduling_priority(run),
    )
    return Submitted(job_id, arn, answers)
