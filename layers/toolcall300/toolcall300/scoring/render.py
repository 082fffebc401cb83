"""The scorer's text output: the headline block (docs/report.md), the failures, the gate's verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolcall300.scoring import adapters
from toolcall300.scoring.grading import canonical_or_none

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
    """The headline block and the per-category table."""
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
    text = canonical_or_none(value) if value is not None else "null (refused)"
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
