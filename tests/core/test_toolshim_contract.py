"""The reference normaliser follows each decision the contract took where it was once silent
(the E ids and D1.3, D5.3, D6.3, D7.4, D8.2, D10.2, D11.7, D11.8 of ``score --spec``)."""

from __future__ import annotations

from typing import Any

import pytest

from toolcall300.spec import decision_ids
from toolcall300.toolshim import normalise

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "default": 1},
        "t": {"type": "array", "items": {"type": "object"}},
        "o": {"type": "object"},
        "c": {"type": "object", "additionalProperties": False},
    },
    "required": ["n"],
}
TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "g"}},
]
G = {"name": "g", "arguments": {}}

CASES: list[tuple[str, str, Any]] = [
    ("E1", '{"name":"g","arguments":{}} {"name":"g","arguments":{}}', G),
    ("E1", 'Sure: {"name":"g","arguments":{}}', None),
    (
        "E2",
        '{"tool_calls":[{"id":"c","type":"function","function":{"name":"g","arguments":"{}"}}]}',
        G,
    ),
    ("E2", '{"function_call":{"name":"g","arguments":{}}}', G),
    ("E2", '{"name":"g","arguments":{},"input":{}}', G),
    ("E2", '{"name":"g","arguments":{},"input":{"a":1}}', None),
    ("E3", '{"type":"tool_use","id":"t","name":"g","input":"{}"}', G),
    ("E4", '{"id":"x","arguments":{}}', None),
    ("D1.3", '{"name":"g"}', G),
    ("D1.3", '{"name":"g"', None),
    ("D5.3", '{"name":"f","arguments":{"n":null}}', None),
    ("D6.3", '{"name":"g","arguments":{"x":1}}', G),
    (
        "D7.4",
        '{"name":"f","arguments":{"n":1,"o":{"zz":1}}}',
        {"name": "f", "arguments": {"n": 1, "o": {"zz": 1}}},
    ),
    (
        "D7.4",
        '{"name":"f","arguments":{"n":1,"c":{"zz":1}}}',
        {"name": "f", "arguments": {"n": 1, "c": {}}},
    ),
    (
        "D8.2",
        '{"name":"f","arguments":{"n":1,"t":{"a":1}}}',
        {"name": "f", "arguments": {"n": 1, "t": [{"a": 1}]}},
    ),
    ("D8.2", '{"name":"f","arguments":{"n":1,"t":null}}', None),
    ("D10.2", '[{"name":"g","arguments":{}}, 3]', None),
    ("D10.2", '[{"name":"g","arguments":{}}, {"name":"g","argu', None),
    ("D11.7", '{"name":"f","arguments":{"n":12 ', {"name": "f", "arguments": {"n": 12}}),
    ("D11.8", '{"name":"f","arguments":"{\\"n\\":12,', {"name": "f", "arguments": {"n": 12}}),
    ("D11.8", '{"name":"f","arguments":"{\\"n\\":12,"}', None),
]


@pytest.mark.parametrize(("decision", "text", "expected"), CASES)
def test_toolshim_follows_the_decision(decision: str, text: str, expected: Any) -> None:
    assert decision in decision_ids()
    assert normalise(text, TOOLS) == expected
