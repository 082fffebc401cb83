"""The parallel track: several calls in one turn, the answer a list (``spec.PARALLEL``, P1-P12).

An adapter answers each turn with a JSON array, one entry per call the text attempted (the
call, or ``null`` where it is refused), ``[]`` when the text holds none, or ``null`` for the
whole turn (P2: graded as one ``null`` per expected entry). The three protocols are the
single-call track's (docs/adapter-protocols.md), carrying a list where they carried a call.
The judge compares lists; the metrics are ``spec.PARALLEL_SCORING``'s. Pure functions plus a
:class:`ParallelTrack` that plugs them into the one scorer; it repairs nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from toolcall300.catalog import model_view
from toolcall300.controls import integrator_all, naive
from toolcall300.rules import repeat_matters
from toolcall300.scoring import adapters, render
from toolcall300.scoring.corpus import _tool_problem
from toolcall300.scoring.grading import call_is_schema_valid, call_key
from toolcall300.scoring.report import (
    DETAIL_CHARS,
    ERROR_LINE_CHARS,
    ReportError,
    VersionMismatch,
    counts_problem,
    report_corpus_version,
    short_value,
    timing_fields,
    version_mismatch,
)
from toolcall300.scoring.tracks.single import build_adapter as _build_command_adapter
from toolcall300.spec import PARALLEL_CATEGORIES, PARALLEL_SPEC_VERSION

NAME = "parallel"
REPORT_VERSION = "toolcall300-parallel-report/1"

# The closed list of per-turn outcomes; only EXACT passes.
EXACT = "exact"  # the expected list, entry by entry (P11)
ORDER_ONLY = "order_only"  # the expected entries in another order (passes the order-free figure)
REFUSED_WHOLE = "refused_whole"  # null for a turn that holds a call to return
WRONG_LIST = "wrong_list"  # a list, not the expected one
NOT_A_LIST = "not_a_list"  # neither a list nor null (schema-invalid)
OUTCOMES = (EXACT, ORDER_ONLY, REFUSED_WHOLE, WRONG_LIST, NOT_A_LIST)

#: ``cases`` is every track's count of cases (the scorer's shell reads it); here, turns.
COUNT_FIELDS = (
    "cases",
    "exact_turns",
    "order_free_turns",
    "expected_calls",
    "returned_calls",
    "matched_calls",
    "invented_calls",
    "dropped_calls",
    "false_collapses",
    "partial_refusal_turns",
    "partial_refusals_exact",
    "schema_invalid_returns",
)
#: The gate (PARALLEL_SCORING): these may not fall ...
MUST_NOT_FALL = ("exact_turns", "order_free_turns", "matched_calls", "partial_refusals_exact")
#: ... and these may not rise.
MUST_NOT_RISE = ("invented_calls", "dropped_calls", "false_collapses", "schema_invalid_returns")

_NULL = "null"


# ----------------------------------------------------------------------------- reading


def case_problem(case: Any) -> str | None:
    """Why ``case`` is not a well-formed parallel case, or None.

    >>> case_problem({"id": "t", "track": "parallel", "category": "c", "text": "[]",
    ...               "tools": [], "expected": {"name": "f", "arguments": {}}})
    'expected must be a list of calls and nulls (P1)'
    """
    if not isinstance(case, dict):
        return "a case must be a JSON object"
    missing = [k for k in ("id", "category", "text", "tools", "expected") if k not in case]
    if missing:
        return "missing field(s): " + ", ".join(missing)
    if not isinstance(case["id"], str) or not case["id"]:
        return "id must be a non-empty string"
    if not isinstance(case["category"], str) or not case["category"]:
        return "category must be a non-empty string"
    if not isinstance(case["text"], str):
        return "text must be a string"
    tools = case["tools"]
    if not isinstance(tools, list):
        return "tools must be an array"
    for index, tool in enumerate(tools):
        problem = _tool_problem(tool, index)
        if problem:
            return problem
    names = [t["function"]["name"] for t in tools]
    if len(set(names)) != len(names):
        return "tool names must be unique"
    expected = case["expected"]
    if not isinstance(expected, list):
        return "expected must be a list of calls and nulls (P1)"
    for i, entry in enumerate(expected):
        if entry is None:
            continue
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("arguments"), dict)
        ):
            return (
                f"expected[{i}] must be null or an object with a string name and object arguments"
            )
        if entry["name"] not in names:
            return f"expected[{i}] names undeclared tool {entry['name']!r}"
    return None


def adapter_items(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each turn's id, text and tools as a model sees them; a tool whose catalog says
    repeating matters carries it as MCP writes it, ``annotations.idempotentHint: false`` on
    ``function`` (P7), so an ``x-idempotent`` the model view drops still reaches the adapter."""
    out = []
    for case in cases:
        tools = []
        for tool in case["tools"]:
            view = model_view(tool)
            if repeat_matters(tool) and not repeat_matters(view):
                annotations = dict(view["function"].get("annotations") or {})
                view["function"]["annotations"] = {**annotations, "idempotentHint": False}
            tools.append(view)
        out.append({"id": case["id"], "text": case["text"], "tools": tools})
    return out


