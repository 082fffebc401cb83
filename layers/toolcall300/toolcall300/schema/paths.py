"""Instance and schema paths: tuples of keys and indexes, rendered in the tool-argument/v1 syntax."""

from __future__ import annotations

import json
import re
from functools import lru_cache

PathPart = str | int
Path = tuple[PathPart, ...]


def format_path(path: Path) -> str:
    """Render an instance path in the tool-argument/v1 syntax: ``$``, ``.key``, ``[i]``.

    A key that is not a plain identifier (``[A-Za-z_][A-Za-z0-9_-]*``) is written as a
    JSON string in brackets, so every path reads back to exactly one location.

    >>> format_path(("a", 0, "b"))
    '$.a[0].b'
    >>> format_path(("a.b", "c d"))
    '$["a.b"]["c d"]'
    """
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else _key_step(part)
    return out


def _key_step(key: str) -> str:
    return _cached_key_step(key) if len(key) <= 64 else _render_key_step(key)


def _render_key_step(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f".{key}"
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
#: Repair logs render the same few property names over and over.
_cached_key_step = lru_cache(maxsize=2048)(_render_key_step)
