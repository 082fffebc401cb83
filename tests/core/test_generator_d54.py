"""D5.4 in the corpus: a `number` written with an exponent is the float a JSON reader reads.

The generator writes a share of its `number` coercions with an exponent ("4e0") and labels
them with the float a JSON reader reads (4.0, never 4), and the ``lossless_roundtrip`` check
states rule 5 as D5.4 does, from its own reading of the spelling.
"""

from __future__ import annotations

import copy
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.canonical import loads_strict
from toolcall300.cli import dispatch
from toolcall300.generator.build import corpus_from_files
from toolcall300.generator.checks import Corpus, _diffs, run_checks
from toolcall300.generator.cli import corpus_files
from toolcall300.generator.oracles import one_call
from toolcall300.generator.rules.coercion import EXPONENT_STYLES, exponent_text

PRIVATE = Path(__file__).resolve().parents[2] / "corpus_private"
#: RFC 8259's number grammar, as the test reads it
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """The corpus the generator builds from the private inputs today (the committed one is
    regenerated separately, so it may not hold the newest cases yet)."""
    out = tmp_path_factory.mktemp("d54")
    err = io.StringIO()
    code = dispatch(["generate", "--rebuild", str(PRIVATE), "--out", str(out)], io.StringIO(), err)
    assert code == 0, err.getvalue()
    return corpus_from_files(corpus_files(out))


@pytest.fixture(scope="module")
def pristine() -> Corpus:
    return corpus_from_files(corpus_files(PRIVATE))


def d54_cases(corpus: Corpus) -> list[dict[str, Any]]:
    rules = {r["id"]: r["rule"] for r in corpus.rationale}
    return [c for c in corpus.cases if rules[c["id"]] == "rule 5 / D5.4"]


def test_the_private_inputs_build_d54_cases_with_a_float_expected(rebuilt: Corpus) -> None:
    cases = d54_cases(rebuilt)
    assert len(cases) >= 2, "the private catalog should feed at least two D5.4 cases"
    notes = {r["id"]: r["rationale"] for r in rebuilt.rationale}
    for case in cases:
        assert case["category"] == "type_coercion"
        exponents = [
            (sent, want)
            for _, sent, want in _diffs(case)
            if isinstance(sent, str) and "e" in sent.lower()
        ]
        assert exponents, case["id"]
        for sent, want in exponents:
            assert JSON_NUMBER.fullmatch(sent), sent
            assert type(want) is float and want == float(sent), (sent, want)
            assert (
                f"{json.dumps(sent)}, with an exponent, is the float {json.dumps(want)}"
                in notes[case["id"]]
            )
        assert "rule 5 / D5.4" in notes[case["id"]]


def test_the_check_refuses_an_exponent_labelled_with_an_int(rebuilt: Corpus) -> None:
    broken = copy.deepcopy(rebuilt)
    case = d54_cases(broken)[0]
    path, sent, want = next(d for d in _diffs(case) if isinstance(d[2], float))
    _set(case["expected"]["arguments"], path, int(want))  # "4e0" labelled 4: the wrong reading
    failures = run_checks(broken, only=("lossless_roundtrip",)).failures
    assert [c for c, _ in failures] == ["lossless_roundtrip"], failures
    assert (
        f"{sent!r} is not JSON number syntax a JSON reader reads as exactly {int(want)!r}"
        in (failures[0][1])
    )


def _set(args: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        args = args[key]
    args[path[-1]] = value


def _number_case(corpus: Corpus, kind: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The first type_coercion case of the committed corpus whose spelled value is a ``kind``."""
    for case in corpus.cases:
        if case["category"] != "type_coercion":
            continue
        for path, _, want in _diffs(case):
            if type(want).__name__ == kind:
                return case, path
    raise AssertionError(f"no type_coercion case spells a {kind}")


def _relabel(corpus: Corpus, kind: str, sent: str, want: Callable[[Any], Any]) -> Corpus:
    """The corpus with one coercion written as ``sent`` and labelled ``want(old label)``."""
    broken = copy.deepcopy(corpus)
    case, path = _number_case(broken, kind)
    call = one_call(case)
    assert call is not None
    _set(call["arguments"], path, sent)
    case["text"] = json.dumps({"name": call["name"], "arguments": call["arguments"]})
    expected = case["expected"]["arguments"]
    label = expected
    for key in path:
        label = label[key]
    _set(expected, path, want(label))
    return broken


# (the sent string, the expected value, whether rule 5 as D5.4 reads accepts it) on a number
NUMBER_LABELS = [
    ("1.2e2", 120.0, True),
    ("1.2E+2", 120.0, True),
    ("12e1", 120.0, True),
    ("120.00", 120.0, True),  # a JSON reader reads 120.0 whatever the trailing zeros
    ("120", 120, True),  # neither a fraction nor an exponent: an int
    ("1.2e2", 120, False),  # the exponent reads as a float: an int label is the wrong reading
    ("120", 120.0, False),  # no fraction, no exponent: an int, never 3.0 for "3"
    ("120.0", 120, False),
    (" 1.2e2", 120.0, False),  # JSON number syntax, no space around it
    ("+1.2e2", 120.0, False),
    ("1.2e+2 ", 120.0, False),
    ("1.e2", 100.0, False),
    ("0120", 120, False),
    ("1.2e999", 120.0, False),  # past a double: no JSON reader may read it as inf
    ("\u0661\u0662\u0660", 120, False),  # Arabic-Indic digits: int() reads them, JSON does not
    ("1.2e2", True, False),
]


@pytest.mark.parametrize(("sent", "label", "ok"), NUMBER_LABELS, ids=repr)
def test_the_check_reads_a_number_string_as_a_json_reader_does(
    pristine: Corpus, sent: str, label: Any, ok: bool
) -> None:
    broken = _relabel(pristine, "float", sent, lambda _: label)
    failures = run_checks(broken, only=("lossless_roundtrip",)).failures
    assert (not failures) == ok, failures


@pytest.mark.parametrize(("sent", "ok"), [("12", True), ("1.2e1", False), ("12.0", False)])
def test_an_integer_keeps_its_strict_syntax(pristine: Corpus, sent: str, ok: bool) -> None:
    """D5.1: "1e3" is refused for an `integer` property, even labelled 1000."""
    broken = _relabel(pristine, "int", sent, lambda _: 12)
    failures = run_checks(broken, only=("lossless_roundtrip",)).failures
    assert (not failures) == ok, failures


@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=len(EXPONENT_STYLES) - 1),
)
def test_every_finite_double_spelled_with_an_exponent_reads_back_as_itself(
    value: float, style: int
) -> None:
    text = exponent_text(value, style)
    assert JSON_NUMBER.fullmatch(text) and ("e" in text or "E" in text), text
    got = loads_strict(text)
    assert type(got) is float and repr(got) == repr(value), (text, got)  # -0.0 stays -0.0
