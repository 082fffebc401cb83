"""The deltas corpus's files, byte for byte: the cases, the rationale, the free sample and
the manifest that pins them.
"""

from __future__ import annotations

from typing import Any

from toolcall300.canonical import (
    jsonl_bytes,
    pretty_bytes,
    sha256_hex,
)
from toolcall300.generator.deltas.build import build
from toolcall300.generator.deltas.checks import check
from toolcall300.generator.deltas.forms import DELTAS_VERSION, GENERATOR, SAMPLE_FILE, SEED


def sample(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The free sample: the first case (in id order) of each (form, shape) the corpus has,
    byte-identical rows of the corpus."""
    seen: set[tuple[str, str]] = set()
    out = []
    for case in cases:
        key = (case["form"], case["shape"])
        if key not in seen:
            seen.add(key)
            out.append(case)
    return out


def corpus_files(
    sources: list[dict[str, Any]], main_sha256: str, seed: int = SEED
) -> dict[str, bytes]:
    """The deltas corpus's files, byte for byte (deterministic)."""
    cases, rationale = build(sources, seed)
    problems = list(check(cases, rationale, sources))
    if problems:
        raise ValueError("deltas corpus fails its integrity checks:\n" + "\n".join(problems[:20]))
    data = jsonl_bytes(cases)
    notes = jsonl_bytes(rationale)
    free = jsonl_bytes(sample(cases))
    manifest = {
        "generator_version": GENERATOR,
        "version": DELTAS_VERSION,
        "track": "deltas",
        "seed": seed,
        "source": {"name": "toolcall300.jsonl", "sha256": main_sha256},
        "cases": len(cases),
        "streams": sum(len(c["partitions"]) for c in cases),
        "files": {
            "deltas.jsonl": {"sha256": sha256_hex(data)},
            "rationale.jsonl": {"sha256": sha256_hex(notes)},
            SAMPLE_FILE: {"sha256": sha256_hex(free)},
        },
    }
    return {
        "deltas.jsonl": data,
        "rationale.jsonl": notes,
        "manifest.json": pretty_bytes(manifest),
        SAMPLE_FILE: free,
    }
