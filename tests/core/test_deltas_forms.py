"""The deltas corpus's forms of version 1.2 (docs/deltas.md, "Forms"): a tool that takes no
arguments in each provider's spelling, a closing quote and brace inside a string value, an
escaped surrogate pair cut between and inside its halves, and a Vertex stream cut mid-value.
Each is in the corpus, re-derived by the integrity checks (which refuse it mislabelled or
flattering), and read exactly by toolshim under every partition.

IN-SAMPLE WARNING: toolshim.deltas and this corpus were written from the same decisions.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.controls import integrator, passes
from toolcall300.generator import deltas as gen
from toolcall300.scoring.tracks import deltas as track
from toolcall300.toolshim.deltas import normalise_events

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "corpus_private" / "toolcall300.jsonl"


@pytest.fixture(scope="module")
def sources() -> list[dict[str, Any]]:
    return [json.loads(line) for line in MAIN.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def built(sources: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return gen.build(sources)


def _of(cases: list[dict[str, Any]], form: str) -> list[dict[str, Any]]:
    found = [c for c in cases if c["form"] == form]
    assert found, f"no {form} case"
    return found


def _fragment(case: dict[str, Any]) -> str:
    value: Any = case["events"][case["fragment_event"]]
    for step in case["fragment_path"]:
        value = value[step]
    assert isinstance(value, str)
    return value


def _exact_under_every_partition(case: dict[str, Any]) -> None:
    for offsets in case["partitions"]:
        for events in (gen.replay(case, offsets), track.replay(case, offsets)):
            answer = normalise_events(events, case["tools"])
            assert passes(case, answer), (case["id"], offsets, answer)


def test_a_tool_of_no_arguments_streams_in_each_providers_spelling(built: Any) -> None:
    cases = _of(built[0], "no_arguments")
    assert {c["shape"] for c in cases} == set(gen.SHAPES)
    for case in cases:
        assert case["expected"]["arguments"] == {}
        _exact_under_every_partition(case)
    texts = {(c["shape"], gen.reassemble(c, c["events"])[1]) for c in cases}
    assert {("openai_chat", ""), ("openai_chat", "{}"), ("gemini", ""), ("gemini", "{}")} <= texts
    chat_empty = next(
        c for c in cases if c["shape"] == "openai_chat" and not gen.reassemble(c, c["events"])[1]
    )
    assert len(chat_empty["events"]) == 2  # arguments "" beside the name, then the finish
    assert chat_empty["events"][0]["choices"][0]["delta"]["tool_calls"][0]["function"] == {
        "name": chat_empty["expected"]["name"],
        "arguments": "",
    }
    kinds = [[e["type"] for e in c["events"]] for c in cases if c["shape"] == "anthropic"]
    assert any("content_block_delta" not in k for k in kinds)  # no input_json_delta at all
    assert any("content_block_delta" in k for k in kinds)  # one with partial_json ""
    # accumulate-parse-validate refuses an empty arguments text: what users report
    for case in cases:
        name, text, _ = gen.reassemble(case, case["events"])
        if text == "":
            answer = integrator(json.dumps({"name": name, "arguments": text}), case["tools"])
            assert not passes(case, answer)


def test_a_closing_quote_and_brace_inside_a_string_is_cut_everywhere_around_it(
    built: Any,
) -> None:
    cases = _of(built[0], "closer_in_string")
    assert {c["shape"] for c in cases} == set(gen.SHAPES)
    spelled = json.dumps(gen.SUFFIXES["closer_in_string"])[1:-1]
    assert spelled == ' \\"} \\\\\\"}'  # a quote and brace, then a backslash, quote and brace
    texts = [c for c in cases if c["shape"] in gen.TEXT_ONLY_SHAPES + ("openai_responses",)]
    assert texts
    for case in texts:
        fragment = _fragment(case)
        at = fragment.index(spelled)
        around = list(range(at - 1, at + len(spelled) + 2))
        assert around in case["partitions"]
        assert all([o] in case["partitions"] for o in around)
    for case in cases:
        values = case["expected"]["arguments"].values()
        assert any(str(v).endswith(gen.SUFFIXES["closer_in_string"]) for v in values)
        _exact_under_every_partition(case)


def test_an_escaped_surrogate_pair_is_cut_between_and_inside_its_halves(built: Any) -> None:
    cases = _of(built[0], "astral_in_string")
    assert {c["shape"] for c in cases} == set(gen.SHAPES)
    escaped = [c for c in cases if c["fragment_event"] is not None and "\\ud83d" in _fragment(c)]
    assert escaped
    for case in escaped:
        at = _fragment(case).index("\\ud83d\\ude00")
        cuts = {o for p in case["partitions"] for o in p}
        assert at + 6 in cuts  # between the halves
        assert set(range(at + 1, at + 6)) | set(range(at + 7, at + 12)) <= cuts  # inside each
    raw = [c for c in cases if c["fragment_event"] is not None and "\U0001f600" in _fragment(c)]
    assert raw  # and written as the character itself, cut next to it
    for case in cases:
        values = case["expected"]["arguments"].values()
        assert any(str(v).endswith("\U0001f600") for v in values)
        _exact_under_every_partition(case)


def test_a_vertex_stream_cut_mid_value_is_read_by_rule_11(
    built: Any, sources: list[dict[str, Any]]
) -> None:
    cases = [c for c in _of(built[0], "cut") if c["shape"] == "vertex"]
    assert cases
    by_id = {s["id"]: s for s in sources}
    for case in cases:
        assert case["expected"] == by_id[case["source"]]["expected"]
        assert case["events"][-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"
        open_arg = case["events"][case["fragment_event"]]["candidates"][0]["content"]["parts"][0]
        assert open_arg["functionCall"]["partialArgs"][0]["willContinue"] is True
        for offsets in case["partitions"]:
            for events in (gen.replay(case, offsets), track.replay(case, offsets)):
                assert gen.vertex_completed(events) == gen.vertex_completed(case["events"])
        _exact_under_every_partition(case)
    # the same stream with its last value said complete is not rule 11's reading: refused
    cases_all, rationale = built
    wrong = copy.deepcopy(cases_all)
    case = next(c for c in wrong if c["id"] == cases[0]["id"])
    arg = case["events"][case["fragment_event"]]["candidates"][0]["content"]["parts"][0]
    arg["functionCall"]["partialArgs"][0]["willContinue"] = False
    problems = list(gen.check(wrong, rationale, sources))
    assert any(p.startswith(case["id"]) and "mid-value" in p for p in problems)


def test_the_checks_refuse_these_forms_mislabelled_or_flattering(
    built: Any, sources: list[dict[str, Any]]
) -> None:
    cases, rationale = built
    assert list(gen.check(cases, rationale, sources)) == []
    wrong = copy.deepcopy(cases)
    grown = next(c for c in wrong if c["form"] == "closer_in_string")
    key = next(k for k, v in grown["expected"]["arguments"].items() if '"}' in str(v))
    grown["expected"]["arguments"][key] = grown["expected"]["arguments"][key][:-1]
    problems = list(gen.check(wrong, rationale, sources))
    assert any(p.startswith(grown["id"]) and "appended" in p for p in problems)
    # a no-arguments call whose name needs nothing, streamed as "{}": the integrator passes it
    flattering = copy.deepcopy(cases)
    case = next(
        c
        for c in flattering
        if c["form"] == "no_arguments"
        and c["shape"] == "openai_chat"
        and gen.reassemble(c, c["events"])[0] == c["expected"]["name"]
    )
    case["events"], *_ = gen.render(
        "openai_chat", "standard", case["expected"]["name"], "{}", 1, cut=False
    )
    problems = list(gen.check(flattering, rationale, sources))
    assert any(p.startswith(case["id"]) and "flattering" in p for p in problems)
