"""The scorer's text output: the headline block (docs/report.md), the side-by-side table of
several adapters, the failures, the gate's verdict; and the same figures as Markdown for a CI
job summary and as JUnit XML."""

from __future__ import annotations

import html
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from toolcall300.scoring import adapters
from toolcall300.scoring.caseview import view_lines
from toolcall300.scoring.grading import INVENTED_CALL, REFUSED_CORRECTLY
from toolcall300.scoring.report import short_value
from toolcall300.scoring.selection import partial_note

_ARROWS = {
    "invented_calls": "<- calls returned where there was none to make",
    "false_refusals": "<- gave up on a call that was repairable",
    "schema_invalid_returns": "<- returned a call the declared schema still rejects",
    "adapter_errors": "<- broke instead of answering (graded as refusals)",
}
#: What a corpus this suite built is, and is not, said under every table scored on one.
CORPUS_NOTE = (
    "The corpus is a discriminating test of each rule of the contract (score --spec), not a "
    "sample of traffic: a pass rate says which rules the code implements, not what share of "
    "real calls it would mend."
)
IN_SAMPLE_NOTE = (
    "NOTE: toolshim is the reference normaliser, written from the same rulebook as this corpus: "
    "this figure is in-sample and proves little."
)


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def errored_refusals(report: Mapping[str, Any]) -> int:
    """How many of the correct refusals were an adapter error, not a decision to refuse."""
    errors = report.get("errors") or {}
    return sum(
        1
        for row in report["per_case"]
        if row["outcome"] == REFUSED_CORRECTLY and row["id"] in errors
    )


def _refused_text(report: Mapping[str, Any]) -> str:
    text = f"{report['refused_correctly']} / {report['refusal_cases']}"
    by_error = errored_refusals(report)
    return f"{text} ({by_error} of them adapter errors)" if by_error else text


def _timing_text(timing: Mapping[str, Any]) -> str | None:
    """Total wall time, wall time per case, and the median latency from send to answer."""
    if timing.get("total_seconds") is None:
        return None
    parts = [f"{timing['total_seconds']:.2f} s"]
    if timing.get("wall_seconds_per_case") is not None:
        parts.append(f"{timing['wall_seconds_per_case'] * 1000:.2f} ms wall per case")
    if timing.get("median_case_seconds") is not None:
        parts.append(f"median {timing['median_case_seconds'] * 1000:.2f} ms from send to answer")
    return ", ".join(parts)


def render_text(report: Mapping[str, Any], *, in_sample: bool = False) -> str:
    """The headline block and the per-category table.

    ``in_sample``: the corpus was built by this suite's generator, so the reference
    normaliser's figure on it is in-sample and the note says so.
    """
    rows = [
        ("cases", str(report["cases"])),
        (
            "exact match",
            f"{report['exact']} / {report['cases']} ({_pct(report['exact'], report['cases'])})",
        ),
        ("refused correctly", _refused_text(report)),
        ("invented calls", f"{report['invented_calls']:<4} {_ARROWS['invented_calls']}"),
        ("false refusals", f"{report['false_refusals']:<4} {_ARROWS['false_refusals']}"),
        (
            "schema-invalid returns",
            f"{report['schema_invalid_returns']:<4} {_ARROWS['schema_invalid_returns']}",
        ),
        (
            "adapter errors",
            f"{report.get('adapter_errors', 0):<4} {_ARROWS['adapter_errors']}",
        ),
    ]
    lines = [f"TOOLCALL-300 adapter: {report['adapter']}"]
    lines += [f"{label:<24}{value}".rstrip() for label, value in rows]
    first = next(iter((report.get("errors") or {}).items()), None)
    if first is not None:
        tail = first[1].strip().splitlines() or [""]
        lines.append(f"{'':<24}first: {first[0]}: {tail[-1][:100]} (--show-failures: every one)")
    lines.append(f"{'corpus sha256':<24}{report['corpus_sha256']}")
    timing_text = _timing_text(report.get("timing") or {})
    if timing_text:
        lines.append(f"{'time':<24}{timing_text}")
    if in_sample and adapters.is_reference_normaliser(str(report["adapter"])):
        lines.append(IN_SAMPLE_NOTE)
    lines += ["", f"{'category':<24}{'n':>5}{'pass':>6}"]
    for name, row in report["categories"].items():
        lines.append(f"{name:<24}{row['n']:>5}{row['pass']:>6}")
    if in_sample:
        lines += ["", CORPUS_NOTE]
    return "\n".join(lines) + "\n"


