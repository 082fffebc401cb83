"""``pattern`` for the engine: its ECMA-262 dialect checked against ECMA's own grammar and
translated for Python's ``re`` (:mod:`toolcall300.schema.ecma`), the patterns refused because
their backtracking could explode (:mod:`toolcall300.schema.backtracking`, D19), and the
compiled pattern and its shortest match, cached. It is not a regex engine: matching is Python's.
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache

from toolcall300.schema.backtracking import (
    MAX_ANALYSED_ATOMS,
    MAX_ANALYSED_STEPS,
    backtracking_hazard,
)
from toolcall300.schema.ecma import (
    MAX_GROUP_DEPTH,
    Node,
    PatternNotCovered,
    PatternSyntaxError,
    ecma_to_python,
)

__all__ = [
    "MAX_ANALYSED_ATOMS",
    "MAX_ANALYSED_STEPS",
    "MAX_GROUP_DEPTH",
    "MAX_PATTERN_LENGTH",
    "Node",
    "PatternNotCovered",
    "PatternSyntaxError",
    "backtracking_hazard",
    "compile_pattern",
    "ecma_to_python",
    "pattern_min_length",
]


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled with its ECMA-262 meaning (cached: the same few patterns recur).
    Raises what :func:`ecma_to_python` raises."""
    return re.compile(ecma_to_python(pattern), re.ASCII)


#: The longest pattern the engine compiles: parsing and compiling grow faster than linearly in
#: the length (a 1 000 000-character pattern took 20 s), and real tool schemas stay under 100
#: characters (docs/catalog.md, "Limits").
MAX_PATTERN_LENGTH = 1000


@lru_cache(maxsize=512)
def pattern_min_length(pattern: str) -> int | None:
    """How many characters the shortest match of ``pattern`` holds (every string it matches
    holds at least that many), or ``None`` when it cannot be compiled."""
    sre_parse = importlib.import_module("re._parser")  # untyped in typeshed; stable in 3.11+
    try:
        low, _ = sre_parse.parse(ecma_to_python(pattern), re.ASCII).getwidth()
    except (PatternSyntaxError, PatternNotCovered, re.error, OverflowError, RecursionError):
        return None
    return int(low)
