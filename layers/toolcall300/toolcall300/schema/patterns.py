"""``pattern``'s dialect: ECMA-262 regular expressions run on Python's ``re``, and which of
them are refused because their backtracking could explode.

JSON Schema patterns are ECMA-262; Python's ``re`` differs in ``$``, ``.``, ``\\s`` and the
meaning of ``\\d``/``\\w``. :func:`ecma_to_python` rewrites what differs, and what cannot be
rewritten faithfully (Unicode property escapes) or run safely (:func:`backtracking_hazard`)
is refused as not covered by ``pattern``'s well-formedness rule.
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

#: Regular-expression syntax of ECMA-262 that Python's ``re`` lacks.
ECMA_ONLY = re.compile(r"\\[pP]\{")


#: ECMA-262 whitespace (``\s``): Python's differs, and under ``re.ASCII`` is ASCII-only.
_ECMA_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
#: ECMA-262 ``.`` (no dotAll flag in JSON Schema) stops at every line terminator, not only ``\n``.
_ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"


def ecma_to_python(pattern: str) -> str:
    r"""Rewrite an ECMA-262 pattern so Python's ``re`` (with ``re.ASCII``) gives it ECMA meaning.

    ``$`` is the end of the input (Python's also matches before a final newline, which would
    let ``"abc\n"`` pass ``^[a-z]+$``); ``.`` excludes every line terminator; ``\s`` is
    ECMA's Unicode whitespace. ``re.ASCII`` gives ``\d``, ``\w`` and ``\b`` their ASCII
    meaning (Python's would accept an Arabic-Indic digit for ``\d``).

    >>> ecma_to_python(r"^[a-z$]+\.$")
    '^[a-z$]+\\.\\Z'
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "s":
                out.append(_ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]")
            elif nxt == "S" and not in_class:
                out.append(f"[^{_ECMA_SPACE}]")
            else:
                out.append(c + nxt)
            i += 2
            continue
        if in_class:
            in_class = c != "]" or (out[-1] == "[" or out[-1] == "[^")
            out.append(c)
        elif c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(c)
        elif c == "$":
            out.append("\\Z")
        elif c == ".":
            out.append(_ECMA_DOT)
        else:
            out.append(c)
        i += 1
    return "".join(out)


#: A repetition whose upper bound exceeds this counts as unbounded for the hazard check.
_UNBOUNDED_AFTER = 16


def _repeat_hazard(items: Any, inside_repeat: bool) -> str | None:
    """Walk a parsed pattern; report nested unbounded repetition or alternation under one."""
    sre = importlib.import_module("re._constants")  # the parser's own opcodes (3.11+)

    for op, arg in items:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            _lo, hi, body = arg
            unbounded = hi is sre.MAXREPEAT or hi > _UNBOUNDED_AFTER
            if unbounded and inside_repeat:
                return "nested unbounded repetition such as (a+)+ backtracks exponentially"
            found = _repeat_hazard(body, inside_repeat or unbounded)
            if found:
                return found
        elif op is sre.SUBPATTERN:
            found = _repeat_hazard(arg[-1], inside_repeat)
            if found:
                return found
        elif op is sre.BRANCH:
            if inside_repeat:
                return "alternation inside unbounded repetition such as (a|ab)* can backtrack exponentially"
            for branch in arg[1]:
                found = _repeat_hazard(branch, inside_repeat)
                if found:
                    return found
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            return "backreferences are not covered"
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            found = _repeat_hazard(arg[1], inside_repeat)
            if found:
                return found
    return None


@lru_cache(maxsize=512)
def backtracking_hazard(pattern: str) -> str | None:
    r"""Why ``pattern`` could make a match run for exponential time, or ``None`` (cached, as
    :func:`compile_pattern` is: parsing a pattern costs more than a whole check).

    Python's ``re`` has no time limit, and a schema is caller-supplied (``POST /check``), so
    patterns whose backtracking can explode are refused as not covered rather than run:
    nested unbounded repetition (star height above one), alternation under unbounded
    repetition, and backreferences. This is deliberately conservative: ``^[a-z]+(-[a-z]+)*$``
    is refused too, with a message that says why.

    >>> backtracking_hazard(r"^[A-Z]{3}-\d+$") is None
    True
    >>> backtracking_hazard("(a+)+$")
    'nested unbounded repetition such as (a+)+ backtracks exponentially'
    """
    sre_parse = importlib.import_module("re._parser")  # untyped in typeshed; stable in 3.11+
    try:
        parsed = sre_parse.parse(ecma_to_python(pattern), re.ASCII)
    except re.error:
        return None  # reported as invalid by the caller
    return _repeat_hazard(list(parsed), inside_repeat=False)


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled with its ECMA-262 meaning (cached: the same few patterns recur)."""
    return re.compile(ecma_to_python(pattern), re.ASCII)
