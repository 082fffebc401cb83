"""Submitting one image run to AWS Batch: the label-free inputs, the job's two presigned links.

A job gets two presigned URLs: GET for the label-free inputs (``id``, ``text``, ``tools``
only) and PUT for its answers; it has no AWS credentials and, in subnets with no route out,
no other reachable endpoint.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from toolcall300.jobs import harness
from toolcall300.service.domain import runs
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


#: The largest adapter image a job pulls (ECR's compressed size): Fargate's default ephemeral
#: storage is 20 GiB, and a pull of more would spend a run's time before it starts.
MAX_IMAGE_BYTES = 10 * 2**30


#: The largest image config blob read before submission: a config is a few KiB (its history
#: grows with the layers); a bigger "config" is not one a runtime would accept either.
MAX_CONFIG_BYTES = 4 * 2**20
#: Manifest media types of one image, whose ``config`` descriptor names its config blob.
IMAGE_MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ImageFacts:
    """What ECR says about an adapter image before a job is submitted for it."""

    size_bytes: int
    #: ``os/architecture`` pairs: a multi-platform index's entries, or the one a single image's
    #: config blob names.
    platforms: frozenset[str]
    #: True for a multi-platform index (a runtime picks the entry for its platform).
    index: bool = False
    #: Why a single image's platform could not be read (its config is then not trusted).
    unreadable: str | None = None


def config_descriptor(manifest: Any) -> tuple[str, int]:
    """``(digest, size)`` of a single image manifest's config blob (OCI image-spec
    ``manifest.md``: ``config`` is a descriptor); ValueError says what is wrong."""
    config = manifest.get("config") if isinstance(manifest, dict) else None
    if not isinstance(config, dict):
        raise ValueError("the manifest names no config blob (push a Docker schema 2 or OCI image)")
    digest, size = config.get("digest"), config.get("size")
    if not isinstance(digest, str) or _DIGEST_RE.fullmatch(digest) is None:
        raise ValueError("the manifest's config digest is not a sha256 digest")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError("the manifest's config size is not a byte count")
    if size > MAX_CONFIG_BYTES:
        raise ValueError(f"the config blob is {size} bytes; at most {MAX_CONFIG_BYTES} are read")
    return digest, size


def config_platform(blob: bytes, digest: str, size: int) -> str:
    """``os/architecture`` from a config blob that is exactly the one the manifest names: its
    length and sha256 must match the descriptor (OCI image-spec ``descriptor.md``), and it must
    be JSON with string ``os`` and ``architecture`` (``config.md``). ValueError otherwise.

    >>> import hashlib
    >>> raw = b'{"architecture": "arm64", "os": "linux", "variant": "v8"}'
    >>> config_platform(raw, "sha256:" + hashlib.sha256(raw).hexdigest(), len(raw))
    'linux/arm64'
    """
    if len(blob) != size:
        raise ValueError(f"the config blob is {len(blob)} bytes, not the {size} its manifest says")
    if "sha256:" + hashlib.sha256(blob).hexdigest() != digest:
        raise ValueError("the config blob does not match its digest")
    try:
        doc = json.loads(blob)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("the config blob is not JSON") from exc
    os_name = doc.get("os") if isinstance(doc, dict) else None
    arch = doc.get("architecture") if isinstance(doc, dict) else None
    if not (isinstance(os_name, str) and os_name and isinstance(arch, str) and arch):
        raise ValueError("the config blob names no os and architecture")
    return f"{os_name}/{arch}"


def image_problem(facts: ImageFacts | None, platform: str) -> tuple[str, str] | None:
    """(code, message) when a job for this image could not run; None when it may be submitted."""
    if facts is None:
        return (
            "image_not_found",
            "the image is not in ECR, or this service may not read it (a repository in another "
            "account needs a policy letting this stack describe and pull it)",
        )
    if facts.size_bytes > MAX_IMAGE_BYTES:
        return (
            "image_too_large",
            f"the image is {facts.size_bytes} bytes; at most {MAX_IMAGE_BYTES} are pulled",
        )
    if facts.unreadable is not None:
        return (
            "image_config_unreadable",
            f"the image's platform cannot be read: {facts.unreadable}",
        )
    if platform in facts.platforms:
        return None
    have = ", ".join(sorted(facts.platforms)) or "none"
    if facts.index:
        return ("image_platform_mismatch", f"the image has no {platform} variant (it has {have})")
    return (
        "image_platform_mismatch",
        f"the image is built for {have}, not {platform}: build it for {platform}, or submit it "
        "with the platform it was built for",
    )


def answers_key(run: runs.Run, *, attempt: int) -> str:
    """Where attempt ``attempt`` of ``run`` writes its answers (one object per attempt).

    A run is submitted before Batch starts it (``attempt = run.attempts + 1``) and read when the
    job ended (``attempt = run.attempts``, counted when it started), so both name the same key.
    A job that replaced one whose links would expire (``run.job_renewals``) writes its own key,
    so a replaced job that started after all cannot write the answers its successor's run reads.
    """
    renewed = f"-links-{run.job_renewals}" if run.job_renewals else ""
    return f"answers/{run.team}/{run.run_id}/attempt-{attempt}{renewed}.json"


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
    )
    return Submitted(job_id, arn, answers)
