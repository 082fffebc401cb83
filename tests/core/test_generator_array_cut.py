"""Rule 11 / D10.4 in the corpus: an array of calls cut right after its one complete call.

The generator builds such truncated cases from the private inputs, labelled with that call;
the integrity checks re-derive the label from the text alone and refuse the readings D10.4
rules out (a second call begun and cut is D10.2's refusal, not the first call)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from test_generator import PRIVATE, cli

from toolcall300.controls import integrator, naive, passes
from toolcall300.generator.build import corpus_from_files
from toolcall300.generator.checks import Corpus, run_checks
from toolcall300.generator.cli import corpus_files
from toolcall300.generator.oracles import array_cut_calls, cut_call_array, refusal_reasons
from toolcall300.toolshim import normalise

CALL = '{"name": "f", "arguments": {"x": 1, "y": "a"}}'
F = {"name": "f", "arguments": {"x": 1, "y": "a"}}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("d104")
    code, _, err = cli("--rebuild", str(PRIVATE), "--out", str(out))
    assert code == 0, err
    return corpus_from_files(corpus_files(out))


def array_cut_cases(corpus: Corpus) -> list[dict[str, Any]]:
    rules = {r["id"]: r["rule"] for r in corpus.rationale}
    return [c for c in corpus.cases if rules[c["id"]] == "rule 11 / D10.4"]


def first_item(text: str) -> tuple[Any, str]:
    """The array's first item decoded by the standard library, and the text after it."""
    opening = re.match(r'\s*(\[|\{\s*"tool_calls"\s*:\s*\[)\s*', text)
    assert opening, text
    item, end = json.JSONDecoder().raw_decode(text, opening.end())
    return item, text[end:]


def as_call(item: dict[str, Any]) -> dict[str, Any]:
    inner = item.get("function", item)
    key = next(k for k in ("arguments", "parameters", "input") if k in inner)
    return {"name": inner["name"], "arguments": inner[key]}


def test_the_private_inputs_build_array_cuts_labelled_with_the_one_complete_call(
    built: Corpus,
) -> None:
    cases = array_cut_cases(built)
    assert 2 <= len(cases) <= 4
    openings = set()
    for case in cases:
        assert case["category"] == "truncated" and case["expected_kind"] == "value"
        with pytest.raises(ValueError):
            json.loads(case["text"])
        item, after = first_item(case["text"])
        assert re.fullmatch(r"\s*,?\s*", after), after  # cut right after the call's `}`
        assert case["expected"] == as_call(item)
        openings.add(case["text"].lstrip()[:2])
    assert len(openings) >= 2  # a bare array and OpenAI's tool_calls message at least


def test_toolshim_reads_each_array_cut_as_its_call_and_the_controls_do_not(built: Corpus) -> None:
    for case in array_cut_cases(built):
        assert passes(case, normalise(case["text"], case["tools"]))
        assert not passes(case, naive(case["text"], case["tools"]))
        assert not passes(case, integrator(case["text"], case["tools"]))


def test_the_built_corpus_passes_every_check(built: Corpus) -> None:
    report = run_checks(built)
    assert report.ok, report.failures[:5]


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("[" + CALL, [F]),
        ("[" + CALL + ",", [F]),
        ("[" + CALL + ", \n", [F]),
        ('{"tool_calls": [{"id": "c", "type": "function", "function": ' + CALL + "},", [F]),
        ("[" + CALL + ", " + CALL, [F, F]),  # two complete calls: D10.4 reads one only
        ("[" + CALL + ', {"name": "f", "argu', None),  # D10.2: a second call begun and cut
        ("[" + CALL + ", 3", None),  # a begun item that is not a call (D10.2, E4)
        ('[{"name": "f", "arguments": {"x": 1', None),  # cut inside the call: rule 11 alone
        ("[" + CALL + "]", None),
        ("[" + CALL + "] x", None),
        (CALL[:-1], None),
    ],
)
def test_the_array_cut_reader(text: str, calls: list[dict[str, Any]] | None) -> None:
    assert array_cut_calls(text) == calls


