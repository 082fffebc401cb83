"""Small corpora as the service stores them: the real file names, manifest shape and licence.

``make_corpus`` writes a five-case corpus (every case a full case in the case format,
docs/case-format.md, so hosted runs on a stack serving it can be scored) with its rationale,
the commercial licence from ``corpus_private/`` and a manifest pinning all three, so tests
do not depend on the 300-case corpus. ``private_corpus`` copies the real one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

PRIVATE = Path(__file__).resolve().parents[2] / "corpus_private"
LICENCE = "LICENSE-COMMERCIAL.txt"

CASES = [
    {
        "id": f"tc300-{i:04d}",
        "category": "truncated",
        "text": "{",
        "tools": [],
        "expected_kind": "unrecoverable",
        "expected": None,
    }
    for i in range(1, 6)
]
RATIONALE = [{"id": f"tc300-{i:04d}", "rule": 11, "rationale": f"why {i}"} for i in range(1, 6)]


def make_corpus(
    directory: Path, *, version: str = "test-1", tracks: bool = False, deltas: bool = False
) -> dict[str, Any]:
    """Write the small corpus into ``directory``; return its manifest (``files`` as a list of
    ``{"name", "sha256", "bytes"}``, the shape the service reads beside the generator's map).
    With ``tracks``, the real parallel-track corpus folder beside it (docs/tracks.md); with
    ``deltas``, a deltas-track folder of a few of the real deltas cases (:func:`deltas_subset`)."""
    directory.mkdir(parents=True, exist_ok=True)
    if tracks:
        shutil.copytree(PRIVATE / "parallel", directory / "parallel", dirs_exist_ok=True)
    if deltas:
        deltas_subset(directory / "deltas")
    files = {
        "toolcall300.jsonl": "".join(json.dumps(c) + "\n" for c in CASES).encode(),
        "rationale.jsonl": "".join(json.dumps(r) + "\n" for r in RATIONALE).encode(),
        LICENCE: (PRIVATE / LICENCE).read_bytes(),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    manifest = {
        "version": version,
        "files": [
            {"name": n, "sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)}
            for n, d in files.items()
        ],
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def stack_corpus(directory: Path) -> dict[str, Any]:
    """The corpus the integration tests' shared local stack serves (tests/integration/
    conftest.py): the small main corpus with the parallel track and the deltas subset. A test
    that swaps in another corpus restores exactly this, or a later module scores against what
    it left (the whole deltas track instead of the subset)."""
    return make_corpus(directory, tracks=True, deltas=True)


def private_corpus(directory: Path) -> Path:
    """A copy of the real 300-case corpus with its own manifest (inputs left behind)."""
    shutil.copytree(PRIVATE, directory, ignore=shutil.ignore_patterns("inputs"))
    return directory


def deltas_subset(directory: Path) -> list[dict[str, Any]]:
    """A deltas-track folder holding the first case of each form and wire shape of the real
    deltas corpus (every kind of stream, a refusal among them; a hosted run of it takes
    seconds where the whole corpus takes a minute), their rationale rows and a manifest of its
    own pinning both (version ``test-1``, so a report of it is never taken for the real one).
    Returns its cases."""
    real = PRIVATE / "deltas"
    seen: set[tuple[str, str]] = set()
    kept: list[dict[str, Any]] = []
    for line in (real / "deltas.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if (case["form"], case["shape"]) not in seen:
            seen.add((case["form"], case["shape"]))
            kept.append(case)
    ids = {case["id"] for case in kept}
    rationale = [
        line
        for line in (real / "rationale.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(line)["id"] in ids
    ]
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "deltas.jsonl": "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in kept).encode(),
        "rationale.jsonl": "".join(r + "\n" for r in rationale).encode(),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    manifest = {
        "cases": len(kept),
        "files": {n: {"sha256": hashlib.sha256(d).hexdigest()} for n, d in files.items()},
        "track": "deltas",
        "version": "test-1",
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return kept
