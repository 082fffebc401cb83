"""D19: a schema's ``pattern`` is ECMA-262 with the ``u`` flag, in its syntax as in its meaning.

Validity is ECMA's grammar, not Python's: Python-only syntax is ``schema_invalid`` even where
``re`` would run it, ECMA syntax ``re`` spells otherwise is translated, and valid ECMA that
``re`` cannot run with the same meaning is not covered.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.argcheck.check import check
from toolcall300.schema import schema_problems
from toolcall300.schema.patterns import (
    PatternNotCovered,
    PatternSyntaxError,
    compile_pattern,
    ecma_to_python,
)


def _kind(pattern: str) -> str:
    problems = schema_problems({"type": "string", "pattern": pattern})
    return problems[0].kind if problems else "covered"


@pytest.mark.parametrize(
    "pattern",
    [
        "(?P<n>a)",  # Python's named group
        "(?i)abc",  # Python's inline flags
        "a*+",  # Python's possessive quantifier
        "(?>a)b",  # Python's atomic group
        "(?#c)a",  # Python's comment group
        "\\Aabc\\Z",  # Python's anchors: no such escapes under the u flag
        "a{,3}",  # Python's {,n}: a lone brace under the u flag
        "\\a",  # the official test suite: not an ECMA control escape
        "a{2,1}",
        "\\1",  # a backreference to a group that does not exist
        "\\k<x>(?<y>a)",
        "[\\d-z]",  # a class escape cannot bound a range
        "[z-a]",
        "(?=a)*",  # assertions are not quantifiable under the u flag
        "^*",
        "a**",
        "[]a]",  # an empty class, then a lone ]
        "\\-",  # outside a class, - is no IdentityEscape under the u flag
        "\\c1",
        "\\x4",
        "\\u12",
        "\\01",  # no octal escapes
        "(",
        ")",
        "[a",
        "a\\",
        "\\p",
        "(?<1a>x)",
        "}",
    ],
)
def test_what_ecma_262_cannot_compile_is_schema_invalid(pattern: str) -> None:
    problems = schema_problems({"type": "string", "pattern": pattern})
    assert [p.kind for p in problems] == ["invalid"], problems
    assert problems[0].message.startswith("pattern is not ECMA-262: ")
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    refusal = check({"schema": schema, "arguments": {"s": "a"}})["refusal"]
    assert refusal["code"] == "schema_invalid", refusal


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("^(?<n>a)$", ["a"], ["b"]),
        ("^(?<$x_1>a)b$", ["ab"], ["a"]),
        ("^[^]$", ["\n", "\u2028", "x"], ["", "xy"]),
        ("^a[]b$", [], ["ab", "a]b"]),
        ("^\\cA\\cz$", ["\x01\x1a"], ["cA"]),
        ("^\\u{1F600}$", ["\U0001f600"], ["u{1F600}"]),
        ("^\\uD83D\\uDE00$", ["\U0001f600"], ["\ud83d"]),
        ("^\\x41\\u0042\\0$", ["AB\x00"], ["AB0"]),
        ("^[\\b]$", ["\x08"], ["b"]),
        ("^\\/\\.\\*\\{\\}$", ["/.*{}"], ["/x*{}"]),
        ("^[\\-a]+$", ["-a-"], ["b"]),
        ("^[\\S]$", ["x"], ["\u00a0", "\u2028", " "]),
        ("^[\\Sa]$", ["x", "a"], ["\u00a0"]),
        ("^[^\\Sa]$", [" ", "\u00a0"], ["a", "x"]),
        ("^[^\\S]$", ["\u3000"], ["x"]),
        ("^[\\D]$", ["\u0663", "a"], ["1"]),
        ("^\\w+\\b$", ["ab_1"], ["é"]),
        ("^a{2,3}?$", ["aa", "aaa"], ["a", "aaaa"]),
        ("^(?:ab)+(?=c)", ["ababc"], ["abd"]),
        ("(?<!a)b", ["cb", "b"], ["ab"]),
        ("^[a-]$", ["-"], ["b"]),
        ("^[--/]$", [".", "-", "/"], ["0"]),
        ("x$", ["x"], ["x\n"]),
    ],
)
def test_ecma_syntax_runs_with_its_ecma_meaning(
    pattern: str, matches: list[str], misses: list[str]
) -> None:
    assert _kind(pattern) == "covered"
    search = compile_pattern(pattern).search
    assert all(search(text) for text in matches), [t for t in matches if not search(t)]
    assert not any(search(text) for text in misses), [t for t in misses if search(t)]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?<n>a)\\k<n>", "backreferences"),
        ("\\k<n>(?<n>a)", "backreferences"),
        ("(a)\\1", "backreferences"),
        ("\\p{L}", "Unicode property escapes"),
        ("[\\P{Lu}a]", "Unicode property escapes"),
        ("(?<=a+)b", "cannot run it"),  # valid ECMA: lookbehind of any length
        ("(?i:a)", "modifier groups"),
        ("(?<n>a)|(?<n>b)", "group name used twice"),
        ("(" * 40 + "a" + ")" * 40, "nested deeper"),
        ("a{4294967295}", "repetition count"),
    ],
)
def test_valid_ecma_that_re_cannot_run_alike_is_not_covered(pattern: str, why: str) -> None:
    problems = schema_problems({"type": "string", "pattern": pattern})
    assert [p.kind for p in problems] == ["not_covered"], problems
    assert why in problems[0].message
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    assert check({"schema": schema, "arguments": {"s": "a"}})["refusal"]["code"] == (
        "schema_not_covered"
    )


def _ecma_literal(text: str) -> str:
    """``text`` written as an ECMA pattern matching exactly itself (SyntaxCharacters escaped)."""
    return "".join("\\" + c if c in "^$\\.*+?()[]{}|/" else c for c in text)


@given(st.text(max_size=40))
def test_an_escaped_literal_matches_exactly_itself(text: str) -> None:
    search = compile_pattern("^" + _ecma_literal(text) + "$").search
    assert search(text)
    assert not search(text + "x")


@given(
    st.text(
        alphabet=st.sampled_from(list("ab()[]{}|^$\\.*+?-,:=!<>0123dDsSwWbBkcux^")), max_size=14
    )
)
def test_any_pattern_is_translated_or_refused_by_name_never_crashes(pattern: str) -> None:
    try:
        translated = ecma_to_python(pattern)
    except (PatternSyntaxError, PatternNotCovered) as exc:
        assert str(exc).startswith(("pattern is not ECMA-262:", "pattern is not covered:"))
        return
    re.compile(translated, re.ASCII)  # what was translated runs
