"""D19's safety rule, by analysis (docs/catalog.md, "Patterns"): a pattern that can match one
text in exponentially many ways (nested quantifiers over overlapping alternatives, star height
above one with more than one way to cut the text) is not covered; linear patterns pass,
repeated groups included. One place decides (``schema.patterns.backtracking_hazard``): the
catalog reader, the generator and argcheck (D19) read the same answer.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.argcheck.check import check
from toolcall300.argcheck.criteria import DECISIONS
from toolcall300.catalog import catalog_problems
from toolcall300.schema import schema_problems
from toolcall300.schema.patterns import (
    MAX_ANALYSED_ATOMS,
    MAX_ANALYSED_STEPS,
    backtracking_hazard,
)

EXPONENTIAL = [
    "(a+)+$",
    "(a*)*b",
    "(x+x+)+y",
    "(a|a)*$",
    "(a|aa)*$",
    "(\\w|\\d)+$",
    "^(\\w|\\d)+$",
    "(\\w+\\s?)+$",
    "^([a-z]+-?)+$",
    "^([a-z]{1,100})+$",  # a bound above 16 reads as unbounded
    "(a|a){17}",
    "(?:a|ab|b)*c",
    "^(\\d+)*$",
    "(.*,)*x",
    "^(([a-z])+.)+[A-Z]([a-z])+$",  # the OWASP ReDoS example
    "b(?=(a+)+$)",  # a lookaround's body is a pattern of its own
]
LINEAR = [
    "^v\\d+(?:\\.\\d+)*$",  # the real server's version pattern the old rule refused
    "^[a-z]+(-[a-z]+)*$",
    "(a|ab)*",  # alternatives that share a first letter but cut every text one way
    "(?:a|b)*c",
    "(a|b){17}",
    "^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[\\w][\\w.-]{0,127})?$",
    "^[\\w.+-]+@[\\w-]+(\\.[\\w-]+)+$",
    "(\\d{1,3}\\.){3}\\d{1,3}",
    "^((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)$",
    "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    "^([a-zA-Z0-9_-]+/)*[a-zA-Z0-9_-]+$",
    "^(\\+|-)?\\d+(\\.\\d+)?$",
    "^https?://[^\\s/$.?#].[^\\s]*$",
    "\\d+\\d+$",  # polynomial, not exponential: the service's CPU budget bounds it (D20)
]


@pytest.mark.parametrize("pattern", EXPONENTIAL)
def test_a_pattern_with_exponentially_many_readings_is_not_covered(pattern: str) -> None:
    (problem,) = schema_problems({"type": "string", "pattern": pattern})
    assert problem.kind == "not_covered"
    assert "can match one text in exponentially many ways" in problem.message


@pytest.mark.parametrize("pattern", LINEAR)
def test_a_linear_pattern_is_covered(pattern: str) -> None:
    assert backtracking_hazard(pattern) is None
    assert schema_problems({"type": "string", "pattern": pattern}) == []


@pytest.mark.parametrize("pattern", EXPONENTIAL + LINEAR)
def test_argcheck_and_the_catalog_reader_decide_alike(pattern: str) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    answer = check({"schema": schema, "arguments": {}})
    refused = answer.get("refusal", {}).get("code") == "schema_not_covered"
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    assert refused == bool(catalog_problems([tool])) == (pattern in EXPONENTIAL)


def test_a_pattern_too_large_to_analyse_is_refused_by_name() -> None:
    hazard = backtracking_hazard("(?:.{0,16}){16}")
    assert hazard is not None and hazard.startswith("it is too large to analyse")


def test_d19_states_the_rule_and_its_limits() -> None:
    (d19,) = [d for d in DECISIONS if d["id"] == "D19-pattern-dialect"]
    text = d19["decision"]
    assert "^v\\d+(?:\\.\\d+)*$" in text and "(a|a)*" in text and "(\\w|\\d)+" in text
    assert str(MAX_ANALYSED_ATOMS) in text and str(MAX_ANALYSED_STEPS) in text


# Patterns over a small alphabet, nested at random: whatever the analysis says, it says in one
# line, never raising; and a pattern it refuses stays refused inside any context (wrapping it
# can add readings, never remove them).
_ATOMS = st.sampled_from(["a", "b", "[ab]", "a?", "b*", "."])


def _patterns() -> st.SearchStrategy[str]:
    return st.recursive(
        _ATOMS,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])).map(
                lambda t: f"(?:{t[0]}){t[1]}"
            ),
        ),
        max_leaves=6,
    )


@given(_patterns())
def test_the_analysis_answers_every_pattern_in_one_line(pattern: str) -> None:
    hazard = backtracking_hazard(pattern)
    assert hazard is None or ("\n" not in hazard and hazard.startswith("it "))
    re.compile(pattern)  # the patterns themselves are ordinary
    if hazard is not None:
        for wrapped in (f"^x(?:{pattern})y$", f"(?:{pattern})|z", f"(?:{pattern}){{2}}"):
            assert backtracking_hazard(wrapped) is not None, wrapped
