"""Correct calls, built from a tool's schema and the value pools: step one of every case.

A correct call is constructed, never searched for: each property's value comes from its
``enum`` or ``const``, from the pools (by property name, only when pools were given:
docs/pools.md; a string pool only with the values that satisfy the property's ``format``), or
from the schema itself (type, bounds, lengths, ``pattern``, ``format``: a known format writes
the value, ``schema.formats``), and required properties are always written. The one
``random.Random`` the generator owns is passed in; nothing here reads the clock or iterates a set. It deliberately does not mutate calls (see
``generator_mutations``) and never asks a validator what a value should be; the integrity
checks verify afterwards that every built call validates.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toolcall300.catalog import (
    Tool,
    holds_only_declared_keys,
    tool_name,
    tool_schema,
    value_type,
)
from toolcall300.generator.pattern_strings import string_matching
from toolcall300.schema import declared_types, is_valid
from toolcall300.schema.formats import FORMATS, format_value, satisfies_format

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


class PoolsError(GenerationError):
    """A pools file broke docs/pools.md; ``problems`` holds one line per broken rule."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


#: docs/pools.md: each list a pools file may hold, and what each of its members must be.
POOL_LISTS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "hallucinated_tools": ("non-empty strings", _is_text),
    "undeclared_keys": ("non-empty strings", _is_text),
    "undeclared_values": ("JSON values", lambda v: True),
    "prose": ("non-empty strings", _is_text),
}
#: docs/pools.md: the two tables of values by property, and what each value must be.
POOL_TABLES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "properties": ("JSON values", lambda v: True),
    "numbers": ("numbers", _is_number),
}


def pools_problems(raw: Any) -> list[str]:
    """Every rule of docs/pools.md that ``raw`` breaks, one line each naming where.

    >>> pools_problems({"numbers": {"amount": ["12"]}, "colour": []})
    ["pools.colour: unknown key (known: hallucinated_tools, numbers, properties, prose, undeclared_keys, undeclared_values)", "pools.numbers.amount[0]: must be one of numbers, got '12'"]
    """
    if not isinstance(raw, dict):
        return ["pools: the root must be a JSON object"]
    known = sorted({*POOL_LISTS, *POOL_TABLES})
    out = [
        f"pools.{key}: unknown key (known: {', '.join(known)})" for key in raw if key not in known
    ]
    for key, (what, fits) in POOL_LISTS.items():
        if key in raw:
            out += _list_problems(f"pools.{key}", raw[key], what, fits)
    for key, (what, fits) in POOL_TABLES.items():
        if key not in raw:
            continue
        table = raw[key]
        if not isinstance(table, dict):
            out.append(f"pools.{key}: must be an object of property name -> list of {what}")
            continue
        for prop, values in table.items():
            out += _list_problems(f"pools.{key}.{prop}", values, what, fits)
    return out


def _list_problems(where: str, values: Any, what: str, fits: Callable[[Any], bool]) -> list[str]:
    if not isinstance(values, list) or not values:
        return [f"{where}: must be a non-empty array of {what}"]
    return [
        f"{where}[{i}]: must be one of {what}, got {v!r}"
        for i, v in enumerate(values)
        if not fits(v)
    ]


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
    if hi_i < lo_i:  # only an upper bound below the default floor: count down from it
        return _number_from_bounds(rng, schema, integral)
    if integral:
        return rng.randint(lo_i, hi_i)
    # a fraction that prints exactly, so "12.5" round-trips (rule 5)
    fraction: float = _pick(rng, (0.25, 0.5, 0.75))
    return rng.randint(lo_i, max(lo_i, hi_i - 1)) + fraction


def _number_from_bounds(rng: random.Random, schema: dict[str, Any], integral: bool) -> int | float:
    """A number inside every bound the schema declares (the schema's own reading, used when
    the quick guess of :func:`_number_in_bounds` does not fit): the tightest lower and upper
    bound, either one missing taken 100 away from the other."""
    lows = [
        (schema[k], k == "exclusiveMinimum") for k in ("minimum", "exclusiveMinimum") if k in schema
    ]
    highs = [
        (schema[k], k == "exclusiveMaximum") for k in ("maximum", "exclusiveMaximum") if k in schema
    ]
    low = max(lows, key=lambda b: (b[0], b[1])) if lows else None
    high = min(highs, key=lambda b: (b[0], not b[1])) if highs else None
    lo = low[0] if low else (high[0] - 100 if high else 0)
    hi = high[0] if high else lo + 100
    if integral:
        first = math.floor(lo) + 1 if low and low[1] else math.ceil(lo)
        last = math.ceil(hi) - 1 if high and high[1] else math.floor(hi)
        if last < first:
            raise GenerationError(f"no integer lies between {lo} and {hi}")
        return rng.randint(first, min(last, first + 100))
    span = hi - lo
    # quarters inside the range print exactly (rule 5); the ends only when they are inclusive
    for fraction in (0.5, 0.25, 0.75):
        value = lo + span * fraction
        if float(value).is_integer() and lo < value < hi:
            return float(value) + 0.0
        if lo < value < hi:
            return value
    if not (low and low[1]):
        return lo
    raise GenerationError(f"no number lies between {lo} and {hi}")


