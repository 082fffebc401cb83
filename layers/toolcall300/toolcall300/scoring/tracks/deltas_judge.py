"""The deltas track's judging: each partition of a stream judged against the label, and a
case's partitions scored into the track's report (its counts, per category, form and shape,
and the commit lead), with the report's own shape checked when it is read back
(docs/deltas.md, "The adapter protocol and what is graded").

It reads a :class:`StreamResult` per partition and drives nothing: ``scoring.tracks.deltas``
runs the adapter and holds the gate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolcall300.scoring import adapters
from toolcall300.scoring.grading import (
    FALSE_REFUSAL,
    INVENTED_CALL,
    PASSING,
    REFUSED_CORRECTLY,
    canonical_or_none,
    judge_case,
)
from toolcall300.scoring.report import counts_problem, short_value, timing_fields
from toolcall300.spec import SPEC_VERSION

REPORT_VERSION = "toolcall300-deltas-report/1"


COUNT_FIELDS = (
    "cases",
    "exact",
    "streams",
    "streams_exact",
    "invariant",
    "refusal_cases",
    "refused_correctly",
    "false_refusals",
    "invented_calls",
    "invented_values",
    "unsafe_commits",
    "commits",
)


@dataclass
class StreamResult:
    """One partition's run: the answer, the commits with how many events had been pulled."""

    answer: Any
    commits: list[dict[str, Any]]
    events: int
    error: str | None = None


def _at(call: Any, path: Sequence[Any]) -> tuple[bool, Any]:
    value: Any = call.get("arguments") if isinstance(call, dict) else None
    for step in path:
        in_object = isinstance(value, dict) and isinstance(step, str) and step in value
        in_array = isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value)
        if not (in_object or in_array):
            return False, None
        value = value[step]
    return True, value


def judge_stream(case: Mapping[str, Any], result: StreamResult) -> dict[str, Any]:
    """One partition: its outcome; its unsafe commits (a path committed again with another
    value, or a committed value withdrawn or absent from the final call); its invented values
    (argument paths, committed or returned, where the label holds another value or none: every
    value of a call returned where none exists); and the lead of each safe, correct commit
    (the share of the stream's events still to come when it was made)."""
    outcome, _ = judge_case(case, result.answer)
    unsafe = 0
    invented: set[str] = set()
    leads: list[float] = []
    first: dict[str, str | None] = {}
    expected = case["expected"] if case["expected_kind"] == "value" else None

    def wrong(path: list[Any], value: str | None) -> bool:
        labelled, want = _at(expected, path)
        return not labelled or canonical_or_none(want) != value

    arguments = result.answer.get("arguments") if isinstance(result.answer, dict) else None
    if isinstance(arguments, dict):
        for key, value in arguments.items():
            if wrong([key], canonical_or_none(value)):
                invented.add(canonical_or_none([key]) or "")
    for entry in result.commits:
        commit = entry["commit"]
        path = commit.get("path") if isinstance(commit, dict) else None
        if not isinstance(path, list) or not path or "value" not in commit:
            unsafe += 1  # not a commit the protocol knows: nothing a caller could rely on
            continue
        key = canonical_or_none(path) or ""
        value = canonical_or_none(commit["value"])
        if key in first and first[key] != value:
            unsafe += 1  # changed
            continue
        first[key] = value
        held, final = _at(result.answer, path)
        if not held or canonical_or_none(final) != value:
            unsafe += 1  # withdrawn, or absent from the final call
            continue
        if wrong(path, value):
            invented.add(key)
            continue
        leads.append((result.events - entry["after"]) / max(result.events, 1))
    return {"outcome": outcome, "unsafe": unsafe, "invented": len(invented), "leads": leads}


