"""Rule 10 read independently: one copy of a repeated call repaired on its own (exact or
resolved name, enum members, lossless strings), to compare the copies with the label.
"""

from __future__ import annotations

from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import tool_schema, value_type
from toolcall300.generator.oracles.reading import decode_strings, names_of, tool_of
from toolcall300.rules import (
    NotLossless,
    coerce_lossless,
    enum_matches,
    resolve_tool_name,
)


def _is_member(value: Any, members: list[Any]) -> bool:
    """``value`` is a member as written (a string equals only an equal string: one C-level
    scan, where canonicalising every member of a large enum for each value would not be)."""
    if isinstance(value, str):
        return value in members
    written = canonical(value)
    return any(canonical(m) == written for m in members)


def repaired_copy(call: dict[str, Any], case: dict[str, Any]) -> dict[str, Any] | None:
    """One copy of a multiple_calls text read under the repairs D10.3 allows a copy (rule 3
    names, rule 9 strings, rule 5 coercion and rule 4 enums, top level), or ``None``."""
    name = resolve_tool_name(call["name"], names_of(case))
    tool = tool_of(case, name) if name else None
    args, _ = decode_strings(call["arguments"])
    if tool is None or not isinstance(args, dict):
        return None
    props = tool_schema(tool).get("properties", {})
    out: dict[str, Any] = {}
    for key, value in args.items():
        sub = props.get(key)
        if not isinstance(sub, dict):
            return None
        members = sub.get("enum")
        kind = value_type(sub)
        if isinstance(members, list) and not _is_member(value, members):
            hits = enum_matches(value, members)
            if len(hits) != 1:
                return None
            value = hits[0]
        elif isinstance(value, str) and kind in ("integer", "number", "boolean"):
            try:
                value = coerce_lossless(value, kind)
            except NotLossless:
                return None
        out[key] = value
    return {"name": name, "arguments": out}
