"""The keyword table: one :class:`Keyword` entry per enforced keyword, and the three walks over it.

Each entry bundles everything the engine knows about one keyword: ``check`` (the errors of an
instance, with tool-argument/v1 defect codes), ``problems`` (when a value of the keyword is
malformed or outside the subset) and ``compiled`` (the same decision as a closure, built once
per schema). The walks are :func:`iter_errors`, :func:`schema_problems` and
:func:`compile_validator`; they read only the table, so adding a keyword is adding one entry.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from toolcall300.canonical import json_equal
from toolcall300.schema.paths import Path
from toolcall300.schema.patterns import (
    MAX_PATTERN_LENGTH,
    PatternNotCovered,
    PatternSyntaxError,
    backtracking_hazard,
    compile_pattern,
)
from toolcall300.schema.types import (
    JSON_TYPES,
    TYPE_CLASSES,
    TYPE_TESTS,
    Validator,
    declared_types,
    is_int,
    is_integer,
    is_number,
    type_of,
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


class SchemaError(NamedTuple):
    """One failed keyword at one node. ``code`` is a tool-argument/v1 defect code.

    A named tuple, not a frozen dataclass: the argument checker makes one per defect, and a
    tuple is made at C speed."""

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


#: ``check(value, instance, schema, instance_path, schema_path)``: the keyword's errors.
Checker = Callable[[Any, Any, dict[str, Any], Path, Path], Iterator[SchemaError]]
#: ``problems(value, path)``: why this value of the keyword (at ``path``) cannot be used (a
#: list, empty when it can: the schema walk calls one per keyword, so no generator each).
WellFormed = Callable[[Any, Path], list[SchemaProblem]]
#: ``compiled(value, schema, closed)``: the keyword as a test of an instance of its family (of
#: any instance when it has none), or ``None`` when it constrains nothing.
Compiler = Callable[[Any, dict[str, Any], bool], Validator | None]


@dataclass(frozen=True)
class Keyword:
    """One enforced keyword. ``family`` is the instance type it constrains (instances of other
    types pass it), ``None`` for ``type``, ``enum`` and ``const``, which constrain every
    instance; ``subschemas``: its value holds schemas, walked by ``check`` and ``compiled``."""

    name: str
    check: Checker
    problems: WellFormed
    compiled: Compiler
    family: str | None
    subschemas: bool = False


def _err(code: str, kw: str, ipath: Path, spath: Path, msg: str) -> SchemaError:
    return SchemaError(code, kw, ipath, spath + (kw,), msg)


def _invalid(path: Path, msg: str) -> list[SchemaProblem]:
    return [SchemaProblem("invalid", path, msg)]


def _any_value(v: Any, path: Path) -> list[SchemaProblem]:
    """Every JSON value is a well-formed ``const``."""
    return []


def _all_of(checks: tuple[Validator, ...]) -> Validator:
    def check(value: Any) -> bool:
        for one in checks:  # noqa: SIM110 (a loop: no generator on the hot path)
            if not one(value):
                return False
        return True

    return check


def _any_of(tests: tuple[Validator, ...]) -> Validator:
    if len(tests) == 1:
        return tests[0]

    def check(value: Any) -> bool:
        for test in tests:  # noqa: SIM110 (a loop: no generator on the hot path)
            if test(value):
                return True
        return False

    return check


# ---------------------------------------------------------------------------- type, enum, const


def _type_names(v: Any) -> tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


def _type_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    names = (v,) if isinstance(v, str) else v
    for name in names:
        test = TYPE_TESTS.get(name)  # json_type_matches, inline: the most frequent check
        if test is not None and test(inst):
            return
    yield _err(
        "type_mismatch", "type", ip, sp, f"expected {' or '.join(names)}, got {type_of(inst)}"
    )


def _type_problems(v: Any, path: Path) -> list[SchemaProblem]:
    if isinstance(v, str) and v in TYPE_TESTS:
        return []  # the usual form, one type name
    names = [v] if isinstance(v, str) else v
    if (
        not isinstance(names, list)
        or not names
        or any(n not in JSON_TYPES for n in names)
        or len(set(names)) != len(names)
    ):
        return _invalid(path, "type must be a type name or a non-empty list of distinct type names")
    return []


def _type_tests(schema: dict[str, Any], closed: bool) -> tuple[Validator, ...]:
    """The test of each declared type. Closed, an ``integer`` not also ``number`` must be an
    ``int``: the canonical form writes an integer as an int (D5.2); 3.0 is valid, not canonical."""
    names = declared_types(schema) if "type" in schema else ()
    narrow = closed and "integer" in names and "number" not in names
    return tuple(is_int if narrow and n == "integer" else TYPE_TESTS[n] for n in names)


def _type_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator:
    """Used when no other check of the node already refuses the other types (see
    :func:`compile_validator`, which folds a single type into its family's check)."""
    return _any_of(_type_tests(schema, closed))


def _enum_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    # a string equals only an equal string (as in _enum_compiled): one C-level scan of the list;
    # anything else is compared with the members that are not strings only
    found = (
        inst in v
        if isinstance(inst, str)
        else any(json_equal(inst, m) for m in v if not isinstance(m, str))
    )
    if not found:
        yield _err("enum_mismatch", "enum", ip, sp, f"not one of the {len(v)} enum members")


def _enum_problems(v: Any, path: Path) -> list[SchemaProblem]:
    return [] if isinstance(v, list) else _invalid(path, "enum must be an array")


def _enum_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator | None:
    strings = frozenset(m for m in v if isinstance(m, str))
    others = [m for m in v if not isinstance(m, str)]

    def check(value: Any) -> bool:
        if isinstance(value, str):
            return value in strings  # a string equals only an equal string
        return any(json_equal(value, m) for m in others)

    return check


def _const_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if not json_equal(inst, v):
        yield _err("const_mismatch", "const", ip, sp, "not equal to const")


def _const_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator | None:
    return lambda value: json_equal(value, v)


# ---------------------------------------------------------------------------- counts and bounds


def _count_problems(v: Any, path: Path) -> list[SchemaProblem]:
    if not (is_integer(v) and v >= 0):
        return _invalid(path, f"{path[-1]} must be a non-negative integer")
    return []


def _count(name: str, family: str, code: str, at_least: bool, message: str) -> Keyword:
    """A keyword bounding a string's length (``minLength``: at least), an array's length or an
    object's size. String length counts Unicode code points (not UTF-16 units, not bytes),
    which is ``len``."""
    is_member = TYPE_TESTS[family]

    def check(
        v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
    ) -> Iterator[SchemaError]:
        if is_member(inst) and (len(inst) < v if at_least else len(inst) > v):
            yield _err(code, name, ip, sp, message.format(v))

    def compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator:
        if at_least:
            return lambda value: len(value) >= v
        return lambda value: len(value) <= v

    return Keyword(name, check, _count_problems, compiled, family)


def _bound_problems(v: Any, path: Path) -> list[SchemaProblem]:
    kw = path[-1]
    if isinstance(v, bool) and str(kw).startswith("exclusive"):
        return [SchemaProblem("not_covered", path, f"boolean-form {kw} is not covered")]
    if not is_number(v) or (isinstance(v, float) and not math.isfinite(v)):
        return _invalid(path, f"{kw} must be a number")
    return []


def _bound(name: str, code: str, holds: Callable[[Any, Any], bool], message: str) -> Keyword:
    """A keyword bounding a number: ``holds(instance, bound)`` is one of ``operator``'s
    comparisons, so the compiled form is that comparison with the bound bound (no Python frame
    per call)."""
    flipped = _FLIPPED[holds]

    def check(
        v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
    ) -> Iterator[SchemaError]:
        if is_number(inst) and not holds(inst, v):
            yield _err(code, name, ip, sp, message.format(v))

    def compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator:
        return functools.partial(flipped, v)  # flipped(bound, value) == holds(value, bound)

    return Keyword(name, check, _bound_problems, compiled, "number")


_FLIPPED: dict[Callable[[Any, Any], bool], Callable[[Any, Any], bool]] = {
    operator.ge: operator.le,
    operator.le: operator.ge,
    operator.gt: operator.lt,
    operator.lt: operator.gt,
}


# ---------------------------------------------------------------------------- pattern


def _pattern_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, str) and not compile_pattern(v).search(inst):
        yield _err("pattern_mismatch", "pattern", ip, sp, "does not match pattern")


