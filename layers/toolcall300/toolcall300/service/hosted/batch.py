"""AWS Batch job definitions for hosted runs: one per adapter image digest; the ports the AWS path uses.

A team's adapter image is built ``FROM`` the harness image (``infra/harness/``), whose
entrypoint is the trusted harness and whose ``CMD`` the team sets to its adapter command. One
Batch job definition is registered per image digest, copied from the template's harness job
definition (Fargate, no public IP) with only the image changed, and cached by name. Not a
Batch client: the SDK calls are ``service.sdk.runs.BatchApi``; submission is
:mod:`.submit`, the job's events :mod:`.events`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Protocol

DEFINITION_PREFIX = "tc300-adapter-"
_DIGEST = re.compile(r"@sha256:([0-9a-f]{64})$")


class BatchPort(Protocol):
    """What this module asks of AWS Batch (``adapters.runs_aws.BatchApi``)."""

    def active_definition(self, name: str) -> str | None: ...
    def describe_definition(self, name_or_arn: str) -> dict[str, Any] | None: ...
    def register(self, **kwargs: Any) -> str: ...
    def submit(self, **kwargs: Any) -> str: ...
    def terminate(self, job_id: str, reason: str) -> None: ...
    def job_status(self, job_id: str) -> str | None: ...
    def describe_job(self, job_id: str) -> dict[str, Any] | None: ...


class Objects(Protocol):
    """The reports bucket as the AWS path uses it (``service.sdk.runs.ReportObjects``)."""

    def presign(self, method: str, key: str, *, seconds: int) -> str: ...
    def get(self, key: str, *, max_bytes: int | None = None) -> bytes: ...


# ----------------------------------------------------------------------------- job definitions


#: Fargate's runtimePlatform for each platform a submission may name.
CPU_ARCHITECTURES = {"linux/amd64": "X86_64", "linux/arm64": "ARM64"}


def definition_name(image: str, platform: str = "linux/amd64") -> str:
    """``tc300-adapter-<first 32 hex of the digest>[-arm64]``: one definition per digest and
    platform (amd64 keeps the name it always had)."""
    match = _DIGEST.search(image)
    if not match:
        raise ValueError("image must be pinned by digest")
    suffix = "" if platform == "linux/amd64" else "-" + platform.rsplit("/", 1)[1]
    return DEFINITION_PREFIX + match.group(1)[:32] + suffix


_CACHE: dict[str, str] = {}

#: What the capacity sizing assumes: a typical run's length, how much busier the busiest hour
#: is than the day's average, and the job definition's vCPUs (docs/cost.md).
TYPICAL_RUN_SECONDS, PEAK_FACTOR, VCPUS_PER_JOB, MIN_VCPUS = 300, 2.0, 1, 4


def max_vcpus(runs_per_day: int) -> int:
    """The compute environment's MaxvCpus for ``runs_per_day`` runs across all teams.

    >>> max_vcpus(10_000)  # about 35 jobs at once on average, twice that at the peak
    70
    """
    concurrent = runs_per_day * TYPICAL_RUN_SECONDS / 86_400 * PEAK_FACTOR
    return max(MIN_VCPUS, math.ceil(concurrent) * VCPUS_PER_JOB)


def definition_for(
    image: str, base: Mapping[str, Any], platform: str = "linux/amd64"
) -> dict[str, Any]:
    """The register-job-definition request for ``image``, copied from the template's definition.

    Only the image and its CPU architecture change: Fargate, the network (no public IP), no
    task role, resources and timeout stay as the template declares them.
    """
    props = dict(base.get("containerProperties") or {})
    props["image"] = image
    props.pop("command", None)  # the image's CMD is the adapter command
    props["runtimePlatform"] = {
        "cpuArchitecture": CPU_ARCHITECTURES[platform],
        "operatingSystemFamily": "LINUX",
    }
    request: dict[str, Any] = {
        "jobDefinitionName": definition_name(image, platform),
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


def ensure_definition(
    api: BatchPort, image: str, base_definition: str, platform: str = "linux/amd64"
) -> str:
    """The job definition ARN for ``image`` on ``platform``: cached, found, or registered now."""
    name = definition_name(image, platform)
    if name in _CACHE:
        return _CACHE[name]
    arn = api.active_definition(name)
    if arn is None:
        base = api.describe_definition(base_definition)
        if base is None:
            raise LookupError(f"the harness job definition {base_definition!r} does not exist")
        arn = api.register(**definition_for(image, base, platform))
    _CACHE[name] = arn
    return arn


def clear_cache() -> None:
    _CACHE.clear()
