"""Every integrity check class catches a deliberately broken case (and the real corpus passes)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.generator.build import corpus_from_files
from toolcall300.generator.checks import CHECKS, Corpus, _diffs, run_checks
from toolcall300.generator.cli import corpus_files
from toolcall300.generator.oracles import completed_prefix, one_call, tool_of

PRIVATE = Path(__file__).resolve().parents[2] / "corpus_private"


@pytest.fixture(scope="module")
def pristine() -> Corpus:
    return corpus_from_files(corpus_files(PRIVATE))


def first(
    corpus: Corpus, category: str, where: Callable[[dict[str, Any]], bool] = lambda c: True
) -> dict[str, Any]:
    return next(c for c in corpus.cases if c["category"] == category and where(c))


def set_call(case: dict[str, Any], name: str, arguments: Any) -> None:
    case["text"] = json.dumps({"name": name, "arguments": arguments})


def edit_sent(case: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> None:
    call = one_call(case)
    assert call is not None
    edit(call["arguments"])
    set_call(case, call["name"], call["arguments"])


def schema_of(case: dict[str, Any]) -> dict[str, Any]:
    tool = tool_of(case, case["expected"]["name"])
    assert tool is not None
    return tool["function"]["parameters"]  # type: ignore[no-any-return]


def _break_categories(c: Corpus) -> None:
    first(c, "truncated")["category"] = "wrong_tool_name"


def _break_ids_sequential(c: Corpus) -> None:
    c.cases[0]["id"], c.cases[1]["id"] = c.cases[1]["id"], c.cases[0]["id"]


def _break_ids_unique(c: Corpus) -> None:
    c.cases[1]["id"] = c.cases[0]["id"]


def _break_texts_unique(c: Corpus) -> None:
    c.cases[1]["text"] = c.cases[0]["text"]


def _break_case_shape(c: Corpus) -> None:
    c.cases[3]["note"] = "hand-edited"


def _break_refusals(c: Corpus) -> None:
    case = first(c, "hallucinated_tool")
    case["expected_kind"], case["expected"] = "value", {"name": "x", "arguments": {}}


def _break_tools_catalog(c: Corpus) -> None:
    c.cases[0]["tools"][0]["x-mutates"] = True


def _break_expected_declared(c: Corpus) -> None:
    first(c, "type_coercion")["expected"]["name"] = "no_such_tool"


def _break_expected_valid(c: Corpus) -> None:
    case = first(c, "wrong_tool_name")
    key = schema_of(case)["required"][0]
    case["expected"]["arguments"][key] = {"not": "valid"}


def _break_expected_declared_only(c: Corpus) -> None:
    first(c, "enum_violation")["expected"]["arguments"]["smuggled"] = 1


def _break_expected_formats(c: Corpus) -> None:
    def has_date(case: dict[str, Any]) -> bool:
        return case["expected_kind"] == "value" and "from_date" in case["expected"]["arguments"]

    case = next(x for x in c.cases if has_date(x))
    case["expected"]["arguments"]["from_date"] = "2026-02-30"  # no such day (RFC 3339)


def _break_texts_parse(c: Corpus) -> None:
    first(c, "args_as_string")["text"] += "}"


def _break_truncated_unparsable(c: Corpus) -> None:
    case = first(c, "truncated")
    case["text"] = json.dumps(case["expected"])


def _break_truncated_rederived(c: Corpus) -> None:
    # keep a property the stream never completed: the label would invent a value
    first(c, "truncated")["expected"]["arguments"]["invented"] = "value"


def _break_mangled_names_resolve(c: Corpus) -> None:
    case = first(c, "wrong_tool_name")
    set_call(case, case["expected"]["name"], case["expected"]["arguments"])


def _break_names_untouched(c: Corpus) -> None:
    case = first(c, "type_coercion")
    edit_sent(case, lambda args: None)
    case["text"] = case["text"].replace(
        json.dumps(case["expected"]["name"]), '"some_other_tool"', 1
    )


def _break_hallucinated_resolve_none(c: Corpus) -> None:
    case = first(c, "hallucinated_tool")
    set_call(case, case["tools"][0]["function"]["name"].upper(), {})


def _break_enum_single_member(c: Corpus) -> None:
    case = first(c, "enum_violation")
    (path, _, _) = _diffs(case)[0]
    edit_sent(case, lambda args: _set(args, path, "not-a-member-at-all"))


def _set(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _break_unrecoverable_enum_none(c: Corpus) -> None:
    case = first(c, "enum_violation")
    case["category"], case["expected_kind"], case["expected"] = (
        "unrecoverable",
        "unrecoverable",
        None,
    )


def _break_lossless_roundtrip(c: Corpus) -> None:
    case = first(c, "type_coercion")
    (path, _, _) = _diffs(case)[0]
    edit_sent(case, lambda args: _set(args, path, "yes"))


def _break_args_string_decodes(c: Corpus) -> None:
    case = first(c, "args_as_string")
    case["text"] = json.dumps({"name": case["expected"]["name"], "arguments": json.dumps({})})


def _break_multiple_agree(c: Corpus) -> None:
    case = first(c, "multiple_calls")
    case["text"] = json.dumps([case["expected"], case["expected"]])  # identical valid copies


def test_multiple_agree_catches_a_copy_that_differs_once_repaired(pristine: Corpus) -> None:
    broken = copy.deepcopy(pristine)
    case = first(broken, "multiple_calls")
    other = {"name": case["expected"]["name"].upper(), "arguments": {}}
    case["text"] = json.dumps(
        [{"name": case["expected"]["name"].upper(), **case["expected"]}, other]
    )
    failures = [m for _, m in run_checks(broken, only=("multiple_agree",)).failures]
    assert any("repaired on its own" in m for m in failures), failures


def _break_integrator_fails(c: Corpus) -> None:
    case = first(c, "args_as_string")
    arguments = json.dumps(case["expected"]["arguments"])  # encoded once, as OpenAI's format does
    case["text"] = json.dumps(
        {"function": {"name": case["expected"]["name"], "arguments": arguments}}
    )


def test_args_string_catches_a_string_encoded_only_as_its_format_carries(pristine: Corpus) -> None:
    broken = copy.deepcopy(pristine)
    _break_integrator_fails(broken)
    failures = [m for _, m in run_checks(broken, only=("args_string_decodes",)).failures]
    assert any("D9.2" in m for m in failures), failures


def _break_decisions_named(c: Corpus) -> None:
    case = first(c, "truncated")
    case["text"] += ', "zz": 12 '  # now rests on D11.7 (whitespace after a number at the cut)


def _break_rationale_cites(c: Corpus) -> None:
    c.rationale[0]["rationale"] += " See D99.9."


def _break_discrimination(c: Corpus) -> None:
    assert c.manifest is not None
    c.manifest["discrimination"]["categories"]["type_coercion"]["integrator"] = 3


def _break_flattened_renests(c: Corpus) -> None:
    case = first(c, "nested_flattened")
    set_call(case, case["expected"]["name"], case["expected"]["arguments"])


def _nested_name(case: dict[str, Any]) -> str | None:
    props = schema_of(case).get("properties", {})
    inner = [k for v in props.values() for k in v.get("properties", {}) if k not in props]
    return inner[0] if inner else None


def _break_undeclared_not_nested(c: Corpus) -> None:
    case = first(c, "extra_undeclared_arg", lambda x: _nested_name(x) is not None)
    name = _nested_name(case)
    edit_sent(case, lambda args: args.update({str(name): "ambiguous"}))


def _break_array_scalar_one_element(c: Corpus) -> None:
    case = first(c, "array_vs_scalar")
    (path, _, want) = _diffs(case)[0]
    edit_sent(case, lambda args: _set(args, path, [want, want]))


def _break_missing_required_default(c: Corpus) -> None:
    case = first(c, "missing_required_arg")
    set_call(case, case["expected"]["name"], case["expected"]["arguments"])


def _optional_present(case: dict[str, Any]) -> str | None:
    required = schema_of(case).get("required", [])
    return next((k for k in case["expected"]["arguments"] if k not in required), None)


def _break_optional_defaults_unfilled(c: Corpus) -> None:
    case = first(c, "wrong_tool_name", lambda x: _optional_present(x) is not None)
    key = str(_optional_present(case))
    edit_sent(case, lambda args: args.pop(key))


def _break_not_valid_as_sent(c: Corpus) -> None:
    case = first(c, "type_coercion")
    set_call(case, case["expected"]["name"], case["expected"]["arguments"])


def _break_unrecoverable_has_defect(c: Corpus) -> None:
    donor = first(c, "wrong_tool_name")
    case = first(c, "unrecoverable")
    case["tools"] = copy.deepcopy(donor["tools"])
    set_call(case, donor["expected"]["name"], donor["expected"]["arguments"])


def _break_rationale_rows(c: Corpus) -> None:
    c.rationale.pop()


def _break_sample30(c: Corpus) -> None:
    c.sample.pop(0)


def _break_manifest_pins(c: Corpus) -> None:
    assert c.manifest is not None
    c.manifest["files"]["rationale.jsonl"]["sha256"] = "0" * 64


def _rule_of(c: Corpus, case: dict[str, Any]) -> str:
    return next(str(r["rule"]) for r in c.rationale if r["id"] == case["id"])


def _break_container_text_decoded(c: Corpus) -> None:
    from toolcall300.generator.oracles import container_texts

    case = first(c, "type_coercion", lambda x: "D5.6" in _rule_of(c, x))
    call = one_call(case)
    assert call is not None
    (path, text, _), *_ = container_texts(call["arguments"], schema_of(case))
    case["expected"]["arguments"][path[0]] = [text]  # what rule 8 once made of it (D8.4)


def _break_empty_text_reads(c: Corpus) -> None:
    case = first(c, "args_as_string", lambda x: "D9.3" in _rule_of(c, x))
    case["expected"]["arguments"] = {"warehouse": "LIS-1"}  # invented: nothing was written


def _break_documents_agree(c: Corpus) -> None:
    case = first(c, "multiple_calls", lambda x: "D9.4" in _rule_of(c, x))
    copy_of = json.dumps(case["expected"]["arguments"])
    set_call(case, case["expected"]["name"], copy_of + copy_of)  # identical valid copies


def _break_envelope_lifts(c: Corpus) -> None:
    case = first(c, "nested_flattened", lambda x: "E5" in _rule_of(c, x))
    case["expected"]["arguments"].popitem()


def test_the_checks_of_corpus_4_are_registered_and_run_by_the_build(pristine: Corpus) -> None:
    """The check classes that re-derive corpus 4.0's decisions from the text (D5.6 and D8.4,
    D9.3, D9.4, E5 and D7.9): removing one fails here as well as in its breaker."""
    new = {"container_text_decoded", "empty_text_reads", "documents_agree", "envelope_lifts"}
    assert pristine.manifest is not None
    assert new <= set(CHECKS) and new <= set(pristine.manifest["checks"])


BREAKERS: dict[str, Callable[[Corpus], None]] = {
    name: globals()[f"_break_{name}"] for name in CHECKS if f"_break_{name}" in globals()
}


def test_every_check_class_has_a_breaker() -> None:
    assert sorted(BREAKERS) == sorted(CHECKS)
    assert len(CHECKS) >= 23


def test_the_private_corpus_passes_every_check(pristine: Corpus) -> None:
    report = run_checks(pristine)
    assert report.ok, report.failures[:5]
    assert report.assertions > 300 * 10


@pytest.mark.parametrize("name", sorted(BREAKERS))
def test_each_check_catches_its_broken_case(pristine: Corpus, name: str) -> None:
    broken = copy.deepcopy(pristine)
    BREAKERS[name](broken)
    fired = {check for check, _ in run_checks(broken, only=(name,)).failures}
    assert fired == {name}


# ---------------------------------------------------------------------- the rule-11 reader

TEXT = '{"name":"f","arguments":{"a":"xy","n":12,"b":true,"l":["p","q"],"o":{"k":1},"z":"end"}}'


@given(st.integers(min_value=0, max_value=len(TEXT)))
def test_completed_prefix_keeps_only_completely_written_values(cut: int) -> None:
    prefix = completed_prefix(TEXT[:cut])
    full = json.loads(TEXT)["arguments"]
    if prefix is None:
        assert '"arguments":{' not in TEXT[:cut]
        return
    # invariant: what is kept is an in-order prefix of the call, each value whole
    assert list(prefix) == list(full)[: len(prefix)]
    assert all(prefix[k] == full[k] for k in prefix)


@pytest.mark.parametrize(
    ("tail", "kept"),
    [
        ('"a":"xy","n":1', ["a"]),  # D11.3: the number may have had more digits
        ('"a":"xy","n":12,', ["a", "n"]),
        ('"a":"xy","n":12,"b":tr', ["a", "n"]),
        ('"a":"xy","n":12,"b":true,"l":["p"', ["a", "n", "b"]),  # D11.2
        ('"a":"xy","n":12,"b":true,"l":[', ["a", "n", "b"]),  # D11.4
        ('"a":"x', []),
        ('"a":"xy","n":1.', ["a"]),
    ],
)
def test_completed_prefix_follows_the_strict_reading(tail: str, kept: list[str]) -> None:
    assert list(completed_prefix('{"name":"f","arguments":{' + tail) or {}) == kept
