"""Canonical JSON: the one serialisation the generator, the scorer and the tests share.

Two values are the same call exactly when their canonical forms are equal (grading rule 1).
Files are written from the same form, so a corpus is byte-identical for the same inputs.
This module does not parse model output leniently; ``loads_strict`` is plain RFC 8259 JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any


def canonical(value: Any) -> str:
    """Serialise ``value`` with sorted keys, no whitespace and no NaN.

    >>> canonical({"b": [1, 2.5], "a": "é"})
    '{"a":"é","b":[1,2.5]}'
    """
    return _CANONICAL.encode(value)


#: Built once (``json.dumps`` with options builds an encoder on every call); the scorer and
#: the normaliser serialise a value per case.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_bytes(value: Any) -> bytes:
    """UTF-8 bytes of :func:`canonical`, for hashing."""
    return canonical(value).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def jsonl_bytes(rows: Iterable[Any]) -> bytes:
    """One canonical JSON document per line, ``\\n`` endings, UTF-8."""
    return "".join(canonical(row) + "\n" for row in rows).encode("utf-8")


def pretty_bytes(value: Any) -> bytes:
    """Human-readable but still deterministic JSON (sorted keys, 2-space indent, final newline)."""
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """Parse RFC 8259 JSON: ``NaN`` and ``Infinity`` are refused, unlike ``json.loads``."""
    if text.startswith("\ufeff"):  # as json.loads does; the decoder itself would not check
        raise ValueError("Unexpected UTF-8 BOM")
    return _STRICT_DECODER.decode(text)


#: Built once: ``json.loads`` with a keyword argument builds a new decoder on every call.
_STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``true != 1``; objects compare without order.

    >>> json_equal([1, {"a": False}], [1.0, {"a": False}])
    True
    >>> json_equal(True, 1)
    False
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False
