"""The JSON Schema instance types: one table of type tests that every check reads.

``type``'s check, its well-formedness rule, the compiled validators and the repairers all
decide "is this value of type T" through :data:`TYPE_TESTS`, so no two of them can disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

#: A compiled check: whether one instance passes.
Validator = Callable[[Any], bool]


def is_number(value: Any) -> bool:
    """A JSON number (``bool`` is not one)."""
    kind = type(value)
    if kind is int or kind is float:  # the exact types first: the hot path of every check
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """A JSON integer: JSON Schema counts ``3.0`` as an integer."""
    kind = type(value)
    if kind is int:  # the exact types first: the hot path of every check
        return True
    if kind is str:
        return False
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def is_int(value: Any) -> bool:
    """An ``int`` (the canonical form of a JSON integer), not a bool, not a float."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_null(value: Any) -> bool:
    """JSON ``null``."""
    return value is None


#: The seven JSON Schema types, in the order the subset lists them.
JSON_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")

#: The JSON types that are exactly one Python class (a JSON number is not: ``bool`` is an
#: ``int``). Compiled checks inline ``isinstance`` with these instead of calling a test.
TYPE_CLASSES: dict[str, type] = {"boolean": bool, "object": dict, "array": list, "string": str}


def _instance_of(cls: type) -> Validator:
    return lambda value: isinstance(value, cls)


#: The test for each JSON type: the one table every "is this value of type T" reads.
TYPE_TESTS: dict[str, Validator] = {"null": is_null, "number": is_number, "integer": is_integer} | {
    name: _instance_of(cls) for name, cls in TYPE_CLASSES.items()
}
assert set(TYPE_TESTS) == set(JSON_TYPES)


def json_type_matches(value: Any, type_name: str) -> bool:
    """Whether ``value`` is of the JSON Schema type ``type_name`` (``False`` for other names)."""
    test = TYPE_TESTS.get(type_name)
    return test is not None and test(value)


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
    name = _EXACT_TYPE_NAMES.get(type(value))
    if name is not None:  # the exact types a JSON reader makes, at one lookup
        return name
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


_EXACT_TYPE_NAMES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
