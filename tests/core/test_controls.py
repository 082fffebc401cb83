"""The integrator control (spec C2): each of its steps, and that it never crashes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples

from toolcall300.controls import first_call, integrator
from toolcall300.scoring.adapters import load_callable

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
ARGS = {"city": "Oslo", "days": 2}
CALL = {"name": "get_weather", "arguments": ARGS}


def text(value: Any) -> str:
    return json.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        CALL,
        {"function": CALL},
        {"type": "function", "function": CALL},
        {"function_call": CALL},
        {"tool_calls": [{"id": "call_1", "type": "function", "function": CALL}]},
        {"name": "get_weather", "parameters": ARGS},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": ARGS},
        [CALL, {"name": "other", "arguments": {}}],
    ],
)
def test_every_documented_envelope_is_unwrapped(value: Any) -> None:
    assert integrator(text(value), TOOLS) == CALL


def test_the_first_call_is_taken_even_when_a_later_copy_differs() -> None:
    second = {"name": "get_weather", "arguments": {"city": "Rome"}}
    assert integrator(text([CALL, second]), TOOLS) == CALL
    assert integrator(text([{"name": "nope", "arguments": {}}, CALL]), TOOLS) is None


def test_string_arguments_are_decoded_once_whatever_the_envelope() -> None:
    """C2 (corpus v3): defensive integrators decode a string once wherever it appears, not only
    where the OpenAI family's format carries one; twice-encoded arguments stay a string."""
    once, twice = json.dumps(ARGS), json.dumps(json.dumps(ARGS))
    for envelope in (
        {"function": {"name": "get_weather", "arguments": "{}"}},
        {"name": "get_weather", "arguments": "{}"},
        {"name": "get_weather", "input": "{}"},
        {"name": "get_weather", "parameters": "{}"},
        {"type": "tool_use", "id": "t", "name": "get_weather", "input": "{}"},
    ):
        key = next(k for k in ("function", "arguments", "input", "parameters") if k in envelope)
        for value, want in ((once, CALL), (twice, None)):
            if key == "function":
                sent: dict[str, Any] = {"function": {"name": "get_weather", "arguments": value}}
            else:
                sent = {**envelope, key: value}
            assert integrator(text(sent), TOOLS) == want, sent


def test_argument_keys_that_disagree_are_refused_e2() -> None:
    agree = {"name": "get_weather", "arguments": ARGS, "input": dict(ARGS)}
    assert integrator(text(agree), TOOLS) == CALL
    differ = {"name": "get_weather", "arguments": ARGS, "input": {"city": "Rome"}}
    assert integrator(text(differ), TOOLS) is None


def test_the_name_must_be_exact() -> None:
    for name in ("Get_Weather", "functions.get_weather", "get-weather", " get_weather"):
        assert integrator(text({"name": name, "arguments": ARGS}), TOOLS) is None


def test_invalid_arguments_are_refused_never_repaired() -> None:
    for args in ({"city": "Oslo", "days": "2"}, {"days": 2}, {"city": "Oslo", "x": 1}, [ARGS]):
        assert integrator(text({"name": "get_weather", "arguments": args}), TOOLS) is None


def test_no_call_is_a_refusal() -> None:
    for raw in (
        '{"name": "get_weather", "arguments": {"ci',
        "hello",
        "[]",
        '{"tool_calls": []}',
        "3",
    ):
        assert integrator(raw, TOOLS) is None
    assert first_call({"id": "x"}) is None


def test_a_call_without_arguments_has_none_d1_3() -> None:
    tools = [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}]
    assert integrator('{"name": "ping"}', tools) == {"name": "ping", "arguments": {}}


def test_loaded_by_name_as_an_adapter() -> None:
    adapter = load_callable("integrator")
    run = adapter.run([{"id": "a", "text": text(CALL), "tools": TOOLS}], timeout=5)
    assert adapter.description == "integrator" and run.answers == {"a": CALL}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["name", "arguments", "parameters", "input", "function", "tool_calls", "city"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=examples(300))
@given(JSON, st.booleans())
def test_never_crashes_and_returns_only_valid_calls(value: Any, as_string: bool) -> None:
    raw = json.dumps(value) if as_string else str(value)
    got = integrator(raw, TOOLS)
    assert got is None or (
        got["name"] == "get_weather" and set(got["arguments"]) <= {"city", "days"}
    )
