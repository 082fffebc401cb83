"""E1/E2: the three readers of a text find the same calls.

The integrator control (``controls.first_call``), toolshim's extractor
(``toolshim.envelope.extract_calls``) and the generator's own reader
(``generator.envelopes.sent_calls``) stay separate code on purpose (each checks the others),
but they read one vocabulary (``spec.ARGUMENT_KEYS``, ``FUNCTION_KEYS``, ``CALLS_KEY``) and must
agree: on the first call, and on whether a text is calls at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.canonical import canonical, loads_strict
from toolcall300.controls import CONFLICT, call_arguments, first_call
from toolcall300.generator.envelopes import sent_calls
from toolcall300.toolshim.envelope import extract_calls
from toolcall300.toolshim.types import ABSENT

CORPORA = [
    Path(__file__).resolve().parents[2] / "corpus_private" / "toolcall300.jsonl",
    Path(__file__).resolve().parents[2] / "layers/toolcall300/toolcall300/data/sample30.jsonl",
]


def by_controls(value: Any) -> Any:
    found = first_call(value)
    if found is None:
        return "none"
    arguments = call_arguments(found[0])
    return "conflict" if arguments is CONFLICT else (found[0]["name"], canonical(arguments))


def by_toolshim(value: Any) -> list[Any]:
    out: list[Any] = []
    for raw in extract_calls([value]):
        if not raw.is_call or not isinstance(raw.name, str):
            out.append("none")
        elif raw.args_conflict:
            out.append("conflict")
        else:
            out.append((raw.name, canonical({} if raw.arguments is ABSENT else raw.arguments)))
    return out


def by_generator(value: Any) -> list[Any] | None:
    calls = sent_calls(value)
    if calls is None:
        return None
    return [(c["name"], canonical({} if c["arguments"] is None else c["arguments"])) for c in calls]


def assert_agree(value: Any) -> None:
    controls, toolshim, generator = by_controls(value), by_toolshim(value), by_generator(value)
    assert controls == (toolshim[0] if toolshim else "none"), (value, controls, toolshim)
    if generator is None:  # not calls: some item is no call, or is refused (E2, E4, D10.2)
        assert not toolshim or any(item in ("none", "conflict") for item in toolshim), value
    else:
        assert generator == toolshim, (value, generator, toolshim)


CALL = {"name": "f", "arguments": {"n": 1}}


@pytest.mark.parametrize(
    ("value", "first"),
    [
        ({"function_call": {"name": "f", "arguments": {"n": 1}}}, ("f", '{"n":1}')),
        ([{"tool_calls": [{"type": "function", "function": CALL}]}], ("f", '{"n":1}')),
        ([[CALL]], "none"),  # E1: an array's item that is an array is no call (E4)
        ({"tool_calls": [[CALL]]}, "none"),
        ({"name": "f", "arguments": {"n": 1}, "input": {"n": 2}}, "conflict"),
        ({"name": "f", "arguments": {"n": 1}, "input": {"n": 1}}, ("f", '{"n":1}')),
        ({"name": "f"}, ("f", "{}")),
        (
            [{"tool_calls": []}, {"tool_calls": [{"name": "f"}]}],
            ("f", "{}"),
        ),  # found by CI's budget
        ([{"tool_calls": []}, 3], "none"),
    ],
)
def test_the_forms_the_readers_once_disagreed_on(value: Any, first: Any) -> None:
    assert by_controls(value) == first
    assert_agree(value)


def _texts() -> list[str]:
    return [json.loads(line)["text"] for path in CORPORA for line in path.read_text().splitlines()]


def test_the_readers_agree_on_every_corpus_text_that_parses() -> None:
    checked = 0
    for text in _texts():
        try:
            value = loads_strict(text)
        except (ValueError, RecursionError):
            continue  # cut texts: rule 11 is toolshim's alone
        assert_agree(value)
        checked += 1
    assert checked > 250


NAMES = st.sampled_from(["f", "g"])
ARGS = st.dictionaries(st.sampled_from(["n", "m"]), st.integers(0, 2), max_size=2)


@st.composite
def call_objects(draw: st.DrawFn) -> Any:
    call: dict[str, Any] = {}
    call["name"] = draw(st.one_of(NAMES, st.just(3)))
    for key in draw(
        st.lists(st.sampled_from(["arguments", "parameters", "input"]), unique=True, max_size=2)
    ):
        call[key] = draw(st.one_of(ARGS, ARGS.map(json.dumps)))
    wrap = draw(st.sampled_from(["bare", "function", "function_call", "typed", "tool_use"]))
    if wrap == "function" or wrap == "function_call":
        return {wrap: call}
    if wrap == "typed":
        return {"type": "function", "function": call}
    if wrap == "tool_use":
        return {"type": "tool_use", "id": "t", **call}
    return call


ITEMS = st.one_of(call_objects(), st.integers(), st.none(), st.lists(call_objects(), max_size=2))


@given(
    st.one_of(
        ITEMS,
        st.lists(ITEMS, max_size=3),
        st.lists(ITEMS, max_size=3).map(lambda items: {"tool_calls": items}),
        st.lists(st.lists(ITEMS, max_size=2).map(lambda i: {"tool_calls": i}), max_size=2),
    )
)
def test_the_readers_agree_on_any_envelope(value: Any) -> None:
    assert_agree(value)
