"""The schema engine beyond the official suite: defect codes, paths, order, and the coverage policy."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.schema_strategies import SCHEMAS as RICH_SCHEMAS
from support.schema_strategies import VALUES as RICH_VALUES

from toolcall300.schema import (
    ANNOTATIONS,
    ENFORCED,
    KEYWORDS,
    NOT_COVERED,
    compile_node_validator,
    compile_validator,
    declared_types,
    format_path,
    is_valid,
    iter_errors,
    json_type_matches,
    node_errors,
    schema_problems,
)


@pytest.mark.parametrize(
    ("schema", "instance", "code"),
    [
        ({"type": "string"}, 1, "type_mismatch"),
        ({"enum": ["a"]}, "b", "enum_mismatch"),
        ({"const": 1}, True, "const_mismatch"),
        ({"type": "object", "required": ["a"]}, {}, "missing_required"),
        ({"minLength": 2}, "a", "string_too_short"),
        ({"maxLength": 1}, "ab", "string_too_long"),
        ({"pattern": "^a"}, "ba", "pattern_mismatch"),
        ({"minimum": 2}, 1, "minimum_violation"),
        ({"maximum": 2}, 3, "maximum_violation"),
        ({"exclusiveMinimum": 2}, 2, "exclusive_minimum_violation"),
        ({"exclusiveMaximum": 2}, 2, "exclusive_maximum_violation"),
        ({"minItems": 1}, [], "array_too_short"),
        ({"maxItems": 0}, [1], "array_too_long"),
        ({"uniqueItems": True}, [1, 1.0], "items_not_unique"),
        ({"minProperties": 1}, {}, "too_few_properties"),
        ({"maxProperties": 0}, {"a": 1}, "too_many_properties"),
        ({"properties": {}, "additionalProperties": False}, {"x": 1}, "additional_property"),
    ],
)
def test_each_keyword_yields_its_defect_code(
    schema: dict[str, Any], instance: Any, code: str
) -> None:
    errors = list(iter_errors(instance, schema))
    assert [e.code for e in errors] == [code]
    assert not is_valid(instance, schema)


def test_paths_point_at_the_failing_node() -> None:
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {
            "a": {"type": "array", "items": {"type": "integer"}},
            "b": {"type": "string"},
        },
        "additionalProperties": False,
    }
    errors = list(iter_errors({"a": [1, "x"], "zz": 0}, schema))
    assert [(e.code, format_path(e.instance_path)) for e in errors] == [
        ("missing_required", "$.b"),  # required first, in `required` order
        ("additional_property", "$.zz"),
        ("type_mismatch", "$.a[1]"),
    ]
    assert errors[2].schema_path == ("properties", "a", "items", "type")


def test_several_defects_at_one_node_follow_the_keyword_table() -> None:
    errors = list(iter_errors(5, {"enum": ["a"], "type": "string"}))
    assert [e.keyword for e in errors] == ["type", "enum"]
    assert list(ENFORCED).index("type") < list(ENFORCED).index("enum")


def test_node_errors_exclude_children() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 2}
    assert [e.code for e in node_errors({"a": 1}, schema)] == ["too_few_properties"]


def test_node_errors_come_in_report_order() -> None:
    schema = {"type": "object", "maxProperties": 0, "required": ["b"]}
    assert [e.keyword for e in node_errors({"a": 1}, schema)] == ["required", "maxProperties"]


@settings(max_examples=examples(600), deadline=None)
@given(RICH_SCHEMAS, RICH_VALUES)
def test_a_nodes_own_errors_then_its_childrens_are_all_its_errors(
    schema: dict[str, Any], value: Any
) -> None:
    """The decomposition the argument checker's one-pass repair walk relies on."""
    children: list[Any] = []
    properties, items = schema.get("properties"), schema.get("items")
    if isinstance(value, dict) and isinstance(properties, dict):
        for key, child in value.items():
            if key in properties:
                children += iter_errors(child, properties[key], (key,), ("properties", key))
    if isinstance(value, list) and isinstance(items, dict):
        for i, item in enumerate(value):
            children += iter_errors(item, items, (i,), ("items",))
    own = node_errors(value, schema)
    assert own + children == list(iter_errors(value, schema))
    assert compile_node_validator(schema)(value) is (own == [])