def build_adapter(kind: str, value: str, *, stream: bool = False) -> adapters.Adapter:
    """``naive`` (C1), ``integrator`` (C3), ``toolshim`` (``normalise_all``), a module's
    callable, or a program (one per turn, or ``--stream``), each answering a list."""
    if kind == "callable" and value == "naive":
        return adapters.CallableAdapter(naive, "naive")
    if kind == "callable" and value == "integrator":
        return adapters.CallableAdapter(integrator_all, "integrator (C3)")
    if kind == "callable" and value in ("toolshim", "toolshim:normalise_all", _REFERENCE):
        # imported by name: scoring never imports toolshim's code
        return adapters.CallableAdapter(adapters._import_target(_REFERENCE), _REFERENCE_NAME)
    return _build_command_adapter(kind, value, stream=stream)


_REFERENCE = "toolcall300.toolshim.parallel:normalise_all"
_REFERENCE_NAME = "toolshim.parallel:normalise_all"


# ------------------------------------------------------------------------------ judging


def _keys(entries: Sequence[Any]) -> list[str]:
    """Each entry's rule-1 key (name and arguments, canonical), ``null`` for a refusal; an
    entry that is no call gets a key no expected entry has."""
    out = []
    for i, entry in enumerate(entries):
        if entry is None:
            out.append(_NULL)
        else:
            out.append(call_key(entry) or f"<not a call #{i}>")
    return out