def render_failures(
    report: Mapping[str, Any],
    cases: Sequence[Mapping[str, Any]],
    answers: Mapping[str, Any],
    notes: Mapping[str, str],
) -> str:
    """One block per failed case, the case view (``caseview.view_lines``: input, expected,
    returned, diff, rule, and the rationale when the corpus's is at hand), and per case the
    adapter broke on (even where that refusal passed) the error's tail; the adapter's note."""
    by_id = {c["id"]: c for c in cases}
    errors = report.get("errors") or {}
    details = report.get("failure_details") or {}
    lines = []
    for row in report["per_case"]:
        if row["passed"] and row["id"] not in errors:
            continue
        if not row["passed"] and isinstance(details.get(row["id"]), Mapping):
            view = view_lines(row["id"], row["category"], row["outcome"], details[row["id"]])
            lines += ["FAIL " + view[0], *view[1:]]
        else:
            case = by_id[row["id"]]
            label = "FAIL" if not row["passed"] else "ERROR"
            lines.append(f"{label} {row['id']} [{row['category']}] {row['outcome']}")
            expected = case["expected"] if case["expected_kind"] == "value" else None
            lines.append(f"  expected {short_value(expected)}")
            lines.append(f"  returned {short_value(answers.get(row['id']))}")
        if row["id"] in notes:
            lines.append(f"  note     {notes[row['id']]}")
        if row["id"] in errors:
            lines.append("  error    " + errors[row["id"]].replace("\n", "\n           "))
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


# --------------------------------------------------------------------------- several adapters

#: The headline rows of the side-by-side table: (label, how to read it from a report).
_HEADLINES: tuple[tuple[str, Any], ...] = (
    ("exact match", lambda r: f"{r['exact']} / {r['cases']}"),
    ("refused correctly", lambda r: f"{r['refused_correctly']} / {r['refusal_cases']}"),
    ("invented calls", lambda r: str(r["invented_calls"])),
    ("false refusals", lambda r: str(r["false_refusals"])),
    ("schema-invalid returns", lambda r: str(r["schema_invalid_returns"])),
    ("adapter errors", lambda r: str(r.get("adapter_errors", 0))),
    ("wall ms per case", lambda r: _ms((r.get("timing") or {}).get("wall_seconds_per_case"))),
)


def _ms(seconds: Any) -> str:
    return f"{seconds * 1000:.2f}" if isinstance(seconds, (int, float)) else "-"


def short_name(description: str) -> str:
    """A column heading for an adapter: its file or module stem, the callable if not
    ``normalise``; for a program, its words with folders dropped (the legend has the rest).

    >>> short_name("peers/json_repair_gate.py:normalise"), short_name("toolshim:normalise")
    ('json_repair_gate', 'toolshim')
    >>> short_name("cmd --stream: node peers/node/jsonrepair.mjs --ajv")
    'node jsonrepair.mjs --ajv'
    """
    kind, sep, rest = description.partition(": ")
    if sep and kind in ("cmd", "cmd --stream"):
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        return " ".join(PurePath(w).name or w for w in words)[:32]
    module, _, fn = description.partition(":")
    stem = PurePath(module).stem if module.endswith(".py") else module.rsplit(".", 1)[-1]
    return stem if fn in ("", "normalise") else f"{stem}:{fn}"


