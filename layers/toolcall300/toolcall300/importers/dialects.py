"""Schema dialects: a foreign tool's parameter schema rewritten into the contract's subset,
every rewrite recorded (docs/catalog-import.md, "Schema rewrites").

Only rewrites that keep the schema's meaning are made: a type named in the dialect's own words
(BFCL's ``dict``, Gemini's ``STRING``), ``nullable`` and ``anyOf``/``oneOf`` of one schema and
``null`` as a type list, local ``$ref`` inlined, keywords that carry no validation in their
dialect dropped, a ``null`` default the schema cannot hold dropped. Anything else outside the
subset (``anyOf`` of real alternatives, recursive or remote ``$ref``) is left for the catalog
reader to refuse by name. The walks recurse: the catalog's ``json_depth`` bounds a tool's
nesting before any of them runs (``forms``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolcall300.catalog import MAX_SCHEMA_DEPTH
from toolcall300.schema import JSON_TYPES, is_valid, schema_problems

#: Schema nodes a tool may have after its ``$ref`` are inlined (a chain of definitions each
#: used twice doubles at every step: a few lines can name millions of nodes).
MAX_INLINED_NODES = 20_000
#: Path steps a schema may reach once inlined (two per level: ``properties``, the name), so a
#: chain of definitions cannot nest past the reader's depth limit by way of the walk's stack.
MAX_REF_NESTING = 2 * MAX_SCHEMA_DEPTH + 8

#: BFCL's type names and what BFCL itself sends a model for each (``bfcl_eval``'s
#: ``GORILLA_TO_OPENAPI``; a name it does not know, or no type, is sent as ``string``).
BFCL_TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}
#: BFCL names that are not JSON Schema's: any of them marks a catalog as BFCL's dialect.
BFCL_ONLY_TYPES = frozenset(BFCL_TYPES) - frozenset(JSON_TYPES)

#: Gemini's ``Schema.type`` enumeration (OpenAPI 3.0 names, upper case).
GEMINI_TYPES = {
    "STRING": "string",
    "NUMBER": "number",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "OBJECT": "object",
    "NULL": "null",
}

#: Keywords whose value is a count: Gemini's API writes its int64 fields as JSON strings.
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
#: Keywords that hold one subschema / a name->subschema map (walked by the rewrites).
_SUBSCHEMA = ("items",)
_SUBSCHEMA_MAPS = ("properties",)
#: Keywords that change nothing about which values are valid, for the whole subset.
_ANNOTATION_ONLY = frozenset({"title", "description", "default", "examples", "format"})


@dataclass(frozen=True)
class Dialect:
    """How one ecosystem writes a schema: its type names and the keywords it adds."""

    name: str
    #: foreign type name -> JSON type; names already JSON types pass as they are
    types: dict[str, str] = field(default_factory=dict)
    #: the type a property without one (or of an unknown name) gets (BFCL's rule), else None
    fallback_type: str | None = None
    #: keywords of this dialect that carry no validation here, dropped: name -> why
    dropped: dict[str, str] = field(default_factory=dict)
    #: counts written as JSON strings ("1") are read as integers
    string_counts: bool = False


JSON_SCHEMA = Dialect("JSON Schema")
BFCL = Dialect(
    "BFCL",
    types=BFCL_TYPES,
    fallback_type="string",
    dropped={"optional": "BFCL's optional repeats what required says"},
)
GEMINI = Dialect(
    "Gemini",
    types=GEMINI_TYPES,
    dropped={
        "propertyOrdering": "Gemini's output-order hint constrains no value",
        "example": "Gemini's example is an annotation",
    },
    string_counts=True,
)


class Refused(ValueError):
    """A tool the rewrites cannot bring into the subset; the message names why."""


Note = Callable[[str, str], None]  # note(where, what): records one change


def _at(path: tuple[str, ...]) -> str:
    return "parameters" + "".join(f"/{p}" for p in path)


# ------------------------------------------------------------------------------------ $ref


def _pointer(root: dict[str, Any], ref: str) -> Any:
    """The node a local JSON pointer (``#/$defs/X``) names in ``root``."""
    node: Any = root
    for raw in ref[2:].split("/") if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise Refused(f"$ref {ref!r} names nothing in the schema")
    return node


def _merge(target: dict[str, Any], siblings: dict[str, Any], where: str) -> dict[str, Any]:
    """``$ref`` beside other keywords: both apply. Annotations beside it win; a constraint
    may be added or repeated but not changed (that would be an ``allOf``)."""
    out = dict(target)
    for key, value in siblings.items():
        if key in _ANNOTATION_ONLY or key not in out or out[key] == value:
            out[key] = value
        else:
            raise Refused(f"{where}: $ref beside a different {key!r} (an allOf) is not covered")
    return out


#: Keywords whose value is a schema, a list of schemas or a name -> schema map: the places a
#: ``$ref`` can stand (a ``$ref`` key inside ``enum``, ``default`` or ``examples`` is data).
_ONE_SCHEMA = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_DEFINITIONS = ("$defs", "definitions")


def inline_refs(schema: dict[str, Any], note: Note) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by what it names and ``$defs`` /
    ``definitions`` removed (their uses are inlined). A recursive or non-local ``$ref`` is
    refused by name; so is an expansion beyond :data:`MAX_INLINED_NODES` nodes or nesting
    beyond :data:`MAX_REF_NESTING` path steps or ``$ref`` in a chain."""
    budget = [MAX_INLINED_NODES]

    def walk(node: Any, path: tuple[str, ...], active: tuple[str, ...]) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise Refused(f"inlining $ref expands the schema beyond {MAX_INLINED_NODES} nodes")
        if len(path) > MAX_REF_NESTING:
            raise Refused(f"{_at(path[:8])}/...: nested too deep once its $ref are inlined")
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            where = _at(path)
            if ref != "#" and not ref.startswith("#/"):
                raise Refused(
                    f"{where}: $ref {ref!r} is not a local pointer (only #/... is inlined)"
                )
            if ref in active:
                raise Refused(f"{where}: $ref {ref!r} is recursive (it refers back to itself)")
            if len(active) >= MAX_REF_NESTING:  # a $ref to a $ref to ...: one frame each
                raise Refused(f"{where}: a chain of more than {MAX_REF_NESTING} $ref")
            target = _pointer(schema, ref)
            if not isinstance(target, dict):
                raise Refused(f"{where}: $ref {ref!r} does not name a schema object")
            note(where, f"$ref {ref} inlined")
            merged = _merge(target, {k: v for k, v in node.items() if k != "$ref"}, where)
            return walk(merged, path, (*active, ref))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DEFINITIONS:
                note(_at((*path, key)), f"{key} removed (what they define is inlined where used)")
            elif key in _ONE_SCHEMA and isinstance(value, dict):
                out[key] = walk(value, (*path, key), active)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [walk(v, (*path, key, str(i)), active) for i, v in enumerate(value)]
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {k: walk(v, (*path, key, k), active) for k, v in value.items()}
            else:
                out[key] = value
        return out

    return walk(schema, (), ())  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------ rewrites


def _is_null_branch(branch: Any) -> bool:
    return (
        isinstance(branch, dict)
        and branch.get("type") == "null"
        and set(branch) <= ({"type"} | _ANNOTATION_ONLY)
    )


def _with_null(node: dict[str, Any]) -> dict[str, Any] | None:
    """``node`` also accepting ``null``, when that can be said in the subset (it has a type)."""
    types = node.get("type")
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        return None
    out = dict(node)
    if "null" not in types:
        out["type"] = [*types, "null"]
    if "enum" in out and isinstance(out["enum"], list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if "const" in out:
        out["enum"] = [out.pop("const"), None]
    return out


def _union(node: dict[str, Any], key: str, where: str, note: Note) -> dict[str, Any]:
    """``anyOf``/``oneOf`` that the subset can say as a type list: branches that are only a
    ``type`` (and annotations), or one schema beside ``{"type": "null"}``."""
    branches = node[key]
    rest = {k: v for k, v in node.items() if k != key}
    if not isinstance(branches, list) or not all(isinstance(b, dict) for b in branches):
        return node
    if branches and all(
        isinstance(b.get("type"), str) and set(b) <= ({"type"} | _ANNOTATION_ONLY) for b in branches
    ):
        types = [b["type"] for b in branches]
        if len(set(types)) == len(types) and "type" not in rest:
            note(where, f"{key} of types {types} written as type {types}")
            return {**rest, "type": types}
    nulls = [b for b in branches if _is_null_branch(b)]
    others = [b for b in branches if not _is_null_branch(b)]
    if len(nulls) == 1 and len(others) == 1:
        widened = _with_null(others[0])
        if widened is not None:
            merged = dict(widened)
            for k, v in rest.items():
                if k in _ANNOTATION_ONLY or k not in merged or merged[k] == v:
                    merged[k] = v
                else:
                    return node
            note(where, f"{key} of one schema and null written as that schema with type null")
            return merged
    return node


def _single_branch(node: dict[str, Any], key: str, where: str, note: Note) -> dict[str, Any]:
    """``allOf``/``anyOf``/``oneOf`` of one schema is that schema (pydantic writes
    ``allOf: [{"$ref": ...}]`` to put a description beside a reference)."""
    rest = {k: v for k, v in node.items() if k != key}
    merged = dict(node[key][0])
    for k, v in rest.items():
        if k in _ANNOTATION_ONLY or k not in merged or merged[k] == v:
            merged[k] = v
        else:
            return node  # a different constraint on both sides: left for the reader
    note(where, f"{key} of one schema written as that schema")
    return merged


def rewrite(  # noqa: C901
    schema: dict[str, Any], dialect: Dialect, note: Note, declare_required: bool = True
) -> dict[str, Any]:
    """The parameter schema in the subset, as far as meaning-keeping rewrites take it
    (``declare_required=False`` for the tools.json form: a catalog its reader accepts comes
    back byte for byte)."""

    def walk(node: Any, path: tuple[str, ...], is_property: bool) -> Any:  # noqa: C901
        if not isinstance(node, dict):
            return node
        where = _at(path)
        node = dict(node)
        for key, why in dialect.dropped.items():
            if key in node:
                del node[key]
                note(where, f"{key!r} dropped ({why})")
        for key in ("anyOf", "oneOf", "allOf"):
            branches = node.get(key)
            if isinstance(branches, list) and len(branches) == 1 and isinstance(branches[0], dict):
                node = _single_branch(node, key, where, note)
            elif key != "allOf" and key in node:
                node = _union(node, key, where, note)
        nullable = node.pop("nullable", None) if "nullable" in node else None
        node = _map_type(node, where, dialect, note, is_property)
        if nullable is True:
            widened = _with_null(node)
            if widened is not None:
                node = widened
                note(where, "nullable: true written as type null")
            else:
                node["nullable"] = True  # left for the reader to name
        elif nullable is not None:
            note(where, f"nullable: {nullable!r} dropped")
        for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(node.get(exclusive), bool):
                flag = node.pop(exclusive)
                if flag and bound in node:
                    node[exclusive] = node.pop(bound)
                    note(
                        where,
                        f"{exclusive}: true beside {bound} written as {exclusive} {node[exclusive]!r}",
                    )
                else:
                    note(
                        where, f"{exclusive}: {str(flag).lower()} dropped (it bounds nothing alone)"
                    )
        if dialect.string_counts:
            for key in _COUNTS:
                value = node.get(key)
                if isinstance(value, str) and value.isdigit():
                    node[key] = int(value)
                    note(where, f"{key} {value!r} read as the integer {int(value)}")
        if node.get("additionalProperties") == {}:
            node["additionalProperties"] = True
            note(where, "additionalProperties {} written as true (the same meaning)")
        if declare_required:
            _declare_required(node, where, note)
        for key in _SUBSCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                node[key] = {k: walk(v, (*path, key, k), True) for k, v in node[key].items()}
        for key in _SUBSCHEMA:
            if isinstance(node.get(key), dict):
                node[key] = walk(node[key], (*path, key), True)
        if "default" in node and node["default"] is None and not _allows_null(node):
            del node["default"]
            note(where, "default null dropped (the schema does not allow null)")
        elif (
            "default" in node
            and path
            and not schema_problems(node)
            and not is_valid(node["default"], node)
        ):
            note(where, f"default {_short(node.pop('default'))} dropped (it fails its schema)")
        return node

    return walk(schema, (), False)  # type: ignore[no-any-return]


def _declare_required(node: dict[str, Any], where: str, note: Note) -> None:
    """A required name the object does not declare, where undeclared names are allowed, is
    declared with no constraint (``{}``): the schema already let it hold any value, so
    validation is the same, and a call can now be built with it (D7.2 builds only declared
    names). Where ``additionalProperties`` closes the object, the reader refuses it instead."""
    required, props = node.get("required"), node.get("properties", {})
    if not isinstance(required, list) or not isinstance(props, dict):
        return
    if node.get("additionalProperties", True) is not True or "patternProperties" in node:
        return
    missing = [n for n in required if isinstance(n, str) and n not in props]
    if missing:
        node["properties"] = {**props, **{n: {} for n in missing}}
        for name in missing:
            note(where, f"required {name!r} not declared: declared with no constraint (any value)")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _allows_null(node: dict[str, Any]) -> bool:
    types = node.get("type")
    if types is None:
        enum = node.get("enum")
        return not isinstance(enum, list) or None in enum
    return types == "null" or (isinstance(types, list) and "null" in types)


def _map_type(
    node: dict[str, Any], where: str, dialect: Dialect, note: Note, is_property: bool
) -> dict[str, Any]:
    types = node.get("type")
    if "type" not in node:
        if dialect.fallback_type and is_property and not ({"enum", "const"} & set(node)):
            node["type"] = dialect.fallback_type
            note(where, f"no type: {dialect.fallback_type!r} as {dialect.name} sends it")
        return node
    names: list[Any] = types if isinstance(types, list) else [types]
    if not all(isinstance(t, str) for t in names):
        return node
    mapped: list[str] = []
    for t in names:
        if t in dialect.types:
            mapped.append(dialect.types[t])
        elif t not in JSON_TYPES and dialect.fallback_type:
            mapped.append(dialect.fallback_type)
        else:
            mapped.append(t)  # a JSON type, or a name left for the reader to refuse
    if mapped != names:
        for old, new in zip(names, mapped, strict=True):
            if old != new:
                note(where, f"type {old!r} mapped to {new!r} ({dialect.name})")
        unique = list(dict.fromkeys(mapped))
        node["type"] = unique if isinstance(types, list) and len(unique) > 1 else unique[0]
    return node


def normalise_schema(
    schema: Any, dialect: Dialect, note: Note, declare_required: bool = True
) -> Any:
    """Every rewrite, in order: ``$ref`` inlined first (a definition is then rewritten where it
    is used), then the dialect's names and the meaning-keeping simplifications."""
    if not isinstance(schema, dict):
        return schema
    return rewrite(inline_refs(copy.deepcopy(schema), note), dialect, note, declare_required)