def _pattern_problems(v: Any, path: Path) -> list[SchemaProblem]:
    # D19: ECMA-262's grammar (u flag) decides validity; what re cannot run with ECMA's meaning,
    # or could run for exponential time, is not covered.
    if not isinstance(v, str):
        return _invalid(path, "pattern must be a string")
    if len(v) > MAX_PATTERN_LENGTH:
        return [
            SchemaProblem(
                "not_covered",
                path,
                f"pattern is not covered: {len(v)} characters long; the limit is "
                f"{MAX_PATTERN_LENGTH}",
            )
        ]
    try:
        compile_pattern(v)
    except PatternSyntaxError as exc:
        return _invalid(path, str(exc))
    except PatternNotCovered as exc:
        return [SchemaProblem("not_covered", path, str(exc))]
    hazard = backtracking_hazard(v)
    if hazard:
        return [SchemaProblem("not_covered", path, f"pattern is not covered: {hazard}")]
    return []


def _pattern_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator:
    search = compile_pattern(v).search
    return lambda value: search(value) is not None


# ---------------------------------------------------------------------------- uniqueItems


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


def _first_equal_pair(items: list[Any]) -> tuple[int, int] | None:
    """The pair a pairwise scan would name: the first item that has a later equal, and the first
    such equal. Linear, not pairwise: a large array must not cost n^2 comparisons (argcheck
    serves caller-supplied blobs)."""
    seen: dict[Any, list[int]] = {}
    for j, item in enumerate(items):
        where = seen.setdefault(_json_key(item), [])
        if len(where) < 2:
            where.append(j)
    pairs = [(w[0], w[1]) for w in seen.values() if len(w) == 2]
    return min(pairs) if pairs else None


