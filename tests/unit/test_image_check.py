"""The adapter image check before a job is submitted: a single image's platform from its config.

ECR's DescribeImages reports neither a single image's architecture nor its OS; they are in the
config blob its manifest names. The ECR calls are answered by botocore's Stubber (exact
requests asserted) or by moto (with the GetDownloadUrlForLayer answer moto lacks, see
``support.registry``); the blob itself is always fetched over real HTTP from 127.0.0.1.
"""

from __future__ import annotations

import functools
import json
import socket
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st
from support.registry import (
    BlobServer,
    config_blob,
    digest_of,
    moto_download_links,
    single_manifest,
)

from toolcall300.service.domain import images as image_facts
from toolcall300.service.domain.images import ImageFacts, image_problem
from toolcall300.service.errors import UpstreamUnavailable
from toolcall300.service.sdk import ecr as ecr_adapter
from toolcall300.service.sdk.aws import client
from toolcall300.service.sdk.ecr import BlobUnreadable, EcrImages, fetch_blob

ACCOUNT = "123456789012"
DIGEST = "sha256:" + "a" * 64
IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/acme/adapter@{DIGEST}"
REF = {"registryId": ACCOUNT, "repositoryName": "acme/adapter"}
OCI = "application/vnd.oci.image.manifest.v1+json"
DOCKER = "application/vnd.docker.distribution.manifest.v2+json"
#: The blob server speaks plain HTTP on 127.0.0.1; production fetches refuse anything but HTTPS.
over_http = functools.partial(fetch_blob, schemes=("http",))


@pytest.fixture
def blobs() -> Iterator[BlobServer]:
    with BlobServer() as server:
        yield server


