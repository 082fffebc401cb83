"""The case view: everything a person needs to see why one case failed, as plain data.

For one case and what came back: the input text, the expected call or refusal, the returned
value, the differences between them by JSON path, the rule the case's label rests on (its
rationale row's ``rule`` when the corpus's rationale is at hand, else its category's rule) and
the grading rule that failed it. ``report.failure_details`` stores it per failed case, so the
terminal (``score --show-failures``), JUnit messages, the Markdown summary and the hosted
dashboard all show the same view from the same fields. It reads the published case format
only (id, category, text, tools, expected_kind, expected), so any corpus or track built from
that format gets it. Pure: plain data in, plain data out; it neither grades nor repairs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.schema import format_path, iter_errors
from toolcall300.spec import CATEGORY_RULES, no_parameters

#: How much of a case's input text the view keeps (the end replaced by "...").
INPUT_CHARS = 600
#: How much of a rationale the view keeps.
RATIONALE_CHARS = 600
#: At most this many difference lines per case (one more line says how many were left out).
DIFF_LINES = 8
#: Each difference line is cut to this many characters.
DIFF_LINE_CHARS = 200

#: The grading rule that gives each failing outcome (``score --spec``: rules 1, 2, 12, D1.1).
GRADED_BY = {
    "wrong_call": "rule 1: not canonically equal to the expected call (name and arguments)",
    "schema_invalid": "D1.1: not a call its declared schema accepts",
    "false_refusal": "rule 12: a refusal where a correct call exists",
    "invented_call": "rule 2: a call returned where only a refusal passes",
}


_JSON_TYPES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shown(value: Any) -> str:
    try:
        return canonical(value)
    except (TypeError, ValueError, RecursionError):
        return f"<a {type(value).__name__} that is not JSON>"


def value_diff(expected: Any, returned: Any, path: tuple[Any, ...] = ()) -> Iterator[str]:
    """Where ``returned`` differs from ``expected``, one line per JSON path (canonical values,
    so ``3`` and ``3.0`` differ as D1.2 says).

    >>> list(value_diff({"a": 1, "b": [1]}, {"a": "1", "c": True}))
    ['$.a: expected 1, returned "1"', '$.b: missing (expected [1])', '$.c: not expected (returned true)']
    """
    if isinstance(expected, dict) and isinstance(returned, dict):
        for key in expected:
            if key not in returned:
                yield f"{format_path((*path, key))}: missing (expected {_shown(expected[key])})"
            else:
                yield from value_diff(expected[key], returned[key], (*path, key))
        for key in returned:
            if key not in expected:
                yield f"{format_path((*path, key))}: not expected (returned {_shown(returned[key])})"
        return
    if isinstance(expected, list) and isinstance(returned, list):
        for index, (want, got) in enumerate(zip(expected, returned, strict=False)):
            yield from value_diff(want, got, (*path, index))
        for index in range(len(returned), len(expected)):
            yield f"{format_path((*path, index))}: missing (expected {_shown(expected[index])})"
        for index in range(len(expected), len(returned)):
            yield f"{format_path((*path, index))}: not expected (returned {_shown(returned[index])})"
        return
    want, got = _shown(expected), _shown(returned)
    if want != got:
        yield f"{format_path(path)}: expected {want}, returned {got}"


def _schema_lines(case: Mapping[str, Any], returned: Mapping[str, Any]) -> Iterator[str]:
    """Why the declared schema rejects a returned call (D1.1), from the schema engine."""
    fn = next(
        (t["function"] for t in case["tools"] if t["function"]["name"] == returned.get("name")),
        None,
    )
    if fn is None:
        yield f"schema: no declared tool is named {_shown(returned.get('name'))}"
        return
    if not isinstance(returned.get("arguments"), dict):
        yield "schema: arguments is not an object"
        return
    params = fn["parameters"] if "parameters" in fn else no_parameters()  # D6.3
    try:
        for error in iter_errors(returned["arguments"], params, ("arguments",)):
            yield f"schema: {format_path(error.instance_path)}: {error.message}"
    except (TypeError, ValueError, RecursionError):
        yield "schema: the arguments could not be checked"


def case_diff(case: Mapping[str, Any], returned: Any, outcome: str) -> list[str]:
    """The differences between what the case expects and what came back, at most
    :data:`DIFF_LINES` lines (then one saying how many more)."""
    if returned is None:
        lines = ["returned a refusal; the case has a correct call (see expected)"]
    elif case["expected_kind"] != "value":
        lines = ["returned a value; the case expects a refusal (no correct call exists)"]
    elif not (isinstance(returned, dict) and "name" in returned and "arguments" in returned):
        what = (
            "an object without both name and arguments"
            if isinstance(returned, dict)
            else _JSON_TYPES.get(type(returned), f"a {type(returned).__name__}")
        )
        lines = [f"returned {what}, not a call"]
    else:
        expected = case["expected"]
        call = {"name": returned["name"], "arguments": returned["arguments"]}  # rule 1
        lines = list(
            value_diff({"name": expected["name"], "arguments": expected["arguments"]}, call)
        )
        if not lines:
            lines = ["the same values, spelled differently (D1.2: canonical spelling)"]
    if outcome == "schema_invalid" and isinstance(returned, dict):
        lines += list(_schema_lines(case, returned))
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... and {len(lines) - DIFF_LINES} more differences"]
    return [_cut(line, DIFF_LINE_CHARS) for line in lines]


def case_rule(case: Mapping[str, Any], rationale: Mapping[str, Any] | None = None) -> str:
    """The rule the case's label rests on: its rationale row's ``rule`` when given, else its
    category's (:data:`spec.CATEGORY_RULES`).

    >>> case_rule({"category": "array_vs_scalar"})
    'rule 8 (array_vs_scalar)'
    >>> case_rule({"category": "array_vs_scalar"}, {"rule": "rule 8 / D8.1"})
    'rule 8 / D8.1'
    """
    if rationale is not None and isinstance(rationale.get("rule"), str) and rationale["rule"]:
        return _cut(rationale["rule"], DIFF_LINE_CHARS)
    found = CATEGORY_RULES.get(str(case.get("category")))
    return f"{found} ({case.get('category')})" if found else str(case.get("category"))


def case_view(
    case: Mapping[str, Any],
    returned: Any,
    outcome: str,
    rationale: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{input, diff, rule, graded}`` and, with a rationale row, ``rationale``: what
    ``failure_details`` adds to ``expected`` and ``returned`` for one failed case."""
    view: dict[str, Any] = {
        "input": _cut(case["text"], INPUT_CHARS),
        "diff": case_diff(case, returned, outcome),
        "rule": case_rule(case, rationale),
        "graded": GRADED_BY.get(outcome, outcome),
    }
    if rationale is not None and isinstance(rationale.get("rationale"), str):
        view["rationale"] = _cut(rationale["rationale"], RATIONALE_CHARS)
    return view


def view_lines(case_id: str, category: str, outcome: str, detail: Mapping[str, Any]) -> list[str]:
    """One failed case as text lines, from its ``failure_details`` entry (any field a report
    stored before it existed is left out): the block ``score --show-failures`` prints and a
    JUnit failure's body carries."""
    lines = [f"{case_id} [{category}] {outcome}"]
    if isinstance(detail.get("input"), str):
        lines.append("  input    " + detail["input"].replace("\n", "\n           "))
    lines.append(f"  expected {detail.get('expected', '?')}")
    lines.append(f"  returned {detail.get('returned', '?')}")
    diff = detail.get("diff")
    if isinstance(diff, list) and diff:
        lines.append("  diff     " + "\n           ".join(str(d) for d in diff))
    if isinstance(detail.get("rule"), str):
        lines.append(f"  rule     {detail['rule']}")
    if isinstance(detail.get("graded"), str):
        lines.append(f"  graded   {detail['graded']}")
    if isinstance(detail.get("rationale"), str):
        lines.append(f"  why      {detail['rationale']}")
    return lines
