"""Small inline corpora for the scorer, adapter and stream tests (and a check that they are well formed).

The scorer must score ANY corpus in the case format (docs/case-format.md), so these use their own tools,
ids and a few of the twelve categories, never the project's corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolcall300.scoring.corpus import case_problem, parse_corpus

BOOK = {
    "type": "function",
    "function": {
        "name": "book_room",
        "description": "Book a meeting room.",
        "parameters": {
            "type": "object",
            "properties": {
                "room": {"type": "string", "enum": ["atlas", "borealis"]},
                "hours": {"type": "integer", "minimum": 1},
                "attendees": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["room", "hours"],
            "additionalProperties": False,
        },
    },
}
PING = {"function": {"name": "ping"}}  # type defaults to function; parameters optional (tools.json)
TOOLS = [BOOK, PING]


def call(room: str = "atlas", hours: int = 2, **more: Any) -> dict[str, Any]:
    return {"name": "book_room", "arguments": {"room": room, "hours": hours, **more}}


def value_case(cid: str, category: str, text: str, expected: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": cid,
        "category": category,
        "text": text,
        "tools": TOOLS,
        "expected_kind": "value",
        "expected": expected,
    }


def refusal_case(cid: str, category: str, text: str) -> dict[str, Any]:
    return {
        "id": cid,
        "category": category,
        "text": text,
        "tools": TOOLS,
        "expected_kind": "unrecoverable",
        "expected": None,
    }


def tiny_corpus() -> list[dict[str, Any]]:
    """Six cases: two parse as-is but are wrong, one is truncated, three expect a refusal."""
    return [
        value_case(
            "room-1",
            "type_coercion",
            json.dumps({"name": "book_room", "arguments": {"room": "atlas", "hours": "2"}}),
            call(),
        ),
        value_case(
            "room-2",
            "wrong_tool_name",
            json.dumps({"name": "Book-Room", "arguments": {"room": "borealis", "hours": 1}}),
            call("borealis", 1),
        ),
        value_case(
            "room-3",
            "truncated",
            '{"name": "book_room", "arguments": {"room": "atlas", "hou',
            call(),
        ),
        refusal_case(
            "room-4",
            "hallucinated_tool",
            json.dumps({"name": "order_pizza", "arguments": {"size": "L"}}),
        ),
        refusal_case("room-5", "unrecoverable", '{"name": "book_room", "arguments": {"room": "mo'),
        refusal_case(
            "room-6",
            "unrecoverable",
            json.dumps({"name": "book_room", "arguments": {"room": "the big one", "hours": 2}}),
        ),
    ]


def corpus_bytes(cases: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(c) + "\n" for c in cases).encode("utf-8")


def write_corpus(folder: Path, cases: list[dict[str, Any]] | None = None) -> Path:
    path = folder / "corpus.jsonl"
    path.write_bytes(corpus_bytes(tiny_corpus() if cases is None else cases))
    return path


#: What a correct normaliser returns on tiny_corpus (None: refuse).
TRUTH = {c["id"]: c["expected"] for c in tiny_corpus()}


#: A module of adapters answering from ``TRUTH`` (``.format(truth=...)`` gives its source):
#: perfect, worse (refuses the borealis cases), boom (always raises), and two that raise on
#: the borealis cases only.
ADAPTERS = """
import json
TRUTH = json.loads({truth!r})

def perfect(text, tools):
    return TRUTH[text]

def worse(text, tools):
    value = TRUTH[text]
    return None if value and value["arguments"].get("room") == "borealis" else value

def boom(text, tools):
    raise RuntimeError("no")

def sometimes(text, tools):
    value = TRUTH[text]
    if value and value["arguments"].get("room") == "borealis":
        raise RuntimeError("no")
    return value

def breaks_on_borealis(text, tools):
    value = TRUTH[text]
    if value and value["arguments"].get("room") == "borealis":
        raise RuntimeError("borealis is out of order")
    return value
"""


def test_tiny_corpus_is_well_formed() -> None:
    assert all(case_problem(c) is None for c in tiny_corpus())
    assert len(parse_corpus(corpus_bytes(tiny_corpus()))) == 6
