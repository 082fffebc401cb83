"""Rule 7 cases on D7.5 (re-nesting inside a declared object) and D7.6 (a flattened key merging
into the object also written): the generator builds them from the private inputs, and the
``flattened_renests`` check refuses the mislabelled readings."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.generator.build import FILES, Inputs, build
from toolcall300.generator.checks import Corpus, run_checks
from toolcall300.generator.oracles import one_call, refusal_reasons
from toolcall300.toolshim import normalise

INPUTS = Path(__file__).resolve().parents[2] / "corpus_private" / "inputs"
Case = dict[str, Any]


@pytest.fixture(scope="module")
def private() -> list[tuple[Case, dict[str, Any]]]:
    """The private corpus as its recipe builds it now: each case with its rationale row."""
    recipe = json.loads((INPUTS / "recipe.json").read_text())
    made = build(
        Inputs(
            "tools.json",
            (INPUTS / "tools.json").read_bytes(),
            "pools.json",
            (INPUTS / "pools.json").read_bytes(),
            int(recipe["seed"]),
        )
    )
    assert made.report.ok, made.report.failures[:3]
    cases = [json.loads(x) for x in made.files[FILES[0]].decode().splitlines()]
    rows = [json.loads(x) for x in made.files[FILES[1]].decode().splitlines()]
    return list(zip(cases, rows, strict=True))


def _flattened(private: list[tuple[Case, dict[str, Any]]], *ids: str) -> list[tuple[Case, str]]:
    """nested_flattened cases whose rule cites exactly ``ids`` after rule 7's own D7.1/D7.5."""
    return [
        (c, r["rule"])
        for c, r in private
        if c["category"] == "nested_flattened" and r["rule"] == "rule 7 / " + ", ".join(ids)
    ]


def _home(key: str, parent: str, members: dict[str, Any]) -> str | None:
    """D7.1 by hand: a bare member name or its dotted path under ``parent``."""
    leaf = key.removeprefix(f"{parent}.")
    return leaf if leaf in members and (leaf == key or key == f"{parent}.{leaf}") else None


def test_the_private_inputs_build_a_d75_case_re_nested_inside_its_object(
    private: list[tuple[Case, dict[str, Any]]],
) -> None:
    found = _flattened(private, "D7.5")
    assert found, "no case re-nests inside a declared object (D7.5)"
    for case, _ in found:
        call = one_call(case)
        assert call is not None and call["name"] == "book_shipment"
        sent = call["arguments"]["shipment"]
        want = case["expected"]["arguments"]["shipment"]
        members = want["destination"]
        assert set(members) >= {"city", "postcode", "country"}
        # the destination's keys were written in `shipment`, beside its own weight_kg
        assert "destination" not in sent and "weight_kg" in sent
        inner = {k: v for k, v in sent.items() if _home(k, "destination", members)}
        assert {_home(k, "destination", members): v for k, v in inner.items()} == members
        # everything outside the nested object is as written (D7.5: nothing else changes)
        rest = {k: v for k, v in sent.items() if k not in inner}
        assert {k: v for k, v in want.items() if k != "destination"} == rest
        assert normalise(case["text"], case["tools"]) == case["expected"]


def test_the_private_inputs_build_d76_merges_of_the_written_object_and_its_flattened_keys(
    private: list[tuple[Case, dict[str, Any]]],
) -> None:
    merged = _flattened(private, "D7.1", "D7.6") + _flattened(private, "D7.5", "D7.6")
    assert len(merged) >= 5, "D7.6 merges should be a share of the category"
    assert any("D7.5" in rule for _, rule in merged), "no merge one object down"
    collapses = 0
    for case, rule in merged:
        call = one_call(case)
        assert call is not None
        sent = call["arguments"]
        want = case["expected"]["arguments"]
        if "D7.5" in rule:
            sent, want = sent["shipment"], want["shipment"]
        # the one nested object that is both written and flattened beside it
        parents = [
            p
            for p, v in want.items()
            if isinstance(v, dict)
            and isinstance(sent.get(p), dict)
            and any(_home(k, p, v) for k in sent if k != p)
        ]
        assert len(parents) == 1, parents
        parent = parents[0]
        written = sent[parent]
        flat = {_home(k, parent, want[parent]): v for k, v in sent.items() if k != parent}
        flat.pop(None, None)
        assert written and flat, "a merge writes both halves"
        assert set(written) != set(want[parent]), "the written object lacked a key"
        both = set(written) & set(flat)
        collapses += bool(both)
        assert all(written[k] == flat[k] for k in both)  # equal values collapse
        assert {**written, **flat} == want[parent]  # the full object, no half dropped
        assert normalise(case["text"], case["tools"]) == case["expected"]
    assert collapses, "no merge writes a key both inside and flattened (collapse)"


