"""Invariants of ``toolshim.parallel.normalise_all``: it never raises and never answers a call
its schema rejects; it is the single-call normaliser read per call (every call the
single-call pipeline returns for a text is the list's one entry); several valid calls in any
of the track's shapes come back as written, in order; and it never invents a call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples
from test_toolshim_properties import FIXED_TOOLS, JSON_VALUES, assert_valid_or_none, tool_and_call

from toolcall300.canonical import canonical
from toolcall300.toolshim.parallel import normalise_all
from toolcall300.toolshim.pipeline import normalise

ROOT = Path(__file__).resolve().parents[2]
MAIN = [
    json.loads(line)
    for line in (ROOT / "corpus_private" / "toolcall300.jsonl").read_text().splitlines()
]


def assert_list(result: Any, tools: list[dict[str, Any]]) -> None:
    assert isinstance(result, list)
    for entry in result:
        assert_valid_or_none(entry, tools)


@settings(max_examples=examples(400), deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text: str) -> None:
    assert_list(normalise_all(text, FIXED_TOOLS), FIXED_TOOLS)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(JSON_VALUES, max_size=5))
def test_arbitrary_json_never_raises(values: list[Any]) -> None:
    assert_list(normalise_all(json.dumps(values), FIXED_TOOLS), FIXED_TOOLS)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(JSON_VALUES, min_size=1, max_size=3),
    st.sampled_from(["get_weather", "get_weatherping", "pingping", "", None]),
    st.booleans(),
)
def test_arbitrary_fragments_and_merged_strings_never_raise(
    pieces: list[Any], name: Any, index: bool
) -> None:
    entries = [
        {
            **({"index": 0} if index else {}),
            "function": {"name": name if i == 0 else None, "arguments": json.dumps(p)[: 1 + i * 3]},
        }
        for i, p in enumerate(pieces)
    ]
    text = json.dumps({"tool_calls": entries})
    assert_list(normalise_all(text, FIXED_TOOLS), FIXED_TOOLS)


@pytest.mark.parametrize("case", MAIN, ids=[c["id"] for c in MAIN])
def test_a_call_the_single_call_pipeline_returns_is_the_lists_one_entry(
    case: dict[str, Any],
) -> None:
    """One normaliser, two shapes: where the single-call track answers a call (its copies
    agreeing, rule 10), the parallel track answers exactly that call."""
    single = normalise(case["text"], case["tools"])
    if single is not None:
        assert normalise_all(case["text"], case["tools"]) == [single]


SHAPES = ("bare", "openai", "anthropic", "indexed", "documents")


def written(calls: list[dict[str, Any]], shape: str) -> str:
    if shape == "bare":
        return json.dumps(calls)
    if shape == "anthropic":
        return json.dumps(
            [
                {"type": "tool_use", "id": f"t{i}", "name": c["name"], "input": c["arguments"]}
                for i, c in enumerate(calls)
            ]
        )
    if shape == "documents":
        return "\n".join(json.dumps(c) for c in calls)
    entries = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
        }
        for i, c in enumerate(calls)
    ]
    if shape == "indexed":
        entries = [{"index": 0, **e} for e in entries]  # a reused index (P6)
    return json.dumps({"role": "assistant", "content": None, "tool_calls": entries})


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(tool_and_call(), min_size=1, max_size=4), st.sampled_from(SHAPES))
def test_valid_calls_come_back_as_written_in_order(
    drawn: list[tuple[list[dict[str, Any]], dict[str, Any]]], shape: str
) -> None:
    tools: list[dict[str, Any]] = []
    calls = []
    for i, (own, call) in enumerate(drawn):  # each call its own tool, so no two collide
        name = f"{own[0]['function']['name']}_{i}"
        tools.append({"type": "function", "function": {**own[0]["function"], "name": name}})
        calls.append({"name": name, "arguments": call["arguments"]})
    got = normalise_all(written(calls, shape), tools)
    assert [canonical(c) for c in got] == [canonical(c) for c in calls]


@settings(max_examples=examples(200), deadline=None)
@given(tool_and_call(), st.integers(min_value=2, max_value=5))
def test_copies_collapse_and_stand_only_when_the_catalog_says(
    drawn: tuple[list[dict[str, Any]], dict[str, Any]], copies: int
) -> None:
    tools, call = drawn
    text = json.dumps([call] * copies)
    assert normalise_all(text, tools) == [normalise(json.dumps(call), tools)]
    marked = [
        {**tools[0], "function": {**tools[0]["function"], "annotations": {"idempotentHint": False}}}
    ]
    assert len(normalise_all(text, marked)) == copies
