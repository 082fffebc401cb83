"""Strings built to match a ``pattern``: the schema's own hint for a value no pool names.

A pattern is parsed once (Python's ``re`` parser, on the ECMA-262 rewrite the schema engine
uses) and walked with the generator's one ``random.Random``: a literal is written, a class
gives one of its members, a repetition its lower bound plus a little. It deliberately
covers only what a tool schema's pattern usually holds (literals, classes, groups,
alternation, bounded and unbounded repetition, anchors); lookarounds and backreferences give
``None``, and the caller checks every string against the schema anyway (nothing here is
trusted to be a match).
"""

from __future__ import annotations

import importlib
import random
import re
from typing import Any

from toolcall300.schema import ecma_to_python

_sre = importlib.import_module("re._parser")  # untyped in typeshed; stable in 3.11+
_const = importlib.import_module("re._constants")

#: Printable ASCII first, so a class like ``[^/]`` gives a readable member.
_PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]
_CATEGORIES: dict[Any, list[str]] = {
    _const.CATEGORY_DIGIT: list("0123456789"),
    _const.CATEGORY_NOT_DIGIT: list("abcXYZ"),
    _const.CATEGORY_WORD: list("abcdefghijkmnpqrstuvwxyz0123456789_"),
    _const.CATEGORY_NOT_WORD: list("-. "),
    _const.CATEGORY_SPACE: [" "],
    _const.CATEGORY_NOT_SPACE: list("abcxyz"),
}
#: How many times an unbounded repetition repeats beyond its lower bound, at most.
_SPREAD = 4
#: The longest string written (catalog.MAX_BUILT_CALL_SIZE): a pattern asking for more gives
#: ``None`` rather than a string that size (``a{1000000000}``).
_MOST = 100_000


class _Unsupported(Exception):
    pass


def _class_members(items: list[tuple[Any, Any]]) -> list[str]:
    negate = bool(items) and items[0][0] is _const.NEGATE
    chosen: list[str] = []
    for op, arg in items[1:] if negate else items:
        if op is _const.LITERAL:
            chosen.append(chr(arg))
        elif op is _const.RANGE:
            lo, hi = arg
            chosen += [chr(c) for c in range(lo, min(hi, lo + 200) + 1)]
        elif op is _const.CATEGORY:
            chosen += _CATEGORIES.get(arg, [])
        else:
            raise _Unsupported(op)
    if negate:
        excluded = set(chosen)
        return [c for c in _PRINTABLE if c not in excluded and c.isalnum()] or [
            c for c in _PRINTABLE if c not in excluded
        ]
    return chosen


def _write(rng: random.Random, items: Any, out: list[str]) -> None:
    for op, arg in items:
        if op is _const.LITERAL:
            out.append(chr(arg))
        elif op is _const.NOT_LITERAL:
            out.append(rng.choice([c for c in "abcxyz019" if ord(c) != arg]))
        elif op is _const.ANY:
            out.append(rng.choice(_PRINTABLE[15:60]))
        elif op is _const.IN:
            members = _class_members(list(arg))
            if not members:
                raise _Unsupported(op)
            out.append(rng.choice(members))
        elif op in (_const.MAX_REPEAT, _const.MIN_REPEAT, _const.POSSESSIVE_REPEAT):
            low, high, sub = arg
            top = low + _SPREAD if high is _const.MAXREPEAT else min(high, low + _SPREAD)
            for _ in range(rng.randint(low, max(low, top))):
                _write(rng, sub, out)
                if len(out) > _MOST:
                    raise _Unsupported(op)
        elif op is _const.SUBPATTERN:
            _write(rng, arg[-1], out)
        elif op is _const.ATOMIC_GROUP:
            _write(rng, arg, out)
        elif op is _const.BRANCH:
            _write(rng, rng.choice(arg[1]), out)
        elif op is _const.AT:
            continue  # anchors write nothing: the whole string is the match
        else:
            raise _Unsupported(op)


def string_matching(rng: random.Random, pattern: str) -> str | None:
    """A string the pattern matches from start to end, or ``None`` when the pattern uses
    something this writer does not cover (the caller then names the property).

    >>> import random
    >>> s = string_matching(random.Random(1), r"^[A-Z]{3}-\\d{4}$")
    >>> bool(re.fullmatch(r"[A-Z]{3}-\\d{4}", s))
    True
    """
    try:
        parsed = _sre.parse(ecma_to_python(pattern), re.ASCII)
        out: list[str] = []
        _write(rng, list(parsed), out)
    except (_Unsupported, re.error, IndexError, ValueError):
        return None
    return "".join(out)
