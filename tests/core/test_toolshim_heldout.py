"""A small held-out set for ``toolshim``, written by someone who did not write it or the corpus.

Every case below was written from the grading contract (``score --spec``) alone, with envelopes
and tool shapes the generator does not use, before looking at toolshim's code or at any case of
the corpus. It is small, so it proves little on its own; it exists to catch a normaliser that
only works on the corpus's own shapes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolcall300.toolshim.pipeline import normalise


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOLS = [
    _tool(
        "get_weather",
        {
            "city": {"type": "string"},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        ["city", "units"],
    ),
    _tool(
        "create_event",
        {
            "title": {"type": "string"},
            "location": {
                "type": "object",
                "properties": {"building": {"type": "string"}, "room": {"type": "string"}},
                "required": ["room"],
                "additionalProperties": False,
            },
            "attendees": {"type": "array", "items": {"type": "string"}},
            "all_day": {"type": "boolean"},
            "priority": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
        },
        ["title"],
    ),
    _tool("get_forecast", {"city": {"type": "string"}}, ["city"]),
]

W = {"city": "Oslo", "units": "celsius"}

VALUE_CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "rule3-namespace-case-parens",
        json.dumps({"name": " tools/Get-Weather() ", "arguments": W}),
        {"name": "get_weather", "arguments": W},
    ),
    (
        "rule9-openai-tool_calls-string-args-rule5",
        json.dumps(
            {
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": json.dumps({**W, "days": "3"}),
                        },
                    }
                ]
            }
        ),
        {"name": "get_weather", "arguments": {**W, "days": 3}},
    ),
    (
        "rule6-input-key-default-filled",
        json.dumps(
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}}
        ),
        {"name": "get_weather", "arguments": W},
    ),
    (
        "rule4-enum-case",
        json.dumps({"name": "get_weather", "arguments": {"city": "Oslo", "units": "Fahrenheit"}}),
        {"name": "get_weather", "arguments": {"city": "Oslo", "units": "fahrenheit"}},
    ),
    (
        "rule8-scalar-to-array",
        json.dumps({"name": "create_event", "arguments": {"title": "Standup", "attendees": "ann"}}),
        {"name": "create_event", "arguments": {"title": "Standup", "attendees": ["ann"]}},
    ),
    (
        "rule8-one-element-array-to-scalar",
        json.dumps({"name": "create_event", "arguments": {"title": ["Standup"]}}),
        {"name": "create_event", "arguments": {"title": "Standup"}},
    ),
    (
        "rule7-flattened-bare",
        json.dumps(
            {"name": "create_event", "arguments": {"title": "A", "building": "HQ", "room": "4B"}}
        ),
        {
            "name": "create_event",
            "arguments": {"title": "A", "location": {"building": "HQ", "room": "4B"}},
        },
    ),
    (
        "rule7-flattened-dotted",
        json.dumps({"name": "create_event", "arguments": {"title": "A", "location.room": "4B"}}),
        {"name": "create_event", "arguments": {"title": "A", "location": {"room": "4B"}}},
    ),
    (
        "rule7-undeclared-dropped-nested-too",
        json.dumps(
            {
                "name": "create_event",
                "arguments": {"title": "A", "colour": "red", "location": {"room": "1", "floor": 2}},
            }
        ),
        {"name": "create_event", "arguments": {"title": "A", "location": {"room": "1"}}},
    ),
    (
        "rule9-encoded-twice",
        json.dumps({"name": "get_weather", "arguments": json.dumps(json.dumps(W))}),
        {"name": "get_weather", "arguments": W},
    ),
    (
        "rule10-identical-copies-newline-separated",
        json.dumps({"name": "get_weather", "arguments": W})
        + "\n"
        + json.dumps({"name": "get_weather", "arguments": W}),
        {"name": "get_weather", "arguments": W},
    ),
    (
        "rule10-json-array-of-one",
        json.dumps([{"name": "get_forecast", "arguments": {"city": "Rome"}}]),
        {"name": "get_forecast", "arguments": {"city": "Rome"}},
    ),
    (
        "envelope-function-parameters",
        json.dumps({"function": {"name": "get_forecast", "parameters": {"city": "Rome"}}}),
        {"name": "get_forecast", "arguments": {"city": "Rome"}},
    ),
    (
        "rule5-boolean-False-and-integral-float",
        json.dumps({"name": "create_event", "arguments": {"title": "A", "all_day": "False"}}),
        {"name": "create_event", "arguments": {"title": "A", "all_day": False}},
    ),
    (
        "rule5-integral-float-to-int",
        json.dumps({"name": "get_weather", "arguments": {**W, "days": 3.0, "extra": 1}}),
        {"name": "get_weather", "arguments": {**W, "days": 3}},
    ),
    (
        "rule11-unclosed-array-dropped",
        '{"name": "create_event", "arguments": {"title": "Standup", "attendees": ["ann", "bo',
        {"name": "create_event", "arguments": {"title": "Standup"}},
    ),
    (
        "rule11-complete-element-in-unclosed-array-dropped",
        '{"name": "create_event", "arguments": {"title": "Standup", "attendees": ["ann"',
        {"name": "create_event", "arguments": {"title": "Standup"}},
    ),
    (
        "rule11-open-bracket-never-becomes-empty",
        '{"name": "create_event", "arguments": {"title": "Standup", "attendees": [',
        {"name": "create_event", "arguments": {"title": "Standup"}},
    ),
    (
        "rule11-number-at-cut-dropped",
        '{"name": "get_weather", "arguments": {"city": "Oslo", "units": "celsius", "days": 1',
        {"name": "get_weather", "arguments": W},
    ),
    (
        "rule11-complete-literal-kept",
        '{"name": "create_event", "arguments": {"title": "A", "all_day": true',
        {"name": "create_event", "arguments": {"title": "A", "all_day": True}},
    ),
    (
        "rule11-string-cut-dropped-default-refills-required",
        '{"name": "get_weather", "arguments": {"city": "Oslo", "units": "fahr',
        {"name": "get_weather", "arguments": W},
    ),
    (
        "rule11-closed-nested-object-kept",
        '{"name": "create_event", "arguments": {"title": "A", "location": {"room": "4B"}, "priority": "hi',
        {"name": "create_event", "arguments": {"title": "A", "location": {"room": "4B"}}},
    ),
]

REFUSAL_CASES: list[tuple[str, str]] = [
    ("rule3-hallucinated", json.dumps({"name": "book_flight", "arguments": {"to": "Oslo"}})),
    ("rule3-closest-looking-is-not-a-match", json.dumps({"name": "get_weathr", "arguments": W})),
    (
        "rule4-enum-no-member",
        json.dumps({"name": "get_weather", "arguments": {"city": "Oslo", "units": "kelvin"}}),
    ),
    ("rule5-lossy-word", json.dumps({"name": "get_weather", "arguments": {**W, "days": "three"}})),
    (
        "rule5-lossy-fraction",
        json.dumps({"name": "get_weather", "arguments": {**W, "days": "4.5"}}),
    ),
    (
        "rule5-yes-is-not-true",
        json.dumps({"name": "create_event", "arguments": {"title": "A", "all_day": "yes"}}),
    ),
    (
        "rule6-required-without-default",
        json.dumps({"name": "get_weather", "arguments": {"units": "celsius"}}),
    ),
    (
        "rule8-two-elements-for-a-scalar",
        json.dumps({"name": "create_event", "arguments": {"title": ["A", "B"]}}),
    ),
    (
        "rule10-copies-differ",
        json.dumps(
            [
                {"name": "get_forecast", "arguments": {"city": "Rome"}},
                {"name": "get_forecast", "arguments": {"city": "Oslo"}},
            ]
        ),
    ),
    ("rule11-cut-inside-name", '{"name": "get_wea'),
    (
        "rule11-required-lost-no-default",
        '{"name": "get_weather", "arguments": {"units": "celsius", "city": "Os',
    ),
    (
        "rule2-arguments-empty-is-still-missing",
        json.dumps({"name": "get_forecast", "arguments": {}}),
    ),
    ("no-call-prose", "I'm sorry, I can't look that up."),
    (
        "rule9-string-decodes-to-list",
        json.dumps({"name": "get_forecast", "arguments": json.dumps(["Rome"])}),
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [pytest.param(t, e, id=i) for i, t, e in VALUE_CASES]
)
def test_heldout_value_case(text: str, expected: dict[str, Any]) -> None:
    got = normalise(text, TOOLS)
    assert got is not None, "refused a repairable call"
    assert {"name": got["name"], "arguments": got["arguments"]} == expected
    assert json.dumps(got["arguments"], sort_keys=True) == json.dumps(
        expected["arguments"], sort_keys=True
    )


@pytest.mark.parametrize("text", [pytest.param(t, id=i) for i, t in REFUSAL_CASES])
def test_heldout_refusal_case(text: str) -> None:
    assert normalise(text, TOOLS) is None


def test_ambiguous_name_is_refused() -> None:
    tools = [
        _tool("send_mail", {"to": {"type": "string"}}, ["to"]),
        _tool("Send-Mail", {"to": {"type": "string"}}, ["to"]),
    ]
    assert normalise(json.dumps({"name": "SEND MAIL", "arguments": {"to": "a"}}), tools) is None
    # ...but an exact spelling is not ambiguous.
    assert normalise(json.dumps({"name": "send_mail", "arguments": {"to": "a"}}), tools) == {
        "name": "send_mail",
        "arguments": {"to": "a"},
    }