def test_the_array_cut_reader_names_what_was_begun_after_the_call() -> None:
    assert cut_call_array("[" + CALL + ', {"name"') == ([F], '{"name"')
    assert cut_call_array('[{"name": "f", "argu') is None


# ------------------------------------------------------------------ mislabelled array cuts


def _failures(corpus: Corpus, case: dict[str, Any], *checks: str) -> list[str]:
    report = run_checks(corpus, only=checks)
    return [m for _, m in report.failures if m.startswith(f"{case['id']}:")]


def _broken(built: Corpus) -> tuple[Corpus, dict[str, Any]]:
    corpus = copy.deepcopy(built)
    return corpus, array_cut_cases(corpus)[0]


def _second_call(case: dict[str, Any], tail: str) -> None:
    item, _ = first_item(case["text"])
    case["text"] = "[" + json.dumps(item) + ", " + tail


def test_a_second_call_begun_and_cut_is_not_the_first_call(built: Corpus) -> None:
    # D10.2: the text is refused; the rule-11-within-one-call reader took the first call
    corpus, case = _broken(built)
    _second_call(case, '{"name": "' + case["expected"]["name"] + '", "arguments": {"')
    assert _failures(corpus, case, "truncated_rederived")


def test_two_complete_calls_cut_in_their_array_are_not_one_call(built: Corpus) -> None:
    corpus, case = _broken(built)
    other = {"name": case["expected"]["name"], "arguments": {}}
    _second_call(case, json.dumps(other))
    assert _failures(corpus, case, "truncated_rederived")


def test_an_array_cut_labelled_with_other_arguments_is_refused(built: Corpus) -> None:
    corpus, case = _broken(built)
    case["expected"]["arguments"].pop(next(iter(case["expected"]["arguments"])))
    assert _failures(corpus, case, "truncated_rederived")


def test_an_array_cut_labelled_as_a_refusal_is_refused(built: Corpus) -> None:
    corpus, case = _broken(built)
    case["expected"], case["expected_kind"] = None, "unrecoverable"
    assert _failures(corpus, case, "truncated_rederived")
    case["category"] = "unrecoverable"
    assert _failures(corpus, case, "unrecoverable_has_defect", "texts_parse")


def test_an_array_cut_whose_rationale_does_not_name_d104_is_refused(built: Corpus) -> None:
    corpus, case = _broken(built)
    row = next(r for r in corpus.rationale if r["id"] == case["id"])
    row["rule"] = "rule 11"
    row["rationale"] = row["rationale"].replace("(D10.4)", "")
    assert _failures(corpus, case, "decisions_named")


# ------------------------------------------------------------------ D10.2 in the refusal mix


def test_the_refusal_mix_holds_a_second_call_begun_and_cut_after_a_complete_one(
    built: Corpus,
) -> None:
    rules = {r["id"]: r["rule"] for r in built.rationale}
    cases = [c for c in built.cases if rules[c["id"]] == "rule 10 / D10.2"]
    assert cases and all(c["category"] == "unrecoverable" for c in cases)
    for case in cases:
        assert case["expected"] is None
        item, after = first_item(case["text"])
        assert as_call(item)["name"] in {t["function"]["name"] for t in case["tools"]}
        assert re.match(r'\s*,\s*\{\s*"', after), after  # a second call begun, then the cut
        assert "D10.2" in " ".join(refusal_reasons(case))
        assert normalise(case["text"], case["tools"]) is None
    refusals = [c for c in built.cases if c["expected"] is None]
    assert len(refusals) == 50


def test_a_second_call_cut_in_its_arguments_is_a_named_refusal(built: Corpus) -> None:
    corpus = copy.deepcopy(built)
    case = next(c for c in corpus.cases if c["category"] == "unrecoverable")
    case["text"] = "[" + CALL + ', {"name": "f", "arguments": {"x'
    assert refusal_reasons(case) == ["a call begun and cut after a complete one (D10.2)"]
    assert not _failures(corpus, case, "unrecoverable_has_defect", "texts_parse")