def _unique_items_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if v is True and isinstance(inst, list):
        pair = _first_equal_pair(inst)
        if pair:
            i, j = pair
            yield _err("items_not_unique", "uniqueItems", ip, sp, f"items {i} and {j} are equal")


def _unique_items_problems(v: Any, path: Path) -> list[SchemaProblem]:
    return [] if isinstance(v, bool) else _invalid(path, "uniqueItems must be a boolean")


def _unique_items_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator | None:
    return _all_unique if v is True else None


#: Item types whose Python equality and hash are what :func:`_json_key` compares (``1 ==
#: 1.0``; a string equals only a string; even a NaN is equal only to itself in both), so a
#: ``set`` of them dedupes as the scan does. ``bool`` is not one (``True == 1`` in Python
#: only), nor is a container.
_SET_EQUAL = frozenset({str, int, float, type(None)})


def _all_unique(value: list[Any]) -> bool:
    """No two items are JSON-equal (an array's ``uniqueItems``): a ``set`` of the items when
    every item is of a :data:`_SET_EQUAL` type, else the linear scan by JSON key."""
    if _SET_EQUAL.issuperset(map(type, value)):
        return len(set(value)) == len(value)
    return _first_equal_pair(value) is None


# ---------------------------------------------------------------------------- objects