def column_names(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """A short, unique column heading per report (:func:`short_name`, numbered if repeated)."""
    names: list[str] = []
    for report in reports:
        name = short_name(str(report["adapter"])) or "adapter"
        names.append(name if name not in names else f"{name} #{len(names) + 1}")
    return names


def _side_by_side_rows(reports: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Header, headline rows, then one row per category: ``[label, n, value per adapter]``."""
    rows = [["", "n", *column_names(reports)]]
    rows += [[label, "", *(read(r) for r in reports)] for label, read in _HEADLINES]
    names = list(reports[0]["categories"])
    for report in reports[1:]:
        names += [n for n in report["categories"] if n not in names]
    for name in names:
        n = next(str(r["categories"][name]["n"]) for r in reports if name in r["categories"])
        rows.append(
            [name, n, *(str(r["categories"].get(name, {}).get("pass", 0)) for r in reports)]
        )
    return rows


def _legend(reports: Sequence[Mapping[str, Any]], in_sample: bool) -> list[tuple[str, str]]:
    """``(column name, the adapter's full description)`` per report, in-sample ones marked."""
    out = []
    for name, report in zip(column_names(reports), reports, strict=True):
        note = (
            " (in-sample)"
            if in_sample and adapters.is_reference_normaliser(str(report["adapter"]))
            else ""
        )
        out.append((name, f"{report['adapter']}{note}"))
    return out


def _cell(text: str) -> str:
    """A Markdown table cell: a ``|`` or a line break in an adapter's name cannot split it."""
    return text.replace("|", "\\|").replace("\n", " ")


def render_side_by_side(reports: Sequence[Mapping[str, Any]], *, in_sample: bool = False) -> str:
    """One table with a column per adapter: the headline counts, then each category."""
    rows = _side_by_side_rows(reports)
    widths = [max(len(row[col]) for row in rows) + 2 for col in range(2, len(rows[0]))]
    head = len(_HEADLINES) + 1

    def line(cells: list[str]) -> str:
        values = "".join(f"{v:>{w}}" for v, w in zip(cells[2:], widths, strict=True))
        return f"{cells[0]:<24}{cells[1]:>5}{values}"

    lines = [f"TOOLCALL-300 side by side, corpus sha256 {reports[0]['corpus_sha256']}"]
    lines += [f"{name} = {description}" for name, description in _legend(reports, in_sample)]
    lines.append("")
    for i, row in enumerate(rows):
        if i == head:
            lines += ["", line(["category", "n", *rows[0][2:]])]
        lines.append(line(row))
    if in_sample and any(adapters.is_reference_normaliser(str(r["adapter"])) for r in reports):
        lines += ["", IN_SAMPLE_NOTE]
    if in_sample:
        lines += ["", CORPUS_NOTE]
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def verdict_line(verdict: str, detail: str) -> str:
    """The first line under a summary's heading: ``pass``, ``baseline_set`` (a hosted run that
    became its baseline), ``regression`` or ``error`` (the last two shouted), and why."""
    shown = verdict.upper() if verdict in ("regression", "error") else verdict
    return f"**Verdict: {shown}**: {_cell(detail)}"


def unbaselined_verdict(reports: Sequence[Mapping[str, Any]]) -> str:
    """The verdict of a summary scored without a baseline; a partial run says it is partial
    (``selection.partial_note``), so a summary of part of a corpus never reads as a full pass."""
    note = next((n for n in map(partial_note, reports) if n), None)
    if note is not None:
        return verdict_line("pass", f"{note}; scored only, nothing was gated")
    return verdict_line("pass", "scored; no baseline given, so nothing can regress")


def render_markdown_error(detail: str) -> str:
    """A CI job summary for a run that produced no scores (the verdict ``error``)."""
    return f"## TOOLCALL-300\n\n{verdict_line('error', detail)}\n"


def render_markdown(
    reports: Sequence[Mapping[str, Any]],
    *,
    in_sample: bool = False,
    comparison: Mapping[str, Any] | None = None,
    baseline_name: str = "the baseline",
    baseline_set: bool = False,
) -> str:
    """A CI job summary (GitHub's ``$GITHUB_STEP_SUMMARY``, any Markdown viewer): the verdict
    first (``pass`` or ``regression`` against ``baseline_name``; ``baseline_set`` when this run
    became ``baseline_name`` with none before it, as ``toolcall300 ci`` says; ``pass`` with no
    baseline, saying nothing could regress), then the table."""
    if baseline_set:
        top = verdict_line(
            "baseline_set", f"no earlier {baseline_name}: this run is now the baseline"
        )
    elif comparison is None:
        top = unbaselined_verdict(reports)
    elif comparison["regressed"]:
        reasons = "; ".join(comparison["reasons"]) or "regressed"
        top = verdict_line("regression", f"against {baseline_name}: {reasons}")
    else:
        top = verdict_line("pass", f"no regression against {baseline_name}")
    rows = _side_by_side_rows(reports)
    lines = ["## TOOLCALL-300", "", top, "", f"corpus sha256 `{reports[0]['corpus_sha256']}`", ""]
    lines += [
        f"- **{_cell(name)}**: {_cell(description)}"
        for name, description in _legend(reports, in_sample)
    ]
    lines += ["", "| " + " | ".join(_cell(c) for c in rows[0]) + " |"]
    lines.append("|---|---|" + "---|" * len(reports))
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[1:]]
    if in_sample and any(adapters.is_reference_normaliser(str(r["adapter"])) for r in reports):
        lines += ["", IN_SAMPLE_NOTE]
    if in_sample:
        lines += ["", CORPUS_NOTE]
    if comparison is not None:
        verdict = "**REGRESSION**" if comparison["regressed"] else "no regression"
        lines += ["", f"Baseline: {verdict}"]
        lines += [f"- {reason}" for reason in comparison["reasons"]]
    broken = set(((comparison or {}).get("flipped") or {}).get("broken") or ())
    for name, report in zip(column_names(reports), reports, strict=True):
        lines += markdown_failures(report, broken, title=name if len(reports) > 1 else "")
    return "\n".join(lines) + "\n"


#: How many failed cases a Markdown summary shows per adapter (the rest are counted).
MARKDOWN_CASES = 25


def markdown_failures(
    report: Mapping[str, Any], broken: set[str] | frozenset[str] = frozenset(), *, title: str = ""
) -> list[str]:
    """The failed cases of a report as folded case views (``<details>``, the view escaped in a
    ``<pre>`` on one line, so no input text, not even a blank line, can break the page), the cases that broke against the baseline
    first; at most :data:`MARKDOWN_CASES`."""
    details = _details_of(report)
    failed = [row for row in report["per_case"] if not row["passed"]]
    if not failed:
        return []
    failed.sort(key=lambda row: row["id"] not in broken)  # stable: corpus order otherwise
    heading = f"### Failed cases{f' ({_cell(title)})' if title else ''}: {len(failed)}"
    lines = ["", heading, ""]
    for row in failed[:MARKDOWN_CASES]:
        mark = " (broke: passed in the baseline)" if row["id"] in broken else ""
        body = _failure_body(row, details.get(row["id"]))
        lines.append(
            f"<details><summary><code>{html.escape(row['id'])}</code> "
            f"{html.escape(row['category'])} {html.escape(row['outcome'])}{mark}</summary>"
            f"<pre>{html.escape(body).replace(chr(10), '&#10;')}</pre></details>"
        )
    if len(failed) > MARKDOWN_CASES:
        lines += [
            "",
            f"... and {len(failed) - MARKDOWN_CASES} more: `score --show-failures` or the "
            "JUnit file show every one.",
        ]
    return lines


@dataclass(frozen=True)
class JunitBaseline:
    """What a JUnit file is judged against: a failure already in the baseline is reported as
    skipped (known), only a regression as a failure, and the gate's own verdict is one
    testcase more, so the file is red exactly when the gate says regression (docs/report.md)."""

    #: how the file names the baseline: "baseline base.json", "baseline 'main' (run r_...)"
    name: str
    #: case id -> its outcome in the baseline, for every case that failed there too
    known: Mapping[str, str]
    regressed: bool
    reasons: Sequence[str] = ()


def junit_baseline(
    name: str, baseline: Mapping[str, Any], comparison: Mapping[str, Any]
) -> JunitBaseline:
    """The :class:`JunitBaseline` of a saved report and this run's comparison with it."""
    known = {
        str(row["id"]): str(row.get("outcome") or "failed")
        for row in baseline["per_case"]
        if not row["passed"]
    }
    return JunitBaseline(name, known, bool(comparison["regressed"]), tuple(comparison["reasons"]))


#: What a failure means in a file written without a baseline (a property of each testsuite and
#: its system-out, so both a reporter that reads properties and a person reading the log see it).
NO_BASELINE_NOTE = (
    "No baseline was given: each failure is a case this adapter does not pass yet, not a "
    "regression. Pass --baseline REPORT (a saved --json report) to report only regressions as "
    "failures and the baseline's own failures as skipped."
)


def render_junit_against(
    reports: Sequence[Mapping[str, Any]],
    *,
    baseline_name: str,
    baseline: Mapping[str, Any] | None,
    comparison: Mapping[str, Any] | None,
) -> bytes:
    """The JUnit file of ``reports``, judged against a baseline when one was compared: what
    every track whose reports this module renders writes (the single-call and parallel ones)."""
    judged = (
        junit_baseline(baseline_name, baseline, comparison)
        if baseline is not None and comparison is not None
        else None
    )
    return render_junit(reports, baseline=judged)


def render_junit(
    reports: Sequence[Mapping[str, Any]], *, baseline: JunitBaseline | None = None
) -> bytes:
    """JUnit XML: a testsuite per adapter, a testcase per case id (classname its category).
    ``toolcall300 score`` writes it from its reports and ``toolcall300 ci`` from the hosted
    run's stored report: the same file from the same fields.

    With ``baseline`` (one report), a case that failed there too is skipped, naming the
    baseline; only the others fail, and a ``baseline gate`` testcase carries the gate's
    verdict. Without one, every failed case fails and each testsuite says what that means
    (:data:`NO_BASELINE_NOTE`). A failure's message gives the case id, category, outcome,
    and from the report's ``failure_details`` the expected call, what came back, the first
    difference, the rule and the input; its body is the whole case view. A case the adapter
    broke on carries the error's tail in ``system-err``.
    """
    root = ET.Element("testsuites", name="TOOLCALL-300")
    for report in reports:
        _junit_suite(root, report, baseline if len(reports) == 1 else None)
    return junit_bytes(root)


def render_junit_error(reason: str, detail: str) -> bytes:
    """JUnit XML for a run that produced no scores (``toolcall300 ci`` on a failed hosted run):
    one failing testcase saying why, so the CI's test view shows it rather than nothing."""
    root = ET.Element("testsuites", name="TOOLCALL-300")
    suite = ET.SubElement(root, "testsuite", name="hosted run", tests="1", failures="1")
    case = ET.SubElement(suite, "testcase", classname="toolcall300", name="hosted run")
    message = _xml_safe(detail)
    ET.SubElement(case, "failure", type=_xml_safe(reason), message=message).text = message
    return junit_bytes(root)


def _details_of(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``failure_details`` entries that carry at least ``expected`` and ``returned`` text; a
    report stored before the field existed (or an entry not of its shape) gives none, and the
    message says where to look. Fields added later (the case view's) are read if present."""
    found = report.get("failure_details")
    if not isinstance(found, Mapping):
        return {}
    return {
        str(key): row
        for key, row in found.items()
        if isinstance(row, Mapping)
        and isinstance(row.get("expected"), str)
        and isinstance(row.get("returned"), str)
    }


def _junit_suite(
    root: ET.Element, report: Mapping[str, Any], baseline: JunitBaseline | None
) -> None:
    details = _details_of(report)
    errors = report.get("errors") or {}
    seconds = (report.get("timing") or {}).get("total_seconds")
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_xml_safe(str(report["adapter"])),
        time=f"{seconds:.3f}" if isinstance(seconds, (int, float)) else "0",
    )
    note = (
        NO_BASELINE_NOTE
        if baseline is None
        else (
            f"Judged against {baseline.name}: a case that failed there too is skipped (a known "
            "failure); only a case that passed there and fails now is a failure."
        )
    )
    partial = partial_note(report)
    if partial is not None:
        note = f"{partial}. {note}"
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="toolcall300.failures", value=_xml_safe(note))
    if partial is not None:
        ET.SubElement(props, "property", name="toolcall300.selection", value=_xml_safe(partial))
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    for row in report["per_case"]:
        counts["tests"] += 1
        case = ET.SubElement(
            suite, "testcase", classname=f"toolcall300.{row['category']}", name=_xml_safe(row["id"])
        )
        if not row["passed"]:
            text = _failure_text(row, details.get(row["id"]))
            was = baseline.known.get(row["id"]) if baseline is not None else None
            if baseline is not None and was is not None:
                counts["skipped"] += 1
                since = "" if was == row["outcome"] else f" (was {was}, now {row['outcome']})"
                ET.SubElement(
                    case,
                    "skipped",
                    message=_xml_safe(f"known failure in {baseline.name}{since}: {text}"[:1000]),
                )
            else:
                counts["failures"] += 1
                failure = ET.SubElement(
                    case, "failure", type=row["outcome"], message=_xml_safe(text[:1000])
                )
                failure.text = _xml_safe(_failure_body(row, details.get(row["id"])))
        if row["id"] in errors:
            ET.SubElement(case, "system-err").text = _xml_safe(errors[row["id"]])
    if baseline is not None:
        counts["tests"] += 1
        gate = ET.SubElement(
            suite, "testcase", classname="toolcall300.baseline", name="baseline gate"
        )
        if baseline.regressed:
            counts["failures"] += 1
            reasons = "; ".join(baseline.reasons) or "regressed"
            message = _xml_safe(f"regression against {baseline.name}: {reasons}")
            ET.SubElement(gate, "failure", type="regression", message=message).text = message
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("errors", "0")
    ET.SubElement(suite, "system-out").text = _xml_safe(note)


def _failure_text(row: Mapping[str, Any], detail: Mapping[str, Any] | None) -> str:
    """``tc300-0001 [category] outcome: expected ...; returned ...; <first difference>; rule
    ...; input ...`` (what a CI's test view shows on one line; the body has the whole view)."""
    head = f"{row['id']} [{row['category']}] {row['outcome']}"
    if detail is None:
        wanted = "a refusal" if row["outcome"] == INVENTED_CALL else "the expected call"
        return (
            f"{head}: wanted {wanted} (this report predates failure_details: score locally "
            "with --show-failures for the values)"
        )
    text = f"{head}: expected {detail['expected']}; returned {detail['returned']}"
    diff = detail.get("diff")
    if isinstance(diff, list) and diff:
        text += f"; {diff[0]}" + (f" (+{len(diff) - 1} more)" if len(diff) > 1 else "")
    if isinstance(detail.get("rule"), str):
        text += f"; decided by {detail['rule']}"
    if isinstance(detail.get("input"), str):
        text += "; input " + " ".join(detail["input"].split())[:200]
    return text


def _failure_body(row: Mapping[str, Any], detail: Mapping[str, Any] | None) -> str:
    """A JUnit failure's body: the whole case view when the report has it, else the message."""
    if detail is None:
        return _failure_text(row, None)
    return "\n".join(view_lines(row["id"], row["category"], row["outcome"], detail))


def junit_bytes(root: ET.Element) -> bytes:
    """A JUnit document as UTF-8 bytes with its declaration."""
    ET.indent(root)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"


def _xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry (an adapter's stderr may hold any)."""
    return "".join(
        ch
        if ch in "\t\n\r"
        or (" " <= ch <= "\ud7ff")
        or ("\ue000" <= ch <= "\ufffd")
        or ch >= "\U00010000"
        else "?"
        for ch in text
    )
