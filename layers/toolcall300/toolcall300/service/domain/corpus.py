"""Corpus access: the manifest, short-lived links to its files, and one case's rationale.

Reads whatever ``manifest.json`` in the corpus bucket lists (``"files"`` as a list of
``{"name", "sha256", "bytes"|"count"}`` or a map from name to ``{"sha256", "count"}``), so the
corpus generator owns the file set. The
object store is a parameter (``adapters.s3.CorpusObjects``). Not a cache of the corpus itself:
only the manifest and the rationale index are memoised, keyed by the manifest's hash.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

from toolcall300.service.errors import BadRequest, NotFound, UpstreamUnavailable

MANIFEST = "manifest.json"
RATIONALE = "rationale.jsonl"
CASE_ID_PATTERN = "^tc300-[0-9]{4}$"  # for pydantic and OpenAPI ('$' there is end of text)
CASE_ID_RE = re.compile(r"\Atc300-[0-9]{4}\Z")  # ASCII digits only (\d would take any script's)
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def content_type(name: str) -> str:
    """The media type an object of the corpus or reports buckets is stored and served with,
    by either adapter set (S3's ``ContentType``, the local stack's links).

    >>> content_type("cases.jsonl"), content_type("manifest.json"), content_type("x.bin")
    ('application/x-ndjson', 'application/json', 'application/octet-stream')
    """
    if name.endswith(".jsonl"):
        return "application/x-ndjson"
    return "application/json" if name.endswith(".json") else "application/octet-stream"


class ObjectStore(Protocol):
    def read(self, key: str) -> bytes: ...
    def presign(self, key: str, *, seconds: int) -> str: ...


#: Where the generator's recorded inputs live beside the corpus (``corpus_private/inputs/``):
#: what ``toolcall300 generate --check-only`` and ``--rebuild`` read. The recipe names the seed
#: and the two files; the manifest pins those two as ``catalog`` and ``pools``.
INPUTS = "inputs"
RECIPE = f"{INPUTS}/recipe.json"


@dataclass(frozen=True)
class Manifest:
    version: str
    files: tuple[dict[str, Any], ...]
    digest: str  # sha256 of the manifest bytes: identifies this exact publication
    spec_version: str | None = None  # the grading contract its labels follow
    size: int = 0  # bytes of the manifest itself
    #: the generator's inputs it pins: ``[{"name": "inputs/tools.json", "sha256"}, ...]``
    inputs: tuple[dict[str, Any], ...] = ()


def pinned_inputs(doc: Any) -> list[dict[str, Any]]:
    """The generator inputs a manifest pins (``catalog``, ``pools``: ``{"name", "sha256"}``),
    named as they lie beside the corpus (``inputs/<name>``); [] for a manifest without them."""
    out = []
    for field in ("catalog", "pools"):
        pin = doc.get(field) if isinstance(doc, dict) else None
        if isinstance(pin, dict) and "name" in pin and "sha256" in pin:
            out.append({"name": f"{INPUTS}/{pin['name']}", "sha256": pin["sha256"]})
    return out


def manifest_entries(doc: Any) -> list[dict[str, Any]]:
    """``[{"name", "sha256", "bytes", "count"}]`` from either manifest shape the generator may
    write: ``"files": [{"name", ...}]`` or ``"files": {"<name>": {"sha256", ...}}``."""
    files = doc["files"]
    if isinstance(files, dict):
        files = [{"name": name, **meta} for name, meta in files.items()]
    return [
        {"name": f["name"], "sha256": f["sha256"], "bytes": f.get("bytes"), "count": f.get("count")}
        for f in files
    ]


def parse_manifest(raw: bytes) -> Manifest:
    """Validate the manifest's shape; a file name must be a plain name (no path)."""
    try:
        doc = json.loads(raw)
        entries = manifest_entries(doc)
        inputs = pinned_inputs(doc)
        names = [f["name"] for f in entries] + [f["name"][len(INPUTS) + 1 :] for f in inputs]
        ok = all(isinstance(n, str) and SAFE_NAME_RE.match(n) for n in names) and all(
            isinstance(f["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", f["sha256"])
            for f in [*entries, *inputs]
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UpstreamUnavailable(
            "the corpus manifest is malformed", code="manifest_invalid"
        ) from exc
    if not ok or not entries:
        raise UpstreamUnavailable("the corpus manifest is malformed", code="manifest_invalid")
    digest = hashlib.sha256(raw).hexdigest()
    version = next(
        (doc[k] for k in ("version", "corpus_version") if isinstance(doc.get(k), str)), None
    )
    spec = doc.get("spec_version")
    return Manifest(
        version or digest[:16],
        tuple(entries),
        digest,
        spec if isinstance(spec, str) else None,
        len(raw),
        tuple(inputs),
    )


_cache: dict[str, tuple[float, Any]] = {}


def _memo(key: str, max_age: float, build: Any) -> Any:
    hit = _cache.get(key)
    if hit and time.monotonic() - hit[0] < max_age:
        return hit[1]
    value = build()
    _cache[key] = (time.monotonic(), value)
    return value


def clear_cache() -> None:
    _cache.clear()


def load_manifest(store: ObjectStore, *, max_age: float = 300) -> Manifest:
    return _memo("manifest", max_age, lambda: parse_manifest(store.read(MANIFEST)))  # type: ignore[no-any-return]


def corpus_links(store: ObjectStore, *, seconds: int, max_age: float = 300) -> dict[str, Any]:
    """``GET /corpus``: the version served (the uploaded manifest's, which a hosted baseline
    must share, docs/runs-contract.md), its grading contract, and a pin and a presigned link
    valid ``seconds`` for the manifest itself, each file it lists and, when it pins them, the
    generator's inputs (``inputs/``): what ``generate --check-only`` and ``--rebuild`` need."""
    manifest = load_manifest(store, max_age=max_age)
    files = [dict(f, url=store.presign(f["name"], seconds=seconds)) for f in manifest.files]
    inputs: list[dict[str, Any]] = []
    recipe = _recipe(store) if manifest.inputs else None
    if recipe is not None:  # the manifest cannot pin the recipe: it is pinned here, and
        digest = hashlib.sha256(
            recipe
        ).hexdigest()  # `--check-only` holds its seed to the manifest's
        inputs = [{"name": RECIPE, "sha256": digest, "bytes": len(recipe)}]
        inputs += [dict(f) for f in manifest.inputs]
    return {
        "version": manifest.version,
        "spec_version": manifest.spec_version,
        "manifest": {
            "name": MANIFEST,
            "sha256": manifest.digest,
            "bytes": manifest.size,
            "url": store.presign(MANIFEST, seconds=seconds),
        },
        "files": files,
        "inputs": [dict(f, url=store.presign(f["name"], seconds=seconds)) for f in inputs],
        "tracks": track_links(store, seconds=seconds, max_age=max_age),
        "expires_in": seconds,
    }


#: The track corpora served beside the main one, each under its folder (``<track>/``,
#: uploaded from ``corpus_private/<track>/`` by ``sdk.s3.upload_track_corpus``; docs/tracks.md).
TRACK_FOLDERS = ("parallel", "deltas")


def _track_manifest(store: ObjectStore, track: str) -> tuple[bytes, dict[str, Any]] | None:
    try:
        raw = store.read(f"{track}/{MANIFEST}")
    except NotFound:
        return None
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("track") != track:
        return None
    return raw, doc


def track_links(store: ObjectStore, *, seconds: int, max_age: float = 300) -> list[dict[str, Any]]:
    """The track corpora ``GET /corpus`` serves beside the main one: for each one uploaded,
    its track, version, its manifest pinned by sha256 and every file it lists (the corpus, its
    sample and its rationale), each with a presigned link valid ``seconds``."""
    out = []
    for track in TRACK_FOLDERS:
        found = _memo(f"track:{track}", max_age, lambda t=track: _track_manifest(store, t))
        if found is None:
            continue
        raw, doc = found
        name = f"{track}/{MANIFEST}"
        files = [
            dict(
                f,
                name=f"{track}/{f['name']}",
                url=store.presign(f"{track}/{f['name']}", seconds=seconds),
            )
            for f in manifest_entries(doc)
        ]
        out.append(
            {
                "track": track,
                "version": str(doc.get("version")),
                "spec_version": doc.get("spec_version"),
                "manifest": {
                    "name": name,
                    "sha256": hashlib.sha256(raw).hexdigest(),
                    "bytes": len(raw),
                    "url": store.presign(name, seconds=seconds),
                },
                "files": files,
            }
        )
    return out


def _recipe(store: ObjectStore) -> bytes | None:
    """The recorded recipe beside the corpus, or None when it was published without its inputs."""
    try:
        return store.read(RECIPE)
    except NotFound:
        return None


def validate_case_id(case_id: str) -> str:
    """Case ids are exactly ``tc300-NNNN``; anything else (``..``, ``%2F``, spaces) is refused."""
    if not CASE_ID_RE.match(case_id):
        raise BadRequest("a case id looks like tc300-0001", code="invalid_case_id")
    return case_id


def parse_rationale(raw: bytes) -> dict[str, dict[str, Any]]:
    """id -> ``{"id", "rule", "rationale"}`` from ``rationale.jsonl``."""
    index: dict[str, dict[str, Any]] = {}
    for line in raw.decode("utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            index[str(rec["id"])] = {
                "id": rec["id"],
                "rule": rec.get("rule"),
                "rationale": rec.get("rationale"),
            }
    return index


def case_rationale(store: ObjectStore, case_id: str, *, max_age: float = 300) -> dict[str, Any]:
    """``GET /cases/{id}/rationale``: one case's rationale, or 404."""
    validate_case_id(case_id)
    manifest = load_manifest(store, max_age=max_age)
    index = _memo(
        f"rationale:{manifest.version}", max_age, lambda: parse_rationale(store.read(RATIONALE))
    )
    if case_id not in index:
        raise NotFound(f"no case {case_id}", code="case_not_found")
    return index[case_id]  # type: ignore[no-any-return]