def _string(rng: random.Random, schema: dict[str, Any], leaf: str) -> str:
    """A string for ``schema``: its ``format`` drives the value (every expected value
    satisfies its format, ``schema.formats``), else ``leaf-NNN``; when that breaks the
    schema's other keywords, one from its pattern or fitted to its length bounds."""
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        low, high = _length_bounds(schema)
        text = format_value(rng, fmt, low, high)
        if text is not None and is_valid(text, schema):
            return text
        return _string_from_schema(rng, schema, leaf, text)
    text = f"{leaf}-{rng.randint(100, 999)}"
    return text if is_valid(text, schema) else _string_from_schema(rng, schema, leaf, text)


def _length_bounds(schema: dict[str, Any]) -> tuple[int, int | None]:
    # int(): an integral float (5.0) is a valid length (catalog.built_size bounds it)
    high = schema.get("maxLength")
    return int(schema.get("minLength", 0)), None if high is None else int(high)


def _string_from_schema(
    rng: random.Random, schema: dict[str, Any], leaf: str, guess: str | None
) -> str:
    """A string for ``schema`` when the quick guess does not fit: from its pattern (and its
    format, when it names one), or the guess padded or cut to its length bounds (the schema is
    the only source)."""
    pattern = schema.get("pattern")
    fmt = schema.get("format")
    if isinstance(pattern, str):
        for _ in range(8):
            text = string_matching(rng, pattern)
            if text is not None and is_valid(text, schema) and satisfies_format(text, fmt):
                return text
        also = f" and format {fmt!r}" if isinstance(fmt, str) and fmt in FORMATS else ""
        raise GenerationError(f"cannot write a string matching pattern {pattern!r}{also}")
    if guess is None or not satisfies_format(guess, fmt):
        raise GenerationError(f"cannot write a {fmt!r} string within the schema's length bounds")
    low, high = _length_bounds(schema)
    text = guess
    if len(text) < low:
        text += "x" * (low - len(text))
    if high is not None and len(text) > high:
        text = text[:high] if high >= 1 else ""
    return text


def build_value(  # noqa: C901
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
        members = schema["enum"]
        if any(isinstance(m, (dict, list)) for m in members):  # D7.2: declared keys only
            members = [m for m in members if holds_only_declared_keys(m, schema)] or members
        return _pick(rng, members)
    if "const" in schema:
        return _as_declared(copy.deepcopy(schema["const"]), schema)
    kind = value_type(schema) or _first_type(schema)
    pool = _pool(pools, tool, path, leaf)
    if kind == "object":
        return build_object(rng, schema, pools, tool, path, fill)
    if kind == "array":
        low = max(1, int(schema.get("minItems", 1)))
        high = max(low, min(int(schema.get("maxItems", 3)), 3))
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
    if pool is not None and kind == "string":
        pool = [v for v in pool if satisfies_format(v, schema.get("format"))] or None
    if pool is not None and kind != "boolean":
        if "null" in schema.get("type", ()) or kind != "string":
            return _pick(rng, pool)
        return _pick(rng, [v for v in pool if v is not None])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("integer", "number"):
        number = _number_in_bounds(rng, schema, kind == "integer")
        return (
            number
            if is_valid(number, schema)
            else _number_from_bounds(rng, schema, kind == "integer")
        )
    if kind == "string":
        return _string(rng, schema, leaf)
    if kind == "null":
        return None
    raise GenerationError(f"tool {tool}: cannot build a value for {path}")


def _as_declared(value: Any, schema: dict[str, Any]) -> Any:
    """An integral float an integer-only schema's const holds (``2.0``), as the integer a
    call writes: rule 5 reads ``"2.0"`` back as a float, so a label of ``2.0`` for an integer
    property was no lossless integer. (An enum's members are matched as written, rule 4: such
    an enum leaves its tool out, ``catalog.generation_problems``.)"""
    if (
        isinstance(value, float)
        and value.is_integer()
        and abs(value) <= 2**53
        and "number" not in declared_types(schema)
        and "integer" in declared_types(schema)
    ):
        return int(value)
    return value


def _first_type(schema: dict[str, Any]) -> str:
    """The type built for a property of several types (its first non-null one) or of none
    (an object or array by its keywords, else a string: any value fits an untyped schema)."""
    types = [t for t in declared_types(schema) if t != "null"]
    if types:
        return types[0]
    if "null" in declared_types(schema):
        return "null"
    if "properties" in schema:
        return "object"
    return "array" if "items" in schema else "string"


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