def score(
    cases: Sequence[Mapping[str, Any]],
    run: adapters.AdapterRun,
    *,
    adapter: str = "",
    corpus_sha256: str = "",
    corpus_version: str | None = None,
    rationale: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The deltas report (docs/deltas.md, "The adapter protocol and what is graded"); pure.
    ``rationale`` (case id -> its rationale row) says, in each failed case's details, which
    source case and decision its label rests on."""
    streams: Mapping[str, list[StreamResult]] = getattr(run, "streams", {})
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    leads: list[float] = []
    groups: dict[str, dict[str, dict[str, int]]] = {"categories": {}, "forms": {}, "shapes": {}}
    per_case, details = [], {}
    for case in cases:
        results = streams.get(case["id"]) or [StreamResult(None, [], 0)]
        judged = [judge_stream(case, r) for r in results]
        outcomes = [j["outcome"] for j in judged]
        answers = {canonical_or_none(r.answer) if r.answer is not None else "null" for r in results}
        invariant = len(answers) == 1
        unsafe = sum(j["unsafe"] for j in judged)
        invented = sum(j["invented"] for j in judged)
        all_pass = all(o in PASSING for o in outcomes)
        passed = all_pass and invariant and unsafe == 0
        worst = next((o for o in outcomes if o not in PASSING), outcomes[0])
        counts["cases"] += 1
        counts["exact"] += passed
        counts["streams"] += len(results)
        counts["streams_exact"] += sum(o in PASSING for o in outcomes)
        counts["invariant"] += invariant
        counts["refusal_cases"] += case["expected_kind"] == "unrecoverable"
        counts["refused_correctly"] += all(o == REFUSED_CORRECTLY for o in outcomes)
        counts["false_refusals"] += any(o == FALSE_REFUSAL for o in outcomes)
        counts["invented_calls"] += any(o == INVENTED_CALL for o in outcomes)
        counts["invented_values"] += invented
        counts["unsafe_commits"] += unsafe
        counts["commits"] += sum(len(r.commits) for r in results)
        leads += [lead for j in judged for lead in j["leads"]]
        for group, name in (
            ("categories", case["category"]),
            ("forms", case["form"]),
            ("shapes", case["shape"]),
        ):
            row = groups[group].setdefault(name, {"n": 0, "pass": 0})
            row["n"] += 1
            row["pass"] += passed
        per_case.append(
            {
                "id": case["id"],
                "category": case["category"],
                "form": case["form"],
                "shape": case["shape"],
                "passed": passed,
                "outcome": worst
                if not all_pass
                else ("not_invariant" if not invariant else ("unsafe_commit" if unsafe else worst)),
                "streams": len(results),
                "streams_passed": sum(o in PASSING for o in outcomes),
                "unsafe_commits": unsafe,
            }
        )
        if not passed:
            bad = next(
                (r for r, o in zip(results, outcomes, strict=True) if o not in PASSING), results[0]
            )
            details[case["id"]] = {
                "expected": short_value(case["expected"])
                if case["expected_kind"] == "value"
                else "a refusal (no correct call exists)",
                "returned": short_value(bad.answer)
                if bad.answer is not None
                else "a refusal (null)",
                "rationale": str((rationale or {}).get(case["id"], {}).get("rationale", "")),
            }
    errored = {key: text for key, text in run.errors.items() if any(c["id"] == key for c in cases)}
    timing = run.timing()
    return {
        "report_version": REPORT_VERSION,
        "track": "deltas",
        "spec_version": SPEC_VERSION,
        "corpus_sha256": corpus_sha256,
        "corpus_version": corpus_version,
        "adapter": adapter,
        "timing": timing_fields(timing),
        **counts,
        "commit_lead": round(sum(leads) / len(leads), 6) if leads else 0.0,
        "adapter_errors": len(errored),
        "errors": errored,
        **{group: dict(sorted(rows.items())) for group, rows in groups.items()},
        "per_case": per_case,
        "failure_details": details,
    }


def report_problem(report: Any) -> str | None:
    problem = counts_problem(report, REPORT_VERSION, COUNT_FIELDS)
    if problem:
        return problem
    if not isinstance(report.get("commit_lead"), (int, float)):
        return "missing commit_lead"
    if not isinstance(report.get("corpus_sha256"), str) or not isinstance(
        report.get("per_case"), list
    ):
        return "missing corpus_sha256 or per_case"
    for group in ("categories", "forms", "shapes"):
        rows = report.get(group)
        if not isinstance(rows, dict) or any(
            not isinstance(v, dict) or not isinstance(v.get("pass"), int) for v in rows.values()
        ):
            return f"{group} must map names to {{n, pass}}"
    return None
