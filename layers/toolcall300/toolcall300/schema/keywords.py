"""The schema engine: a bounded subset of JSON Schema draft 2020-12, as a keyword table.

Every enforced keyword maps to one small function that yields :class:`SchemaError` values,
each with an instance path, a schema path and a tool-argument/v1 defect code. ``is_valid``
means nothing was yielded. The subset is the one ``tool-argument/v1`` publishes; the tool
catalog, the generator, the scorer, ``toolshim`` and ``argcheck`` all use this one engine.

Keyword policy (one rule, applied everywhere): a keyword in :data:`ENFORCED` is checked; a
keyword in :data:`ANNOTATIONS` is accepted and enforced as nothing (``format`` included, and
``default`` is never applied); every other keyword, listed in the criteria's ``not_covered``
or not, makes the schema *not covered* and is refused by :func:`schema_problems`. Nothing is
ever validated under undisclosed partial coverage.

It is not a general JSON Schema validator: no ``$ref``, no combinators, no boolean schemas.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from toolcall300.canonical import json_equal

PathPart = str | int
Path = tuple[PathPart, ...]

JSON_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")

#: The keywords the engine enforces, in the order their defects are reported at one node.
ENFORCED = (
    "type",
    "enum",
    "const",
    "required",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "additionalProperties",
    "properties",
    "items",
)

#: Accepted and enforced as nothing.
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)

#: Named by the tool-argument/v1 criteria as outside the subset (all other unknown keywords
#: are refused the same way).
NOT_COVERED = (
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "contains",
    "propertyNames",
    "patternProperties",
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentEncoding",
    "contentMediaType",
)

#: Keywords that only apply to one instance type; used by repairers to find a node's own type.
_LOCAL_KEYWORDS = frozenset(ENFORCED) - {"properties", "items"}


@dataclass(frozen=True)
class SchemaError:
    """One failed keyword at one node. ``code`` is a tool-argument/v1 defect code."""

    code: str
    keyword: str
    instance_path: Path
    schema_path: Path
    message: str


@dataclass(frozen=True)
class SchemaProblem:
    """Why a schema cannot be used: ``kind`` is ``invalid`` or ``not_covered``."""

    kind: str
    schema_path: Path
    message: str


# ---------------------------------------------------------------------------- type helpers


def is_number(value: Any) -> bool:
    """A JSON number (``bool`` is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """A JSON integer: JSON Schema counts ``3.0`` as an integer."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def json_type_matches(value: Any, type_name: str) -> bool:
    """Whether ``value`` is of the JSON Schema type ``type_name``."""
    if type_name == "null":
        return value is None
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "number":
        return is_number(value)
    if type_name == "integer":
        return is_integer(value)
    return False


def declared_types(schema: dict[str, Any]) -> tuple[str, ...]:
    """The schema's ``type`` as a tuple (empty when it declares none)."""
    t = schema.get("type")
    if isinstance(t, str):
        return (t,)
    if isinstance(t, list):
        return tuple(x for x in t if isinstance(x, str))
    return ()


def type_of(value: Any) -> str:
    """The JSON type name of a value (``integer`` for integral ints, else ``number``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


#: Regular-expression syntax of ECMA-262 that Python's ``re`` lacks.
_ECMA_ONLY = re.compile(r"\\[pP]\{")


#: ECMA-262 whitespace (``\s``): Python's differs, and under ``re.ASCII`` is ASCII-only.
_ECMA_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
#: ECMA-262 ``.`` (no dotAll flag in JSON Schema) stops at every line terminator, not only ``\n``.
_ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"


def ecma_to_python(pattern: str) -> str:
    r"""Rewrite an ECMA-262 pattern so Python's ``re`` (with ``re.ASCII``) gives it ECMA meaning.

    ``$`` is the end of the input (Python's also matches before a final newline, which would
    let ``"abc\n"`` pass ``^[a-z]+$``); ``.`` excludes every line terminator; ``\s`` is
    ECMA's Unicode whitespace. ``re.ASCII`` gives ``\d``, ``\w`` and ``\b`` their ASCII
    meaning (Python's would accept an Arabic-Indic digit for ``\d``).

    >>> ecma_to_python(r"^[a-z$]+\.$")
    '^[a-z$]+\\.\\Z'
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "s":
                out.append(_ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]")
            elif nxt == "S" and not in_class:
                out.append(f"[^{_ECMA_SPACE}]")
            else:
                out.append(c + nxt)
            i += 2
            continue
        if in_class:
            in_class = c != "]" or (out[-1] == "[" or out[-1] == "[^")
            out.append(c)
        elif c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(c)
        elif c == "$":
            out.append("\\Z")
        elif c == ".":
            out.append(_ECMA_DOT)
        else:
            out.append(c)
        i += 1
    return "".join(out)


#: A repetition whose upper bound exceeds this counts as unbounded for the hazard check.
_UNBOUNDED_AFTER = 16


def _repeat_hazard(items: Any, inside_repeat: bool) -> str | None:
    """Walk a parsed pattern; report nested unbounded repetition or alternation under one."""
    sre = importlib.import_module("re._constants")  # the parser's own opcodes (3.11+)

    for op, arg in items:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            _lo, hi, body = arg
            unbounded = hi is sre.MAXREPEAT or hi > _UNBOUNDED_AFTER
            if unbounded and inside_repeat:
                return "nested unbounded repetition such as (a+)+ backtracks exponentially"
            found = _repeat_hazard(body, inside_repeat or unbounded)
            if found:
                return found
        elif op is sre.SUBPATTERN:
            found = _repeat_hazard(arg[-1], inside_repeat)
            if found:
                return found
        elif op is sre.BRANCH:
            if inside_repeat:
                return "alternation inside unbounded repetition such as (a|ab)* can backtrack exponentially"
            for branch in arg[1]:
                found = _repeat_hazard(branch, inside_repeat)
                if found:
                    return found
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            return "backreferences are not covered"
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            found = _repeat_hazard(arg[1], inside_repeat)
            if found:
                return found
    return None


def backtracking_hazard(pattern: str) -> str | None:
    """Why ``pattern`` could make a match run for exponential time, or ``None``.

    Python's ``re`` has no time limit, and a schema is caller-supplied (``POST /check``), so
    patterns whose backtracking can explode are refused as not covered rather than run:
    nested unbounded repetition (star height above one), alternation under unbounded
    repetition, and backreferences. This is deliberately conservative: ``^[a-z]+(-[a-z]+)*$``
    is refused too, with a message that says why.

    >>> backtracking_hazard("^[A-Z]{3}-\\d+$") is None
    True
    >>> backtracking_hazard("(a+)+$")
    'nested unbounded repetition such as (a+)+ backtracks exponentially'
    """
    sre_parse = importlib.import_module("re._parser")  # untyped in typeshed; stable in 3.11+
    try:
        parsed = sre_parse.parse(ecma_to_python(pattern), re.ASCII)
    except re.error:
        return None  # reported as invalid by the caller
    return _repeat_hazard(list(parsed), inside_repeat=False)


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(ecma_to_python(pattern), re.ASCII)


def string_length(value: str) -> int:
    """String length as JSON Schema counts it: Unicode code points (not UTF-16 units, not bytes)."""
    return len(value)


# ---------------------------------------------------------------------------- keyword table

Checker = Callable[[Any, Any, dict[str, Any], Path, Path], Iterator[SchemaError]]


def _err(code: str, kw: str, ipath: Path, spath: Path, msg: str) -> SchemaError:
    return SchemaError(code, kw, ipath, spath + (kw,), msg)


def _type(v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path) -> Iterator[SchemaError]:
    names = (v,) if isinstance(v, str) else tuple(v)
    if not any(json_type_matches(inst, n) for n in names):
        yield _err(
            "type_mismatch", "type", ip, sp, f"expected {' or '.join(names)}, got {type_of(inst)}"
        )


def _enum(v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path) -> Iterator[SchemaError]:
    if not any(json_equal(inst, member) for member in v):
        yield _err("enum_mismatch", "enum", ip, sp, f"not one of the {len(v)} enum members")


def _const(v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path) -> Iterator[SchemaError]:
    if not json_equal(inst, v):
        yield _err("const_mismatch", "const", ip, sp, "not equal to const")


def _required(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, dict):
        for i, name in enumerate(v):
            if name not in inst:
                yield SchemaError(
                    "missing_required",
                    "required",
                    ip + (name,),
                    sp + ("required", i),
                    "required property is missing",
                )


def _min_length(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, str) and string_length(inst) < v:
        yield _err("string_too_short", "minLength", ip, sp, f"shorter than {v} characters")


def _max_length(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, str) and string_length(inst) > v:
        yield _err("string_too_long", "maxLength", ip, sp, f"longer than {v} characters")


def _pattern(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, str) and not _compiled(v).search(inst):
        yield _err("pattern_mismatch", "pattern", ip, sp, "does not match pattern")


def _minimum(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if is_number(inst) and inst < v:
        yield _err("minimum_violation", "minimum", ip, sp, f"less than {v}")


def _maximum(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if is_number(inst) and inst > v:
        yield _err("maximum_violation", "maximum", ip, sp, f"greater than {v}")


def _exclusive_minimum(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if is_number(inst) and inst <= v:
        yield _err(
            "exclusive_minimum_violation", "exclusiveMinimum", ip, sp, f"not greater than {v}"
        )


def _exclusive_maximum(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if is_number(inst) and inst >= v:
        yield _err("exclusive_maximum_violation", "exclusiveMaximum", ip, sp, f"not less than {v}")


def _min_items(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, list) and len(inst) < v:
        yield _err("array_too_short", "minItems", ip, sp, f"fewer than {v} items")


def _max_items(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, list) and len(inst) > v:
        yield _err("array_too_long", "maxItems", ip, sp, f"more than {v} items")


def _json_key(value: Any) -> Any:
    """A hashable key: ``_json_key(a) == _json_key(b)`` exactly when ``json_equal(a, b)``."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)  # 1 == 1.0 and they hash alike; bools were tagged apart above
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list):
        return ("a", tuple(_json_key(x) for x in value))
    if isinstance(value, dict):
        return ("o", frozenset((k, _json_key(x)) for k, x in value.items()))
    return ("z",) if value is None else ("?", id(value))


def _unique_items(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    # Linear, not pairwise: a large array must not cost n^2 comparisons (argcheck serves
    # caller-supplied blobs). Names the pair the pairwise scan would: the first item that has
    # a later equal, and the first such equal.
    if v is True and isinstance(inst, list):
        seen: dict[Any, list[int]] = {}
        for j, item in enumerate(inst):
            where = seen.setdefault(_json_key(item), [])
            if len(where) < 2:
                where.append(j)
        pairs = [tuple(w) for w in seen.values() if len(w) == 2]
        if pairs:
            i, j = min(pairs)
            yield _err("items_not_unique", "uniqueItems", ip, sp, f"items {i} and {j} are equal")


def _min_properties(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, dict) and len(inst) < v:
        yield _err("too_few_properties", "minProperties", ip, sp, f"fewer than {v} properties")


def _max_properties(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, dict) and len(inst) > v:
        yield _err("too_many_properties", "maxProperties", ip, sp, f"more than {v} properties")


def _additional_properties(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if v is False and isinstance(inst, dict):
        declared = schema.get("properties", {})
        for key in inst:
            if key not in declared:
                yield SchemaError(
                    "additional_property",
                    "additionalProperties",
                    ip + (key,),
                    sp + ("additionalProperties",),
                    "property is not declared",
                )


def _properties(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, dict):
        for key, value in inst.items():
            if key in v:
                yield from iter_errors(value, v[key], ip + (key,), sp + ("properties", key))


def _items(v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path) -> Iterator[SchemaError]:
    if isinstance(inst, list):
        for i, item in enumerate(inst):
            yield from iter_errors(item, v, ip + (i,), sp + ("items",))


KEYWORDS: dict[str, Checker] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "minLength": _min_length,
    "maxLength": _max_length,
    "pattern": _pattern,
    "minimum": _minimum,
    "maximum": _maximum,
    "exclusiveMinimum": _exclusive_minimum,
    "exclusiveMaximum": _exclusive_maximum,
    "minItems": _min_items,
    "maxItems": _max_items,
    "uniqueItems": _unique_items,
    "minProperties": _min_properties,
    "maxProperties": _max_properties,
    "additionalProperties": _additional_properties,
    "properties": _properties,
    "items": _items,
}
assert tuple(KEYWORDS) == ENFORCED


def iter_errors(
    instance: Any, schema: dict[str, Any], instance_path: Path = (), schema_path: Path = ()
) -> Iterator[SchemaError]:
    """Yield every error of ``instance`` against ``schema`` (assumed covered; see :func:`schema_problems`).

    Errors come in a fixed order: ``required`` first at each node, then the node's own
    keywords in :data:`ENFORCED` order, then children in the instance's key or index order.
    """
    if "required" in schema:
        yield from _required(schema["required"], instance, schema, instance_path, schema_path)
    for kw, check in KEYWORDS.items():
        if kw != "required" and kw in schema:
            yield from check(schema[kw], instance, schema, instance_path, schema_path)


def node_errors(
    instance: Any, schema: dict[str, Any], instance_path: Path = ()
) -> list[SchemaError]:
    """Errors of this node alone: its own keywords, not its properties' or items' subschemas."""
    out: list[SchemaError] = []
    for kw in ENFORCED:
        if kw in schema and kw in _LOCAL_KEYWORDS:
            out.extend(KEYWORDS[kw](schema[kw], instance, schema, instance_path, ()))
    return out


def is_valid(instance: Any, schema: dict[str, Any]) -> bool:
    """Whether ``instance`` conforms to ``schema``.

    >>> is_valid({"n": 3.0}, {"type": "object", "properties": {"n": {"type": "integer"}}})
    True
    >>> is_valid({"n": "3"}, {"type": "object", "properties": {"n": {"type": "integer"}}})
    False
    """
    return next(iter_errors(instance, schema), None) is None


# ---------------------------------------------------------------------------- compiled validators

Validator = Callable[[Any], bool]


def compile_validator(schema: dict[str, Any], *, closed: bool = False) -> Validator:
    """``is_valid`` for one schema as a tree of closures, built once and called many times.

    The answer is :func:`is_valid`'s (a property test and the official suite hold them
    together); the keyword table is read once here instead of on every call, which is what
    makes the normaliser's per-property checks cheap. Each node becomes one closure where it can:
    a single declared type is folded into the checks of its own family. The schema is
    assumed covered (see :func:`schema_problems`) and must not be edited afterwards: the
    closures keep what they read.

    ``closed=True`` is stricter, for callers that need to know an instance is already in
    canonical form: every object whose schema declares ``properties`` must hold only declared
    keys, and a value declared ``integer`` (and not ``number``) must be an ``int``, not an
    integral float. A closed-valid instance is always valid.

    >>> check = compile_validator({"type": "object", "properties": {"n": {"type": "integer"}}})
    >>> check({"n": 3.0}), check({"n": "3"})
    (True, False)
    >>> compile_validator({"type": "integer"}, closed=True)(3.0)
    False
    """
    types = declared_types(schema) if "type" in schema else ()
    if closed and "integer" in types and "number" not in types:
        # The canonical form writes an integer as an int (D5.2); 3.0 is valid, not canonical.
        types = tuple("int" if t == "integer" else t for t in types)
    # A single declared type is checked inside its own family's closure (one call per node).
    only = types[0] if len(types) == 1 else None
    checks: list[Validator] = []
    families = (
        _compile_string(schema, only == "string"),
        _compile_number(schema, _TYPE_TESTS[only] if only in _NUMERIC else None),
        _compile_array(schema, only == "array", closed),
        _compile_object(schema, only == "object", closed),
    )
    folded = any(f is not None and f.own_type for f in families)
    if "enum" in schema:
        enum_check, implies = _compile_enum(schema["enum"], only)
        checks.append(enum_check)
        folded = folded or implies
    if types and not folded:
        checks.insert(0, _compile_type(types))
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: json_equal(v, const))
    checks.extend(f.check for f in families if f is not None)
    return _always if not checks else checks[0] if len(checks) == 1 else _all_of(tuple(checks))


@dataclass(frozen=True)
class _Family:
    """The compiled keywords of one instance type; ``own_type``: it also rejects other types."""

    check: Validator
    own_type: bool


_NUMERIC = ("number", "integer", "int")


def _always(value: Any) -> bool:
    return True


def _all_of(checks: tuple[Validator, ...]) -> Validator:
    def check(value: Any) -> bool:
        for one in checks:  # noqa: SIM110 (a loop: no generator on the hot path)
            if not one(value):
                return False
        return True

    return check


def _compile_type(types: tuple[str, ...]) -> Validator:
    tests = tuple(_TYPE_TESTS[t] for t in types)
    if len(tests) == 1:
        return tests[0]

    def check(value: Any) -> bool:
        for test in tests:  # noqa: SIM110 (a loop: no generator on the hot path)
            if test(value):
                return True
        return False

    return check


def _is_int(value: Any) -> bool:
    """An ``int`` (the canonical form of a JSON integer), not a bool, not a float."""
    return isinstance(value, int) and not isinstance(value, bool)


_TYPE_TESTS: dict[str | None, Validator] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": is_number,
    "integer": is_integer,
    "int": _is_int,
}


def _compile_enum(members: list[Any], only: str | None) -> tuple[Validator, bool]:
    """The enum check, and whether passing it implies the single declared type ``only``
    (true when that type is string and every member is a string)."""
    strings = frozenset(m for m in members if isinstance(m, str))
    others = [m for m in members if not isinstance(m, str)]

    def check(value: Any) -> bool:
        if isinstance(value, str):
            return value in strings  # a string equals only an equal string
        return any(json_equal(value, m) for m in others)

    return check, only == "string" and not others


def _compile_string(schema: dict[str, Any], own_type: bool) -> _Family | None:
    lo, hi, pattern = schema.get("minLength"), schema.get("maxLength"), schema.get("pattern")
    if lo is None and hi is None and pattern is None:
        return _Family(_TYPE_TESTS["string"], True) if own_type else None
    search = _compiled(pattern).search if pattern is not None else None

    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return not own_type
        n = string_length(value)
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            return False
        return search is None or search(value) is not None

    return _Family(check, own_type)


_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda v, b: v >= b,
    "maximum": lambda v, b: v <= b,
    "exclusiveMinimum": lambda v, b: v > b,
    "exclusiveMaximum": lambda v, b: v < b,
}


def _compile_number(schema: dict[str, Any], own_test: Validator | None) -> _Family | None:
    bounds = tuple((holds, schema[kw]) for kw, holds in _BOUNDS.items() if kw in schema)
    if not bounds:
        return _Family(own_test, True) if own_test is not None else None

    def check(value: Any) -> bool:
        if own_test is not None and not own_test(value):
            return False
        if not is_number(value):
            return True
        for holds, bound in bounds:  # noqa: SIM110 (a loop: no generator on the hot path)
            if not holds(value, bound):
                return False
        return True

    return _Family(check, own_test is not None)


def _compile_array(schema: dict[str, Any], own_type: bool, closed: bool) -> _Family | None:
    lo, hi = schema.get("minItems"), schema.get("maxItems")
    unique = schema.get("uniqueItems") is True
    item = compile_validator(schema["items"], closed=closed) if "items" in schema else None
    if lo is None and hi is None and not unique and item is None:
        return _Family(_TYPE_TESTS["array"], True) if own_type else None

    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return not own_type
        if (lo is not None and len(value) < lo) or (hi is not None and len(value) > hi):
            return False
        if unique and next(_unique_items(True, value, schema, (), ()), None) is not None:
            return False
        if item is not None:
            for element in value:
                if not item(element):
                    return False
        return True

    return _Family(check, own_type)


def _compile_object(schema: dict[str, Any], own_type: bool, closed: bool) -> _Family | None:
    """required, min/maxProperties, additionalProperties and properties as one check."""
    required = tuple(schema.get("required", ()))
    lo, hi = schema.get("minProperties"), schema.get("maxProperties")
    props = schema.get("properties")
    subs = {k: compile_validator(s, closed=closed) for k, s in (props or {}).items()}
    only_declared = schema.get("additionalProperties") is False or (closed and props is not None)
    if not (required or subs or only_declared or lo is not None or hi is not None):
        return _Family(_TYPE_TESTS["object"], True) if own_type else None

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return not own_type
        for name in required:
            if name not in value:
                return False
        if (lo is not None and len(value) < lo) or (hi is not None and len(value) > hi):
            return False
        for key, member in value.items():
            sub = subs.get(key)
            if sub is None:
                if only_declared:
                    return False
            elif not sub(member):
                return False
        return True

    return _Family(check, own_type)


# ---------------------------------------------------------------------------- schema checks


def _nonneg_int(v: Any) -> bool:
    return is_integer(v) and v >= 0


def schema_problems(schema: Any, path: Path = ()) -> list[SchemaProblem]:
    """Every reason ``schema`` cannot be used, empty when it is a well-formed covered schema.

    ``not_covered``: a boolean schema, a keyword outside the subset, a schema-valued
    ``additionalProperties``, array-form ``items`` or boolean ``exclusiveMinimum``.
    ``invalid``: a keyword whose value is malformed (for example ``"minLength": -1``).
    """
    out: list[SchemaProblem] = []

    def bad(kind: str, p: Path, msg: str) -> None:
        out.append(SchemaProblem(kind, p, msg))

    if isinstance(schema, bool):
        bad("not_covered", path, "boolean schemas are not covered")
        return out
    if not isinstance(schema, dict):
        bad("invalid", path, f"a schema must be an object, got {type_of(schema)}")
        return out
    for kw, v in schema.items():
        p = path + (kw,)
        if kw in ANNOTATIONS:
            continue
        if kw not in KEYWORDS:
            bad("not_covered", p, f"keyword {kw!r} is not covered")
            continue
        if kw == "type":
            names = [v] if isinstance(v, str) else v
            if (
                not isinstance(names, list)
                or not names
                or any(n not in JSON_TYPES for n in names)
                or len(set(names)) != len(names)
            ):
                bad(
                    "invalid",
                    p,
                    "type must be a type name or a non-empty list of distinct type names",
                )
        elif kw == "enum":
            if not isinstance(v, list):
                bad("invalid", p, "enum must be an array")
        elif kw == "required":
            if (
                not isinstance(v, list)
                or any(not isinstance(n, str) for n in v)
                or len(set(v)) != len(v)
            ):
                bad("invalid", p, "required must be an array of distinct strings")
        elif kw in (
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
        ):
            if not _nonneg_int(v):
                bad("invalid", p, f"{kw} must be a non-negative integer")
        elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(v, bool) and kw.startswith("exclusive"):
                bad("not_covered", p, f"boolean-form {kw} is not covered")
            elif not is_number(v) or (isinstance(v, float) and not math.isfinite(v)):
                bad("invalid", p, f"{kw} must be a number")
        elif kw == "pattern":
            if not isinstance(v, str):
                bad("invalid", p, "pattern must be a string")
            elif _ECMA_ONLY.search(v):
                # ECMA-262 syntax Python's re cannot evaluate faithfully: refuse, never approximate.
                bad(
                    "not_covered",
                    p,
                    "Unicode property escapes (\\p{...}) in pattern are not covered",
                )
            else:
                try:
                    _compiled(v)
                except re.error as exc:
                    bad("invalid", p, f"pattern does not compile: {exc}")
                else:
                    hazard = backtracking_hazard(v)
                    if hazard:
                        bad("not_covered", p, f"pattern is not covered: {hazard}")
        elif kw == "uniqueItems":
            if not isinstance(v, bool):
                bad("invalid", p, "uniqueItems must be a boolean")
        elif kw == "additionalProperties":
            if isinstance(v, dict):
                bad("not_covered", p, "schema-valued additionalProperties is not covered")
            elif not isinstance(v, bool):
                bad("invalid", p, "additionalProperties must be a boolean")
        elif kw == "properties":
            if not isinstance(v, dict):
                bad("invalid", p, "properties must be an object")
            else:
                for name, sub in v.items():
                    out.extend(schema_problems(sub, p + (name,)))
        elif kw == "items":
            if isinstance(v, list):
                bad("not_covered", p, "array-form items is not covered")
            else:
                out.extend(schema_problems(v, p))
    return out


def is_covered(schema: Any) -> bool:
    """Whether ``schema`` is well formed and inside the subset."""
    return not schema_problems(schema)


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
