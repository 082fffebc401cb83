"""The deterministic partitions of a stream's arguments fragment the scorer replays: cuts
where a reader is most likely to break (inside an escape, a surrogate pair, a number, a
key) and a few seeded at random.
"""

from __future__ import annotations

import json
import random

from toolcall300.generator.deltas.forms import RANDOM_PARTITIONS


def _special_cuts(text: str) -> list[int]:
    """Cuts users' reports name: inside an escape (``\\"``, ``\\u00e9``), between the halves of
    an escaped surrogate pair, next to a multi-byte character, inside a number."""
    cuts: set[int] = set()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cuts.add(i + 1)
            if text[i + 1] == "u":
                cuts.update(range(i + 2, min(i + 6, len(text))))
                if text[i + 6 : i + 8] == "\\u":
                    cuts.add(i + 6)  # between the halves of a surrogate pair
            i += 2
            continue
        if ord(ch) > 0x7F:
            cuts.update((i, i + 1))
        if ch.isdigit() and i + 1 < len(text) and (text[i + 1].isdigit() or text[i + 1] == "."):
            cuts.add(i + 1)
        i += 1
    return sorted(c for c in cuts if 0 < c < len(text))


def partitions(text: str, rng: random.Random) -> list[list[int]]:
    """The whole stream, every two-way split, seeded random partitions, and a partition
    cutting at every special place at once; each as the sorted offsets of its cuts."""
    out: list[list[int]] = [[]]
    out += [[i] for i in range(1, len(text))]
    if len(text) > 2:
        for _ in range(RANDOM_PARTITIONS):
            count = rng.randint(2, min(len(text) - 1, 12))
            out.append(sorted(rng.sample(range(1, len(text)), count)))
        out.append(list(range(1, len(text))))  # one character per fragment
    special = _special_cuts(text)
    if special:
        out.append(special)
    seen: set[str] = set()
    unique = []
    for offsets in out:
        key = json.dumps(offsets)
        if key not in seen:
            seen.add(key)
            unique.append(offsets)
    return unique
