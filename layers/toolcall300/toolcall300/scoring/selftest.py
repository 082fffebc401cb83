"""``toolcall300 score --selftest``: the scorer's own checks of its grading logic, on inline data.

Each grading rule gets a passing and a failing example (rules 3 to 11 through the call a
correct normaliser would return, and the ways an unrepaired call still fails), plus D1.1,
D1.2, D12.1, the counting definitions and the baseline gate. It needs no corpus, so it runs
from a bare kit. It is not the test suite: tests/core covers the same ground in depth.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from toolcall300.canonical import canonical, loads_strict
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK
from toolcall300.scoring import adapters
from toolcall300.scoring.grading import (
    EXACT,
    FALSE_REFUSAL,
    INVENTED_CALL,
    REFUSED_CORRECTLY,
    SCHEMA_INVALID,
    WRONG_CALL,
    grade_case,
)
from toolcall300.scoring.protocol import OnceResult
from toolcall300.scoring.report import compare_reports, score_cases


def _value_case(expected: Any, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": "selftest",
        "category": "type_coercion",
        "text": "",
        "tools": tools if tools is not None else [_TOOL],
        "expected_kind": "value",
        "expected": expected,
    }


_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "default": 1},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
                "alerts": {"type": "boolean", "default": False},
            },
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}
_CALL: dict[str, Any] = {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}
_NONE = {**_value_case(None), "category": "unrecoverable", "expected_kind": "unrecoverable"}


def _call(**arguments: Any) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3, **arguments}}


def _once(code: int | None, out: bytes, timed_out: bool = False) -> Any:
    value, _ = adapters.interpret_output(OnceResult(code, out, "", timed_out, False, 0.0), 10)
    return value


def selftest_checks() -> list[tuple[str, Callable[[], bool]]]:
    """Each grading rule with a passing and a failing example, on inline data only."""
    v = _value_case
    grade = grade_case
    exp_tags = _call(tags=["a"])
    return [
        (
            "rule 1 pass: the expected call, keys in any order",
            lambda: (
                grade(v(_CALL), {"arguments": {"days": 3, "city": "Oslo"}, "name": "get_weather"})
                == EXACT
            ),
        ),
        (
            "rule 1 pass: extra top-level keys (id, type) ignored",
            lambda: grade(v(_CALL), {**_CALL, "id": "c1", "type": "function"}) == EXACT,
        ),
        (
            "rule 1 fail: a different argument value",
            lambda: grade(v(_CALL), _call(days=4)) == WRONG_CALL,
        ),
        (
            "rule 1 fail: an extra argument inside arguments",
            lambda: grade(v(_CALL), _call(unit="celsius")) == WRONG_CALL,
        ),
        ("D1.2 fail: 3.0 where 3 was expected", lambda: grade(v(_CALL), _call(days=3.0)) != EXACT),
        (
            "D1.2 fail: true where 1 was expected",
            lambda: grade(v(_call(days=1)), _call(days=True)) != EXACT,
        ),
        (
            "D1.1 fail: a list is a schema-invalid return, not a refusal",
            lambda: grade(v(_CALL), [_CALL]) == SCHEMA_INVALID,
        ),
        (
            "D1.1 fail: a call without arguments is schema-invalid",
            lambda: grade(v(_CALL), {"name": "get_weather"}) == SCHEMA_INVALID,
        ),
        (
            "D1.1 fail: arguments the schema rejects",
            lambda: grade(v(_CALL), _call(days="3")) == SCHEMA_INVALID,
        ),
        (
            "rule 2 pass: a refusal on an unrecoverable case",
            lambda: grade(_NONE, None) == REFUSED_CORRECTLY,
        ),
        (
            "rule 2 fail: an empty-arguments call on an unrecoverable case",
            lambda: grade(_NONE, {"name": "get_weather", "arguments": {}}) == INVENTED_CALL,
        ),
        (
            "rule 3 fail: the name left un-normalised",
            lambda: grade(v(_CALL), {**_CALL, "name": "functions.Get-Weather"}) == SCHEMA_INVALID,
        ),
        (
            "rule 4 pass: the enum member exactly",
            lambda: grade(v(_call(unit="celsius")), _call(unit="celsius")) == EXACT,
        ),
        (
            "rule 4 fail: the enum value left as sent",
            lambda: grade(v(_call(unit="celsius")), _call(unit="Celsius")) == SCHEMA_INVALID,
        ),
        ('rule 5 fail: "3" left a string', lambda: grade(v(_CALL), _call(days="3")) != EXACT),
        (
            "rule 6 fail: an optional default filled in (D6.1)",
            lambda: grade(v(_CALL), _call(alerts=False)) == WRONG_CALL,
        ),
        (
            "rule 7 fail: an undeclared property kept",
            lambda: grade(v(_CALL), _call(colour="red")) == SCHEMA_INVALID,
        ),
        (
            "rule 8 fail: a scalar kept where an array is declared",
            lambda: grade(v(exp_tags), _call(tags="a")) == SCHEMA_INVALID,
        ),
        (
            "rule 9 fail: arguments left a JSON string",
            lambda: (
                grade(
                    v(_CALL), {"name": "get_weather", "arguments": json.dumps(_CALL["arguments"])}
                )
                == SCHEMA_INVALID
            ),
        ),
        (
            "rule 10 fail: the copies returned as a list",
            lambda: grade(v(_CALL), [_CALL, _CALL]) == SCHEMA_INVALID,
        ),
        (
            "rule 11 fail: an empty container invented (D11.4)",
            lambda: grade(v(_CALL), _call(tags=[])) == WRONG_CALL,
        ),
        (
            "rule 12: None is a refusal, graded false_refusal on a value case",
            lambda: grade(v(_CALL), None) == FALSE_REFUSAL,
        ),
        *[
            (f"rule {rule} pass: the repaired call ({what}) is exact", _exact_check(expected))
            for rule, what, expected in _REPAIRED
        ],
        ("D12.1 pass: a non-zero exit is a refusal", lambda: _once(3, b'{"name":"x"}') is None),
        (
            "D12.1 pass: empty stdout and null are refusals",
            lambda: _once(0, b" \n") is None and _once(0, b"null\n") is None,
        ),
        (
            "D12.1 fail: non-JSON stdout is a failed case, not a refusal",
            lambda: grade(v(_CALL), _once(0, b"sure! here")) == SCHEMA_INVALID,
        ),
        (
            "scoring: an invented call to an undeclared tool is also schema-invalid",
            lambda: (
                score_cases([_NONE], {"selftest": {"name": "nope", "arguments": {}}})[
                    "schema_invalid_returns"
                ]
                == 1
            ),
        ),
        (
            "gate pass: an equal report does not regress",
            lambda: not compare_reports(_report(True), _report(True))["regressed"],
        ),
        (
            "gate fail: a fallen exact count regresses",
            lambda: compare_reports(_report(True), _report(False))["regressed"],
        ),
    ]


#: (rule, what was repaired, the expected call): returning exactly it passes.
_REPAIRED: tuple[tuple[int, str, dict[str, Any]], ...] = (
    (3, "the declared name", _CALL),
    (4, "the enum member", _call(unit="fahrenheit")),
    (5, '3 from "3"', _call(days=3)),
    (6, "a required default", _call(days=1)),
    (7, "a re-nested object", _call(where={"lat": 59.9})),
    (8, "a one-element array", _call(tags=["a"])),
    (9, "decoded arguments", _CALL),
    (10, "one call from identical copies", _CALL),
    (11, "the complete prefix", _call(alerts=True)),
)


def _exact_check(expected: dict[str, Any]) -> Callable[[], bool]:
    return lambda: grade_case(_value_case(expected), loads_strict(canonical(expected))) == EXACT


def _report(passing: bool) -> dict[str, Any]:
    return score_cases(
        [v := _value_case(_CALL)], {v["id"]: _CALL if passing else None}, corpus_sha256="0"
    )


def run_selftest(stdout: TextIO) -> int:
    """Run every check, print each failure and ``N/N``; exit 0 only if all pass."""
    checks = selftest_checks()
    passed = 0
    for name, check in checks:
        try:
            ok = bool(check())
        except Exception as exc:
            ok, name = False, f"{name} (raised {type(exc).__name__}: {exc})"
        passed += ok
        stdout.write(f"{'ok  ' if ok else 'FAIL'} {name}\n")
    stdout.write(f"selftest {passed}/{len(checks)}\n")
    return EXIT_OK if passed == len(checks) else EXIT_ERROR
