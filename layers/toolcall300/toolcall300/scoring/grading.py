"""``toolcall300 score``: grade an adapter against any corpus in the DESIGN.md format, and gate CI.

The pure core is :func:`parse_corpus`, :func:`grade_case`, :func:`score_cases` and
:func:`compare_reports`: plain data in, plain data out, no I/O, so the hosted CI runner
calls them directly. Grading follows rules 1, 2 and 12 of the grading contract
(``spec.py``) and decisions D1.1, D1.2 and D12.1; the scorer never repairs, normalises or
second-guesses a returned call. The CLI shell (``parse_args``/``run``) reads files, runs the
adapter (``adapters``) and prints. It is not a normaliser and it does not check a corpus's
labels (that is ``generate --check-only``); it checks only that each case is well formed.

Report (``REPORT_VERSION``), flat and stable: ``report_version``, ``spec_version``,
``corpus_sha256``, ``adapter``, ``timing`` {``total_seconds``, ``median_case_seconds``},
the counts ``cases``, ``exact``, ``refusal_cases``, ``refused_correctly``,
``invented_calls``, ``false_refusals``, ``schema_invalid_returns``, ``categories``
{name: {``n``, ``pass``}} and ``per_case`` [{``id``, ``category``, ``passed``, ``outcome``}].
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from toolcall300.canonical import canonical, loads_strict, pretty_bytes, sha256_hex
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, EXIT_REGRESSION, ArgParser, UsageError
from toolcall300.schema import is_valid, schema_problems
from toolcall300.scoring import adapters
from toolcall300.spec import CATEGORIES, REFUSAL_CATEGORIES, SPEC_VERSION, render_spec

REPORT_VERSION = "toolcall300-report/1"


# The closed list of per-case outcomes. Exactly two of them pass.
EXACT = "exact"  # rule 1: the expected call, canonically equal
REFUSED_CORRECTLY = "refused_correctly"  # rule 2: a refusal where no call exists
FALSE_REFUSAL = "false_refusal"  # a refusal where a correct call exists
INVENTED_CALL = "invented_call"  # anything returned where the case expects a refusal
WRONG_CALL = "wrong_call"  # a schema-valid call, but not the expected one
SCHEMA_INVALID = "schema_invalid"  # D1.1: not a call its declared schema accepts
OUTCOMES = (EXACT, REFUSED_CORRECTLY, FALSE_REFUSAL, INVENTED_CALL, WRONG_CALL, SCHEMA_INVALID)
PASSING = frozenset({EXACT, REFUSED_CORRECTLY})

COUNT_FIELDS = (
    "cases",
    "exact",
    "refusal_cases",
    "refused_correctly",
    "invented_calls",
    "false_refusals",
    "schema_invalid_returns",
)
DELTA_FIELDS = (
    "exact",
    "refused_correctly",
    "invented_calls",
    "false_refusals",
    "schema_invalid_returns",
)


class CorpusError(ValueError):
    """A corpus that cannot be scored; the message names the line."""


class ReportError(ValueError):
    """A baseline that cannot be compared with this run (wrong shape, other corpus)."""


# --------------------------------------------------------------------------- the corpus


def _tool_problem(tool: Any, index: int) -> str | None:
    """Why ``tools[index]`` is not a usable declaration (tools.json contract), or None."""
    where = f"tools[{index}]"
    if not isinstance(tool, dict):
        return f"{where} is not an object"
    if tool.get("type", "function") != "function":
        return f'{where}.type must be "function"'
    fn = tool.get("function")
    if not isinstance(fn, dict):
        return f"{where}.function is not an object"
    if not isinstance(fn.get("name"), str) or not fn["name"]:
        return f"{where}.function.name must be a non-empty string"
    params = fn.get("parameters", {"type": "object"})
    problems = schema_problems(params)
    if problems:
        return f"{where} ({fn['name']}) parameters: {problems[0].message}"
    return None


def case_problem(case: Any) -> str | None:
    """Why ``case`` is not a well-formed case in the DESIGN.md format, or None.

    >>> case_problem({"id": "x", "category": "cooking", "text": "", "tools": [],
    ...               "expected_kind": "unrecoverable", "expected": None})
    "unknown category 'cooking'"
    """
    if not isinstance(case, dict):
        return "a case must be a JSON object"
    missing = [
        k for k in ("id", "category", "text", "tools", "expected_kind", "expected") if k not in case
    ]
    if missing:
        return "missing field(s): " + ", ".join(missing)
    if not isinstance(case["id"], str) or not case["id"]:
        return "id must be a non-empty string"
    if case["category"] not in CATEGORIES:
        return f"unknown category {case['category']!r}"
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
    kind, expected = case["expected_kind"], case["expected"]
    if kind == "unrecoverable":
        return (
            None
            if expected is None
            else "expected must be null when expected_kind is unrecoverable"
        )
    if kind != "value":
        return f'expected_kind must be "value" or "unrecoverable", got {kind!r}'
    if case["category"] in REFUSAL_CATEGORIES:
        return f"D2.1: every {case['category']} case expects a refusal"
    if not (
        isinstance(expected, dict)
        and isinstance(expected.get("name"), str)
        and isinstance(expected.get("arguments"), dict)
    ):
        return "expected must be an object with a string name and an object arguments"
    if expected["name"] not in names:
        return f"expected names undeclared tool {expected['name']!r}"
    return None


def parse_corpus(data: bytes) -> list[dict[str, Any]]:
    """Cases from JSON Lines bytes; blank lines are skipped; raises :class:`CorpusError` naming the line."""
    cases: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark from an editor is not JSON
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            case = loads_strict(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise CorpusError(f"line {number}: not UTF-8") from None
        except (ValueError, RecursionError) as exc:
            raise CorpusError(f"line {number}: not valid JSON ({exc})") from None
        problem = case_problem(case)
        if problem:
            raise CorpusError(f"line {number}: {problem}")
        if case["id"] in seen:
            raise CorpusError(
                f"line {number}: duplicate id {case['id']!r} (first on line {seen[case['id']]})"
            )
        seen[case["id"]] = number
        cases.append(case)
    if not cases:
        raise CorpusError("the corpus has no cases")
    return cases


# --------------------------------------------------------------------------- grading


def _canonical_or_none(value: Any) -> str | None:
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
    if _canonical_or_none(arguments) is None:
        return False
    for tool in tools:
        fn = tool["function"]
        if fn["name"] == name:
            try:
                return is_valid(arguments, fn.get("parameters", {"type": "object"}))
            except (TypeError, ValueError, RecursionError):
                return False
    return False


def call_key(returned: Any) -> str | None:
    """Rule 1: the canonical form of the returned call's ``name`` and ``arguments`` only
    (other top-level keys, an id or a type, are ignored); None if it is not a call."""
    if not isinstance(returned, dict) or "name" not in returned or "arguments" not in returned:
        return None
    return _canonical_or_none({"name": returned["name"], "arguments": returned["arguments"]})


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


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(v for v in values if isinstance(v, (int, float)) and math.isfinite(v))
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def score_cases(
    cases: Sequence[Mapping[str, Any]],
    answers: Mapping[str, Any],
    *,
    adapter: str = "",
    corpus_sha256: str = "",
    timing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report for ``cases`` given ``answers`` (id -> returned value; a missing id is a refusal).

    Pure and deterministic: the same arguments give an equal report. ``schema_invalid_returns``
    counts, on any case, a returned value that is not a call its declared schema accepts
    (SCORING), so an invented call to an undeclared tool is also schema-invalid.
    """
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    categories: dict[str, dict[str, int]] = {}
    per_case: list[dict[str, Any]] = []
    for case in cases:
        returned = answers.get(case["id"])
        outcome, invalid = judge_case(case, returned)
        passed = outcome in PASSING
        counts["cases"] += 1
        counts["exact"] += passed  # SCORING: a correct refusal counts as an exact pass
        if case["expected_kind"] == "unrecoverable":
            counts["refusal_cases"] += 1
        counts["refused_correctly"] += outcome == REFUSED_CORRECTLY
        counts["invented_calls"] += outcome == INVENTED_CALL
        counts["false_refusals"] += outcome == FALSE_REFUSAL
        counts["schema_invalid_returns"] += invalid
        cat = categories.setdefault(case["category"], {"n": 0, "pass": 0})
        cat["n"] += 1
        cat["pass"] += passed
        per_case.append(
            {"id": case["id"], "category": case["category"], "passed": passed, "outcome": outcome}
        )
    timing = dict(timing or {})
    return {
        "report_version": REPORT_VERSION,
        "spec_version": SPEC_VERSION,
        "corpus_sha256": corpus_sha256,
        "adapter": adapter,
        "timing": {
            "total_seconds": timing.get("total_seconds"),
            "median_case_seconds": timing.get("median_case_seconds"),
        },
        **counts,
        "categories": {name: categories[name] for name in CATEGORIES if name in categories},
        "per_case": per_case,
    }


