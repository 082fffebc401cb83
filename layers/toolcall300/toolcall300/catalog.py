"""The ``tools.json`` catalog contract: validate a tool catalog and produce what a model sees.

The contract, written down here: the root is an array of declarations with unique names; ``type``
defaults to and must be ``"function"``; ``function.name`` is a non-empty string;
``description`` a string; ``strict`` a boolean; ``parameters`` an object schema (its
``type`` defaults to ``object``) inside the schema engine's subset, so ``anyOf``, ``oneOf``,
``not`` and every other uncovered keyword is named and refused; ``x-*`` fields are pack-only
and stripped from the catalog a model sees. A schema that no value can satisfy is refused by
name too (:func:`unsatisfiable_problems`: an enum member of no declared type, an empty enum,
inverted bounds or lengths), and so is nesting beyond :data:`MAX_SCHEMA_DEPTH` schema levels
or :data:`MAX_JSON_DEPTH` JSON containers, checked without recursion before any walk that
recurses (docs/catalog.md), and so is a ``function.name`` holding a control character. On top
of the contract, :func:`generation_problems` lists what the corpus generator needs (required
names declared, enum values it can label, a declaration and a call within
:data:`MAX_BUILT_DECLARATION_CHARS` and :data:`MAX_BUILT_CALL_SIZE`).

It deliberately does not run or check tool implementations, fixtures or manifests.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections.abc import Iterator
from typing import Any

from toolcall300.schema import (
    compile_validator,
    declared_types,
    format_path,
    is_valid,
    json_type_matches,
    pattern_min_length,
    schema_problems,
)
from toolcall300.spec import no_parameters

Tool = dict[str, Any]

_FUNCTION_KEYS = frozenset({"name", "description", "strict", "parameters"})
_ENTRY_KEYS = frozenset({"type", "function"})
_PACK_BOOLEANS = ("x-mutates", "x-requires-confirmation")

#: The deepest a parameters schema may nest: the root is level 1, each step into a property's
#: or the items' schema one more (docs/catalog.md, "Limits"). Real catalogs stay under 8.
MAX_SCHEMA_DEPTH = 32
#: The deepest a declaration may nest in JSON containers of any kind (defaults, enums and
#: examples included): every walk that recurses stays far inside the interpreter's stack.
MAX_JSON_DEPTH = 4 * MAX_SCHEMA_DEPTH
#: The largest declaration a corpus is built from, in characters of its JSON text: each case
#: repeats 3 to 6 declarations, so this bounds a corpus's size (docs/catalog.md, "Limits").
#: Real declarations stay under 5 000.
MAX_BUILT_DECLARATION_CHARS = 65_536
#: The most characters, array items and properties a call the generator builds may hold, as
#: the schema asks at most (``minLength``, ``minItems``, a pattern's shortest match, up to 3
#: items an array, every property): a tool past it is left out, never built (docs/catalog.md).
MAX_BUILT_CALL_SIZE = 100_000


class CatalogError(ValueError):
    """A catalog broke the contract; ``problems`` holds one line per broken rule."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _is_pack_key(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("x-")


