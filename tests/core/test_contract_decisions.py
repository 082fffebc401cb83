"""Cases built on the decisions corpus v3 added where the contract had left a held-out writer
to guess (D5.4, D5.5, D7.5-D7.7, D8.3, D10.4): each a text, a catalog and the one expected
outcome, graded as the scorer grades, and followed by the reference normaliser.

They are written from the decision's text; toolshim passing them is in-sample (same team),
so they pin the contract's reading, not a score.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from toolcall300.spec import decision_ids
from toolcall300.toolshim.pipeline import normalise


def tools(properties: dict[str, Any], required: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    params = {"type": "object", "properties": properties, "required": list(required)}
    return [{"type": "function", "function": {"name": "f", "parameters": params}}]


NUMBER = tools({"x": {"type": "number"}})
INTEGER = tools({"x": {"type": "integer"}}, ("x",))
OPTIONAL = tools({"x": {"type": "integer"}, "days": {"type": "integer"}}, ("x",))
ADDRESS = tools(
    {
        "name": {"type": "string"},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        },
    }
)
DEEP = tools(
    {
        "a": {
            "type": "object",
            "properties": {
                "b": {
                    "type": "object",
                    "properties": {"c": {"type": "integer"}, "d": {"type": "integer"}},
                }
            },
        }
    }
)
CITY = tools({"city": {"type": "string"}}, ("city",))
#: `city` is declared twice below the top level (trip.to.city and home.city): no single home
TWO_HOMES = tools(
    {
        "trip": {
            "type": "object",
            "properties": {
                "to": {"type": "object", "properties": {"city": {"type": "string"}}},
                "note": {"type": "string"},
            },
        },
        "home": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
)


PRIORITY = tools({"p": {"type": "string", "enum": ["low", "high_priority"]}}, ("p",))
HOLD = tools({"s": {"type": "string", "enum": ["on_hold", "on-hold"]}}, ("s",))
#: `a.c` beside `a.b.c`: the bare `c` has two homes, the dotted path one
TWO_C = tools(
    {
        "a": {
            "type": "object",
            "properties": {
                "c": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": {"type": "integer"}}},
            },
        }
    }
)
#: `email` is declared only in the items of an array; `meta` is free-form (D7.4)
ITEMS = tools(
    {
        "title": {"type": "string"},
        "attendees": {
            "type": "array",
            "items": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
        "meta": {"type": "object"},
    },
    ("title",),
)
OPTIONAL_ONLY = tools({"x": {"type": "integer"}, "y": {"type": "string"}})
DEFAULTED = tools({"x": {"type": "integer", "default": 7}}, ("x",))


def call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": "f", "arguments": arguments}


def text(arguments: Any) -> str:
    return json.dumps({"name": "f", "arguments": arguments})


CASES = [
    ("D5.4", text({"x": "1e3"}), NUMBER, call({"x": 1000.0})),
    ("D5.4", text({"x": "1E3"}), NUMBER, call({"x": 1000.0})),
    ("D5.4", text({"x": "-3"}), NUMBER, call({"x": -3})),
    ("D5.4", text({"x": "12.5"}), NUMBER, call({"x": 12.5})),
    ("D5.4", text({"x": "1e3"}), INTEGER, None),
    ("D5.5", text({"x": 1, "days": "abc"}), OPTIONAL, None),
    ("D5.5", text({"x": 1, "days": [1, 2]}), OPTIONAL, None),
    ("D7.5", text({"a": {"b.c": 1, "d": 2}}), DEEP, call({"a": {"b": {"c": 1, "d": 2}}})),
    ("D7.5", text({"a": {"c": 1}}), DEEP, call({"a": {"b": {"c": 1}}})),
    ("D7.5", text({"c": 1, "a": {"d": 2}}), DEEP, call({"a": {"b": {"c": 1, "d": 2}}})),
    ("D7.5", text({"a.b.c": 1}), DEEP, call({"a": {"b": {"c": 1}}})),
    (
        "D7.5",
        text({"trip": {"note": "x"}, "city": "Oslo"}),
        TWO_HOMES,
        call({"trip": {"note": "x"}}),
    ),
    (
        "D7.6",
        text({"address": {"city": "Oslo"}, "zip": "0150"}),
        ADDRESS,
        call({"address": {"city": "Oslo", "zip": "0150"}}),
    ),
    (
        "D7.6",
        text({"address": {"zip": "0150"}, "address.zip": "0150"}),
        ADDRESS,
        call({"address": {"zip": "0150"}}),
    ),
    ("D7.6", text({"address": {"zip": "0150"}, "zip": "9999"}), ADDRESS, None),
    ("D7.7", text({"City": "Oslo"}), CITY, None),
    ("D7.7", text({"city": "Oslo", "City": "Rome"}), CITY, call({"city": "Oslo"})),
    ("D8.3", text({"address": [{"city": "Oslo"}]}), ADDRESS, call({"address": {"city": "Oslo"}})),
    ("D8.3", text({"address": []}), ADDRESS, None),
    ("D8.3", text({"address": [{"city": "Oslo"}, {"city": "Rome"}]}), ADDRESS, None),
    ("D10.4", '[{"name": "f", "arguments": {"x": 1}}', INTEGER, call({"x": 1})),
    ("D10.4", '[{"name": "f", "arguments": {"x": 1}},', INTEGER, call({"x": 1})),
    ("D10.4", '[{"name": "f", "arguments": {"x": 1}}, {"name": "f", "argu', INTEGER, None),
    # the readings the second held-out set found open (test_toolshim_heldout2), decided
    ("D4.2", text({"p": "High  Priority"}), PRIORITY, None),
    ("D4.2", text({"p": "_low_"}), PRIORITY, None),
    ("D4.2", text({"p": " High-Priority "}), PRIORITY, call({"p": "high_priority"})),
    ("D4.3", text({"s": "on-hold"}), HOLD, call({"s": "on-hold"})),
    ("D4.3", text({"s": "ON-HOLD"}), HOLD, None),
    ("D7.5", text({"a.b.c": 1}), TWO_C, call({"a": {"b": {"c": 1}}})),
    ("D7.5", text({"a": {"b": {}}, "c": 1}), TWO_C, call({"a": {"b": {}}})),
    ("D7.8", text({"title": "t", "email": "x@y.z"}), ITEMS, call({"title": "t"})),
    ("D7.8", text({"title": "t", "meta.x": 1}), ITEMS, call({"title": "t"})),
    (
        "D7.8",
        text({"title": "t", "attendees": [{"email": "x@y.z"}]}),
        ITEMS,
        call({"title": "t", "attendees": [{"email": "x@y.z"}]}),
    ),
    ("D11.9", '{"name": "f", "arguments": {', OPTIONAL_ONLY, call({})),
    ("D11.9", '{"name": "f", "arguments": {', DEFAULTED, call({"x": 7})),
    ("D11.9", '{"name": "f", "arguments": {', CITY, None),
    ("D1.3", '{"name": "f"', OPTIONAL_ONLY, None),
    ("E1", "\ufeff" + text({"x": 1}), OPTIONAL_ONLY, None),
    ("E1", '{"name": "f", "arguments": {"x": 1' + "0" * 400 + "}}", OPTIONAL_ONLY, None),
    (
        "E2",
        json.dumps({"name": "f", "arguments": '{"x": 1}', "input": {"x": 1}}),
        OPTIONAL_ONLY,
        None,
    ),
    (
        "E2",
        json.dumps({"tool_calls": [{"name": "f", "arguments": {"x": 1}}]}),
        OPTIONAL_ONLY,
        call({"x": 1}),
    ),
]


def test_every_case_rests_on_a_decision_of_the_contract() -> None:
    assert {did for did, *_ in CASES} <= set(decision_ids())


@pytest.mark.parametrize(
    ("decision", "sent", "catalog", "expected"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_the_reference_normaliser_follows_the_decision(
    decision: str, sent: str, catalog: list[dict[str, Any]], expected: dict[str, Any] | None
) -> None:
    got = normalise(sent, catalog)
    if expected is None:
        assert got is None, (decision, got)
    else:  # rule 1: compared by canonical JSON spelling, so 1000.0 and 1000 differ (D1.2)
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_the_corpus_builds_cases_on_every_one_of_the_decisions() -> None:
    """Each of the seven decisions issue-24 asked for has at least two cases in the private
    corpus (version 3.1), in the category that measures it: D5.4 ("1e3" read as 1000.0) and
    D5.5 (a lossy value on an optional property, refused), D7.5 (re-nesting inside an
    object), D7.6 (a flattened key merged into the written object), D7.7 (a required property
    under a noisy name, refused), D8.3 (an object in a one-element array) and D10.4 (one
    complete call in an array cut after it)."""
    from pathlib import Path

    private = Path(__file__).resolve().parents[2] / "corpus_private"
    if not (private / "rationale.jsonl").is_file():
        pytest.skip("corpus_private/ not in this checkout")
    rules = {
        row["id"]: row["rule"]
        for row in map(json.loads, (private / "rationale.jsonl").read_text().splitlines())
    }
    category = {
        row["id"]: row["category"]
        for row in map(json.loads, (private / "toolcall300.jsonl").read_text().splitlines())
    }
    where = {
        "D5.4": "type_coercion",
        "D5.5": "unrecoverable",
        "D7.5": "nested_flattened",
        "D7.6": "nested_flattened",
        "D7.7": "unrecoverable",
        "D8.3": "array_vs_scalar",
        "D10.4": "truncated",
    }
    for decision, measured_in in where.items():
        ids = [i for i, rule in rules.items() if decision in re.split(r"[\s,;]+", rule)]
        assert len(ids) >= 2, decision
        assert {category[i] for i in ids} >= {measured_in}, decision
