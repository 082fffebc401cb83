"""Instance and schema paths: tuples of keys and indexes, rendered in the tool-argument/v1 syntax."""

from __future__ import annotations

import json
import re
from functools import lru_cache

from toolcall300.canonical import raw_decode_strict

PathPart = str | int
Path = tuple[PathPart, ...]


def format_path(path: Path) -> str:
    """Render an instance path in the tool-argument/v1 syntax (criteria D25): ``$``,
    ``.key``, ``[i]``.

    A key that is not a plain identifier (``[A-Za-z_][A-Za-z0-9_-]*``) is written as a
    JSON string in brackets, so every path reads back to exactly one location
    (:func:`parse_path` is the inverse).

    >>> format_path(("a", 0, "b"))
    '$.a[0].b'
    >>> format_path(("a.b", "c d"))
    '$["a.b"]["c d"]'
    """
    found = _FORMATTED.get(path)
    if found is not None:
        return found
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else _key_step(part)
    if len(_FORMATTED) >= _FORMATTED_MAX:
        _FORMATTED.clear()  # bounded memory, no per-hit bookkeeping
    _FORMATTED[path] = out
    return out


#: Paths already rendered: a repair log and a defect list render the same few paths over and
#: over (a tuple of keys whose hashes are cached hashes fast). Keyed on the tuple's value, as
#: :data:`_cached_key_step` is on the key's: a path holds ``str`` keys and ``int`` indexes,
#: and equal ones render alike (``("a",)`` and ``(0,)`` are not equal).
_FORMATTED: dict[tuple[PathPart, ...], str] = {}
_FORMATTED_MAX = 4096


def _key_step(key: str) -> str:
    return _cached_key_step(key) if len(key) <= 64 else _render_key_step(key)


def _render_key_step(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f".{key}"
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
#: Repair logs render the same few property names over and over.
_cached_key_step = lru_cache(maxsize=2048)(_render_key_step)


_INDEX = re.compile(r"\[(0|[1-9][0-9]*)\]")


def parse_path(path: str) -> list[PathPart]:
    """The location a D25 path names: the inverse of :func:`format_path`, strict about the
    grammar (a path :func:`format_path` would not write is a ``ValueError``).

    >>> parse_path('$.a[0]["c d"]')
    ['a', 0, 'c d']
    """
    if not path.startswith("$"):
        raise ValueError(f"not an arguments path: {path!r}")
    parts: list[PathPart] = []
    i = 1
    while i < len(path):
        if path[i] == ".":
            m = _PLAIN_KEY.match(path, i + 1)
            if m is None:
                raise ValueError(f"bad path {path!r}")
            parts.append(m.group())
            i = m.end()
        elif path.startswith('["', i):
            try:
                key, end = raw_decode_strict(path, i + 1)
            except ValueError:
                raise ValueError(f"bad path {path!r}") from None
            if not isinstance(key, str) or not path.startswith("]", end):
                raise ValueError(f"bad path {path!r}")
            parts.append(key)
            i = end + 1
        elif (m := _INDEX.match(path, i)) is not None:
            parts.append(int(m.group(1)))
            i = m.end()
        else:
            raise ValueError(f"bad path {path!r}")
    return parts
