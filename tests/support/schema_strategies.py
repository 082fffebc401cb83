"""Hypothesis strategies for covered schemas using every enforced keyword, and for JSON values
likely to sit near their boundaries. Shared by the schema engine's and toolshim's property
tests, so that a compiled check or a repair walk is exercised on more than type and enum."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from toolcall300.schema import schema_problems

TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"]
SMALL_TEXT = st.text(alphabet="abcx1 -_.", max_size=5)
SMALL_NUMBERS = st.integers(-6, 6) | st.sampled_from([-2.5, 0.0, 1.0, 2.5, 3.0])
PATTERNS = st.sampled_from(["^[a-c]+$", "\\d", "^x", "a.b", "^$", "^[a-c ]*\\s$"])
ENUM_MEMBERS = st.lists(
    SMALL_TEXT | st.integers(-3, 3) | st.none() | st.booleans(), min_size=1, max_size=4
)
VALUES = st.recursive(
    st.none() | st.booleans() | SMALL_NUMBERS | SMALL_TEXT,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "a.b", "x"]), inner, max_size=4)
    ),
    max_leaves=12,
)


#: Keyword values past anything a real catalog holds, or that fight each other: what an
#: adversarial catalog writes (docs/catalog.md, "Limits" and "what the generator needs").
HUGE = st.sampled_from([10**9, 10**12])
HOSTILE: dict[str, st.SearchStrategy[Any]] = {
    "enum": st.lists(
        st.sampled_from([{"a": 1}, {"z": [1]}, [1, {"q": None}], "a", 2, 2.0, None]),
        min_size=1,
        max_size=3,
    ),
    "const": st.sampled_from([{"a": 1}, {"z": 2}, [{"a": None}], 2.0]),
    "minLength": st.integers(0, 3) | HUGE | st.just(2.0),
    "maxLength": st.integers(0, 4) | st.just(3.0),
    "pattern": st.sampled_from(["^a{5}$", "^a{2}$", "^a{1000000000}$", "^[^\\s\\S]$", "^x"]),
    "minItems": st.integers(0, 2) | HUGE | st.just(2.0),
    "minProperties": st.integers(0, 2) | HUGE | st.just(4),
}


@st.composite
def _node(
    draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]], hostile: bool = False
) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if draw(st.booleans()):
        schema["type"] = draw(
            st.sampled_from(TYPES)
            | st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True)
        )
    optional: dict[str, st.SearchStrategy[Any]] = {
        "enum": ENUM_MEMBERS,
        "const": SMALL_TEXT | st.integers(-3, 3),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 4),
        "pattern": PATTERNS,
        "minimum": SMALL_NUMBERS,
        "maximum": SMALL_NUMBERS,
        "exclusiveMinimum": SMALL_NUMBERS,
        "exclusiveMaximum": SMALL_NUMBERS,
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 3),
        "uniqueItems": st.booleans(),
        "minProperties": st.integers(0, 2),
        "maxProperties": st.integers(0, 3),
        "additionalProperties": st.booleans(),
        "items": children,
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
        "description": st.just("annotation only"),
    }
    if hostile:
        optional |= HOSTILE
        optional["properties"] = st.dictionaries(
            st.sampled_from(["a", "b", "a.b", "", "z"]), children, max_size=3
        )
    for keyword in draw(st.lists(st.sampled_from(sorted(optional)), max_size=4, unique=True)):
        schema[keyword] = draw(optional[keyword])
    return schema


SCHEMAS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    _node(st.just({})), lambda children: _node(children), max_leaves=6
).filter(lambda s: not schema_problems(s))

#: Covered schemas holding :data:`HOSTILE` values: huge lengths and counts, enum and const
#: objects with undeclared keys, patterns at odds with lengths, dotted and empty names.
HOSTILE_SCHEMAS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    _node(st.just({}), hostile=True), lambda children: _node(children, hostile=True), max_leaves=6
).filter(lambda s: not schema_problems(s))
