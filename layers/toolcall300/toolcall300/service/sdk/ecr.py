"""ECR adapter: what the registry says about an adapter image before a job is submitted for it.

Only ECR is reachable from the jobs' network, so an image is ``ACCOUNT.dkr.ecr.REGION.
amazonaws.com/REPO@sha256:...``; this reads its size and, for a multi-platform index, its
platforms. An image that does not exist, or that this service may not describe (another
account's repository without a policy for it), is ``None``; ECR being down is
``UpstreamUnavailable``.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from toolcall300.service.domain.runs.submission import ECR_IMAGE_RE
from toolcall300.service.errors import UpstreamUnavailable
from toolcall300.service.hosted.submit import ImageFacts
from toolcall300.service.sdk.aws import client

#: Manifest media types that list one manifest per platform.
INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_ABSENT = ("ImageNotFoundException", "RepositoryNotFoundException", "AccessDeniedException")


class EcrImages:
    """``describe(image)`` on ECR."""

    def __init__(self, ecr: Any = None) -> None:
        self._ecr = ecr

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
            detail = self.ecr.describe_images(**ref, imageIds=ids)["imageDetails"][0]
            media = detail.get("imageManifestMediaType")
            platforms = None
            if media in INDEX_TYPES:
                got = self.ecr.batch_get_image(**ref, imageIds=ids, acceptedMediaTypes=[media])
                index = json.loads(got["images"][0]["imageManifest"])
                platforms = frozenset(
                    f"{m['platform']['os']}/{m['platform']['architecture']}"
                    for m in index.get("manifests", [])
                    if isinstance(m.get("platform"), dict)
                )
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
        return ImageFacts(int(detail.get("imageSizeInBytes") or 0), platforms)
