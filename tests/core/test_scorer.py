"""The scorer's pure core: every grading rule it applies (1, 2, 12, D1.1, D1.2), the counts,
the report's field names, corpus errors, foreign corpora and the baseline comparison."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples
from test_scorer_data import TOOLS, TRUTH, call, corpus_bytes, refusal_case, tiny_corpus, value_case

from toolcall300.scoring import caseview, render
from toolcall300.scoring.corpus import CorpusError, parse_corpus
from toolcall300.scoring.grading import (
    EXACT,
    FALSE_REFUSAL,
    INVENTED_CALL,
    OUTCOMES,
    REFUSED_CORRECTLY,
    SCHEMA_INVALID,
    WRONG_CALL,
    grade_case,
)
from toolcall300.scoring.report import (
    COUNT_FIELDS,
    DETAIL_CHARS,
    ERROR_LINE_CHARS,
    ReportError,
    compare_reports,
    score_cases,
)

VALUE = value_case("v", "type_coercion", "", call())
NONE = refusal_case("u", "unrecoverable", "")

# ------------------------------------------------------------------ rule 1: exact match


def test_rule1_expected_call_passes_whatever_the_key_order() -> None:
    returned = {"arguments": {"hours": 2, "room": "atlas"}, "name": "book_room"}
    assert grade_case(VALUE, returned) == EXACT


def test_rule1_extra_top_level_keys_are_ignored() -> None:
    assert grade_case(VALUE, {**call(), "id": "call_9", "type": "function"}) == EXACT


def test_rule1_extra_keys_inside_arguments_are_not_ignored() -> None:
    assert grade_case(VALUE, call(attendees=["ann"])) == WRONG_CALL


def test_rule1_a_different_schema_valid_value_is_a_wrong_call() -> None:
    assert grade_case(VALUE, call(hours=3)) == WRONG_CALL


def test_rule1_a_different_tool_is_a_wrong_call() -> None:
    assert grade_case(VALUE, {"name": "ping", "arguments": {}}) == WRONG_CALL


def test_d12_integral_float_is_not_the_integer() -> None:
    # D1.2: canonical spelling, so 2.0 != 2 even though JSON Schema calls 2.0 an integer
    assert grade_case(VALUE, call(hours=2.0)) == WRONG_CALL


def test_d12_boolean_is_not_the_number_one() -> None:
    case = value_case("b", "type_coercion", "", call(hours=1))
    assert grade_case(case, call(hours=True)) == SCHEMA_INVALID


# ------------------------------------------------------------------ D1.1: what is not a call


@pytest.mark.parametrize(
    "returned",
    [
        [call()],
        "book_room",
        42,
        True,
        {"name": "book_room"},
        {"arguments": {"room": "atlas", "hours": 2}},
        {"name": "book_room", "arguments": '{"room": "atlas", "hours": 2}'},
        {"name": ["book_room"], "arguments": {}},
        call(hours="2"),
        call(room="Atlas"),
        {"name": "Book-Room", "arguments": {"room": "atlas", "hours": 2}},
        {"name": "book_room", "arguments": {"room": "atlas", "hours": float("nan")}},
    ],
    ids=lambda r: json.dumps(r, default=str)[:40],
)
def test_d11_anything_but_a_schema_valid_call_is_schema_invalid_never_a_refusal(
    returned: Any,
) -> None:
    assert grade_case(VALUE, returned) == SCHEMA_INVALID


# ------------------------------------------------------------------ rules 2 and 12: refusals


def test_rule2_only_a_refusal_passes_an_unrecoverable_case() -> None:
    assert grade_case(NONE, None) == REFUSED_CORRECTLY


@pytest.mark.parametrize(
    "returned", [{"name": "book_room", "arguments": {}}, call(), {}, [], "", 0, False]
)
def test_rule2_any_returned_value_on_an_unrecoverable_case_is_an_invented_call(
    returned: Any,
) -> None:
    assert grade_case(NONE, returned) == INVENTED_CALL


def test_rule12_none_is_a_refusal_and_fails_a_value_case() -> None:
    assert grade_case(VALUE, None) == FALSE_REFUSAL


def test_rule12_a_missing_answer_is_a_refusal() -> None:
    report = score_cases([VALUE, NONE], {})
    assert [r["outcome"] for r in report["per_case"]] == [FALSE_REFUSAL, REFUSED_CORRECTLY]


# ------------------------------------------------------------------ counts and report


def test_counts_follow_the_scoring_definitions() -> None:
    answers = {
        "room-1": TRUTH["room-1"],  # exact
        "room-2": call("borealis", 2),  # wrong call, schema-valid
        "room-3": None,  # false refusal
        "room-4": {"name": "order_pizza", "arguments": {}},  # invented AND schema-invalid
        "room-5": None,  # refused correctly
        "room-6": call(),  # invented, schema-valid
    }
    report = score_cases(tiny_corpus(), answers)
    assert {k: report[k] for k in COUNT_FIELDS} == {
        "cases": 6,
        "exact": 2,
        "refusal_cases": 3,
        "refused_correctly": 1,
        "invented_calls": 2,
        "false_refusals": 1,
        "schema_invalid_returns": 1,
    }
    assert report["categories"]["unrecoverable"] == {"n": 2, "pass": 1}
    assert report["categories"]["hallucinated_tool"] == {"n": 1, "pass": 0}


def test_report_uses_the_design_field_names() -> None:
    report = score_cases(tiny_corpus(), TRUTH, adapter="x", corpus_sha256="ab", timing={})
    assert set(report) == {
        "report_version",
        "spec_version",
        "corpus_sha256",
        "corpus_version",
        "adapter",
        "timing",
        *COUNT_FIELDS,
        "adapter_errors",
        "errors",
        "categories",
        "per_case",
        "failure_details",
    }
    assert set(report["timing"]) == {
        "total_seconds",
        "wall_seconds_per_case",
        "median_case_seconds",
    }
    assert all(set(r) == {"id", "category", "passed", "outcome"} for r in report["per_case"])
    assert report["exact"] == 6
    assert json.loads(json.dumps(report)) == report  # plain JSON, nothing else


def test_text_output_has_the_headline_block_and_table() -> None:
    text = render.render_text(score_cases(tiny_corpus(), {}, adapter="naive", corpus_sha256="ab"))
    assert text.startswith("TOOLCALL-300 adapter: naive\n")
    for label in ("exact match", "refused correctly", "invented calls", "false refusals"):
        assert label in text
    assert "schema-invalid returns" in text and "corpus sha256" in text
    assert "truncated" in text.split("category")[-1]
    assert "in-sample" not in text


def test_toolshim_output_says_the_figure_is_in_sample() -> None:
    report = score_cases(tiny_corpus(), {}, adapter="toolshim:normalise")
    assert render.IN_SAMPLE_NOTE in render.render_text(report, in_sample=True)
    assert "in-sample" not in render.render_text(report, in_sample=False)  # a third party's corpus


def test_adapter_errors_are_counted_apart_and_keep_the_grade() -> None:
    errors = {"room-3": "exit 1\nImportError: x", "room-5": "raised KeyError", "elsewhere": "x"}
    report = score_cases(tiny_corpus(), {"room-1": TRUTH["room-1"]}, errors=errors)
    assert report["adapter_errors"] == 2 and set(report["errors"]) == {"room-3", "room-5"}
    plain = score_cases(tiny_corpus(), {"room-1": TRUTH["room-1"]})
    assert {k: report[k] for k in COUNT_FIELDS} == {k: plain[k] for k in COUNT_FIELDS}
    text = render.render_text(report)
    assert "adapter errors          2" in text and "(1 of them adapter errors)" in text
    assert "first: room-3: ImportError: x" in text  # the first error's last line, in order


def test_a_saved_report_without_adapter_errors_is_still_a_baseline() -> None:
    current = score_cases(tiny_corpus(), TRUTH)
    old = {k: v for k, v in current.items() if k not in ("adapter_errors", "errors")}
    assert compare_reports(old, current)["regressed"] is False


# ------------------------------------------------------------------ corpus input


def test_parse_corpus_reads_cases_and_skips_blank_lines() -> None:
    data = b"\n" + corpus_bytes(tiny_corpus()) + b"\n\n"
    assert [c["id"] for c in parse_corpus(data)] == [c["id"] for c in tiny_corpus()]


def test_malformed_line_is_named_by_its_number() -> None:
    lines = corpus_bytes(tiny_corpus()).split(b"\n")
    lines[3] = b'{"id": "room-4", "category": '
    with pytest.raises(CorpusError, match=r"^line 4: not valid JSON"):
        parse_corpus(b"\n".join(lines))


def _broken(**changes: Any) -> bytes:
    case = copy.deepcopy(tiny_corpus()[0])
    case.update(changes)
    for key in [k for k, v in changes.items() if v is ...]:
        del case[key]
    return corpus_bytes([tiny_corpus()[1], case])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"category": "cooking"}, "unknown category 'cooking'"),
        ({"expected": ...}, "missing field(s): expected"),
        ({"tools": ..., "text": ...}, "missing field(s): text, tools"),
        ({"expected_kind": "maybe"}, "expected_kind must be"),
        ({"expected": None}, "expected must be an object"),
        ({"expected_kind": "unrecoverable"}, "expected must be null"),
        ({"category": "hallucinated_tool"}, "D2.1"),
        ({"expected": {"name": "nope", "arguments": {}}}, "undeclared tool 'nope'"),
        ({"id": 7}, "id must be a non-empty string"),
        ({"id": "room-2"}, "duplicate id 'room-2' (first on line 1)"),
        ({"tools": [TOOLS[0], TOOLS[0]]}, "tool names must be unique"),
        (
            {
                "tools": [
                    {"type": "function", "function": {"name": "x", "parameters": {"anyOf": []}}}
                ]
            },
            "not covered",
        ),
    ],
)
def test_an_ill_formed_case_is_an_input_error_naming_its_line(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(CorpusError) as err:
        parse_corpus(_broken(**changes))
    assert str(err.value).startswith("line 2: ")
    assert message in str(err.value)


def test_an_empty_corpus_is_an_input_error() -> None:
    with pytest.raises(CorpusError, match="no cases"):
        parse_corpus(b"\n")


def test_a_foreign_corpus_with_its_own_tools_ids_and_categories_scores() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "transfer",
            "parameters": {
                "type": "object",
                "properties": {"amount": {"type": "number"}, "memo": {"type": "string"}},
                "required": ["amount"],
            },
        },
    }
    expected = {"name": "transfer", "arguments": {"amount": 12.5}}
    cases = [
        {"id": "bank/a", "category": "args_as_string", "text": "t1", "tools": [tool],
         "expected_kind": "value", "expected": expected},
        {"id": "bank/b", "category": "multiple_calls", "text": "t2", "tools": [tool],
         "expected_kind": "unrecoverable", "expected": None},
    ]  # fmt: skip
    cases = parse_corpus(corpus_bytes(cases))
    report = score_cases(cases, {"bank/a": expected, "bank/b": None})
    assert report["exact"] == 2 and report["refusal_cases"] == 1
    assert list(report["categories"]) == ["args_as_string", "multiple_calls"]


# ------------------------------------------------------------------ the baseline gate


def _report(answers: dict[str, Any], sha: str = "c0ffee") -> dict[str, Any]:
    return score_cases(tiny_corpus(), answers, corpus_sha256=sha)


def test_equal_reports_do_not_regress() -> None:
    comparison = compare_reports(_report(TRUTH), _report(TRUTH))
    assert comparison["regressed"] is False and comparison["reasons"] == []
    assert comparison["flipped"] == {"fixed": [], "broken": []}


def test_exact_falling_regresses_and_names_the_broken_case() -> None:
    worse = {**TRUTH, "room-1": None}
    comparison = compare_reports(_report(TRUTH), _report(worse))
    assert comparison["regressed"]
    assert "exact fell 6 -> 5" in comparison["reasons"]
    assert "category type_coercion fell 1 -> 0" in comparison["reasons"]
    assert comparison["flipped"] == {"fixed": [], "broken": ["room-1"]}
    assert comparison["deltas"]["false_refusals"] == {"baseline": 0, "current": 1, "delta": 1}


def test_one_category_falling_regresses_even_when_exact_is_unchanged() -> None:
    base = {**TRUTH, "room-1": None}
    swapped = {**TRUTH, "room-2": None}
    comparison = compare_reports(_report(base), _report(swapped))
    assert comparison["deltas"]["exact"]["delta"] == 0
    assert comparison["reasons"] == ["category wrong_tool_name fell 1 -> 0"]
    assert comparison["categories"]["type_coercion"] == {"baseline": 0, "current": 1, "delta": 1}


def test_invented_or_schema_invalid_rising_regresses_without_a_pass_lost() -> None:
    # room-2 already fails both times; the second run fails it with an invalid call
    base = {**TRUTH, "room-2": None}
    worse = {**TRUTH, "room-2": {"name": "nope", "arguments": {}}}
    comparison = compare_reports(_report(base), _report(worse))
    assert comparison["reasons"] == ["schema_invalid_returns rose 0 -> 1"]


def test_fewer_false_refusals_alone_is_not_a_regression() -> None:
    base = {**TRUTH, "room-1": None}
    current = {**TRUTH, "room-1": call(hours=9)}
    assert not compare_reports(_report(base), _report(current))["regressed"]


def test_reports_over_different_corpora_cannot_be_compared() -> None:
    with pytest.raises(ReportError, match="different corpora"):
        compare_reports(_report(TRUTH, "aaaa"), _report(TRUTH, "bbbb"))


def test_a_malformed_baseline_cannot_be_compared() -> None:
    bad = _report(TRUTH)
    del bad["exact"]
    with pytest.raises(ReportError, match="baseline report: missing or non-integer 'exact'"):
        compare_reports(bad, _report(TRUTH))


# ------------------------------------------------------------------ properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
returned_values = json_values | st.fixed_dictionaries(
    {"name": st.sampled_from(["book_room", "ping", "BOOK_ROOM", ""]), "arguments": json_values}
) | st.builds(set) | st.builds(object)  # fmt: skip


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(returned_values, min_size=6, max_size=6))
def test_score_cases_never_crashes_and_is_deterministic(values: list[Any]) -> None:
    cases = tiny_corpus()
    answers = {c["id"]: v for c, v in zip(cases, values, strict=True)}
    first = score_cases(cases, answers, corpus_sha256="x")
    again = score_cases(copy.deepcopy(cases), dict(reversed(answers.items())), corpus_sha256="x")
    assert first == again
    assert all(r["outcome"] in OUTCOMES for r in first["per_case"])
    assert first["exact"] == sum(r["passed"] for r in first["per_case"])
    assert first["exact"] == sum(c["pass"] for c in first["categories"].values())
    assert first["refused_correctly"] + first["invented_calls"] == first["refusal_cases"]
    assert first["schema_invalid_returns"] <= first["cases"]


def test_each_case_not_passed_says_what_was_expected_and_what_came_back() -> None:
    cases = tiny_corpus()
    huge = {"name": "book_room", "arguments": {"room": "x" * 100_000, "hours": 2}}
    answers = {**TRUTH, "room-1": huge, "room-2": None, "room-3": None, "room-4": call()}
    report = score_cases(cases, answers, errors={"room-3": "Traceback\nValueError: no"})
    assert (
        report["failure_details"]["room-1"]["expected"]
        == '{"arguments":{"hours":2,"room":"atlas"},"name":"book_room"}'
    )
    returned = report["failure_details"]["room-1"]["returned"]
    assert len(returned) == DETAIL_CHARS and returned.endswith("...")  # cut, not 100 kB
    assert report["failure_details"]["room-2"]["returned"] == "a refusal (null)"
    assert report["failure_details"]["room-3"]["returned"] == (
        "nothing: the adapter broke (ValueError: no)"
    )
    assert report["failure_details"]["room-4"]["expected"] == "a refusal (no correct call exists)"
    assert list(report["failure_details"]) == [
        r["id"] for r in report["per_case"] if not r["passed"]
    ]


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(returned_values | st.text(min_size=150, max_size=400), min_size=6, max_size=6),
    st.dictionaries(
        st.sampled_from([c["id"] for c in tiny_corpus()]), st.text(max_size=400), max_size=6
    ),
)
def test_failure_details_cover_each_case_not_passed_and_stay_bounded(
    values: list[Any], errors: dict[str, str]
) -> None:
    cases = tiny_corpus()
    answers = {c["id"]: v for c, v in zip(cases, values, strict=True)}
    report = score_cases(cases, answers, errors=errors)
    failed = [r["id"] for r in report["per_case"] if not r["passed"]]
    assert list(report["failure_details"]) == failed
    broke = len("nothing: the adapter broke ()") + ERROR_LINE_CHARS
    for detail in report["failure_details"].values():
        assert set(detail) == {"expected", "returned", "input", "diff", "rule", "graded"}
        assert len(detail["expected"]) <= DETAIL_CHARS
        assert len(detail["returned"]) <= max(DETAIL_CHARS, broke)
        assert len(detail["input"]) <= caseview.INPUT_CHARS
        assert 1 <= len(detail["diff"]) <= caseview.DIFF_LINES + 1
        assert all(len(line) <= caseview.DIFF_LINE_CHARS for line in detail["diff"])


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from([None, "truth", "other"]), min_size=6, max_size=6))
def test_comparing_a_report_with_itself_never_regresses(choices: list[str | None]) -> None:
    pick = {None: None, "truth": None, "other": call(hours=7)}
    answers = {
        c["id"]: (TRUTH[c["id"]] if k == "truth" else pick[k])
        for c, k in zip(tiny_corpus(), choices, strict=True)
    }
    report = _report(answers)
    assert compare_reports(report, copy.deepcopy(report))["regressed"] is False


def test_a_leading_byte_order_mark_is_tolerated() -> None:
    assert len(parse_corpus(b"\xef\xbb\xbf" + corpus_bytes(tiny_corpus()))) == 6


def test_invalid_utf8_is_named_by_line() -> None:
    with pytest.raises(CorpusError, match="line 2: not UTF-8"):
        parse_corpus(corpus_bytes(tiny_corpus()[:1]) + b'{"id": "\xff"}\n')


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(st.sampled_from(["truth", "none", "other", "bad"]), min_size=6, max_size=6),
    st.lists(st.sampled_from(["truth", "none", "other", "bad"]), min_size=6, max_size=6),
)
def test_comparison_is_antisymmetric_and_regressed_means_a_reason(
    before: list[str], after: list[str]
) -> None:
    def answers(choices: list[str]) -> dict[str, Any]:
        pick = {"none": None, "other": call(hours=7), "bad": {"name": "x", "arguments": {}}}
        return {
            c["id"]: TRUTH[c["id"]] if k == "truth" else pick[k]
            for c, k in zip(tiny_corpus(), choices, strict=True)
        }

    a, b = _report(answers(before)), _report(answers(after))
    forward, backward = compare_reports(a, b), compare_reports(b, a)
    assert forward["regressed"] == bool(forward["reasons"])
    assert forward["flipped"]["fixed"] == backward["flipped"]["broken"]
    assert all(
        row["delta"] == -backward["deltas"][k]["delta"] for k, row in forward["deltas"].items()
    )
    if forward["flipped"]["broken"] == [] and b["invented_calls"] <= a["invented_calls"]:
        assert b["schema_invalid_returns"] > a["schema_invalid_returns"] or not forward["regressed"]


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(returned_values, min_size=6, max_size=6),
    st.dictionaries(
        st.sampled_from([c["id"] for c in tiny_corpus()]), st.text(max_size=40), max_size=6
    ),
    st.integers(min_value=1, max_value=3),
)
def test_every_rendering_takes_any_report(
    values: list[Any], errors: dict[str, str], columns: int
) -> None:
    # an adapter's stderr may hold any character: the JUnit XML must still parse
    cases = tiny_corpus()
    answers = {c["id"]: v for c, v in zip(cases, values, strict=True)}
    report = score_cases(cases, answers, adapter="a\x00b", errors=errors)
    assert report["adapter_errors"] == len(errors) and set(report["errors"]) == set(errors)
    reports = [report] * columns
    assert "adapter errors" in render.render_text(report, in_sample=True)
    assert render.render_failures(report, cases, answers, {}).count("error    ") == len(errors)
    table = render.render_side_by_side(reports).splitlines()
    assert sum(line.startswith("category") for line in table) == 1
    assert render.render_markdown(reports).count("| exact match |") == 1
    root = ET.fromstring(render.render_junit(reports))
    suites = root.findall("testsuite")
    assert len(suites) == columns
    assert all(len(s.findall("testcase")) == len(cases) for s in suites)
    assert len(suites[0].findall("testcase/system-err")) == len(errors)