# ---------------------------------------------------------------------- the check on hand-made cases


def _shipment_tool() -> dict[str, Any]:
    tools = json.loads((INPUTS / "tools.json").read_text())
    return next(t for t in tools if t["function"]["name"] == "book_shipment")


DESTINATION = {"city": "Porto", "postcode": "4000-322", "country": "PT"}
TOP = {"order_ref": "ORD-4471", "service": "express"}


def _case(sent: dict[str, Any], expected: dict[str, Any], rule: str) -> Corpus:
    case = {
        "id": "tc300-0001",
        "category": "nested_flattened",
        "text": json.dumps({"name": "book_shipment", "arguments": sent}),
        "tools": [_shipment_tool()],
        "expected_kind": "value",
        "expected": {"name": "book_shipment", "arguments": expected},
    }
    row = {"id": "tc300-0001", "rule": rule, "rationale": "re-nested as rule 7 says. " * 3}
    return Corpus([case], [row])


def _fails(corpus: Corpus) -> list[str]:
    return [msg for _, msg in run_checks(corpus, only=("flattened_renests",)).failures]


FULL = {**TOP, "shipment": {"destination": DESTINATION, "weight_kg": 2.25}}
D75_SENT = {**TOP, "shipment": {**DESTINATION, "weight_kg": 2.25}}
# written half first, then its flattened keys, one of them repeated with the same value
MERGE_SENT = {
    **TOP,
    "shipment": {
        "destination": {"city": "Porto"},
        "destination.postcode": "4000-322",
        "country": "PT",
        "city": "Porto",
        "weight_kg": 2.25,
    },
}
# the flattened keys before the written object (a reader that lets the object overwrite them
# reads only the written half)
MERGE_FLAT_FIRST = {
    **TOP,
    "shipment": {
        "postcode": "4000-322",
        "country": "PT",
        "destination": {"city": "Porto"},
        "weight_kg": 2.25,
    },
}


# D7.6 at the top level: the nested object flattened before the object written with the rest
TOP_FLAT_FIRST = {**TOP, "destination": DESTINATION, "shipment": {"weight_kg": 2.25}}


@pytest.mark.parametrize(
    ("sent", "rule"),
    [
        (D75_SENT, "rule 7 / D7.5"),
        (MERGE_SENT, "rule 7 / D7.5, D7.6"),
        (MERGE_FLAT_FIRST, "rule 7 / D7.5, D7.6"),
        (TOP_FLAT_FIRST, "rule 7 / D7.1, D7.6"),
    ],
)
def test_flattened_renests_accepts_the_d75_and_d76_readings(
    sent: dict[str, Any], rule: str
) -> None:
    assert _fails(_case(sent, FULL, rule)) == []


def test_flattened_renests_refuses_inner_keys_left_at_the_outer_level() -> None:
    """D7.5 mislabelled: the destination's keys kept in ``shipment`` (fails on the old check,
    which re-nested the top level only)."""
    assert _fails(_case(D75_SENT, copy.deepcopy(D75_SENT), "rule 7 / D7.5")) == [
        "tc300-0001: re-nesting does not give the expected arguments"
    ]


def _with_destination(destination: dict[str, Any]) -> dict[str, Any]:
    return {**TOP, "shipment": {"destination": destination, "weight_kg": 2.25}}


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (MERGE_FLAT_FIRST, _with_destination({"city": "Porto"})),  # the flattened half dropped
        (MERGE_FLAT_FIRST, _with_destination({"postcode": "4000-322", "country": "PT"})),
        # the flattened object dropped for the written one (fails on the old check, which
        # let the object written later overwrite what it had re-nested)
        (TOP_FLAT_FIRST, {**TOP, "shipment": {"weight_kg": 2.25}}),
    ],
)
def test_flattened_renests_refuses_a_merge_that_drops_a_half(
    sent: dict[str, Any], expected: dict[str, Any]
) -> None:
    broken = _case(sent, expected, "rule 7 / D7.5, D7.6")
    assert "tc300-0001: re-nesting does not give the expected arguments" in _fails(broken)


