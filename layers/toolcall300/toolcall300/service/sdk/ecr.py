"""ECR adapter: what the registry says about an adapter image before a job is submitted for it.

Only ECR is reachable from the jobs' network, so an image is ``ACCOUNT.dkr.ecr.REGION.
amazonaws.com/REPO@sha256:...``; this reads its size and its platforms: a multi-platform
index lists them, a single image's config blob names its one (DescribeImages reports neither,
so the config is fetched: BatchGetImage gives the manifest, GetDownloadUrlForLayer a presigned
link to the blob its ``config`` descriptor names, read bounded and checked against its digest).
An image that does not exist, or that this service may not describe (another account's
repository without a policy for it), is ``None``; ECR or the blob's store being down is
``UpstreamUnavailable``; a config that cannot be read or trusted is ``ImageFacts.unreadable``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import urllib3
from botocore.exceptions import BotoCoreError, ClientError

from toolcall300.service.domain.images import (
    IMAGE_MANIFEST_TYPES,
    INDEX_TYPES,
    ImageFacts,
    config_descriptor,
    config_platform,
    index_platforms,
    json_object,
    manifest_kind,
)
from toolcall300.service.domain.runs.submission import ECR_IMAGE_RE
from toolcall300.service.errors import UpstreamUnavailable
from toolcall300.service.sdk.aws import client

_ABSENT = ("ImageNotFoundException", "RepositoryNotFoundException", "AccessDeniedException")
#: GetDownloadUrlForLayer's answers for a blob the image does not really have.
_NO_BLOB = ("LayerInaccessibleException", "LayersNotFoundException", "InvalidParameterException")
#: The blob fetch's bounds: a few KiB from S3 in the region; the Runs function has 20 s.
FETCH_SECONDS = 5.0
_CHUNK = 64 * 1024
_RETRY = "the image's config could not be fetched; retry"


class BlobUnreadable(Exception):
    """The blob's store answered, but not with the blob (a 4xx, or more bytes than asked)."""


def fetch_blob(url: str, limit: int, *, schemes: tuple[str, ...] = ("https",)) -> bytes:
    """GET ``url`` (ECR's presigned S3 link): at most ``limit`` bytes, no redirects, within
    ``FETCH_SECONDS`` however slowly the bytes come. BlobUnreadable for an answer that is not
    the blob; UpstreamUnavailable for a store that did not answer (5xx, timeout, refused)."""
    if urllib3.util.parse_url(url).scheme not in schemes:
        raise BlobUnreadable("ECR gave a config download link that is not HTTPS")
    deadline = time.monotonic() + FETCH_SECONDS
    pool = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=2.0, read=3.0),
        retries=urllib3.Retry(total=1, redirect=False),
    )
    try:
        answer = pool.request("GET", url, preload_content=False, redirect=False)
    except urllib3.exceptions.HTTPError as exc:
        raise UpstreamUnavailable(_RETRY, code="upstream_unavailable") from exc
    try:
        if answer.status >= 500:
            raise UpstreamUnavailable(_RETRY, code="upstream_unavailable")
        if answer.status != 200:
            raise BlobUnreadable(f"its config download answered HTTP {answer.status}")
        blob = bytearray()
        while len(blob) <= limit:
            if time.monotonic() > deadline:
                raise UpstreamUnavailable(_RETRY, code="upstream_unavailable")
            chunk = answer.read1(min(_CHUNK, limit + 1 - len(blob)))
            if not chunk:
                break
            blob += chunk
        if len(blob) > limit:
            raise BlobUnreadable("the config blob is larger than its manifest says")
        return bytes(blob)
    except urllib3.exceptions.HTTPError as exc:
        raise UpstreamUnavailable(_RETRY, code="upstream_unavailable") from exc
    finally:
        answer.release_conn()
        pool.clear()


class EcrImages:
    """``describe(image)`` on ECR; ``fetch`` reads a presigned blob link (tests serve one)."""

    def __init__(self, ecr: Any = None, fetch: Callable[[str, int], bytes] = fetch_blob) -> None:
        self._ecr = ecr
        self._fetch = fetch

    @property
    def ecr(self) -> Any:
        if self._ecr is None:
            self._ecr = client("ecr")
        return self._ecr

    def describe(self, image: str) -> ImageFacts | None:
        found = ECR_IMAGE_RE.match(image)
        if found is None:
            return None
        repository, digest = image[found.end() :].rsplit("@", 1)
        ref = {"registryId": found.group("account"), "repositoryName": repository}
        ids = [{"imageDigest": digest}]
        try:
            details = self.ecr.describe_images(**ref, imageIds=ids).get("imageDetails") or []
            if not details:
                return None
            detail = details[0]
            size = int(detail.get("imageSizeInBytes") or 0)
            media = detail.get("imageManifestMediaType")
            accepted = {"acceptedMediaTypes": [media]} if media else {}
            images = self.ecr.batch_get_image(**ref, imageIds=ids, **accepted).get("images")
            if not images:
                return None
            manifest = json_object(images[0].get("imageManifest"))
            if manifest is None:
                return ImageFacts(size, frozenset(), unreadable="its manifest is not a JSON object")
            kind = media or manifest.get("mediaType") or manifest_kind(manifest)
            if kind in INDEX_TYPES:
                return ImageFacts(size, index_platforms(manifest), index=True)
            if kind not in IMAGE_MANIFEST_TYPES:
                return ImageFacts(
                    size,
                    frozenset(),
                    unreadable=f"the manifest is {kind or 'of no known kind'}; "
                    "push a Docker schema 2 or OCI image",
                )
            return self._single(ref, size, manifest)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _ABSENT:
                return None
            raise UpstreamUnavailable(
                "ECR is unavailable; retry", code="upstream_unavailable"
            ) from exc
        except BotoCoreError as exc:
            raise UpstreamUnavailable(
                "ECR is unavailable; retry", code="upstream_unavailable"
            ) from exc

    def _single(self, ref: dict[str, str], size: int, manifest: Any) -> ImageFacts:
        """A single image's platform, from the config blob its manifest names."""
        try:
            blob_digest, blob_size = config_descriptor(manifest)
        except ValueError as exc:
            return ImageFacts(size, frozenset(), unreadable=str(exc))
        try:
            url = self.ecr.get_download_url_for_layer(**ref, layerDigest=blob_digest)
            blob = self._fetch(str(url["downloadUrl"]), blob_size)
            platform = config_platform(blob, blob_digest, blob_size)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in _NO_BLOB:
                raise
            return ImageFacts(size, frozenset(), unreadable="ECR has no config blob for it")
        except (BlobUnreadable, ValueError) as exc:
            return ImageFacts(size, frozenset(), unreadable=str(exc))
        return ImageFacts(size, frozenset({platform}))
