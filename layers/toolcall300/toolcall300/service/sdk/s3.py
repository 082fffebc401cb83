"""S3 adapter for the corpus bucket: read small objects, presign SigV4 GET links.

Links are presigned with the client from ``adapters.aws`` (always SigV4). Missing objects
become ``NotFound``; other failures ``UpstreamUnavailable``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

import toolcall300
from toolcall300.jobs.harness import CORPUS_FILE, derive_inputs
from toolcall300.service.domain.corpus import RECIPE, content_type, manifest_entries, pinned_inputs
from toolcall300.service.domain.runs.objects import pinned_corpus_key
from toolcall300.service.domain.runs.scoring import (
    TRACK_CORPUS_FILES,
    derive_track_inputs,
    track_folders,
)
from toolcall300.service.errors import NotFound, UpstreamUnavailable
from toolcall300.service.sdk.aws import LazyBucket


class CorpusObjects(LazyBucket):
    """Read and presign objects of one bucket."""

    def read(self, key: str) -> bytes:
        try:
            body: bytes = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise NotFound("the corpus is not published yet", code="corpus_missing") from exc
            raise UpstreamUnavailable(
                "storage is unavailable; retry", code="storage_unavailable"
            ) from exc
        except BotoCoreError as exc:
            raise UpstreamUnavailable(
                "storage is unavailable; retry", code="storage_unavailable"
            ) from exc
        return body

    def put(self, key: str, body: bytes, content_type: str) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type)

    def presign(self, key: str, *, seconds: int) -> str:
        url: str = self.s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=seconds
        )
        return url


class Writable(Protocol):
    """A bucket :func:`upload_corpus` writes to (``CorpusObjects``, or ``statefolder.files.FileCorpus``)."""

    def put(self, key: str, body: bytes, content_type: str) -> None: ...


def upload_corpus(directory: Path, objects: Writable) -> dict[str, Any]:
    """Upload every file ``manifest.json`` lists, then the manifest itself (last, so a reader
    never sees a manifest whose files are not there yet). Refuses a file whose sha256 does not
    match its pin. The private corpus's label-free job inputs are derived and stored beside it
    (``job-inputs/``), so submitting a hosted run never reads the labels; the generator's
    recorded inputs the manifest pins (``inputs/``, and the recipe) go beside the corpus, so a
    buyer's download can be checked and rebuilt. Returns the manifest."""
    manifest_bytes = (directory / "manifest.json").read_bytes()
    manifest = json.loads(manifest_bytes)
    for entry in manifest_entries(manifest):
        name = str(entry["name"])
        if "/" in name or name.startswith("."):
            raise ValueError(f"manifest names a path, not a file: {name!r}")
        data = (directory / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ValueError(f"{name}: sha256 does not match the manifest pin")
        objects.put(name, data, content_type(name))
        if name == CORPUS_FILE:  # the jobs' label-free inputs, derived here once per version
            # the labelled corpus kept by its pin first: a run whose inputs a reader may
            # find from now on is scored against exactly this version (domain.runs.objects)
            objects.put(pinned_corpus_key(entry["sha256"]), data, content_type(name))
            for key, body in derive_inputs(data).items():
                objects.put(key, body, content_type(key))
    # the generator's inputs, so a buyer can rebuild; a copy without them (a test's) serves none
    inputs = pinned_inputs(manifest) if (directory / RECIPE).is_file() else []
    if inputs:
        objects.put(RECIPE, (directory / RECIPE).read_bytes(), "application/json")
    for entry in inputs:
        data = (directory / entry["name"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ValueError(f"{entry['name']}: sha256 does not match the manifest pin")
        objects.put(entry["name"], data, content_type(entry["name"]))
    for track_dir in track_folders(directory):
        upload_track_corpus(track_dir, objects)
    objects.put("manifest.json", manifest_bytes, "application/json")
    return dict(manifest)


def upload_track_corpus(directory: Path, objects: Writable) -> None:
    """A track's corpus folder (``corpus_private/<track>/``, docs/tracks.md) under the key
    prefix ``<track>/``: every file its manifest lists, checked against its pin, then the
    manifest last (``domain.runs.load_track_corpus`` reads it back). A listed file the folder
    lacks is taken from the kit's ``data/`` (the free sample), held to the same pin."""
    manifest_bytes = (directory / "manifest.json").read_bytes()
    manifest = json.loads(manifest_bytes)
    for entry in manifest_entries(manifest):
        name = str(entry["name"])
        if "/" in name or name.startswith("."):
            raise ValueError(f"{directory.name}/manifest.json names a path: {name!r}")
        # a track's free sample ships in the kit (toolcall300/data/), not in its private folder
        kit = Path(toolcall300.__file__).parent / "data" / name
        data = (directory / name if (directory / name).is_file() else kit).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ValueError(f"{directory.name}/{name}: sha256 does not match the manifest pin")
        objects.put(f"{directory.name}/{name}", data, content_type(name))
        if f"{directory.name}/{name}" == TRACK_CORPUS_FILES.get(directory.name):
            # as for the main corpus: kept by its pin, and the jobs' label-free inputs
            objects.put(pinned_corpus_key(entry["sha256"]), data, content_type(name))
            for key, body in derive_track_inputs(directory.name, data).items():
                objects.put(key, body, content_type(key))
    objects.put(f"{directory.name}/manifest.json", manifest_bytes, "application/json")