def json_depth(value: Any) -> int:
    """How many containers deep ``value`` nests (a scalar is 0), without recursion: safe on
    any JSON the reader accepted, however deep."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def schema_depth(schema: Any) -> int:
    """Schema levels in ``schema`` (the root is 1; ``properties/<name>`` and ``items`` add one),
    without recursion."""
    deepest, stack = 0, [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            continue
        deepest = max(deepest, depth)
        props = node.get("properties")
        if isinstance(props, dict):
            stack.extend((sub, depth + 1) for sub in props.values())
        if "items" in node:
            stack.append((node["items"], depth + 1))
    return deepest


def depth_problem(where: str, entry: Any) -> str | None:
    """Why a declaration nests too deep for the reader, in one line, or ``None``."""
    fn = entry.get("function") if isinstance(entry, dict) else None
    params = fn.get("parameters") if isinstance(fn, dict) else None
    depth = schema_depth(params)
    if depth > MAX_SCHEMA_DEPTH:
        return (
            f"{where}: parameters nest {depth} schema levels deep; the limit is {MAX_SCHEMA_DEPTH}"
        )
    if json_depth(entry) > MAX_JSON_DEPTH:
        return (
            f"{where}: nested more than {MAX_JSON_DEPTH} JSON levels deep; the limit is "
            f"{MAX_JSON_DEPTH} (and {MAX_SCHEMA_DEPTH} schema levels)"
        )
    return None


def _entry_problems(i: int, entry: Any) -> Iterator[str]:
    """Every contract rule one declaration breaks."""
    where = f"tools[{i}]"
    if not isinstance(entry, dict):
        yield f"{where}: a declaration must be an object"
        return
    too_deep = depth_problem(where, entry)
    if too_deep:
        yield too_deep  # nothing else is read: every other walk recurses
        return
    if entry.get("type", "function") != "function":
        yield f"{where}: type must be 'function' (the only accepted value), got {entry['type']!r}"
    for key in _PACK_BOOLEANS:
        for holder in (entry, entry.get("function")):
            if isinstance(holder, dict) and key in holder and not isinstance(holder[key], bool):
                yield f"{where}: {key} must be a boolean"
    unknown = sorted(k for k in entry if k not in _ENTRY_KEYS and not _is_pack_key(k))
    if unknown:
        yield f"{where}: unknown field(s) {', '.join(unknown)}"
    fn = entry.get("function")
    if not isinstance(fn, dict):
        yield f"{where}: function is required and must be an object"
        return
    name = fn.get("name")
    if not isinstance(name, str) or not name.strip():
        yield f"{where}: function.name must be a non-empty string"
    elif any(unicodedata.category(c) == "Cc" for c in name):
        yield f"{where}: function.name {name!r} holds a control character"
        name = None
    where = f"{where} ({name})" if isinstance(name, str) else where
    unknown = sorted(k for k in fn if k not in _FUNCTION_KEYS and not _is_pack_key(k))
    if unknown:
        yield f"{where}: unknown function field(s) {', '.join(unknown)}"
    if "description" in fn and not isinstance(fn["description"], str):
        yield f"{where}: function.description must be a string"
    if "strict" in fn and not isinstance(fn["strict"], bool):
        yield f"{where}: function.strict must be a boolean"
    if "parameters" not in fn:
        # A conformance case needs a schema to grade against, so parameters are required.
        yield f"{where}: function.parameters is required"
        return
    yield from _parameters_problems(where, fn["parameters"])


def declaration_problems(i: int, entry: Any) -> list[str]:
    """Every contract rule the declaration at ``tools[i]`` breaks on its own (names across
    the catalog are :func:`catalog_problems`'s), one line each."""
    return list(_entry_problems(i, entry))


def _parameters_problems(where: str, params: Any) -> Iterator[str]:
    if not isinstance(params, dict):
        yield f"{where}: parameters must be a JSON Schema object"
        return
    if params.get("type", "object") != "object":
        yield f"{where}: parameters.type must be 'object'"
    for problem in schema_problems(params):
        kw = problem.schema_path[-1] if problem.schema_path else ""
        label = "unsupported keyword" if problem.kind == "not_covered" else "invalid schema"
        yield f"{where}: {label} {kw!r} at parameters{_schema_where(problem.schema_path)}: {problem.message}"
    if not schema_problems(params):
        unsatisfiable = list(unsatisfiable_problems(params))
        for line in unsatisfiable:
            yield f"{where}: {line}"
        if not unsatisfiable:
            yield from _default_problems(where, params, ())


def _schema_where(path: tuple[str | int, ...]) -> str:
    return "".join(f"/{p}" for p in path)


def _default_problems(where: str, schema: dict[str, Any], path: tuple[str, ...]) -> Iterator[str]:
    """D6.2: a default must validate under its own schema (it is used as declared)."""
    if "default" in schema and path and not is_valid(schema["default"], schema):
        yield f"{where}: default of {format_path(path)} does not validate against its schema"
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                yield from _default_problems(where, sub, (*path, key))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _default_problems(where, items, (*path, "[]"))


def _without(schema: dict[str, Any], keyword: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != keyword}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bound_pairs(schema: dict[str, Any]) -> Iterator[str]:
    """Lower and upper bounds that leave no value between them."""
    for low, high, what in (
        ("minLength", "maxLength", "lengths"),
        ("minItems", "maxItems", "item counts"),
        ("minProperties", "maxProperties", "property counts"),
    ):
        if low in schema and high in schema and schema[low] > schema[high]:
            yield f"{low} {schema[low]} > {high} {schema[high]} (no {what} fit)"
    lows = [(k, schema[k]) for k in ("minimum", "exclusiveMinimum") if k in schema]
    highs = [(k, schema[k]) for k in ("maximum", "exclusiveMaximum") if k in schema]
    for lk, lv in lows:
        for hk, hv in highs:
            inclusive = lk == "minimum" and hk == "maximum"
            if lv > hv or (lv == hv and not inclusive):
                sign = ">" if lv > hv else ">="
                yield f"{lk} {lv} {sign} {hk} {hv} (no number fits)"


def _node_unsatisfiable(schema: dict[str, Any]) -> Iterator[str]:
    """Why no value satisfies this node's own keywords."""
    yield from _bound_pairs(schema)
    types = [t for t in declared_types(schema)] if "type" in schema else None
    if "enum" in schema:
        members = schema["enum"]
        if not members:
            yield "enum is empty (no value can match)"
        elif types is not None:
            wrong = [m for m in members if not any(json_type_matches(m, t) for t in types)]
            if wrong:
                shown = ", ".join(repr(m) for m in wrong[:5]) + (" ..." if len(wrong) > 5 else "")
                noun = "member" if len(wrong) == 1 else "members"
                yield f"enum {noun} {shown} not of the declared type {'/'.join(types)}"
            elif not any(map(compile_validator(_without(schema, "enum")), members)):
                yield "no enum member satisfies the schema's other keywords"
    if "const" in schema:
        if types is not None and not any(json_type_matches(schema["const"], t) for t in types):
            yield f"const {schema['const']!r} is not of the declared type {'/'.join(types)}"
        elif not is_valid(schema["const"], schema):
            yield f"const {_short(schema['const'])} does not satisfy the schema's other keywords"
    if "pattern" in schema and "maxLength" in schema:
        shortest = pattern_min_length(schema["pattern"])
        if shortest is not None and shortest > schema["maxLength"]:
            yield (
                f"pattern {schema['pattern']!r} matches nothing shorter than {shortest} "
                f"characters > maxLength {schema['maxLength']}"
            )
    if schema.get("additionalProperties") is False and "object" in (types or ["object"]):
        declared = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in declared:
                yield f"required {name!r} is neither declared nor allowed (additionalProperties: false)"


def unsatisfiable_problems(schema: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[str]:
    """What no value can satisfy, one line each (the schema is covered and within the depth
    limit: this walk recurses)."""
    for problem in _node_unsatisfiable(schema):
        yield f"unsatisfiable schema at {format_path(path)}: {problem}"
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                yield from unsatisfiable_problems(sub, (*path, key))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from unsatisfiable_problems(items, (*path, "[]"))


def _confirmation_problems(i: int, entry: Any, parameter: str) -> Iterator[str]:
    """The contract: a tool marked x-requires-confirmation declares the manifest's confirmation flag."""
    fn = entry.get("function") if isinstance(entry, dict) else None
    if not isinstance(fn, dict) or not (
        entry.get("x-requires-confirmation") or fn.get("x-requires-confirmation")
    ):
        return
    params = fn.get("parameters")
    props = params.get("properties", {}) if isinstance(params, dict) else {}
    sub = props.get(parameter) if isinstance(props, dict) else None
    if not isinstance(sub, dict) or sub.get("type") != "boolean":
        yield f"tools[{i}] ({fn.get('name')}): x-requires-confirmation needs a boolean {parameter!r} parameter"


def catalog_problems(raw: Any, confirmation_parameter: str | None = None) -> list[str]:
    """Every contract rule ``raw`` breaks, one line each; empty means a valid catalog.

    ``confirmation_parameter`` is the pack manifest's confirmation flag, when there is a
    manifest: tools marked ``x-requires-confirmation`` must then declare it as a boolean.

    >>> catalog_problems([{"function": {"name": "f", "parameters": {"anyOf": []}}}])
    ["tools[0] (f): unsupported keyword 'anyOf' at parameters/anyOf: keyword 'anyOf' is not covered"]
    """
    if not isinstance(raw, list):
        return ["catalog: the root must be a JSON array"]
    if not raw:
        return ["catalog: declares no tools"]
    out = [p for i, entry in enumerate(raw) for p in _entry_problems(i, entry)]
    if confirmation_parameter:
        out += [
            p
            for i, e in enumerate(raw)
            for p in _confirmation_problems(i, e, confirmation_parameter)
        ]
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        fn = entry.get("function") if isinstance(entry, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str):
            if name in seen:
                out.append(f"tools[{i}]: duplicate name {name!r} (first at tools[{seen[name]}])")
            seen.setdefault(name, i)
    return out


def model_view(entry: dict[str, Any]) -> Tool:
    """The declaration as a model sees it: ``x-*`` removed, ``type`` and ``parameters.type`` filled.

    A declaration nested beyond the limits is refused (:class:`CatalogError`) before the copy,
    which recurses."""
    too_deep = depth_problem("tool", entry)
    if too_deep:
        raise CatalogError([too_deep])
    fn = {k: copy.deepcopy(v) for k, v in entry["function"].items() if not _is_pack_key(k)}
    params = fn.get("parameters", no_parameters())  # D6.3: no parameters, no arguments
    fn["parameters"] = {"type": "object", **params}
    return {"type": "function", "function": fn}


def load_catalog(raw: Any) -> list[Tool]:
    """Validate ``raw`` and return the model-facing catalog, or raise :class:`CatalogError`."""
    problems = catalog_problems(raw)
    if problems:
        raise CatalogError(problems)
    return [model_view(entry) for entry in raw]


def tool_name(tool: Tool) -> str:
    """The declared name of a model-facing tool."""
    return str(tool["function"]["name"])


def tool_schema(tool: Tool) -> dict[str, Any]:
    """The parameters schema of a model-facing tool."""
    schema: dict[str, Any] = tool["function"]["parameters"]
    return schema


def value_type(schema: dict[str, Any]) -> str | None:
    """The one non-null type a property declares, else ``None`` (several, or none)."""
    types = [t for t in declared_types(schema) if t != "null"]
    return types[0] if len(types) == 1 else None


def holds_only_declared_keys(value: Any, schema: dict[str, Any]) -> bool:
    """Whether every object key in ``value`` is declared by ``schema`` at its level (D7.2: an
    expected call holds only declared properties, so an enum or const member that holds
    another key cannot be one)."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return all(k in props and holds_only_declared_keys(v, props[k]) for k, v in value.items())
    if isinstance(value, list):  # as the integrity check reads it: through ``items`` only
        items = schema.get("items")
        return not isinstance(items, dict) or all(holds_only_declared_keys(v, items) for v in value)
    return True


def built_size(schema: dict[str, Any]) -> int:
    """The most characters, items and properties the generator may build for ``schema``
    (``generator.values``: a string of ``minLength`` or its pattern's shortest match, up to 3
    items an array unless ``minItems`` asks more, every property), capped just past
    :data:`MAX_BUILT_CALL_SIZE`."""
    cap = MAX_BUILT_CALL_SIZE + 1
    if "enum" in schema or "const" in schema:
        return 1
    types = [t for t in declared_types(schema) if t != "null"]
    kind = types[0] if types else None
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        return min(cap, 1 + sum(built_size(sub) for sub in props.values()))
    if kind == "array" or (kind is None and "items" in schema):
        low = max(1, int(schema.get("minItems", 1)))
        count = max(low, min(int(schema.get("maxItems", 3)), 3))
        items = schema.get("items")
        return min(cap, 1 + count * (built_size(items) if isinstance(items, dict) else 1))
    if kind in (None, "string"):
        shortest = pattern_min_length(schema["pattern"]) if "pattern" in schema else None
        return min(cap, max(1, int(schema.get("minLength", 0)), shortest or 0))
    return 1


def _generation_node_problems(
    where: str, schema: dict[str, Any], path: tuple[str, ...]
) -> Iterator[str]:
    """A required name must be declared: the generator has no schema to build its value from.
    An enum or const must offer a member holding only declared keys (D7.2). (A property of
    several types takes its first non-null one, an untyped one a string: ``generator.values``;
    neither stops a build.)"""
    at = format_path(path)
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in props:
            yield f"{where}: required property {name!r} at {at} is not declared in properties"
    members = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else []
    if members and not any(holds_only_declared_keys(m, schema) for m in members):
        yield (
            f"{where}: every enum or const value at {at} holds object keys its schema does not "
            "declare (an expected call holds only declared properties, D7.2)"
        )
    if "enum" in schema and value_type(schema) == "integer":
        floats = [m for m in schema["enum"] if isinstance(m, float)]
        if floats:
            yield (
                f"{where}: the integer enum at {at} holds {floats[0]!r}, a float (written "
                "as the integer, rule 4 would not match it to the member)"
            )
    for key, sub in props.items():
        yield from _generation_node_problems(where, sub, (*path, key))
    if isinstance(schema.get("items"), dict):
        yield from _generation_node_problems(where, schema["items"], (*path, "[]"))


def _size_problems(tool: Tool) -> Iterator[str]:
    """A declaration or a call past the generator's bounds (docs/catalog.md, "Limits")."""
    where = f"tool {tool_name(tool)[:80]}"
    chars = len(json.dumps(tool))
    if chars > MAX_BUILT_DECLARATION_CHARS:
        yield (
            f"{where}: the declaration is {chars} characters of JSON; the generator's limit "
            f"is {MAX_BUILT_DECLARATION_CHARS}"
        )
    elif built_size(tool_schema(tool)) > MAX_BUILT_CALL_SIZE:
        yield (
            f"{where}: a call would hold more than {MAX_BUILT_CALL_SIZE} characters, items "
            "and properties (minLength, minItems, a pattern or nesting ask for it); the "
            "generator's limit"
        )


def generation_problems(tools: list[Tool]) -> list[str]:
    """What the generator needs beyond the contract: declared required names, enum values it
    can label, a declaration and a call within its size bounds. A tool with a problem is left
    out of a build (named in its output and manifest), not the catalog."""
    out: list[str] = []
    for tool in tools:
        size = list(_size_problems(tool))
        out += size or list(
            _generation_node_problems(f"tool {tool_name(tool)}", tool_schema(tool), ())
        )
    return out