#: A constraining value for each keyword of a family, failing for that family's instance below.
_FAMILY_SAMPLES: dict[str, tuple[Any, Any]] = {
    "required": (["a"], {}),
    "minLength": (2, "a"),
    "maxLength": (0, "a"),
    "pattern": ("^b", "a"),
    "minimum": (2, 1),
    "maximum": (0, 1),
    "exclusiveMinimum": (1, 1),
    "exclusiveMaximum": (1, 1),
    "minItems": (2, [1]),
    "maxItems": (0, [1]),
    "uniqueItems": (True, [1, 1]),
    "minProperties": (2, {"a": 1}),
    "maxProperties": (0, {"a": 1}),
    "additionalProperties": (False, {"a": 1}),
    "properties": ({"a": {"type": "string"}}, {"a": 1}),
    "items": ({"type": "string"}, [1]),
}
_ONE_OF_EACH_TYPE = (None, True, {"a": 1}, [1, 1], 1, 1.5, "a")


@pytest.mark.parametrize("name", [k for k in ENFORCED if KEYWORDS[k].family is not None])
def test_a_family_keyword_constrains_its_family_and_passes_every_other_type(name: str) -> None:
    value, failing = _FAMILY_SAMPLES[name]
    schema = {name: value}
    assert [e.keyword for e in iter_errors(failing, schema)] in ([name], ["type"])
    assert not compile_validator(schema)(failing)
    family = KEYWORDS[name].family
    for other in _ONE_OF_EACH_TYPE:
        if family is not None and not json_type_matches(other, family):
            assert list(iter_errors(other, schema)) == [], other
            assert compile_validator(schema)(other) is True, other
            assert compile_validator(schema, closed=True)(other) is True, other


@pytest.mark.parametrize("keyword", ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])
def test_a_nan_instance_fails_every_bound_in_both_readings(keyword: str) -> None:
    # No JSON text holds NaN (canonical.loads_strict refuses it), but a Python caller can pass
    # one: each bound is one comparison that must hold, so both forms refuse it alike.
    schema = {keyword: 0}
    assert [e.keyword for e in iter_errors(float("nan"), schema)] == [keyword]
    assert compile_validator(schema)(float("nan")) is False


def test_integral_float_is_an_integer_and_bool_is_not_a_number() -> None:
    assert is_valid(3.0, {"type": "integer"})
    assert not is_valid(True, {"type": "integer"})
    assert not is_valid(False, {"type": "number"})
    assert is_valid(True, {"minimum": 5})  # minimum applies to numbers only


def test_length_counts_code_points() -> None:
    assert is_valid("💩", {"maxLength": 1})
    assert not is_valid("💩", {"minLength": 2})


@pytest.mark.parametrize("keyword", NOT_COVERED)
def test_every_not_covered_keyword_is_refused_by_name(keyword: str) -> None:
    problems = schema_problems({"type": "object", keyword: {}})
    assert [(p.kind, p.schema_path) for p in problems] == [("not_covered", (keyword,))]


@pytest.mark.parametrize("keyword", ["multipleOf", "x-vendor", "dependencies", "maxContains"])
def test_unlisted_keywords_are_not_covered_either(keyword: str) -> None:
    assert [p.kind for p in schema_problems({keyword: 2})] == ["not_covered"]


@pytest.mark.parametrize("keyword", sorted(ANNOTATIONS))
def test_annotations_are_accepted_and_enforce_nothing(keyword: str) -> None:
    schema = {"type": "string", keyword: "anything"}
    assert schema_problems(schema) == []
    assert is_valid("x", schema)


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        (True, "not_covered"),
        ({"items": [{"type": "string"}]}, "not_covered"),
        ({"additionalProperties": {"type": "string"}}, "not_covered"),
        ({"exclusiveMinimum": True}, "not_covered"),
        ({"pattern": "\\p{L}"}, "not_covered"),
        ([], "invalid"),
        ({"type": "strin"}, "invalid"),
        ({"type": []}, "invalid"),
        ({"type": ["string", "string"]}, "invalid"),
        ({"minLength": -1}, "invalid"),
        ({"minLength": 1.5}, "invalid"),
        ({"maximum": "3"}, "invalid"),
        ({"pattern": "("}, "invalid"),
        ({"required": ["a", "a"]}, "invalid"),
        ({"required": "a"}, "invalid"),
        ({"enum": "a"}, "invalid"),
        ({"uniqueItems": 1}, "invalid"),
        ({"properties": []}, "invalid"),
        ({"properties": {"a": {"anyOf": []}}}, "not_covered"),
        ({"items": {"type": "nope"}}, "invalid"),
    ],
)
def test_schema_problems(schema: Any, kind: str) -> None:
    problems = schema_problems(schema)
    assert problems and problems[0].kind == kind


def test_problem_paths_name_the_nested_keyword() -> None:
    (problem,) = schema_problems({"properties": {"a": {"items": {"oneOf": []}}}})
    assert problem.schema_path == ("properties", "a", "items", "oneOf")


def test_format_path_quotes_keys_that_are_not_identifiers() -> None:
    assert format_path(()) == "$"
    assert format_path(("a", 0, "b-c", "d.e", "")) == '$.a[0].b-c["d.e"][""]'


