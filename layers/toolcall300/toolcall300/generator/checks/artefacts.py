"""The files around the cases: the public sample (its split over the categories,
byte-identical rows), the manifest's discrimination table as the controls score
today, and the manifest's pins (sha256, bytes, rows, canonical form) of every file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from toolcall300.canonical import canonical, jsonl_bytes, sha256_hex
from toolcall300.controls import integrator, naive
from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    check,
    verdict,
)
from toolcall300.generator.oracles import (
    pass_counts,
)
from toolcall300.generator.shape import shape_of
from toolcall300.spec import CATEGORIES


@check(
    "sample30",
    "sample30.jsonl is 30 corpus cases, byte-identical rows, 2 or 3 per category, in id order "
    "(a smaller shape: the same split of 30, or of all its cases, over its categories)",
)
def _sample(corpus: Corpus) -> Iterator[Result]:
    shape = shape_of(corpus.manifest)
    rows = {c.get("id"): canonical(c) for c in corpus.cases}
    size = shape.sample_size()
    yield verdict(
        len(corpus.sample) == size,
        None,
        f"sample has {len(corpus.sample)} cases, not {size}",
    )
    for s in corpus.sample:
        yield verdict(rows.get(s.get("id")) == canonical(s), s, "sample row is not the corpus row")
    counts = Counter(s.get("category") for s in corpus.sample)
    for cat in CATEGORIES:
        allowed = shape.sample_allowed(cat)
        yield verdict(
            counts[cat] in allowed,
            None,
            f"sample has {counts[cat]} {cat} cases, not {sorted(allowed)}",
        )
    ids = [s.get("id") for s in corpus.sample]
    yield verdict(ids == sorted(set(ids), key=str), None, "sample ids repeat or are out of order")


@check(
    "discrimination",
    "the manifest's per-category table is what the naive (C1) and integrator (C2) controls pass",
)
def _discrimination(corpus: Corpus) -> Iterator[Result]:
    table = ((corpus.manifest or {}).get("discrimination") or {}).get("categories")
    yield verdict(isinstance(table, dict), None, "the manifest has no discrimination table")
    if isinstance(table, dict):
        controls = {"naive": naive, "integrator": integrator}
        now = pass_counts(corpus.cases, controls, trusted=tuple(controls))
        for cat, row in now.items():
            for name, count in row.items():
                written = (table.get(cat) or {}).get(name)
                yield verdict(
                    written == count,
                    None,
                    f"{cat}: {name} passes {count}, the manifest says {written}",
                )


@check("manifest_pins", "manifest.json pins the sha256 and count of every file")
def _manifest(corpus: Corpus) -> Iterator[Result]:
    files = (corpus.manifest or {}).get("files", {})
    yield verdict(corpus.manifest is not None and bool(files), None, "no manifest or no file pins")
    for fname, pin in sorted(files.items()):
        data = corpus.files.get(fname)
        yield verdict(data is not None, None, f"{fname} is pinned but missing")
        if data is not None:
            yield verdict(
                sha256_hex(data) == pin.get("sha256"),
                None,
                f"{fname} sha256 does not match its pin",
            )
            yield verdict(
                len(data) == pin.get("bytes"), None, f"{fname} size does not match its pin"
            )
            lines = data.count(b"\n")
            yield verdict(
                lines == pin.get("count"),
                None,
                f"{fname} has {lines} rows, pinned {pin.get('count')}",
            )
    for fname, rows in (
        ("toolcall300.jsonl", corpus.cases),
        ("rationale.jsonl", corpus.rationale),
        ("sample30.jsonl", corpus.sample),
    ):
        if fname in corpus.files:
            yield verdict(
                corpus.files[fname] == jsonl_bytes(rows), None, f"{fname} is not in canonical form"
            )


# --------------------------------------------------------------------------- running
