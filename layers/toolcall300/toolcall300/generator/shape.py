"""A corpus's shape: how many cases of each category it holds, and why any category is absent.

The default shape is the seed's: 12 categories of 25 cases, the 50 of ``hallucinated_tool``
and ``unrecoverable`` expecting a refusal, a stratified sample of 30. A build asks for that
shape unless told otherwise (``generate --categories``); a catalog that cannot feed a
category gets a corpus without it, and the manifest's ``shape`` names each absent category
with the reason. A manifest without ``shape`` is the default shape, so every corpus written
before shapes existed keeps its bytes and is checked exactly as before. This module holds
data and the arithmetic of the sample; it builds and checks nothing itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolcall300.spec import CATEGORIES, REFUSAL_CATEGORIES

PER_CATEGORY = 25
SAMPLE_SIZE = 30


@dataclass(frozen=True)
class Shape:
    """Cases per category (0: absent), why each absent one is absent, the D6.4 reading."""

    counts: dict[str, int]
    absent: dict[str, str] = field(default_factory=dict)
    #: D6.4: ``missing_required_arg`` built from required properties with no default (refusals).
    missing_refused: bool = False

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def refusal_cases(self) -> int:
        return sum(
            n
            for cat, n in self.counts.items()
            if cat in REFUSAL_CATEGORIES or (cat == "missing_required_arg" and self.missing_refused)
        )

    @property
    def is_default(self) -> bool:
        return self == DEFAULT_SHAPE

    def expects_refusal(self, category: Any) -> bool:
        """D2.1, and D6.4 when this corpus took that reading."""
        return category in REFUSAL_CATEGORIES or (
            category == "missing_required_arg" and self.missing_refused
        )

    def sample_quota(self) -> tuple[int, int]:
        """``(base, extras)``: each built category gives ``base`` sample cases (at most all
        it has), ``extras`` seeded ones give one more (2 and 6 for the default shape: 30 =
        12 x 2 + 6). A corpus of 30 cases or fewer is its own sample."""
        built = [c for c in CATEGORIES if self.counts.get(c)]
        if not built:
            return 0, 0
        if self.total <= SAMPLE_SIZE:
            return max(self.counts.values()), 0
        return SAMPLE_SIZE // len(built), SAMPLE_SIZE % len(built)

    def sample_allowed(self, category: str) -> set[int]:
        """How many sample cases ``category`` may give."""
        n = self.counts.get(category, 0)
        base, extras = self.sample_quota()
        return {min(n, base), min(n, base + 1)} if extras else {min(n, base)}

    def sample_extras_from(self) -> list[str]:
        """The categories the seeded extras are drawn from: those with a case to spare."""
        base, _ = self.sample_quota()
        return [c for c in CATEGORIES if self.counts.get(c, 0) > base]

    def sample_size(self) -> int:
        """How many cases the sample holds: 30 for the default shape."""
        base, extras = self.sample_quota()
        low = sum(min(n, base) for n in self.counts.values())
        return low + min(extras, len(self.sample_extras_from()))

    def manifest_entry(self) -> dict[str, Any] | None:
        """What the manifest records; ``None`` for the default shape (its manifest predates
        shapes and must keep its bytes)."""
        if self.is_default:
            return None
        return {
            "categories": {c: self.counts.get(c, 0) for c in CATEGORIES},
            "absent": dict(sorted(self.absent.items())),
            "missing_required_arg_refused": self.missing_refused,
            "refusal_cases": self.refusal_cases,
        }


DEFAULT_SHAPE = Shape(dict.fromkeys(CATEGORIES, PER_CATEGORY))


def shape_of(manifest: Mapping[str, Any] | None) -> Shape:
    """The shape a manifest records (the default when it records none, or records it badly:
    the checks then hold the corpus to the default and name what differs)."""
    entry = (manifest or {}).get("shape")
    if not isinstance(entry, dict):
        return DEFAULT_SHAPE
    counts = entry.get("categories")
    absent = entry.get("absent")
    if not isinstance(counts, dict) or not isinstance(absent, dict):
        return DEFAULT_SHAPE
    return Shape(
        {c: n for c in CATEGORIES if isinstance(n := counts.get(c), int) and n > 0},
        {str(k): str(v) for k, v in absent.items()},
        entry.get("missing_required_arg_refused") is True,
    )