def stubbed(
    manifest: dict[str, Any], blobs: BlobServer, *, media: str | None = None, link: bool = True
) -> tuple[EcrImages, Stubber]:
    """An ECR client that answers for ``IMAGE`` with ``manifest`` and (``link``) a download
    link to its config on ``blobs``; any other call fails the test (Stubber)."""
    ecr = boto3.client(
        "ecr", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(ecr)
    media = media or manifest.get("mediaType")
    ids = [{"imageDigest": DIGEST}]
    stub.add_response(
        "describe_images",
        {"imageDetails": [{"imageDigest": DIGEST, "imageSizeInBytes": 2**27,
                           "imageManifestMediaType": media}]},
        {**REF, "imageIds": ids},
    )  # fmt: skip
    stub.add_response(
        "batch_get_image",
        {"images": [{"imageId": {"imageDigest": DIGEST}, "imageManifest": json.dumps(manifest),
                     "imageManifestMediaType": media}], "failures": []},
        {**REF, "imageIds": ids, "acceptedMediaTypes": [media]},
    )  # fmt: skip
    config = manifest.get("config")
    if link and isinstance(config, dict):
        stub.add_response(
            "get_download_url_for_layer",
            {"downloadUrl": blobs.url(config["digest"]), "layerDigest": config["digest"]},
            {**REF, "layerDigest": config["digest"]},
        )
    stub.activate()
    return EcrImages(ecr, fetch=over_http), stub


@pytest.mark.parametrize("media", [OCI, DOCKER])
@pytest.mark.parametrize(("built", "other"), [("amd64", "arm64"), ("arm64", "amd64")])
def test_a_single_image_is_checked_against_the_platform_its_config_names(
    blobs: BlobServer, media: str, built: str, other: str
) -> None:
    blob = config_blob(built, variant="v8") if built == "arm64" else config_blob(built)
    blobs.add(blob)
    images, stub = stubbed(single_manifest(blob, media=media), blobs)
    facts = images.describe(IMAGE)
    stub.assert_no_pending_responses()
    assert facts == ImageFacts(2**27, frozenset({f"linux/{built}"}))
    assert image_problem(facts, f"linux/{built}") is None
    refused = image_problem(facts, f"linux/{other}")
    assert refused is not None and refused[0] == "image_platform_mismatch"
    assert f"built for linux/{built}, not linux/{other}" in refused[1]


def test_a_windows_image_is_refused_for_a_linux_job(blobs: BlobServer) -> None:
    blob = config_blob("amd64", "windows")
    blobs.add(blob)
    images, _ = stubbed(single_manifest(blob), blobs)
    refused = image_problem(images.describe(IMAGE), "linux/amd64")
    assert refused is not None and refused[0] == "image_platform_mismatch"
    assert "windows/amd64" in refused[1]


GOOD = config_blob("amd64")


@pytest.mark.parametrize(
    ("served", "manifest", "status", "why"),  # a descriptor refused at once asks for no link
    [
        (GOOD.replace(b"amd64", b"arm64"), single_manifest(GOOD), 200, "match its digest"),
        (GOOD + b" " * 10, single_manifest(GOOD), 200, "larger than its manifest says"),
        (GOOD, single_manifest(GOOD, size=len(GOOD) + 5), 200, "not the"),
        (b"not json{", single_manifest(b"not json{"), 200, "not JSON"),
        (b'["linux"]', single_manifest(b'["linux"]'), 200, "no os and architecture"),
        (b'{"os":"linux"}', single_manifest(b'{"os":"linux"}'), 200, "no os and architecture"),
        (b'{"os":"linux","architecture":7}', single_manifest(b'{"os":"linux","architecture":7}'),
         200, "no os and architecture"),
        (GOOD, single_manifest(GOOD), 403, "HTTP 403"),
        (GOOD, single_manifest(GOOD, size=image_facts.MAX_CONFIG_BYTES + 1), 200, "at most"),
        (GOOD, single_manifest(GOOD, digest="md5:abc"), 200, "not a sha256 digest"),
        (GOOD, single_manifest(GOOD, size=-1), 200, "not a byte count"),
    ],
)  # fmt: skip
def test_a_config_that_is_not_the_one_the_manifest_names_is_refused(
    blobs: BlobServer, served: bytes, manifest: dict[str, Any], status: int, why: str
) -> None:
    blobs.blobs[manifest["config"]["digest"]] = served  # what the store hands out for it
    blobs.status = status
    linked = why not in ("at most", "not a sha256 digest", "not a byte count")
    images, stub = stubbed(manifest, blobs, link=linked)
    facts = images.describe(IMAGE)
    stub.assert_no_pending_responses()
    assert facts is not None and facts.unreadable is not None and why in facts.unreadable
    refused = image_problem(facts, "linux/amd64")
    assert refused is not None and refused[0] == "image_config_unreadable"
    assert refused[1].startswith("the image's platform cannot be read: ")


def test_a_refused_descriptor_asks_for_no_link_and_fetches_nothing(blobs: BlobServer) -> None:
    manifest = single_manifest(GOOD, size=image_facts.MAX_CONFIG_BYTES + 1)
    images, stub = stubbed(manifest, blobs, link=False)
    facts = images.describe(IMAGE)  # Stubber fails on a call it was not given
    assert facts is not None and facts.unreadable is not None
    stub.assert_no_pending_responses()
    assert blobs.requests == []


def test_a_schema_1_manifest_names_no_config_and_is_refused(blobs: BlobServer) -> None:
    schema1 = {"schemaVersion": 1, "name": "acme/adapter", "architecture": "amd64"}
    images, _ = stubbed(
        schema1, blobs, media="application/vnd.docker.distribution.manifest.v1+json"
    )
    facts = images.describe(IMAGE)
    assert facts is not None and facts.unreadable is not None
    assert "push a Docker schema 2 or OCI image" in facts.unreadable
    assert blobs.requests == []


def test_a_config_ecr_does_not_have_is_refused(blobs: BlobServer) -> None:
    images, stub = stubbed(single_manifest(GOOD), blobs, link=False)
    stub.add_client_error(
        "get_download_url_for_layer", "LayersNotFoundException", http_status_code=404
    )
    facts = images.describe(IMAGE)
    assert facts is not None and facts.unreadable == "ECR has no config blob for it"


def test_an_index_lists_its_platforms_and_reads_no_blob(blobs: BlobServer) -> None:
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {"digest": "sha256:" + "1" * 64, "size": 1, "platform": {"os": "linux", "architecture": "arm64"}},
            {"digest": "sha256:" + "2" * 64, "size": 1, "platform": {"os": "unknown", "architecture": "unknown"}},
            {"digest": "sha256:" + "3" * 64, "size": 1},
            "garbage",
        ],
    }  # fmt: skip
    images, stub = stubbed(index, blobs)
    facts = images.describe(IMAGE)
    stub.assert_no_pending_responses()
    assert facts is not None and facts.index
    assert facts.platforms == {"linux/arm64", "unknown/unknown"}
    assert image_problem(facts, "linux/arm64") is None
    refused = image_problem(facts, "linux/amd64")
    assert refused is not None and refused[0] == "image_platform_mismatch"
    assert "no linux/amd64 variant" in refused[1]
    assert blobs.requests == []


