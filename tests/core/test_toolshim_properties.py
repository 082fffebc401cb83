"""Invariants of toolshim over generated inputs: never raises, never returns a call its schema
rejects, never keeps a value that was not completely written, round-trips valid calls in every
envelope, and answers the same input the same way every time."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.schema_strategies import SCHEMAS as RICH_SCHEMAS
from support.schema_strategies import VALUES as RICH_VALUES

from toolcall300.canonical import canonical
from toolcall300.schema import compile_validator, is_valid, schema_problems
from toolcall300.toolshim.pipeline import normalise, normalise_explained

# ---------------------------------------------------------------------------- strategies

NAMES = st.text(alphabet="abcdxyz_", min_size=1, max_size=6)
ENUM_MEMBERS = st.lists(
    st.text(alphabet="abXY -_", min_size=1, max_size=5), min_size=1, max_size=4, unique=True
)

LEAF_SCHEMAS = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    ENUM_MEMBERS.map(lambda m: {"type": "string", "enum": m}),
    st.just({"type": "array", "items": {"type": "string"}}),
    st.just({"type": "array", "items": {"type": "integer"}}),
)


def object_schemas(leaf: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """An object schema over ``leaf`` property schemas, with a required subset."""

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        props = draw(st.dictionaries(NAMES, leaf, min_size=1, max_size=5))
        required = [n for n in props if draw(st.booleans())]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        if draw(st.booleans()):
            schema["additionalProperties"] = False
        return schema

    return build()


SCHEMAS = object_schemas(st.one_of(LEAF_SCHEMAS, object_schemas(LEAF_SCHEMAS)))


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that ``schema`` accepts."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    t = schema["type"]
    if t == "string":
        return st.text(max_size=8)
    if t == "integer":
        return st.integers(-(10**6), 10**6)
    if t == "number":
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if t == "boolean":
        return st.booleans()
    if t == "array":
        return st.lists(values_for(schema["items"]), max_size=3)
    props = schema["properties"]
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: values_for(v) for k, v in props.items() if k in required},
        optional={k: values_for(v) for k, v in props.items() if k not in required},
    )


@st.composite
def tool_and_call(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A one-tool catalog (some required properties with defaults) and a call it accepts."""
    schema = draw(SCHEMAS)
    for name in schema.get("required", []):
        if draw(st.booleans()):
            schema["properties"][name]["default"] = draw(values_for(schema["properties"][name]))
    name = draw(st.sampled_from(["get_weather", "search", "send_mail"]))
    tools = [{"type": "function", "function": {"name": name, "parameters": schema}}]
    args = draw(values_for(schema))
    return tools, {"name": name, "arguments": args}


def envelope(call: dict[str, Any], how: str) -> str:
    """``call`` in one of the envelopes models and SDKs emit."""
    args_text = json.dumps(call["arguments"])
    forms: dict[str, Any] = {
        "bare": call,
        "function": {"function": call},
        "typed": {"type": "function", "function": call},
        "tool_calls": {"tool_calls": [{"id": "c1", "type": "function", "function": call}]},
        "list": [call],
        "string_args": {"name": call["name"], "arguments": args_text},
        "string_twice": {"name": call["name"], "arguments": json.dumps(args_text)},
        "parameters": {"name": call["name"], "parameters": call["arguments"]},
        "input": {"type": "tool_use", "name": call["name"], "input": call["arguments"]},
        "tool_calls_string": {
            "tool_calls": [{"function": {"name": call["name"], "arguments": args_text}}]
        },
    }
    if how == "repeated":
        return json.dumps(call) + "\n" + json.dumps(call) + json.dumps(call)
    return json.dumps(forms[how], indent=None if how != "typed" else 1)


ENVELOPES = st.sampled_from(
    [
        "bare",
        "function",
        "typed",
        "tool_calls",
        "list",
        "string_args",
        "string_twice",
        "parameters",
        "input",
        "tool_calls_string",
        "repeated",
    ]
)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)

FIXED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "units": {
                        "type": "string",
                        "enum": ["metric", "imperial"],
                        "default": "metric",
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["city", "units"],
            },
        },
    },
    {"function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
]


def assert_valid_or_none(result: Any, tools: list[dict[str, Any]]) -> None:
    if result is None:
        return
    assert set(result) == {"name", "arguments"}
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert result["name"] in schemas
    assert is_valid(result["arguments"], schemas[result["name"]])


# ---------------------------------------------------------------------------- (a) fuzz