def test_flattened_renests_refuses_a_conflict_labelled_as_a_value() -> None:
    """D7.6: the same key with another value is a conflict, so the call is refused; no
    reading of it is a label (fails on the old check, where the flattened value won)."""
    sent = copy.deepcopy(MERGE_SENT)
    sent["shipment"]["city"] = "Lisbon"
    lisbon = _with_destination({**DESTINATION, "city": "Lisbon"})
    failures = _fails(_case(sent, lisbon, "rule 7 / D7.5, D7.6"))
    assert any("differs from the written 'city' (D7.6)" in f for f in failures), failures
    assert "tc300-0001: re-nesting does not give the expected arguments" in failures


@pytest.mark.parametrize(
    ("sent", "rule", "missing"),
    [
        (D75_SENT, "rule 7 / D7.1", "D7.5"),
        (MERGE_SENT, "rule 7 / D7.5", "D7.6"),
    ],
)
def test_flattened_renests_refuses_a_rationale_that_does_not_cite_the_decision_used(
    sent: dict[str, Any], rule: str, missing: str
) -> None:
    assert _fails(_case(sent, FULL, rule)) == [
        f"tc300-0001: re-nesting uses {missing}, which the rationale does not cite"
    ]


# ---------------------------------------------------------------------- D7.6 in the refusal mix


def test_the_refusal_mix_holds_a_flattened_key_conflicting_with_the_written_object(
    private: list[tuple[Case, dict[str, Any]]],
) -> None:
    found = [c for c, r in private if r["rule"] == "rule 7 / D7.6"]
    assert found and all(c["category"] == "unrecoverable" for c in found)
    for case in found:
        call = one_call(case)
        assert call is not None and case["expected"] is None
        sent = call["arguments"]
        # a written object, and one of its keys beside it (bare or dotted) with another value
        clashes = [
            (p, k)
            for p, v in sent.items()
            if isinstance(v, dict)
            for k in sent
            if k != p and _home(k, p, v) and v[_home(k, p, v) or ""] != sent[k]
        ]
        assert len(clashes) == 1, clashes
        assert any("(D7.6)" in reason for reason in refusal_reasons(case))
        assert normalise(case["text"], case["tools"]) is None
    assert sum(c["expected"] is None for c, _ in private) == 50


def test_a_conflicting_flattened_key_is_a_named_refusal() -> None:
    """The unrecoverable_has_defect check finds the conflict (fails on the old oracle, which
    read the written object alone and found nothing wrong with the text)."""
    sent = {**TOP, "shipment": {"destination": DESTINATION, "weight_kg": 2.25}, "weight_kg": 4.75}
    corpus = _case(sent, FULL, "rule 7 / D7.6")
    case = corpus.cases[0]
    case.update(category="unrecoverable", expected_kind="unrecoverable", expected=None)
    assert refusal_reasons(case) == [
        "a flattened key conflicts: 'weight_kg' differs from the written 'weight_kg' (D7.6)"
    ]
    assert not run_checks(corpus, only=("unrecoverable_has_defect",)).failures
    case["text"] = json.dumps({"name": "book_shipment", "arguments": {**sent, "weight_kg": 2.25}})
    assert run_checks(corpus, only=("unrecoverable_has_defect",)).failures  # equal: collapses


def test_a_fresh_build_keeps_two_cases_on_each_decision_the_corpus_builds_on(
    private: list[tuple[Case, dict[str, Any]]],
) -> None:
    """A new tool moves every category's rotation: a decision that had its cases by the luck of
    the order (D5.5 fell to one when book_shipment was added) keeps them by construction."""
    rules = [r["rule"] for _, r in private]
    for decision in ("D5.5", "D7.5", "D7.6", "D7.7", "D8.3"):
        assert sum(decision in rule for rule in rules) >= 2, decision
