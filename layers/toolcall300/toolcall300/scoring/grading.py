"""Grading one case: rules 1, 2 and 12 of the grading contract (``spec.py``), D1.1, D1.2, D12.1.

The scorer never repairs, normalises or second-guesses a returned call: it compares
canonical forms and checks the declared schema. Pure: plain data in, an outcome out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.schema import is_valid
from toolcall300.spec import no_parameters

# The closed list of per-case outcomes. Exactly two of them pass.
EXACT = "exact"  # rule 1: the expected call, canonically equal
REFUSED_CORRECTLY = "refused_correctly"  # rule 2: a refusal where no call exists
FALSE_REFUSAL = "false_refusal"  # a refusal where a correct call exists
INVENTED_CALL = "invented_call"  # anything returned where the case expects a refusal
WRONG_CALL = "wrong_call"  # a schema-valid call, but not the expected one
SCHEMA_INVALID = "schema_invalid"  # D1.1: not a call its declared schema accepts
OUTCOMES = (EXACT, REFUSED_CORRECTLY, FALSE_REFUSAL, INVENTED_CALL, WRONG_CALL, SCHEMA_INVALID)
PASSING = frozenset({EXACT, REFUSED_CORRECTLY})


def canonical_or_none(value: Any) -> str | None:
    """The canonical JSON of ``value``, or None when it is not JSON at all (NaN, a set, ...)."""
    try:
        return canonical(value)
    except (TypeError, ValueError, RecursionError):
        return None


def call_is_schema_valid(returned: Any, tools: Sequence[Mapping[str, Any]]) -> bool:
    """D1.1: an object with a string ``name`` that is exactly a declared tool's name, and an
    object ``arguments`` that tool's ``parameters`` accept. Names are not normalised here:
    the normaliser's job was to return the declared name (rule 3).
    """
    if not isinstance(returned, dict):
        return False
    name, arguments = returned.get("name"), returned.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return False
    if canonical_or_none(arguments) is None:
        return False
    for tool in tools:
        fn = tool["function"]
        if fn["name"] == name:
            try:
                params = fn["parameters"] if "parameters" in fn else no_parameters()  # D6.3
                return is_valid(arguments, params)
            except (TypeError, ValueError, RecursionError):
                return False
    return False


def call_key(returned: Any) -> str | None:
    """Rule 1: the canonical form of the returned call's ``name`` and ``arguments`` only
    (other top-level keys, an id or a type, are ignored); None if it is not a call."""
    if not isinstance(returned, dict) or "name" not in returned or "arguments" not in returned:
        return None
    return canonical_or_none({"name": returned["name"], "arguments": returned["arguments"]})


def grade_case(case: Mapping[str, Any], returned: Any) -> str:
    """The outcome of one case (one of :data:`OUTCOMES`); ``None`` is a refusal (rule 12).

    >>> case = {"expected_kind": "value", "tools": [], "expected": {"name": "f", "arguments": {}}}
    >>> grade_case(case, {"name": "f", "arguments": {}, "id": "call_1"})
    'exact'
    >>> grade_case(case, None)
    'false_refusal'
    """
    return judge_case(case, returned)[0]


def judge_case(case: Mapping[str, Any], returned: Any) -> tuple[str, bool]:
    """``(outcome, schema_invalid_return)``: the grade, and whether a value came back that is
    not a call its declared schema accepts (counted on every case, SCORING)."""
    if returned is None:
        refused_ok = case["expected_kind"] == "unrecoverable"
        return (REFUSED_CORRECTLY if refused_ok else FALSE_REFUSAL), False
    invalid = not call_is_schema_valid(returned, case["tools"])
    if case["expected_kind"] == "unrecoverable":
        # rule 2: only a refusal passes; any returned value, even {"name":..,"arguments":{}}, fails
        return INVENTED_CALL, invalid
    expected_key = call_key(case["expected"])
    if expected_key is not None and call_key(returned) == expected_key:
        return EXACT, invalid  # rule 1, D1.2: canonical spelling, so 3 and 3.0 differ
    # D1.1: a list, a string, a call its schema rejects is a failed return, never a refusal
    return (SCHEMA_INVALID if invalid else WRONG_CALL), invalid
