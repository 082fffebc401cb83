"""Correct calls, built from a tool's schema and the value pools: step one of every case.

A correct call is constructed, never searched for: each property's value comes from the
pools (by property name), from its ``enum``, or from its bounds, and required properties
are always written. The one ``random.Random`` the generator owns is passed in; nothing
here reads the clock or iterates a set. It deliberately does not mutate calls (see
``generator_mutations``) and never asks a validator what a value should be; the integrity
checks verify afterwards that every built call validates.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type

Pools = dict[str, Any]


class GenerationError(ValueError):
    """The catalog and pools cannot yield a case the integrity checks would accept."""


@dataclass(frozen=True)
class Prop:
    """One top-level property of a tool, with what the mutation rules need to know."""

    name: str
    schema: dict[str, Any]
    required: bool

    @property
    def type(self) -> str | None:
        return value_type(self.schema)

    @property
    def has_default(self) -> bool:
        return "default" in self.schema


#: What a catalog's own pools may leave out: generic texts that fit any domain.
POOL_DEFAULTS: dict[str, tuple[Any, ...]] = {
    "hallucinated_tools": (
        "search_web",
        "run_python",
        "get_current_time",
        "send_sms",
        "delete_everything",
    ),
    "undeclared_keys": ("verbose", "reasoning", "confidence", "request_id", "dry_run"),
    "undeclared_values": ("because the user asked", 0.9, True, "req-001"),
    "prose": (
        "I'm sorry, I can't help with that.",
        "I need more details before I can do that. What exactly should I do?",
        "No tool call is needed for this question.",
    ),
}


def pool_list(pools: Pools, key: str) -> list[Any]:
    """A named list from the pools, or the generic default when the pools leave it out."""
    value = pools.get(key)
    return list(value) if isinstance(value, list) and value else list(POOL_DEFAULTS.get(key, ()))


def props_of(tool: Tool) -> list[Prop]:
    """Top-level properties in declaration order."""
    schema = tool_schema(tool)
    required = schema.get("required", [])
    return [Prop(k, v, k in required) for k, v in schema.get("properties", {}).items()]


def _pick(rng: random.Random, options: Sequence[Any]) -> Any:
    return options[rng.randrange(len(options))]


def _pool(pools: Pools, tool: str, path: str, leaf: str) -> list[Any] | None:
    """Pool lookup: ``tool.path`` first, then the property's own name (strings and numbers)."""
    for table in ("properties", "numbers"):
        entries = pools.get(table, {})
        for key in (f"{tool}.{path}", leaf):
            if key in entries:
                return list(entries[key])
    return None


def _number_in_bounds(rng: random.Random, schema: dict[str, Any], integral: bool) -> int | float:
    lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
    hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 100))
    lo_i, hi_i = int(lo) + 1, int(hi) - 1
    if hi_i < lo_i:
        lo_i, hi_i = int(lo), int(hi)
    if integral:
        return rng.randint(lo_i, hi_i)
    # a fraction that prints exactly, so "12.5" round-trips (rule 5)
    fraction: float = _pick(rng, (0.25, 0.5, 0.75))
    return rng.randint(lo_i, max(lo_i, hi_i - 1)) + fraction


def _string(rng: random.Random, schema: dict[str, Any], leaf: str) -> str:
    fmt = schema.get("format")
    if fmt == "date":
        return f"2026-12-{rng.randint(1, 28):02d}"
    if fmt == "date-time":
        return f"2026-12-{rng.randint(1, 28):02d}T{rng.randint(7, 19):02d}:30:00Z"
    if fmt == "email":
        return f"user{rng.randint(10, 99)}@example.com"
    return f"{leaf}-{rng.randint(100, 999)}"


def build_value(
    rng: random.Random,
    schema: dict[str, Any],
    pools: Pools,
    tool: str,
    path: str,
    fill: float = 0.6,
) -> Any:
    """A value for ``schema``: from its enum, the pools, or its bounds; objects recurse.

    ``fill`` is the chance that an optional property of a nested object is written.
    """
    leaf = path.rsplit(".", 1)[-1]
    if "enum" in schema:
        return _pick(rng, schema["enum"])
    kind = value_type(schema)
    pool = _pool(pools, tool, path, leaf)
    if kind == "object":
        return build_object(rng, schema, pools, tool, path, fill)
    if kind == "array":
        low = max(1, schema.get("minItems", 1))
        high = max(low, min(schema.get("maxItems", 3), 3))
        count = rng.randint(low, high)
        items = schema.get("items", {})
        out: list[Any] = []
        for _ in range(count * 4):
            if len(out) == count:
                break
            value = build_value(rng, items, pools, tool, path, fill)
            if value not in out:  # arrays stay unique so uniqueItems never fails by chance
                out.append(value)
        return out
    if pool is not None and kind != "boolean":
        if "null" in schema.get("type", ()) or kind != "string":
            return _pick(rng, pool)
        return _pick(rng, [v for v in pool if v is not None])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        return _number_in_bounds(rng, schema, True)
    if kind == "number":
        return _number_in_bounds(rng, schema, False)
    if kind == "string":
        return _string(rng, schema, leaf)
    if kind == "null":
        return None
    raise GenerationError(f"tool {tool}: cannot build a value for {path}")


def build_object(
    rng: random.Random,
    schema: dict[str, Any],
    pools: Pools,
    tool: str,
    path: str,
    fill: float = 0.6,
    force: Sequence[str] = (),
) -> dict[str, Any]:
    """An object with every required property, each optional one with chance ``fill``, and ``force``."""
    required = schema.get("required", [])
    out: dict[str, Any] = {}
    for key, sub in schema.get("properties", {}).items():
        if key in required or key in force or rng.random() < fill:
            out[key] = build_value(rng, sub, pools, tool, f"{path}.{key}" if path else key, fill)
    return out


def build_call(
    rng: random.Random, tool: Tool, pools: Pools, force: Sequence[str] = (), fill: float = 0.5
) -> dict[str, Any]:
    """The correct call: the ground truth every mutation rule starts from."""
    name = tool_name(tool)
    return {
        "name": name,
        "arguments": build_object(rng, tool_schema(tool), pools, name, "", fill, force),
    }