@settings(max_examples=examples(400), deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises_and_never_returns_an_invalid_call(text: str) -> None:
    assert_valid_or_none(normalise(text, FIXED_TOOLS), FIXED_TOOLS)


@settings(max_examples=examples(400), deadline=None)
@given(JSON_VALUES)
def test_arbitrary_json_never_raises_and_never_returns_an_invalid_call(value: Any) -> None:
    assert_valid_or_none(normalise(json.dumps(value), FIXED_TOOLS), FIXED_TOOLS)


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES, st.sampled_from(["get_weather", "GET-weather", "ping", "nope"]))
def test_arbitrary_arguments_for_a_declared_tool_never_raise(args: Any, name: str) -> None:
    text = json.dumps({"name": name, "arguments": args})
    assert_valid_or_none(normalise(text, FIXED_TOOLS), FIXED_TOOLS)


@settings(max_examples=examples(200), deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_arbitrary_catalogs_never_raise(tools: Any, args: Any) -> None:
    text = json.dumps({"name": "get_weather", "arguments": args})
    result = normalise(text, tools)
    assert result is None or isinstance(result, dict)


def test_deep_nesting_is_refused_not_a_crash() -> None:
    assert normalise("[" * 100_000, FIXED_TOOLS) is None
    assert (
        normalise('{"name": "ping", "arguments": ' + "[" * 5000 + "]" * 5000 + "}", FIXED_TOOLS)
        is None
    )
    assert normalise('{"a":' * 3000, FIXED_TOOLS) is None


# ---------------------------------------------------------------------------- (b) truncation


def _complete_written(
    result: dict[str, Any], original: dict[str, Any], schema: dict[str, Any]
) -> None:
    """Every returned property was written in full, or is its required property's own default."""
    props = schema["properties"]
    required = set(schema.get("required", []))
    for key, value in result.items():
        if key in original and canonical(value) == canonical(original[key]):
            continue
        assert key in required and "default" in props[key], f"{key} was not completely written"
        assert canonical(value) == canonical(props[key]["default"])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_and_call(), st.sampled_from(["bare", "tool_calls", "string_args", "tool_calls_string"]))
def test_every_byte_cut_keeps_only_completely_written_values(
    case: tuple[list[dict[str, Any]], dict[str, Any]], how: str
) -> None:
    tools, call = case
    schema = tools[0]["function"]["parameters"]
    data = envelope(call, how).encode("utf-8")
    for cut in range(len(data) + 1):
        text = data[:cut].decode("utf-8", errors="ignore")
        result = normalise(text, tools)
        assert_valid_or_none(result, tools)
        if result is not None:
            assert result["name"] == call["name"]
            _complete_written(result["arguments"], call["arguments"], schema)
    assert normalise(data.decode("utf-8"), tools) == call


# ---------------------------------------------------------------------------- (c) round trips


@settings(max_examples=examples(300), deadline=None)
@given(tool_and_call(), ENVELOPES)
def test_a_valid_call_round_trips_in_every_envelope(
    case: tuple[list[dict[str, Any]], dict[str, Any]], how: str
) -> None:
    tools, call = case
    explained = normalise_explained(envelope(call, how), tools)
    assert explained.call is not None, explained.as_dict()
    assert canonical(explained.call) == canonical(call)
    # Nothing in the arguments changed, so no argument repair may be logged.
    assert not [r for r in explained.repairs if r.rule[:1] in "45678"]


# ---------------------------------------------------------------------------- (d) determinism


@settings(max_examples=examples(200), deadline=None)
@given(st.one_of(st.text(max_size=120), JSON_VALUES.map(json.dumps)))
def test_the_same_input_gets_the_same_answer(text: str) -> None:
    first = normalise_explained(text, FIXED_TOOLS).as_dict()
    second = normalise_explained(text, json.loads(json.dumps(FIXED_TOOLS))).as_dict()
    assert json.dumps(first, sort_keys=True, default=str) == json.dumps(
        second, sort_keys=True, default=str
    )
    # normalise takes a shorter way (no report, caches warm from the calls above): same call.
    assert normalise(text, FIXED_TOOLS) == first["call"]


# ---------------------------------------------------------------------------- repairable damage


def _scalar_keys(schema: dict[str, Any], args: dict[str, Any], kinds: tuple[str, ...]) -> list[str]:
    return [
        k
        for k in args
        if schema["properties"][k].get("type") in kinds and "enum" not in schema["properties"][k]
    ]


@settings(max_examples=examples(100), deadline=None)
@given(tool_and_call(), st.data())
def test_stringified_numbers_and_booleans_come_back(
    case: tuple[list[dict[str, Any]], dict[str, Any]], data: st.DataObject
) -> None:
    # Rule 5: "3" -> 3, "12.5" -> 12.5, "True" -> true.
    tools, call = case
    schema = tools[0]["function"]["parameters"]
    keys = _scalar_keys(schema, call["arguments"], ("integer", "number", "boolean"))
    if not keys:
        return
    key = data.draw(st.sampled_from(keys))
    value = call["arguments"][key]
    written = (
        (("True" if value else "False") if data.draw(st.booleans()) else json.dumps(value))
        if isinstance(value, bool)
        else json.dumps(value)
    )
    damaged = {**call, "arguments": {**call["arguments"], key: written}}
    assert normalise(json.dumps(damaged), tools) == call


