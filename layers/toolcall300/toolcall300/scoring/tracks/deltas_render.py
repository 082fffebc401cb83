"""The deltas track's report rendered: the text report, the side-by-side table, the failures,
the comparison, the CI summary and the JUnit file. Strings and bytes out; it judges nothing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from toolcall300.scoring import adapters
from toolcall300.scoring.render import junit_bytes, verdict_line


def _rows(reports: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    def pct(a: int, b: int) -> str:
        return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "0/0"

    rows = [["figure", *[str(r["adapter"]) for r in reports]]]
    rows.append(
        [
            "exact (every partition, invariant, no unsafe commit)",
            *[pct(r["exact"], r["cases"]) for r in reports],
        ]
    )
    rows.append(["streams exact", *[pct(r["streams_exact"], r["streams"]) for r in reports]])
    rows.append(
        ["invariant across partitions", *[pct(r["invariant"], r["cases"]) for r in reports]]
    )
    rows.append(
        ["refused correctly", *[pct(r["refused_correctly"], r["refusal_cases"]) for r in reports]]
    )
    rows.append(["invented calls", *[str(r["invented_calls"]) for r in reports]])
    rows.append(["invented values", *[str(r["invented_values"]) for r in reports]])
    rows.append(["unsafe commits (goal 0)", *[str(r["unsafe_commits"]) for r in reports]])
    rows.append(["commits", *[str(r["commits"]) for r in reports]])
    rows.append(
        ["commit lead (share of stream to come)", *[f"{r['commit_lead']:.3f}" for r in reports]]
    )
    rows.append(["adapter errors", *[str(r["adapter_errors"]) for r in reports]])
    return rows


def render_text(report: Mapping[str, Any], *, in_sample: bool = False) -> str:
    lines = ["TOOLCALL-300 deltas track", f"corpus sha256 {report['corpus_sha256']}"]
    for row in _rows([report])[1:]:
        lines.append(f"{row[0]:<56}{row[1]}")
    for group in ("forms", "shapes", "categories"):
        lines.append("")
        lines.append(
            f"{group[:-1] if group != 'categories' else 'category':<24}{'n':>6}{'pass':>6}"
        )
        for name, row in report[group].items():
            lines.append(f"{name:<24}{row['n']:>6}{row['pass']:>6}")
    if in_sample and adapters.is_reference_normaliser(str(report["adapter"])):
        lines += [
            "",
            "NOTE: toolshim is the reference normaliser, written from the same rulebook as this corpus: this figure is in-sample and proves little.",
        ]
    return "\n".join(lines) + "\n"


def render_side_by_side(reports: Sequence[Mapping[str, Any]], *, in_sample: bool = False) -> str:
    rows = _rows(reports)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return (
        "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        )
        + "\n"
    )


def render_failures(
    report: Mapping[str, Any], cases: Sequence[Mapping[str, Any]], run: adapters.AdapterRun
) -> str:
    lines = []
    for row in report["per_case"]:
        if row["passed"]:
            continue
        detail = report["failure_details"].get(row["id"], {})
        lines.append(
            f"FAIL {row['id']} [{row['form']}/{row['shape']}] {row['outcome']} ({row['streams_passed']}/{row['streams']} streams, {row['unsafe_commits']} unsafe commits)"
        )
        lines.append(f"  expected {detail.get('expected', '?')}")
        lines.append(f"  returned {detail.get('returned', '?')}")
        if detail.get("rationale"):
            lines.append(f"  label    {detail['rationale']}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_comparison(comparison: Mapping[str, Any]) -> str:
    lines = ["baseline: " + ("REGRESSION" if comparison["regressed"] else "no regression")]
    lines += [f"  {reason}" for reason in comparison["reasons"]]
    if comparison["flipped"]["broken"]:
        lines.append("  broken: " + ", ".join(comparison["flipped"]["broken"]))
    if comparison["flipped"]["fixed"]:
        lines.append("  fixed: " + ", ".join(comparison["flipped"]["fixed"]))
    return "\n".join(lines) + "\n"


def render_markdown(
    reports: Sequence[Mapping[str, Any]],
    *,
    in_sample: bool = False,
    comparison: Mapping[str, Any] | None = None,
    baseline_name: str = "the baseline",
) -> str:
    if comparison is None:
        top = verdict_line("pass", "scored; no baseline given, so nothing can regress")
    elif comparison["regressed"]:
        top = verdict_line(
            "regression", f"against {baseline_name}: " + "; ".join(comparison["reasons"])
        )
    else:
        top = verdict_line("pass", f"no regression against {baseline_name}")
    rows = _rows(reports)
    lines = [
        "## TOOLCALL-300 deltas track",
        "",
        top,
        "",
        f"corpus sha256 `{reports[0]['corpus_sha256']}`",
        "",
    ]
    lines.append("| " + " | ".join(rows[0]) + " |")
    lines.append("|---" * len(rows[0]) + "|")
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines) + "\n"


def render_junit(
    reports: Sequence[Mapping[str, Any]],
    *,
    baseline_name: str = "",
    baseline: Mapping[str, Any] | None = None,
    comparison: Mapping[str, Any] | None = None,
) -> bytes:
    """One testsuite per adapter, one testcase per stream case (classname its form); with a
    baseline, a case that failed there too is skipped and a ``baseline gate`` testcase carries
    the verdict (as the single-call track's file does)."""
    known = (
        {r["id"] for r in (baseline or {}).get("per_case", []) if not r["passed"]}
        if baseline
        else set()
    )
    root = ET.Element("testsuites", name="TOOLCALL-300 deltas")
    for report in reports:
        suite = ET.SubElement(
            root, "testsuite", name=f"deltas: {report['adapter']}", tests=str(report["cases"])
        )
        failures = skipped = 0
        for row in report["per_case"]:
            case = ET.SubElement(
                suite, "testcase", classname=f"deltas.{row['form']}", name=row["id"]
            )
            if row["passed"]:
                continue
            if row["id"] in known and len(reports) == 1:
                ET.SubElement(case, "skipped", message=f"failed in {baseline_name} too")
                skipped += 1
                continue
            detail = report["failure_details"].get(row["id"], {})
            ET.SubElement(
                case,
                "failure",
                message=f"{row['id']} {row['outcome']}: expected {detail.get('expected')}, returned {detail.get('returned')}",
            )
            failures += 1
        if comparison is not None and len(reports) == 1:
            gate = ET.SubElement(suite, "testcase", classname="deltas", name="baseline gate")
            if comparison["regressed"]:
                ET.SubElement(gate, "failure", message="; ".join(comparison["reasons"]))
                failures += 1
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
    return junit_bytes(root)