def _required_check(
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


def _required_problems(v: Any, path: Path) -> list[SchemaProblem]:
    if not isinstance(v, list) or any(not isinstance(n, str) for n in v) or len(set(v)) != len(v):
        return _invalid(path, "required must be an array of distinct strings")
    return []


def _required_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator | None:
    # A bound C method: no Python frame per object (``issubset`` reads the dict's keys).
    return frozenset(v).issubset if v else None


def _additional_properties_check(
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


def _additional_properties_problems(v: Any, path: Path) -> list[SchemaProblem]:
    if isinstance(v, dict):
        return [
            SchemaProblem("not_covered", path, "schema-valued additionalProperties is not covered")
        ]
    if not isinstance(v, bool):
        return _invalid(path, "additionalProperties must be a boolean")
    return []


def _additional_properties_compiled(
    v: Any, schema: dict[str, Any], closed: bool
) -> Validator | None:
    if v is not False or "properties" in schema:
        return None  # with properties, their walk refuses undeclared keys in the same loop
    return lambda value: not value


def _properties_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, dict):
        for key, value in inst.items():
            if key in v:
                yield from iter_errors(value, v[key], ip + (key,), sp + ("properties", key))


def _properties_problems(v: Any, path: Path) -> list[SchemaProblem]:
    if not isinstance(v, dict):
        return _invalid(path, "properties must be an object")
    out: list[SchemaProblem] = []
    for name, sub in v.items():
        out += schema_problems(sub, path + (name,))
    return out


def _properties_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator | None:
    """Each declared property against its schema; also ``additionalProperties: false`` and,
    ``closed``, every undeclared key, in the same pass over the object."""
    subs = {k: compile_validator(s, closed=closed) for k, s in v.items()}
    only_declared = closed or schema.get("additionalProperties") is False
    if not subs and not only_declared:
        return None

    def check(value: Any) -> bool:
        for key, member in value.items():
            sub = subs.get(key)
            if sub is None:
                if only_declared:
                    return False
            elif not sub(member):
                return False
        return True

    return check


# ---------------------------------------------------------------------------- arrays


def _items_check(
    v: Any, inst: Any, schema: dict[str, Any], ip: Path, sp: Path
) -> Iterator[SchemaError]:
    if isinstance(inst, list):
        for i, item in enumerate(inst):
            yield from iter_errors(item, v, ip + (i,), sp + ("items",))


def _items_problems(v: Any, path: Path) -> list[SchemaProblem]:
    if isinstance(v, list):
        return [SchemaProblem("not_covered", path, "array-form items is not covered")]
    return schema_problems(v, path)


def _items_compiled(v: Any, schema: dict[str, Any], closed: bool) -> Validator:
    item = compile_validator(v, closed=closed)

    def check(value: Any) -> bool:
        for element in value:  # noqa: SIM110 (a loop: no generator on the hot path)
            if not item(element):
                return False
        return True

    return check


# ---------------------------------------------------------------------------- the table


#: The enforced keywords, in the order their defects are reported at one node.
KEYWORDS: dict[str, Keyword] = {
    kw.name: kw
    for kw in (
        Keyword("type", _type_check, _type_problems, _type_compiled, None),
        Keyword("enum", _enum_check, _enum_problems, _enum_compiled, None),
        Keyword("const", _const_check, _any_value, _const_compiled, None),
        Keyword("required", _required_check, _required_problems, _required_compiled, "object"),
        _count("minLength", "string", "string_too_short", True, "shorter than {} characters"),
        _count("maxLength", "string", "string_too_long", False, "longer than {} characters"),
        Keyword("pattern", _pattern_check, _pattern_problems, _pattern_compiled, "string"),
        _bound("minimum", "minimum_violation", operator.ge, "less than {}"),
        _bound("maximum", "maximum_violation", operator.le, "greater than {}"),
        _bound(
            "exclusiveMinimum",
            "exclusive_minimum_violation",
            operator.gt,
            "not greater than {}",
        ),
        _bound(
            "exclusiveMaximum",
            "exclusive_maximum_violation",
            operator.lt,
            "not less than {}",
        ),
        _count("minItems", "array", "array_too_short", True, "fewer than {} items"),
        _count("maxItems", "array", "array_too_long", False, "more than {} items"),
        Keyword(
            "uniqueItems",
            _unique_items_check,
            _unique_items_problems,
            _unique_items_compiled,
            "array",
        ),
        _count("minProperties", "object", "too_few_properties", True, "fewer than {} properties"),
        _count("maxProperties", "object", "too_many_properties", False, "more than {} properties"),
        Keyword(
            "additionalProperties",
            _additional_properties_check,
            _additional_properties_problems,
            _additional_properties_compiled,
            "object",
        ),
        Keyword(
            "properties",
            _properties_check,
            _properties_problems,
            _properties_compiled,
            "object",
            subschemas=True,
        ),
        Keyword("items", _items_check, _items_problems, _items_compiled, "array", subschemas=True),
    )
}

#: The keywords the engine enforces, in the order their defects are reported at one node.
ENFORCED = tuple(KEYWORDS)

#: The table without ``required`` (reported first at each node).
_AFTER_REQUIRED = tuple(kw for kw in KEYWORDS.values() if kw.name != "required")
#: A node's own keywords (not those that walk subschemas) in the order they are reported.
_OWN = (KEYWORDS["required"],) + tuple(kw for kw in _AFTER_REQUIRED if not kw.subschemas)

#: Each of a node's own keywords: its place in report order and its check.
_OWN_RANK = {kw.name: (rank, kw.check) for rank, kw in enumerate(_OWN)}

#: ``errors(instance, instance_path)``: the errors of one node alone (see :func:`node_errors`).
NodeErrors = Callable[[Any, Path], list[SchemaError]]


# ---------------------------------------------------------------------------- the walks


def iter_errors(
    instance: Any, schema: dict[str, Any], instance_path: Path = (), schema_path: Path = ()
) -> Iterator[SchemaError]:
    """Yield every error of ``instance`` against ``schema`` (assumed covered; see :func:`schema_problems`).

    Errors come in a fixed order: ``required`` first at each node, then the node's own
    keywords in :data:`ENFORCED` order, then children in the instance's key or index order.
    """
    if "required" in schema:
        yield from _required_check(schema["required"], instance, schema, instance_path, schema_path)
    for kw in _AFTER_REQUIRED:
        if kw.name in schema:
            yield from kw.check(schema[kw.name], instance, schema, instance_path, schema_path)


def node_errors(
    instance: Any, schema: dict[str, Any], instance_path: Path = ()
) -> list[SchemaError]:
    """Errors of this node alone: its own keywords, not its properties' or items' subschemas,
    in the order :func:`iter_errors` reports them (so a node's errors followed by its
    children's, in the instance's order, are :func:`iter_errors`'s). Schema paths are relative
    to the node."""
    return compile_node_errors(schema)(instance, instance_path)


def compile_node_errors(schema: dict[str, Any]) -> NodeErrors:
    """:func:`node_errors` for one schema with the keyword table read once, for a walk that
    asks about the same node again and again (the argument checker's repair pass)."""
    # The schema's few keywords put in report order (cheaper than asking for each of the table's).
    checks = [(_OWN_RANK[name], value) for name, value in schema.items() if name in _OWN_RANK]
    if len(checks) > 1:
        checks.sort()  # ranks are distinct, so only they are compared
    if len(checks) == 1:
        ((_, check), only) = checks[0]
        return lambda instance, instance_path: list(
            check(only, instance, schema, instance_path, ())
        )

    def errors(instance: Any, instance_path: Path) -> list[SchemaError]:
        out: list[SchemaError] = []
        for (_, check), value in checks:
            out.extend(check(value, instance, schema, instance_path, ()))
        return out

    return errors


def is_valid(instance: Any, schema: dict[str, Any]) -> bool:
    """Whether ``instance`` conforms to ``schema``.

    >>> is_valid({"n": 3.0}, {"type": "object", "properties": {"n": {"type": "integer"}}})
    True
    >>> is_valid({"n": "3"}, {"type": "object", "properties": {"n": {"type": "integer"}}})
    False
    """
    return next(iter_errors(instance, schema), None) is None


def schema_problems(schema: Any, path: Path = ()) -> list[SchemaProblem]:
    """Every reason ``schema`` cannot be used, empty when it is a well-formed covered schema.

    ``not_covered``: a boolean schema, a keyword outside the subset, a schema-valued
    ``additionalProperties``, array-form ``items`` or boolean ``exclusiveMinimum``.
    ``invalid``: a keyword whose value is malformed (for example ``"minLength": -1``).
    """
    if isinstance(schema, bool):
        return [SchemaProblem("not_covered", path, "boolean schemas are not covered")]
    if not isinstance(schema, dict):
        return [
            SchemaProblem("invalid", path, f"a schema must be an object, got {type_of(schema)}")
        ]
    out: list[SchemaProblem] = []
    for name, v in schema.items():
        kw = KEYWORDS.get(name)
        if kw is not None:
            found = kw.problems(v, path + (name,))
            if found:
                out += found
        elif name not in ANNOTATIONS:
            out.append(
                SchemaProblem("not_covered", path + (name,), f"keyword {name!r} is not covered")
            )
    return out


#: The instance types a keyword can constrain (see :attr:`Keyword.family`).
_FAMILIES = ("string", "number", "array", "object")


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
    only = types[0] if len(types) == 1 else None
    only_family = "number" if only == "integer" else only
    # Every keyword's test, grouped by the family of instances it constrains.
    tests: dict[str | None, list[Validator]] = {}
    for kw in KEYWORDS.values():
        if kw.name in schema and kw.name != "type":
            test = kw.compiled(schema[kw.name], schema, closed)
            if test is not None:
                tests.setdefault(kw.family, []).append(test)
    type_tests = _type_tests(schema, closed)
    families: list[Validator] = []
    folded = False  # whether some check already refuses every type but the declared one
    for family in _FAMILIES:
        own = type_tests[0] if family == only_family else None
        check = _compile_family(family, own, tuple(tests.get(family, ())))
        if check is not None:
            families.append(check)
            folded = folded or own is not None
    checks = tests.get(None, [])
    if "enum" in schema and only == "string":
        # An enum of strings alone already refuses every other type.
        folded = folded or all(isinstance(m, str) for m in schema["enum"])
    if types and not folded:
        type_check = KEYWORDS["type"].compiled(schema["type"], schema, closed)
        checks.insert(0, type_check or _always)
    checks.extend(families)
    return _always if not checks else checks[0] if len(checks) == 1 else _all_of(tuple(checks))


def compile_node_validator(schema: dict[str, Any]) -> Validator:
    """Whether an instance has no :func:`node_errors`: the node's own keywords alone, compiled.

    It is :func:`compile_validator` of the schema with each subschema emptied (``{}`` accepts
    every instance, so no child can fail): ``items`` is dropped (no other keyword reads it),
    and ``properties`` keeps its names only where ``additionalProperties: false`` needs them.
    """
    own = {name: value for name, value in schema.items() if name not in ("items", "properties")}
    if "properties" in schema and schema.get("additionalProperties") is False:
        own["properties"] = {key: {} for key in schema["properties"]}
    return compile_validator(own)


def _always(value: Any) -> bool:
    return True


def _compile_family(
    family: str, own: Validator | None, tests: tuple[Validator, ...]
) -> Validator | None:
    """One family's tests as one closure: values outside the family pass, unless ``own`` (the
    node's single declared type, in this family) is given, which must hold. ``own`` is the
    family's own test or narrower (``integer`` in the number family), so it alone decides
    membership. This is the normaliser's hot path: ``isinstance`` is inlined where the family is
    one class, and one or two tests are called without a loop."""
    if not tests:
        return own
    if len(tests) == 2:
        first, second = tests
        one: Validator = lambda value: first(value) and second(value)  # noqa: E731
    else:
        one = tests[0] if len(tests) == 1 else _all_of(tests)
    cls = TYPE_CLASSES.get(family)
    if own is None:
        if cls is None:
            member = TYPE_TESTS[family]
            return lambda value: not member(value) or one(value)
        return lambda value: not isinstance(value, cls) or one(value)
    if cls is None or own is not TYPE_TESTS[family]:
        gate = own
        return lambda value: gate(value) and one(value)
    if len(tests) == 2:
        return lambda value: isinstance(value, cls) and first(value) and second(value)
    return lambda value: isinstance(value, cls) and one(value)