@settings(max_examples=examples(100), deadline=None)
@given(tool_and_call(), st.data())
def test_one_element_direction_comes_back(
    case: tuple[list[dict[str, Any]], dict[str, Any]], data: st.DataObject
) -> None:
    # Rule 8, D8.1: a scalar wrapped in [x], or a one-element array written as its element.
    tools, call = case
    schema = tools[0]["function"]["parameters"]
    args = call["arguments"]
    scalars = [
        k
        for k in args
        if schema["properties"][k].get("type") in ("string", "integer", "number", "boolean")
    ]
    singles = [
        k for k in args if schema["properties"][k].get("type") == "array" and len(args[k]) == 1
    ]
    if not scalars + singles:
        return
    key = data.draw(st.sampled_from(scalars + singles))
    written = [args[key]] if key in scalars else args[key][0]
    assert normalise(json.dumps({**call, "arguments": {**args, key: written}}), tools) == call


@settings(max_examples=examples(100), deadline=None)
@given(tool_and_call(), JSON_VALUES, st.sampled_from(["QQ", "Extra_Key", "x-y"]))
def test_undeclared_keys_are_dropped(
    case: tuple[list[dict[str, Any]], dict[str, Any]], junk: Any, key: str
) -> None:
    # Rule 7, D7.2 (the keys cannot collide with generated property names, which are lower-case).
    tools, call = case
    damaged = {**call, "arguments": {**call["arguments"], key: junk}}
    assert normalise(json.dumps(damaged), tools) == call


@settings(max_examples=examples(100), deadline=None)
@given(
    tool_and_call(),
    st.sampled_from(["functions.{}", "  {}  ", "{}()", "ns::{}", "{}"]),
    st.booleans(),
)
def test_name_noise_resolves_to_the_tool(
    case: tuple[list[dict[str, Any]], dict[str, Any]], form: str, upper: bool
) -> None:
    # Rule 3, D3.1.
    tools, call = case
    name = form.format(call["name"].upper() if upper else call["name"].replace("_", "-"))
    assert normalise(json.dumps({**call, "name": name}), tools) == call


@settings(max_examples=examples(100), deadline=None)
@given(tool_and_call(), st.data())
def test_a_lost_required_property_with_a_default_is_filled(
    case: tuple[list[dict[str, Any]], dict[str, Any]], data: st.DataObject
) -> None:
    # Rule 6: from the schema's own default, and only for required properties (D6.1).
    tools, call = case
    schema = tools[0]["function"]["parameters"]
    filled = [k for k in schema.get("required", []) if "default" in schema["properties"][k]]
    if not filled:
        return
    key = data.draw(st.sampled_from(filled))
    damaged = {k: v for k, v in call["arguments"].items() if k != key}
    expected = {**damaged, key: schema["properties"][key]["default"]}
    result = normalise(json.dumps({**call, "arguments": damaged}), tools)
    assert result is not None and canonical(result["arguments"]) == canonical(expected)


@settings(max_examples=examples(100), deadline=None)
@given(tool_and_call(), st.data())
def test_a_required_property_without_default_lost_is_refused(
    case: tuple[list[dict[str, Any]], dict[str, Any]], data: st.DataObject
) -> None:
    # Rule 6: no default, refuse.
    tools, call = case
    schema = tools[0]["function"]["parameters"]
    bare = [k for k in schema.get("required", []) if "default" not in schema["properties"][k]]
    if not bare:
        return
    key = data.draw(st.sampled_from(bare))
    damaged = {k: v for k, v in call["arguments"].items() if k != key}
    explained = normalise_explained(json.dumps({**call, "arguments": damaged}), tools)
    assert (
        explained.call is None
        and explained.refusal is not None
        and explained.refusal.value == "missing_required"
    )


# ---------------------------------------------------------------------------- every keyword

OBJECT_SCHEMAS = RICH_SCHEMAS.map(lambda s: {**s, "type": "object"}).filter(
    lambda s: not schema_problems(s)
)


@settings(
    max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)
@given(OBJECT_SCHEMAS, RICH_VALUES, ENVELOPES)
def test_no_keyword_lets_an_invalid_call_through(
    schema: dict[str, Any], args: Any, how: str
) -> None:
    """Schemas with every enforced keyword (bounds, patterns, const, sizes, uniqueness), not
    only type and enum, against arbitrary arguments: the call is valid or refused."""
    tools = [{"type": "function", "function": {"name": "t", "parameters": schema}}]
    result = normalise(envelope({"name": "t", "arguments": args}, how), tools)
    assert_valid_or_none(result, tools)
    if isinstance(args, dict) and compile_validator(schema, closed=True)(args):
        # Already canonical: nothing may change, and nothing may be refused.
        assert result == {"name": "t", "arguments": args}
