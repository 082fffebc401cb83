"""A ``POST /runs`` body, validated: the adapter, the ref and commit, the baseline, the callback.

Pure validation (400 with a reason code on anything malformed); it stores nothing.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import canonical_bytes, sha256_hex
from toolcall300.scoring.tracks import DEFAULT_TRACK as TRACKS_DEFAULT
from toolcall300.scoring.tracks import REGISTRY as TRACK_REGISTRY
from toolcall300.service.errors import BadRequest

#: One pattern each, shared with the route's pydantic model and so with the OpenAPI document.
#: Matched whole (``fullmatch``), so "main\n" is refused: Python's ``$`` alone would allow it.
IMAGE_PATTERN = r"^[a-z0-9][a-z0-9._\-/:]{0,254}@sha256:[0-9a-f]{64}$"
REF_PATTERN = r"^[A-Za-z0-9._/\-]{1,200}$"
COMMIT_PATTERN = r"^[0-9a-f]{7,40}$"
BASELINE_PATTERN = r"^[A-Za-z0-9._/\-]{1,64}$"
IMAGE_RE, REF_RE = re.compile(IMAGE_PATTERN), re.compile(REF_PATTERN)
COMMIT_RE, BASELINE_RE = re.compile(COMMIT_PATTERN), re.compile(BASELINE_PATTERN)
MAX_ARGS, MAX_ARG_CHARS, MAX_URL_CHARS = 32, 1024, 2048
#: ``adapter_files``: a tar archive (plain or gzip) of the adapter's folder, base64, on a local
#: stack only; at most this many bytes once decoded (``jobs.adapter_files`` checks the rest).
MAX_FILES_BYTES = 6 * 1024 * 1024
#: The CPU architectures a Fargate job may run (Batch's runtimePlatform); amd64 by default.
PLATFORMS = ("linux/amd64", "linux/arm64")
DEFAULT_PLATFORM = "linux/amd64"
PLATFORM_PATTERN = r"^linux/(amd64|arm64)$"
#: The tracks a hosted run may be scored on (docs/tracks.md); ``single`` when none is sent.
#: The scorer's registry (``scoring.tracks.REGISTRY``) is the one list of them.
TRACKS = tuple(TRACK_REGISTRY)
DEFAULT_TRACK = TRACKS_DEFAULT
#: The tracks a hosted run can score today, on a local stack and on AWS: a run's inputs,
#: protocol and judge are its track's (docs/runs-contract.md); any other known track is
#: ``400 track_not_hosted``. The job harness speaks each one's protocol
#: (``jobs.harness.run_track_job``: the deltas track's is its process protocol).
HOSTED_TRACKS = ("single", "parallel", "deltas")
AWS_TRACKS = HOSTED_TRACKS
ECR_IMAGE_RE = re.compile(
    r"^(?P<account>[0-9]{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
)


# ----------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class Submission:
    """A validated ``POST /runs`` body."""

    #: {"kind": "image", "image": ...}, {"kind": "command", "command": [...]} or, on a local
    #: stack, {"kind": "image_archive"}; "files" names the archive sent with it by digest.
    adapter: dict[str, Any]
    ref: str
    commit: str
    baseline: str = "main"
    callback_url: str | None = None
    #: The track the run is scored on (docs/tracks.md): its inputs, protocol, judge, baselines.
    track: str = DEFAULT_TRACK
    #: The adapter's own files or image as sent (a tar archive); the adapter names it by digest.
    files: bytes | None = field(default=None, repr=False)

    def fingerprint(self) -> str:
        """What an idempotent retry must repeat exactly (a different body is a 409)."""
        fields: list[Any] = [self.adapter, self.ref, self.commit, self.baseline, self.callback_url]
        if self.track != DEFAULT_TRACK:  # a single-track run keeps the hash it always had
            fields.append(self.track)
        return sha256_hex(canonical_bytes(fields))


def _need_str(
    body: Mapping[str, Any], name: str, pattern: re.Pattern[str], default: str | None = None
) -> str:
    value = body.get(name, default)
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BadRequest(f"'{name}' is missing or malformed", code="invalid_run")
    return value


def _image(body: Mapping[str, Any], image: Any, ecr_region: str | None) -> dict[str, Any]:
    if not isinstance(image, str) or not IMAGE_RE.fullmatch(image):
        raise BadRequest(
            "'image' must be pinned by digest: registry/repo@sha256:<64 hex>",
            code="invalid_image",
        )
    if ecr_region is not None:
        # The adapter network has no route out: only ECR, through its endpoints in this region.
        found = ECR_IMAGE_RE.match(image)
        if found is None or found.group("region") != ecr_region:
            raise BadRequest(
                f"'image' must be in Amazon ECR in {ecr_region} (this account's, or another "
                "account's whose repository policy lets this service pull): the jobs' network "
                "reaches no other registry",
                code="image_registry_not_allowed",
            )
    platform = body.get("platform") or DEFAULT_PLATFORM
    if platform not in PLATFORMS:
        raise BadRequest(
            f"'platform' must be one of {', '.join(PLATFORMS)}", code="invalid_platform"
        )
    return {"kind": "image", "image": image, "platform": platform}


def _adapter(body: Mapping[str, Any], *, local: bool, ecr_region: str | None) -> dict[str, Any]:
    image, cmd = body.get("image"), body.get("adapter_cmd")
    archive = body.get("adapter_image")
    if [image, cmd, archive].count(None) != 2:
        raise BadRequest(
            "send exactly one of 'image', 'adapter_cmd' and 'adapter_image'", code="invalid_run"
        )
    if image is not None:
        return _image(body, image, ecr_region)
    if archive is not None:
        if not local:  # AWS pulls images from ECR by digest; it takes no archive
            raise BadRequest(
                "'adapter_image' is accepted only on a local stack; push the image to ECR "
                "and send 'image'",
                code="adapter_image_not_allowed",
            )
        return {"kind": "image_archive"}
    if not local:
        # docs/runs-contract.md: an argument list runs only on a local stack; AWS runs images by digest.
        raise BadRequest(
            "'adapter_cmd' is accepted only on a local stack; send 'image'",
            code="adapter_cmd_not_allowed",
        )
    if not isinstance(cmd, list):
        cmd = None
    ok = (
        cmd is not None
        and 1 <= len(cmd) <= MAX_ARGS
        and all(isinstance(a, str) and a and len(a) <= MAX_ARG_CHARS and "\0" not in a for a in cmd)
    )
    if not ok:
        raise BadRequest(
            f"'adapter_cmd' must be a list of 1 to {MAX_ARGS} non-empty strings", code="invalid_run"
        )
    return {"kind": "command", "command": list(cmd or [])}


def _files(body: Mapping[str, Any], adapter: dict[str, Any]) -> bytes | None:
    """The archive sent with the adapter: its folder (``adapter_files``) or its image
    (``adapter_image``), each base64 and bounded alike; the run names it by digest."""
    name = "adapter_image" if adapter["kind"] == "image_archive" else "adapter_files"
    value = body.get(name)
    if value is None:
        return None
    if adapter["kind"] != "command" and name == "adapter_files":
        raise BadRequest("'adapter_files' goes with 'adapter_cmd'", code="invalid_run")
    try:
        if not isinstance(value, str) or len(value) > (MAX_FILES_BYTES + 2) // 3 * 4:
            raise ValueError
        archive = base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error):
        raise BadRequest(
            f"'{name}' must be a base64 tar archive of at most {MAX_FILES_BYTES} bytes",
            code="invalid_run",
        ) from None
    adapter["files"] = {"sha256": sha256_hex(archive), "bytes": len(archive)}
    return archive


def _callback(value: Any, *, local: bool) -> str | None:
    if value is None:
        return None
    schemes = ("https://", "http://") if local else ("https://",)
    if not isinstance(value, str) or len(value) > MAX_URL_CHARS or not value.startswith(schemes):
        raise BadRequest("'callback_url' must be an https:// URL", code="invalid_callback")
    netloc = value.split("://", 1)[1].split("/", 1)[0]
    if not netloc or "@" in netloc or any(c.isspace() for c in value):
        raise BadRequest(
            "'callback_url' must be an https:// URL without credentials", code="invalid_callback"
        )
    return value


def _track(value: Any, *, local: bool) -> str:
    if value is None:
        return DEFAULT_TRACK
    if not isinstance(value, str) or value not in TRACKS:
        raise BadRequest(
            f"'track' must be one of {', '.join(TRACKS)} (docs/tracks.md)", code="invalid_track"
        )
    hosted = HOSTED_TRACKS if local else AWS_TRACKS
    if value not in hosted:
        raise BadRequest(
            f"track {value!r} is not scored by hosted runs {'' if local else 'on AWS '}yet "
            f"(hosted: {', '.join(hosted)}); score it with toolcall300 score --corpus",
            code="track_not_hosted",
        )
    return value


def parse_submission(body: Any, *, local: bool, ecr_region: str | None = None) -> Submission:
    """Validate a ``POST /runs`` body (400 with a reason code on anything malformed).

    With ``ecr_region`` (on AWS), an image must be in ECR in that region: nothing else is
    reachable from the jobs' network.
    """
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", code="invalid_run")
    adapter = _adapter(body, local=local, ecr_region=ecr_region)
    files = _files(body, adapter)
    return Submission(
        adapter=adapter,
        files=files,
        ref=_need_str(body, "ref", REF_RE),
        commit=_need_str(body, "commit", COMMIT_RE),
        baseline=_need_str(body, "baseline", BASELINE_RE, "main"),
        callback_url=_callback(body.get("callback_url"), local=local),
        track=_track(body.get("track"), local=local),
    )