# --------------------------------------------------------------------------- the baseline gate


def report_problem(report: Any) -> str | None:
    """Why ``report`` is not a score report this version can compare, or None."""
    if not isinstance(report, dict):
        return "a report must be a JSON object"
    if report.get("report_version") != REPORT_VERSION:
        return f"report_version is {report.get('report_version')!r}, expected {REPORT_VERSION!r}"
    for key in COUNT_FIELDS:
        if not isinstance(report.get(key), int) or isinstance(report.get(key), bool):
            return f"missing or non-integer {key!r}"
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


def compare_reports(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Compare two reports over the same corpus; ``regressed`` is the CI gate.

    It regresses when exact fell, any category's passes fell, invented_calls rose or
    schema_invalid_returns rose (DESIGN.md, SCORING). Raises :class:`ReportError` when
    either report is malformed or they were scored on different corpora.
    """
    for label, report in (("baseline", baseline), ("current", current)):
        problem = report_problem(report)
        if problem:
            raise ReportError(f"{label} report: {problem}")
    if baseline["corpus_sha256"] != current["corpus_sha256"]:
        raise ReportError(
            "baseline was scored on corpus "
            f"{baseline['corpus_sha256'][:12]}, this run on {current['corpus_sha256'][:12]}: "
            "reports over different corpora cannot be compared"
        )
    deltas = {
        key: {
            "baseline": baseline[key],
            "current": current[key],
            "delta": current[key] - baseline[key],
        }
        for key in DELTA_FIELDS
    }
    names = [n for n in CATEGORIES if n in baseline["categories"] or n in current["categories"]]
    names += sorted(set(baseline["categories"]) | set(current["categories"]) - set(names))
    per_category = {}
    for name in names:
        before = baseline["categories"].get(name, {}).get("pass", 0)
        after = current["categories"].get(name, {}).get("pass", 0)
        per_category[name] = {"baseline": before, "current": after, "delta": after - before}
    reasons = []
    if deltas["exact"]["delta"] < 0:
        reasons.append(f"exact fell {baseline['exact']} -> {current['exact']}")
    reasons += [
        f"category {name} fell {row['baseline']} -> {row['current']}"
        for name, row in per_category.items()
        if row["delta"] < 0
    ]
    for key in ("invented_calls", "schema_invalid_returns"):
        if deltas[key]["delta"] > 0:
            reasons.append(f"{key} rose {baseline[key]} -> {current[key]}")
    before_pass = {r["id"]: r["passed"] for r in baseline["per_case"]}
    fixed = [
        r["id"] for r in current["per_case"] if r["passed"] and before_pass.get(r["id"]) is False
    ]
    broken = [
        r["id"] for r in current["per_case"] if not r["passed"] and before_pass.get(r["id"]) is True
    ]
    return {
        "regressed": bool(reasons),
        "reasons": reasons,
        "deltas": deltas,
        "categories": per_category,
        "flipped": {"fixed": fixed, "broken": broken},
    }


# --------------------------------------------------------------------------- text output

_ARROWS = {
    "invented_calls": "<- calls returned where there was none to make",
    "false_refusals": "<- gave up on a call that was repairable",
    "schema_invalid_returns": "<- returned a call the declared schema still rejects",
}
IN_SAMPLE_NOTE = (
    "NOTE: toolshim is the reference normaliser, written from the same rulebook as this corpus: "
    "this figure is in-sample and proves little."
)


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def render_text(report: Mapping[str, Any]) -> str:
    """The seed's headline block and the per-category table."""
    rows = [
        ("cases", str(report["cases"])),
        (
            "exact match",
            f"{report['exact']} / {report['cases']} ({_pct(report['exact'], report['cases'])})",
        ),
        ("refused correctly", f"{report['refused_correctly']} / {report['refusal_cases']}"),
        ("invented calls", f"{report['invented_calls']:<4} {_ARROWS['invented_calls']}"),
        ("false refusals", f"{report['false_refusals']:<4} {_ARROWS['false_refusals']}"),
        (
            "schema-invalid returns",
            f"{report['schema_invalid_returns']:<4} {_ARROWS['schema_invalid_returns']}",
        ),
    ]
    lines = [f"TOOLCALL-300 adapter: {report['adapter']}"]
    lines += [f"{label:<24}{value}".rstrip() for label, value in rows]
    lines.append(f"{'corpus sha256':<24}{report['corpus_sha256']}")
    timing = report.get("timing") or {}
    if timing.get("total_seconds") is not None:
        median = timing.get("median_case_seconds")
        median_text = f", median {median * 1000:.2f} ms per case" if median is not None else ""
        lines.append(f"{'time':<24}{timing['total_seconds']:.2f} s{median_text}")
    if adapters.is_reference_normaliser(str(report["adapter"])):
        lines.append(IN_SAMPLE_NOTE)
    lines += ["", f"{'category':<24}{'n':>5}{'pass':>6}"]
    for name, row in report["categories"].items():
        lines.append(f"{name:<24}{row['n']:>5}{row['pass']:>6}")
    return "\n".join(lines) + "\n"


def _short(value: Any, limit: int = 160) -> str:
    text = _canonical_or_none(value) if value is not None else "null (refused)"
    text = repr(value) if text is None else text
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_failures(
    report: Mapping[str, Any],
    cases: Sequence[Mapping[str, Any]],
    answers: Mapping[str, Any],
    notes: Mapping[str, str],
) -> str:
    """One block per failed case: outcome, what was expected, what came back, and why."""
    by_id = {c["id"]: c for c in cases}
    lines = []
    for row in report["per_case"]:
        if row["passed"]:
            continue
        case = by_id[row["id"]]
        lines.append(f"FAIL {row['id']} [{row['category']}] {row['outcome']}")
        expected = case["expected"] if case["expected_kind"] == "value" else None
        lines.append(f"  expected {_short(expected)}")
        lines.append(f"  returned {_short(answers.get(row['id']))}")
        if row["id"] in notes:
            lines.append(f"  note     {notes[row['id']]}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_comparison(comparison: Mapping[str, Any]) -> str:
    """The gate's verdict and what moved."""
    verdict = "REGRESSION" if comparison["regressed"] else "no regression"
    lines = [f"baseline: {verdict}"]
    lines += [f"  {reason}" for reason in comparison["reasons"]]
    moved = ", ".join(
        f"{key} {row['delta']:+d}" for key, row in comparison["deltas"].items() if row["delta"]
    )
    if moved:
        lines.append(f"  changed: {moved}")
    for label in ("fixed", "broken"):
        ids = comparison["flipped"][label]
        if ids:
            shown = ", ".join(ids[:20]) + (f" (+{len(ids) - 20} more)" if len(ids) > 20 else "")
            lines.append(f"  {label}: {shown}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the CLI shell


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Flags of ``toolcall300 score``; a bad flag raises UsageError (exit 1, never 2)."""
    p = ArgParser(prog="toolcall300 score", description="Score an adapter against a corpus.")
    p.add_argument("--corpus", metavar="FILE", help="the corpus, JSON Lines (DESIGN.md format)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--adapter", metavar="SPEC", help="module:callable, naive or toolshim")
    who.add_argument("--adapter-cmd", metavar="CMD", help="a program: one process per case")
    p.add_argument(
        "--stream",
        action="store_true",
        help="with --adapter-cmd: one long-lived process, JSON Lines",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="per-case time limit (default 10)",
    )
    p.add_argument(
        "--baseline", metavar="FILE", help="a saved report; exit 2 on a regression against it"
    )
    p.add_argument(
        "--json", metavar="FILE", help="write the report here (a saved report is a baseline)"
    )
    p.add_argument("--show-failures", action="store_true", help="print every failed case")
    p.add_argument("--spec", action="store_true", help="print the grading contract and exit")
    p.add_argument("--selftest", action="store_true", help="check the grading logic on inline data")
    args = p.parse_args(list(argv))
    if args.spec or args.selftest:
        return args
    if not args.corpus:
        p.error("--corpus FILE is required")
    if not args.adapter and not args.adapter_cmd:
        p.error("one of --adapter or --adapter-cmd is required")
    if args.stream and not args.adapter_cmd:
        p.error("--stream needs --adapter-cmd")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        p.error("--timeout must be a positive number of seconds")
    return args


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(
            f"toolcall300 score: cannot read {what} {path}: {exc.strerror or exc}"
        ) from None


def load_baseline(path: str) -> dict[str, Any]:
    """A saved report, checked for shape; any problem is one usage line."""
    try:
        report = loads_strict(_read(path, "baseline").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"toolcall300 score: baseline {path} is not JSON: {exc}") from None
    problem = report_problem(report)
    if problem:
        raise UsageError(f"toolcall300 score: baseline {path}: {problem}")
    assert isinstance(report, dict)
    return report


def build_adapter(args: argparse.Namespace) -> adapters.Adapter:
    """The adapter the flags name; an unknown module or empty command is a usage error."""
    try:
        if args.adapter:
            return adapters.load_callable(args.adapter)
        argv = shlex.split(args.adapter_cmd)
    except (adapters.AdapterError, ValueError) as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    if not argv:
        raise UsageError("toolcall300 score: --adapter-cmd is empty")
    description = adapters.command_description(argv, args.stream)
    if args.stream:
        return adapters.StreamAdapter(argv, description)
    return adapters.CommandAdapter(argv, description)


def _progress_bar(stderr: TextIO) -> adapters.Progress | None:
    """A one-line progress bar, only when stderr is a terminal (never in CI logs)."""
    isatty = getattr(stderr, "isatty", None)
    if not (isatty and isatty()):
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done}/{total}")
        if done >= total:
            stderr.write("\r" + " " * (width + 24) + "\r")
        stderr.flush()

    return show


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Score, print, save, gate. Exit 0, 1 (usage or input error) or 2 (regression only)."""
    if args.spec:
        stdout.write(render_spec())
        return EXIT_OK
    if args.selftest:
        from toolcall300.scoring.selftest import run_selftest  # the checks import this module

        return run_selftest(stdout)
    data = _read(args.corpus, "corpus")
    try:
        cases = parse_corpus(data)
    except CorpusError as exc:
        raise UsageError(f"toolcall300 score: corpus {args.corpus} {exc}") from None
    corpus_sha = sha256_hex(data)
    baseline = load_baseline(args.baseline) if args.baseline else None
    if baseline is not None and baseline["corpus_sha256"] != corpus_sha:
        raise UsageError(
            f"toolcall300 score: baseline {args.baseline} was scored on corpus "
            f"{baseline['corpus_sha256'][:12]}, not on {args.corpus} ({corpus_sha[:12]}); "
            "reports over different corpora cannot be compared"
        )
    adapter = build_adapter(args)
    try:
        result = adapter.run(cases, timeout=args.timeout, progress=_progress_bar(stderr))
    except adapters.AdapterError as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    for warning in result.warnings:
        stderr.write(f"toolcall300 score: warning: {warning}\n")
    report = score_cases(
        cases,
        result.answers,
        adapter=adapter.description,
        corpus_sha256=corpus_sha,
        timing=result.timing(),
    )
    stdout.write(render_text(report))
    if args.show_failures:
        stdout.write("\n" + render_failures(report, cases, result.answers, result.notes))
    if args.json:
        try:
            with open(args.json, "wb") as fh:
                fh.write(pretty_bytes(report))
        except OSError as exc:
            raise UsageError(
                f"toolcall300 score: cannot write {args.json}: {exc.strerror or exc}"
            ) from None
    if baseline is None:
        return EXIT_OK
    comparison = compare_reports(baseline, report)
    stdout.write("\n" + render_comparison(comparison))
    return EXIT_REGRESSION if comparison["regressed"] else EXIT_OK


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m toolcall300.scoring.grading``: the same as ``toolcall300 score``."""
    try:
        return run(parse_args(list(sys.argv[1:] if argv is None else argv)), sys.stdout, sys.stderr)
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
