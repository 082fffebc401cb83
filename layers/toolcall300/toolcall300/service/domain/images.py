"""What an adapter image is, read from its OCI manifest and config: the facts both paths check.

Pure parsing of the OCI image-spec documents (``manifest.md``, ``image-index.md``,
``config.md``, ``descriptor.md``) and the rule that turns the facts into a refusal
(:func:`image_problem`). Fetching the documents is the registry adapter's
(``service.sdk.ecr``); refusing before a run exists is the AWS launcher's
(``service.hosted.flow``). Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

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


#: Manifest media types that list one manifest per platform.
INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)


def json_object(raw: Any) -> dict[str, Any] | None:
    """A manifest as ECR returns it (a JSON string), when it is a JSON object; else None."""
    try:
        doc = json.loads(raw) if isinstance(raw, str | bytes) else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def manifest_kind(manifest: dict[str, Any]) -> str | None:
    """An OCI manifest may leave out ``mediaType`` (image-spec 1.0): its fields say its kind."""
    if isinstance(manifest.get("manifests"), list):
        return INDEX_TYPES[0]
    if isinstance(manifest.get("config"), dict):
        return IMAGE_MANIFEST_TYPES[0]
    return None


def index_platforms(index: Any) -> frozenset[str]:
    """``os/architecture`` of each entry of a multi-platform index (image-spec ``image-index.md``)."""
    manifests = index.get("manifests") if isinstance(index, dict) else None
    entries = [m for m in manifests or [] if isinstance(m, dict)]
    return frozenset(
        f"{m['platform'].get('os')}/{m['platform'].get('architecture')}"
        for m in entries
        if isinstance(m.get("platform"), dict)
    )