def test_a_store_that_does_not_answer_is_a_retry_not_a_refusal(
    blobs: BlobServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = blobs.add(GOOD)
    blobs.status = 503
    with pytest.raises(UpstreamUnavailable):
        over_http(blobs.url(digest), len(GOOD))
    blobs.status = 200
    blobs.trickle = 0.05  # a byte every 50 ms: the whole-fetch deadline ends it, not each read
    monkeypatch.setattr(ecr_adapter, "FETCH_SECONDS", 0.2)
    with pytest.raises(UpstreamUnavailable):
        over_http(blobs.url(digest), len(GOOD))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(UpstreamUnavailable):
        over_http(f"http://127.0.0.1:{port}/blobs/{digest}", len(GOOD))


def test_a_link_that_is_not_https_is_not_fetched(blobs: BlobServer) -> None:
    digest = blobs.add(GOOD)
    with pytest.raises(BlobUnreadable, match="not HTTPS"):
        fetch_blob(blobs.url(digest), len(GOOD))
    assert blobs.requests == []
    assert over_http(blobs.url(digest), len(GOOD)) == GOOD


def test_the_ecr_adapter_reads_size_and_platform_on_moto(
    aws: Any, blobs: BlobServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ecr = client("ecr")
    ecr.create_repository(repositoryName="acme/adapter")
    blob = config_blob("arm64", variant="v8")
    blobs.add(blob)
    ecr.put_image(
        repositoryName="acme/adapter",
        imageManifest=json.dumps(single_manifest(blob)),
        imageTag="one",
    )
    digest = ecr.describe_images(repositoryName="acme/adapter", imageIds=[{"imageTag": "one"}])[
        "imageDetails"
    ][0]["imageDigest"]
    base = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/acme/adapter@"
    with moto_download_links(monkeypatch, blobs):
        facts = EcrImages(fetch=over_http).describe(base + digest)
    assert facts is not None and facts.platforms == {"linux/arm64"} and facts.size_bytes > 0
    assert blobs.requests and blobs.requests[0].startswith(f"/blobs/{digest_of(blob)}")
    assert EcrImages().describe(base + "sha256:" + "f" * 64) is None  # no such image
    missing = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/nobody/here@sha256:" + "f" * 64
    assert EcrImages().describe(missing) is None  # no such repository


@given(st.binary(max_size=256))
def test_any_blob_gives_a_platform_or_a_reason(raw: bytes) -> None:
    try:
        got = image_facts.config_platform(raw, digest_of(raw), len(raw))
    except ValueError as exc:
        assert str(exc)
    else:
        assert "/" in got


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(JSON | st.fixed_dictionaries({"config": JSON}))
def test_any_manifest_gives_a_descriptor_or_a_reason(doc: Any) -> None:
    try:
        digest, size = image_facts.config_descriptor(doc)
    except ValueError as exc:
        assert str(exc)
    else:
        assert digest.startswith("sha256:") and 0 <= size <= image_facts.MAX_CONFIG_BYTES


def raw_manifest(raw: str, blobs: BlobServer, *, link: str | None = None) -> EcrImages:
    """ECR describing the image with no media type, and answering ``raw`` as its manifest."""
    ecr = boto3.client(
        "ecr", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(ecr)
    stub.add_response("describe_images", {"imageDetails": [{"imageSizeInBytes": 5}]})
    stub.add_response("batch_get_image", {"images": [{"imageManifest": raw}]})
    if link:
        stub.add_response("get_download_url_for_layer", {"downloadUrl": blobs.url(link)})
    stub.activate()
    return EcrImages(ecr, fetch=over_http)


@pytest.mark.parametrize(
    "raw", ["not json", "[1, 2]", '"a string"', "null", '{"mediaType": 7}', "{}"]
)
def test_a_manifest_ecr_cannot_explain_is_refused_not_a_crash(blobs: BlobServer, raw: str) -> None:
    facts = raw_manifest(raw, blobs).describe(IMAGE)
    refused = image_problem(facts, "linux/amd64")
    assert refused is not None and refused[0] == "image_config_unreadable"


def test_an_oci_manifest_without_a_media_type_is_read_by_its_shape(blobs: BlobServer) -> None:
    """OCI image-spec 1.0 makes ``mediaType`` optional in a manifest and an index."""
    digest = blobs.add(GOOD)
    single = dict(single_manifest(GOOD))
    del single["mediaType"]
    facts = raw_manifest(json.dumps(single), blobs, link=digest).describe(IMAGE)
    assert facts == ImageFacts(5, frozenset({"linux/amd64"}))
    index = {
        "schemaVersion": 2,
        "manifests": [{"platform": {"os": "linux", "architecture": "arm64"}}],
    }
    facts = raw_manifest(json.dumps(index), blobs).describe(IMAGE)
    assert facts == ImageFacts(5, frozenset({"linux/arm64"}), index=True)


def test_ecr_describing_nothing_is_an_image_not_found() -> None:
    ecr = boto3.client(
        "ecr", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(ecr)
    stub.add_response("describe_images", {"imageDetails": []})
    stub.add_response("describe_images", {"imageDetails": [{"imageSizeInBytes": 1}]})
    stub.add_response("batch_get_image", {"images": [], "failures": []})
    stub.activate()
    assert EcrImages(ecr).describe(IMAGE) is None
    assert EcrImages(ecr).describe(IMAGE) is None