def judge_turn(case: Mapping[str, Any], returned: Any) -> dict[str, Any]:
    """One turn's outcome and counts (``spec.PARALLEL_SCORING``); ``None`` refuses it whole.

    >>> case = {"tools": [{"type": "function", "function": {"name": "f"}}],
    ...         "expected": [{"name": "f", "arguments": {}}, None]}
    >>> judge_turn(case, [None, {"name": "f", "arguments": {}}])["outcome"]
    'order_only'
    >>> judge_turn(case, None)["dropped_calls"]
    1
    """
    expected: list[Any] = list(case["expected"])
    invalid = 0
    if returned is None:
        answer: list[Any] = [None] * len(expected)  # P2: refused whole
        outcome = REFUSED_WHOLE
    elif not isinstance(returned, list):
        answer, invalid, outcome = [], 1, NOT_A_LIST
    else:
        answer = returned
        invalid = sum(
            1 for e in answer if e is not None and not call_is_schema_valid(e, case["tools"])
        )
        outcome = WRONG_LIST
    want, got = _keys(expected), _keys(answer)
    want_calls = Counter(k for k in want if k != _NULL)
    got_calls = Counter(k for k in got if k != _NULL)
    matched = sum((want_calls & got_calls).values())
    if outcome != NOT_A_LIST:
        if want == got:
            outcome = EXACT
        elif Counter(want) == Counter(got) and outcome == WRONG_LIST:
            outcome = ORDER_ONLY
        elif outcome == REFUSED_WHOLE and not want_calls:
            outcome = EXACT  # nothing to return: a whole refusal is every null expected
    # a false collapse: copies expected (P7: repeating matters) answered fewer times, their
    # entries gone from the list (not refused in place)
    short = max(0, len(want) - len(got))
    collapsed = min(
        short,
        sum(n - got_calls[k] for k, n in want_calls.items() if n >= 2 and 0 < got_calls[k] < n),
    )
    return {
        "outcome": outcome,
        "passed": outcome == EXACT,
        "order_free": outcome in (EXACT, ORDER_ONLY),
        "expected_calls": sum(want_calls.values()),
        "returned_calls": sum(got_calls.values()),
        "matched_calls": matched,
        "invented_calls": sum(got_calls.values()) - matched,
        "dropped_calls": sum(want_calls.values()) - matched,
        "false_collapses": collapsed,
        "partial": _NULL in want and bool(want_calls),
        "schema_invalid_returns": invalid,
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def score_turns(
    cases: Sequence[Mapping[str, Any]],
    answers: Mapping[str, Any],
    *,
    adapter: str = "",
    corpus_sha256: str = "",
    corpus_version: str | None = None,
    timing: Mapping[str, Any] | None = None,
    errors: Mapping[str, str] | None = None,
    rationale: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The parallel track's report. Pure: the same arguments give an equal report. A failed
    turn's details carry its input and, when the corpus's rationale is at hand, the
    decisions its label rests on and why."""
    ids = {case["id"] for case in cases}
    errored = {key: str(text) for key, text in (errors or {}).items() if key in ids}
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    categories: dict[str, dict[str, int]] = {}
    per_case = []
    details = {}
    for case in cases:
        returned = answers.get(case["id"])
        judged = judge_turn(case, returned)
        counts["cases"] += 1
        counts["exact_turns"] += judged["passed"]
        counts["order_free_turns"] += judged["order_free"]
        for key in (
            "expected_calls",
            "returned_calls",
            "matched_calls",
            "invented_calls",
            "dropped_calls",
            "false_collapses",
            "schema_invalid_returns",
        ):
            counts[key] += judged[key]
        counts["partial_refusal_turns"] += judged["partial"]
        counts["partial_refusals_exact"] += judged["partial"] and judged["passed"]
        cat = categories.setdefault(case["category"], {"n": 0, "pass": 0})
        cat["n"] += 1
        cat["pass"] += judged["passed"]
        per_case.append(
            {
                "id": case["id"],
                "category": case["category"],
                "passed": judged["passed"],
                "order_free": judged["order_free"],
                "outcome": judged["outcome"],
            }
        )
        if not judged["passed"]:
            if case["id"] in errored:
                tail = errored[case["id"]].strip().splitlines() or ["?"]
                got = f"nothing: the adapter broke ({tail[-1][:ERROR_LINE_CHARS]})"
            else:
                got = (
                    "a refusal of the whole turn (null)"
                    if returned is None
                    else short_value(returned, 2 * DETAIL_CHARS)
                )
            details[case["id"]] = {
                "input": short_value(case["text"], 2 * DETAIL_CHARS),
                "expected": short_value(case["expected"], 2 * DETAIL_CHARS),
                "returned": got,
            }
            why = (rationale or {}).get(case["id"])
            if why:
                details[case["id"]]["rule"] = str(why.get("rule", ""))
                details[case["id"]]["rationale"] = str(why.get("rationale", ""))[: DETAIL_CHARS * 4]
    timing = dict(timing or {})
    known = [c for c in PARALLEL_CATEGORIES if c in categories]
    return {
        "report_version": REPORT_VERSION,
        "track": NAME,
        "spec_version": PARALLEL_SPEC_VERSION,
        "corpus_sha256": corpus_sha256,
        "corpus_version": corpus_version,
        "adapter": adapter,
        "timing": timing_fields(timing),
        **counts,
        "call_precision": _ratio(counts["matched_calls"], counts["returned_calls"]),
        "call_recall": _ratio(counts["matched_calls"], counts["expected_calls"]),
        "adapter_errors": len(errored),
        "errors": {c["id"]: errored[c["id"]] for c in cases if c["id"] in errored},
        "categories": {
            name: categories[name] for name in known + sorted(set(categories) - set(known))
        },
        "per_case": per_case,
        "failure_details": details,
    }


# --------------------------------------------------------------------------- the gate


def report_problem(report: Any) -> str | None:
    """Why ``report`` is not a parallel report the gate can compare, or None."""
    problem = counts_problem(report, REPORT_VERSION, COUNT_FIELDS)
    if problem:
        return problem
    if not isinstance(report.get("corpus_sha256"), str):
        return "missing corpus_sha256"
    cats = report.get("categories")
    if not isinstance(cats, dict) or any(
        not isinstance(v, dict) or not isinstance(v.get("pass"), int) for v in cats.values()
    ):
        return "categories must map names to {n, pass}"
    rows = report.get("per_case")
    if not isinstance(rows, list) or any(
        not isinstance(r, dict)
        or not isinstance(r.get("id"), str)
        or not isinstance(r.get("passed"), bool)
        for r in rows
    ):
        return "per_case must be a list of {id, category, passed, outcome}"
    return None


def compare(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """The gate (PARALLEL_SCORING): ``regressed`` when a figure that may not fall fell, or
    one that may not rise rose, or any category's passes fell."""
    for label, report in (("baseline", baseline), ("current", current)):
        problem = report_problem(report)
        if problem:
            raise ReportError(f"{label} report: {problem}")
    mismatch = version_mismatch(baseline, report_corpus_version(current))
    if mismatch:
        raise VersionMismatch(mismatch)
    if baseline["corpus_sha256"] != current["corpus_sha256"]:
        raise ReportError("reports over different corpora cannot be compared")
    deltas = {
        key: {
            "baseline": baseline[key],
            "current": current[key],
            "delta": current[key] - baseline[key],
        }
        for key in MUST_NOT_FALL + MUST_NOT_RISE
    }
    reasons = [
        f"{key} fell {baseline[key]} -> {current[key]}"
        for key in MUST_NOT_FALL
        if deltas[key]["delta"] < 0
    ]
    reasons += [
        f"{key} rose {baseline[key]} -> {current[key]}"
        for key in MUST_NOT_RISE
        if deltas[key]["delta"] > 0
    ]
    per_category = {}
    for name in list(baseline["categories"]) + [
        n for n in current["categories"] if n not in baseline["categories"]
    ]:
        before = baseline["categories"].get(name, {}).get("pass", 0)
        after = current["categories"].get(name, {}).get("pass", 0)
        per_category[name] = {"baseline": before, "current": after, "delta": after - before}
        if after < before:
            reasons.append(f"category {name} fell {before} -> {after}")
    before_pass = {r["id"]: r["passed"] for r in baseline["per_case"]}
    return {
        "regressed": bool(reasons),
        "reasons": reasons,
        "deltas": deltas,
        "categories": per_category,
        "flipped": {
            "fixed": [
                r["id"]
                for r in current["per_case"]
                if r["passed"] and before_pass.get(r["id"]) is False
            ],
            "broken": [
                r["id"]
                for r in current["per_case"]
                if not r["passed"] and before_pass.get(r["id"]) is True
            ],
        },
    }


# ---------------------------------------------------------------------------- rendering


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}%" if isinstance(value, float) else "n/a"


#: (label, how to read it from a report): the headline figures, in the order printed.
HEADLINES: tuple[tuple[str, Any], ...] = (
    ("exact turns", lambda r: f"{r['exact_turns']} / {r['cases']}"),
    ("order-free turns (BFCL)", lambda r: f"{r['order_free_turns']} / {r['cases']}"),
    (
        "call precision",
        lambda r: f"{_pct(r['call_precision'])} ({r['matched_calls']} / {r['returned_calls']})",
    ),
    (
        "call recall",
        lambda r: f"{_pct(r['call_recall'])} ({r['matched_calls']} / {r['expected_calls']})",
    ),
    ("invented calls", lambda r: str(r["invented_calls"])),
    ("dropped calls", lambda r: str(r["dropped_calls"])),
    ("false collapses", lambda r: str(r["false_collapses"])),
    (
        "partial refusals exact",
        lambda r: f"{r['partial_refusals_exact']} / {r['partial_refusal_turns']}",
    ),
    ("schema-invalid returns", lambda r: str(r["schema_invalid_returns"])),
    ("adapter errors", lambda r: str(r.get("adapter_errors", 0))),
)


def render_text(report: Mapping[str, Any], *, in_sample: bool = False) -> str:
    lines = [f"TOOLCALL-300 parallel track, adapter: {report['adapter']}"]
    lines += [f"{label:<26}{read(report)}" for label, read in HEADLINES]
    lines.append(f"{'corpus sha256':<26}{report['corpus_sha256']}")
    if in_sample and adapters.is_reference_normaliser(str(report["adapter"])):
        lines.append(render.IN_SAMPLE_NOTE)
    lines += ["", f"{'category':<26}{'n':>5}{'pass':>6}"]
    lines += [
        f"{name:<26}{row['n']:>5}{row['pass']:>6}" for name, row in report["categories"].items()
    ]
    return "\n".join(lines) + "\n"


def _rows(reports: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = [["", "n", *render.column_names(reports)]]
    rows += [[label, "", *(read(r) for r in reports)] for label, read in HEADLINES]
    for name, row in reports[0]["categories"].items():
        rows.append(
            [
                name,
                str(row["n"]),
                *(str(r["categories"].get(name, {}).get("pass", 0)) for r in reports),
            ]
        )
    return rows


def render_side_by_side(reports: Sequence[Mapping[str, Any]], *, in_sample: bool = False) -> str:
    rows = _rows(reports)
    widths = [max(len(row[c]) for row in rows) + 2 for c in range(2, len(rows[0]))]
    lines = [
        f"TOOLCALL-300 parallel track side by side, corpus sha256 {reports[0]['corpus_sha256']}"
    ]
    lines += [f"{n} = {d}" for n, d in render._legend(reports, in_sample)]
    lines.append("")
    for row in rows:
        cells = "".join(f"{v:>{w}}" for v, w in zip(row[2:], widths, strict=True))
        lines.append(f"{row[0]:<26}{row[1]:>5}{cells}")
    if in_sample and any(adapters.is_reference_normaliser(str(r["adapter"])) for r in reports):
        lines += ["", render.IN_SAMPLE_NOTE]
    return "\n".join(lines) + "\n"


def render_failures(report: Mapping[str, Any]) -> str:
    details = report.get("failure_details") or {}
    lines = [f"turns not passed: {len(details)}"]
    for row in report["per_case"]:
        if not row["passed"]:
            d = details.get(row["id"], {})
            lines.append(f"{row['id']} [{row['category']}] {row['outcome']}")
            lines += [f"  {key:<9}{d[key]}" for key in ("input", "rule") if d.get(key)]
            lines.append(f"  expected {d.get('expected')}")
            lines.append(f"  returned {d.get('returned')}")
    return "\n".join(lines) + "\n"


def render_comparison(comparison: Mapping[str, Any]) -> str:
    verdict = "REGRESSION" if comparison["regressed"] else "no regression"
    lines = [f"baseline: {verdict}"] + [f"- {r}" for r in comparison["reasons"]]
    flipped = comparison["flipped"]
    if flipped["broken"]:
        lines.append("broken: " + " ".join(flipped["broken"]))
    if flipped["fixed"]:
        lines.append("fixed: " + " ".join(flipped["fixed"]))
    return "\n".join(lines) + "\n"


def render_markdown(
    reports: Sequence[Mapping[str, Any]],
    *,
    in_sample: bool,
    comparison: Mapping[str, Any] | None,
    baseline_name: str,
) -> str:
    if comparison is None:
        top = render.unbaselined_verdict(reports)
    elif comparison["regressed"]:
        top = render.verdict_line(
            "regression", f"against {baseline_name}: {'; '.join(comparison['reasons'])}"
        )
    else:
        top = render.verdict_line("pass", f"no regression against {baseline_name}")
    rows = _rows(reports)
    lines = ["## TOOLCALL-300 (parallel track)", "", top, ""]
    lines += [f"corpus sha256 `{reports[0]['corpus_sha256']}`", ""]
    lines += [
        f"- **{render._cell(n)}**: {render._cell(d)}" for n, d in render._legend(reports, in_sample)
    ]
    lines += ["", "| " + " | ".join(render._cell(c) for c in rows[0]) + " |"]
    lines.append("|---|---|" + "---|" * len(reports))
    lines += ["| " + " | ".join(render._cell(c) for c in row) + " |" for row in rows[1:]]
    if in_sample and any(adapters.is_reference_normaliser(str(r["adapter"])) for r in reports):
        lines += ["", render.IN_SAMPLE_NOTE]
    return "\n".join(lines) + "\n"


class ParallelTrack:
    """The :class:`~toolcall300.scoring.tracks.Track` of the parallel track."""

    name = NAME

    def case_problem(self, case: Any) -> str | None:
        return case_problem(case)

    def adapter_items(self, cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return adapter_items(cases)

    def build_adapter(self, kind: str, value: str, *, stream: bool = False) -> adapters.Adapter:
        return build_adapter(kind, value, stream=stream)

    def score(
        self,
        cases: Sequence[Mapping[str, Any]],
        run: adapters.AdapterRun,
        *,
        adapter: str,
        corpus_sha256: str,
        corpus_version: str | None,
        rationale: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        # the corpus's rationale rows: a failed turn's details carry its rule and why
        return score_turns(
            cases,
            run.answers,
            adapter=adapter,
            corpus_sha256=corpus_sha256,
            corpus_version=corpus_version,
            timing=run.timing(),
            errors=run.errors,
            rationale=rationale,
        )

    def report_problem(self, value: Any) -> str | None:
        return report_problem(value)

    def compare(self, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
        return compare(baseline, current)

    def render_text(self, value: Mapping[str, Any], *, in_sample: bool) -> str:
        return render_text(value, in_sample=in_sample)

    def render_side_by_side(self, reports: Sequence[Mapping[str, Any]], *, in_sample: bool) -> str:
        return render_side_by_side(reports, in_sample=in_sample)

    def render_failures(
        self, value: Mapping[str, Any], cases: Sequence[Mapping[str, Any]], run: adapters.AdapterRun
    ) -> str:
        return render_failures(value)

    def render_comparison(self, comparison: Mapping[str, Any]) -> str:
        return render_comparison(comparison)

    def render_markdown(
        self,
        reports: Sequence[Mapping[str, Any]],
        *,
        in_sample: bool,
        comparison: Mapping[str, Any] | None,
        baseline_name: str,
    ) -> str:
        return render_markdown(
            reports, in_sample=in_sample, comparison=comparison, baseline_name=baseline_name
        )

    def render_junit(
        self,
        reports: Sequence[Mapping[str, Any]],
        *,
        baseline_name: str,
        baseline: Mapping[str, Any] | None,
        comparison: Mapping[str, Any] | None,
    ) -> bytes:
        return render.render_junit_against(
            reports, baseline_name=baseline_name, baseline=baseline, comparison=comparison
        )


TRACK = ParallelTrack()
