"""tool-argument/v1's closed whitelist of node repairs, R3..R9, the diff they write and its
inverse :func:`apply_diff`. The text repairs R1 and R2 live in :mod:`toolcall300.argcheck.text`.

A repair pass is tentative per node (criteria decision D8): a node's one own repair is kept only
when its whole subtree then conforms. Nothing here logs or stores a value; a nesting past the
depth limit inside an R5-unwrapped string raises :class:`toolcall300.argcheck.text.TooDeep`, which
the check turns into its ``arguments_too_deep`` refusal.
"""

from __future__ import annotations

import copy
import decimal
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolcall300.argcheck import text as text_reader
from toolcall300.canonical import canonical, raw_decode_strict
from toolcall300.schema import (
    Path,
    Validator,
    declared_types,
    format_path,
    is_integer,
    is_valid,
    json_type_matches,
    node_errors,
)

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

Repair = tuple[str, Any]  # (rule id, replacement value)


def _r3_string_to_number(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R3: a string matching the JSON number grammar exactly becomes that number."""
    if not (isinstance(value, str) and {"number", "integer"} & set(types)):
        return None
    if not _NUMBER.fullmatch(value):
        return None
    try:
        number: int | float = float(value) if any(c in value for c in ".eE") else int(value)
    except ValueError:  # more digits than int() reads
        return None
    # Never rounding (never-a-repair): the value must be the caller's digits exactly, so a
    # string a double cannot hold (too long, or out of range) is not converted.
    if isinstance(number, float) and (
        not math.isfinite(number) or decimal.Decimal(repr(number)) != decimal.Decimal(value)
    ):
        return None
    if "number" not in types and not is_integer(number):
        return None  # R3: for type integer the number must be integral ("4.5" stays a defect)
    return "R3", number


def _r4_string_to_boolean(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R4: exactly "true" and "false", nothing else ("True", "yes", "1" are defects)."""
    if "boolean" in types and value in ("true", "false") and isinstance(value, str):
        return "R4", value == "true"
    return None


def _unwrapped(value: str, depth: int, max_depth: int) -> Any:
    """The JSON a string holds, or a private sentinel when it does not parse.

    :class:`text_reader.TooDeep` propagates: the blob with the string unwrapped would nest
    deeper than ``max_depth``.
    """
    try:
        return text_reader.loads(value, max_depth - depth)
    except text_reader.TextError:
        return _NOT_JSON


_NOT_JSON = object()


def _r5_string_json_unwrap(
    value: Any, types: tuple[str, ...], depth: int, max_depth: int
) -> Repair | None:
    """R5: a string that parses as JSON of exactly the schema's type (object or array)."""
    wanted = [t for t in ("object", "array") if t in types]
    if not (isinstance(value, str) and wanted):
        return None
    parsed = _unwrapped(value, depth, max_depth)
    if parsed is not _NOT_JSON and any(json_type_matches(parsed, t) for t in wanted):
        return "R5", parsed
    return None


def _r6_scalar_to_string(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R6: a number or boolean becomes its canonical JSON spelling; containers never do."""
    if "string" in types and (isinstance(value, (bool, int, float))):
        return "R6", canonical(value)
    return None


def _r7_wrap_single(
    value: Any, types: tuple[str, ...], depth: int, max_depth: int
) -> Repair | None:
    """R7: a non-array value becomes ``[value]``.

    Decisions: a string holding a JSON array is R5's, never wrapped (two readings would be a
    pick); null is the absence marker (R8's reading), so it is never wrapped into ``[null]``.
    """
    if "array" not in types or isinstance(value, list) or value is None:
        return None
    if isinstance(value, str) and isinstance(_unwrapped(value, depth, max_depth), list):
        return None
    return "R7", [value]


def _r9_enum_case_match(value: Any, schema: dict[str, Any]) -> Repair | None:
    """R9: exactly one entry of an all-string enum equals the string case-insensitively."""
    enum = schema.get("enum")
    if not (isinstance(value, str) and isinstance(enum, list) and enum):
        return None
    if not all(isinstance(e, str) for e in enum):
        return None
    # Decision: "case-insensitively" is Unicode default caseless matching (str.casefold).
    folded = value.casefold()
    matches = {e for e in enum if e.casefold() == folded}
    if len(matches) == 1:
        return "R9", matches.pop()
    return None


def _own_repair(value: Any, schema: dict[str, Any], path: Path, max_depth: int) -> Repair | None:
    """The node's one candidate repair: the first applicable rule in whitelist order.

    Only a failing node is repaired. R3..R7 need the node to fail ``type``; R9 needs it to
    fail ``enum``. At most one own repair per node, and no fallback to a later rule when the
    first applicable one does not bring the node into conformance (that would be a pick).
    """
    depth = len(path)  # containers around this node; unwrapped content nests below them
    types = declared_types(schema) if "type" in schema else ()
    # The type keyword's own test (what its type_mismatch defect means), without the others.
    if types and not any(json_type_matches(value, t) for t in types):
        candidates: tuple[Callable[[], Repair | None], ...] = (
            lambda: _r3_string_to_number(value, types),
            lambda: _r4_string_to_boolean(value, types),
            lambda: _r5_string_json_unwrap(value, types, depth, max_depth),
            lambda: _r6_scalar_to_string(value, types),
            lambda: _r7_wrap_single(value, types, depth, max_depth),
        )
        for attempt in candidates:
            found = attempt()
            if found is not None:
                return found
        return None
    if "enum" in schema and any(
        e.code == "enum_mismatch" for e in node_errors(value, schema, path)
    ):
        return _r9_enum_case_match(value, schema)
    return None


def _interpreted(schema: dict[str, Any]) -> Validator:
    return lambda value: is_valid(value, schema)


@dataclass(frozen=True)
class Withdrawn:
    """A node's own repair that was withdrawn because its repaired subtree still failed: the
    repaired ``value`` and its ``schema`` give the defects the repair would leave (D22)."""

    path: Path
    rule: str
    value: Any
    schema: dict[str, Any]


class Repairer:
    """One tentative repair pass over a blob, collecting the diff in application order and the
    repairs withdrawn (outermost only: one beneath a withdrawn repair goes with it).

    ``max_depth`` bounds the blob's nesting with R5-unwrapped content included.
    """

    def __init__(
        self, max_depth: int, valid_for: Callable[[dict[str, Any]], Validator] | None = None
    ) -> None:
        self.max_depth = max_depth
        #: ``is_valid`` of a (sub)schema; a caller may hand compiled validators it keeps.
        self.valid_for = valid_for or _interpreted
        self.diff: list[dict[str, Any]] = []
        self.withdrawn: list[Withdrawn] = []

    def node(self, value: Any, schema: dict[str, Any], path: Path) -> Any:
        """Repair one node: its own repair first, then its children.

        The own repair is tentative: it is kept only when the node's whole subtree then
        conforms; otherwise it and every repair beneath it are withdrawn and the node is
        left as submitted ("the wrap never launders a bad value into a pass").
        """
        if self.valid_for(schema)(value):
            return value  # nothing beneath fails, so no rule applies anywhere in it (D8)
        # D13: the root is the arguments object itself and is never replaced (R7 would wrap it).
        found = _own_repair(value, schema, path, self.max_depth) if path else None
        if found is not None:
            rule, replacement = found
            mark, withdrawn_mark = len(self.diff), len(self.withdrawn)
            self.diff.append(_entry(path, rule, "replace", value, replacement))
            repaired = self.children(replacement, schema, path)  # children() never mutates
            if self.valid_for(schema)(repaired):
                return repaired
            del self.diff[mark:]
            del self.withdrawn[withdrawn_mark:]
            self.withdrawn.append(Withdrawn(path, rule, repaired, schema))
        return self.children(value, schema, path)

    def children(self, value: Any, schema: dict[str, Any], path: Path) -> Any:
        """Repair an object's declared properties (in submitted key order) or an array's items."""
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            props: dict[str, Any] = schema["properties"]
            required = schema.get("required", [])
            out: dict[str, Any] = {}
            for key, child in value.items():
                sub = props.get(key)
                if sub is None:
                    out[key] = child
                elif child is None and key not in required and not self.valid_for(sub)(None):
                    # R8: null on an optional declared property is the absence marker.
                    self.diff.append(_entry(path + (key,), "R8", "remove", None, None))
                else:
                    out[key] = self.node(child, sub, path + (key,))
            return out
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            items: dict[str, Any] = schema["items"]
            return [self.node(item, items, path + (i,)) for i, item in enumerate(value)]
        return value


def _entry(path: Path, rule: str, op: str, before: Any, after: Any) -> dict[str, Any]:
    return {"path": format_path(path), "rule": rule, "op": op, "before": before, "after": after}


# ------------------------------------------------------------------------- apply_diff


def _parse_path(path: str) -> list[str | int]:
    """Invert :func:`toolcall300.schema.format_path`."""
    if not path.startswith("$"):
        raise ValueError(f"not an arguments path: {path!r}")
    parts: list[str | int] = []
    i = 1
    while i < len(path):
        if path[i] == ".":
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*").match(path, i + 1)
            if m is None:
                raise ValueError(f"bad path {path!r}")
            parts.append(m.group())
            i = m.end()
        elif path.startswith("[", i) and path.startswith('"', i + 1):
            key, end = raw_decode_strict(path, i + 1)
            if not path.startswith("]", end):
                raise ValueError(f"bad path {path!r}")
            parts.append(key)
            i = end + 1
        elif path[i] == "[":
            end = path.index("]", i)
            parts.append(int(path[i + 1 : end]))
            i = end + 1
        else:
            raise ValueError(f"bad path {path!r}")
    return parts


def apply_diff(arguments: Any, diff: list[dict[str, Any]]) -> Any:
    """Replay a diff on the submitted blob (the object, or the text for ``$arguments_text``).

    >>> apply_diff({"n": "3", "x": None}, [
    ...     {"path": "$.n", "rule": "R3", "op": "replace", "before": "3", "after": 3},
    ...     {"path": "$.x", "rule": "R8", "op": "remove", "before": None, "after": None}])
    {'n': 3}
    """
    text_entries = [e for e in diff if e["path"] == text_reader.TEXT_PATH]
    if isinstance(arguments, str):
        repaired_text = text_reader.apply_text_diff(arguments, text_entries)
        value: Any = text_reader.loads(repaired_text, sys.getrecursionlimit())
    elif text_entries:
        raise ValueError("text repairs apply to arguments_text only")
    else:
        value = copy.deepcopy(arguments)
    for entry in diff:
        if entry["path"] == text_reader.TEXT_PATH:
            continue
        parts = _parse_path(entry["path"])
        if not parts:
            value = copy.deepcopy(entry["after"])
            continue
        parent = value
        for part in parts[:-1]:
            parent = parent[part]
        if entry["op"] == "remove":
            del parent[parts[-1]]
        else:
            parent[parts[-1]] = copy.deepcopy(entry["after"])
    return value