SCHEMAS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["string", "integer", "number", "boolean", "array", "object", "null"]
        )
    },
    optional={
        "minLength": st.integers(0, 3),
        "maximum": st.integers(-5, 5),
        "maxItems": st.integers(0, 3),
    },
)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=10,
)


@given(SCHEMAS, VALUES)
def test_is_valid_means_no_errors(schema: dict[str, Any], value: Any) -> None:
    assert is_valid(value, schema) == (list(iter_errors(value, schema)) == [])


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a*)*b", "(x+x+)+y", "(a|aa)*$", "(\\w+\\s?)+$", "(a)\\1", "^([a-z]{1,100})+$"],
)
def test_patterns_that_can_backtrack_exponentially_are_not_covered(pattern: str) -> None:
    (problem,) = schema_problems({"type": "string", "pattern": pattern})
    assert problem.kind == "not_covered" and "pattern is not covered" in problem.message


@pytest.mark.parametrize(
    "pattern",
    [
        "^[A-Z]{3}$",
        "^\\d{4}-\\d{2}-\\d{2}$",
        "(\\d{1,3}\\.){3}\\d{1,3}",
        "^(foo|bar)$",
        "^[a-z_]+$",
        "^(?:ab)?c*$",
    ],
)
def test_ordinary_patterns_stay_covered(pattern: str) -> None:
    assert schema_problems({"type": "string", "pattern": pattern}) == []


# ---------------------------------------------------------------------------- compiled checks


def _canonical_form(value: Any, schema: dict[str, Any]) -> bool:
    """The closed reading, written out plainly: no undeclared key where ``properties`` is
    declared, no float where ``integer`` (and not ``number``) is declared, at every node the
    validator visits."""
    types = declared_types(schema)
    if "integer" in types and "number" not in types and isinstance(value, float):
        return False
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None and any(key not in props for key in value):
            return False
        return all(_canonical_form(v, props[k]) for k, v in value.items() if props and k in props)
    if isinstance(value, list) and "items" in schema:
        return all(_canonical_form(v, schema["items"]) for v in value)
    return True


@settings(max_examples=examples(600), deadline=None)
@given(RICH_SCHEMAS, RICH_VALUES)
def test_the_compiled_check_agrees_with_is_valid(schema: dict[str, Any], value: Any) -> None:
    assert compile_validator(schema)(value) is is_valid(value, schema)
    closed = compile_validator(schema, closed=True)(value)
    assert closed is (is_valid(value, schema) and _canonical_form(value, schema))


@pytest.mark.parametrize(
    ("schema", "value", "valid", "closed"),
    [
        ({"type": "integer"}, 3.0, True, False),
        ({"type": ["integer", "number"]}, 3.0, True, True),
        ({"type": "object", "properties": {"a": {}}}, {"a": 1, "b": 2}, True, False),
        ({"type": "object"}, {"b": 2}, True, True),
        ({"type": "array", "items": {"type": "integer"}}, [1, 2.0], True, False),
        ({"type": "string", "enum": ["a", "b"]}, "c", False, False),
        ({"enum": [1, "1"]}, 1.0, True, True),
    ],
)
def test_closed_reading_is_valid_plus_canonical_form(
    schema: dict[str, Any], value: Any, valid: bool, closed: bool
) -> None:
    assert compile_validator(schema)(value) is valid
    assert compile_validator(schema, closed=True)(value) is closed


def test_unique_items_of_scalars_is_a_set_and_agrees_with_the_scan() -> None:
    """An array of strings, numbers and nulls is judged by a set (no JSON key per item);
    the answer is the pairwise scan's, 1 and 1.0 equal, true and 1 not, a NaN only itself."""
    from toolcall300.schema import keywords

    nan = float("nan")
    arrays = (
        ["a", "b", "a"],
        ["a", "b"],
        [1, 1.0],
        [1, True],
        [True, 1, 1.0],
        [None, None],
        [nan, nan],
        [nan, float("nan")],
        ["1", 1],
        [0, -0.0, False],
        [[1], [1.0]],
        [],
        [{}],
    )
    validator = keywords.KEYWORDS["uniqueItems"].compiled(True, {}, False)
    assert validator is not None
    for items in arrays:
        assert validator(items) == (keywords._first_equal_pair(items) is None), items
    calls = []
    scan = keywords._first_equal_pair

    def counted(items: Any) -> Any:
        calls.append(items)
        return scan(items)

    keywords._first_equal_pair = counted  # type: ignore[assignment]
    try:
        assert validator(["x", 2, 2.5, None]) and not validator(["x", "x"])
        assert not calls, "an array of scalars was scanned by JSON key"
    finally:
        keywords._first_equal_pair = scan  # type: ignore[assignment]
