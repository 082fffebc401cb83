"""Many graded cases as one report, and the baseline gate that compares two reports.

Report (``REPORT_VERSION``), flat and stable: ``report_version``, ``spec_version``,
``corpus_sha256``, ``adapter``, ``timing`` {``total_seconds``, ``wall_seconds_per_case``,
``median_case_seconds`` (latency from sending a case to its answer)}, the counts ``cases``,
``exact``, ``refusal_cases``, ``refused_correctly``, ``invented_calls``, ``false_refusals``,
``schema_invalid_returns``, ``adapter_errors`` (cases where the adapter broke instead of
answering; graded as refusals, counted apart), ``errors`` {id: the error's tail},
``categories`` {name: {``n``, ``pass``}}, ``per_case`` [{``id``, ``category``, ``passed``,
``outcome``}] and ``failure_details`` {id: {``expected``, ``returned`` (both as text cut to
:data:`DETAIL_CHARS`), ``input``, ``diff``, ``rule``, ``graded`` and maybe ``rationale``
(the case view, ``caseview``)}} for each case not passed. A baseline saved before ``adapter_errors`` or
``failure_details`` existed still compares.
:func:`score_cases` and :func:`compare_reports` do no I/O, so the hosted runner calls them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolcall300.cliutil import UsageError, read_limited
from toolcall300.scoring.caseview import case_view
from toolcall300.scoring.grading import (
    FALSE_REFUSAL,
    INVENTED_CALL,
    PASSING,
    REFUSED_CORRECTLY,
    canonical_or_none,
    judge_case,
)
from toolcall300.spec import CATEGORIES, SPEC_VERSION

REPORT_VERSION = "toolcall300-report/1"

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
#: Which way each compared count moves when the adapter got better ("up": more is better).
BETTER_WHEN = {
    "exact": "up",
    "refused_correctly": "up",
    "invented_calls": "down",
    "false_refusals": "down",
    "schema_invalid_returns": "down",
}


class ReportError(ValueError):
    """A baseline that cannot be compared with this run (wrong shape, other corpus)."""


class VersionMismatch(ReportError):
    """A baseline scored on another corpus version: the one line names both versions."""


#: Reports written before corpus version 2 carry no ``corpus_version``; every one of them
#: was scored under grading contract 1.0, whose corpus was version 1.0.
_LEGACY_VERSIONS = {"toolcall300-grading/1.0": "1.0"}


def report_corpus_version(report: Mapping[str, Any]) -> str | None:
    """The corpus version a report was scored on (None: a corpus without a version).

    >>> report_corpus_version({"spec_version": "toolcall300-grading/1.0"})
    '1.0'
    >>> report_corpus_version({"corpus_version": "2.0", "spec_version": "toolcall300-grading/2.0"})
    '2.0'
    """
    version = report.get("corpus_version")
    if isinstance(version, str):
        return version
    if "corpus_version" in report:
        return None
    return _LEGACY_VERSIONS.get(str(report.get("spec_version")))


def version_mismatch(baseline: Mapping[str, Any], version: str | None) -> str | None:
    """The one line refusing ``baseline`` for a run on corpus ``version``, or None.

    >>> version_mismatch({"spec_version": "toolcall300-grading/1.0"}, "2.0")
    'baseline was scored on corpus version 1.0, this run on version 2.0: re-score the baseline on version 2.0'
    """
    before = report_corpus_version(baseline)
    if before is None or version is None or before == version:
        return None
    return (
        f"baseline was scored on corpus version {before}, this run on version {version}: "
        f"re-score the baseline on version {version}"
    )


#: How much of one value a report keeps: an expected call, or what the adapter returned, is cut
#: to this many characters (the end replaced by "..."), so a report stays small whatever an
#: adapter returns: at most about ``2 * DETAIL_CHARS`` characters per case not passed.
DETAIL_CHARS = 160
#: ... and how much of the last line of an error's tail names why the adapter broke.
ERROR_LINE_CHARS = 200
#: What ``failure_details`` says for a refusal, expected or returned.
EXPECTED_REFUSAL = "a refusal (no correct call exists)"
RETURNED_REFUSAL = "a refusal (null)"


def short_value(value: Any, limit: int = DETAIL_CHARS) -> str:
    """``value`` as canonical JSON (``repr`` if it is not JSON), cut to ``limit`` characters.

    >>> short_value({"name": "t", "arguments": {"q": "x" * 200}}, 24)
    '{"arguments":{"q":"xx...'
    """
    text = canonical_or_none(value) if value is not None else "null (refused)"
    if text is None:
        try:
            text = repr(value)
        except (ValueError, RecursionError):  # an int past repr's digit limit, deep nesting
            text = f"<a {type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure_details(
    cases: Sequence[Mapping[str, Any]],
    answers: Mapping[str, Any],
    errors: Mapping[str, str],
    failed: Mapping[str, str],
    rationale: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """For each case id in ``failed`` (id -> its outcome), in corpus order: the expected call (or
    :data:`EXPECTED_REFUSAL`) and what came back (the call, :data:`RETURNED_REFUSAL`, or
    "nothing: the adapter broke (<its error's last line>)"), each cut to :data:`DETAIL_CHARS`,
    and the rest of the case view (``caseview.case_view``: input, diff, rule, graded, and the
    rationale when ``rationale`` (id -> {rule, rationale}) has the case's row).
    What a JUnit failure's message shows (``render.render_junit``), from a report alone: a
    hosted report carries it, so ``toolcall300 ci`` shows what ``score`` shows. It holds the
    corpus's labels, so it is computed where they are (the scorer), never in a job."""
    out = {}
    for case in cases:
        if case["id"] not in failed:
            continue
        expected = (
            short_value(case["expected"]) if case["expected_kind"] == "value" else EXPECTED_REFUSAL
        )
        if case["id"] in errors:
            tail = errors[case["id"]].strip().splitlines() or ["?"]
            returned = f"nothing: the adapter broke ({tail[-1][:ERROR_LINE_CHARS]})"
        else:
            answer = answers.get(case["id"])
            returned = RETURNED_REFUSAL if answer is None else short_value(answer)
        view = case_view(
            case,
            None if case["id"] in errors else answers.get(case["id"]),
            failed[case["id"]],
            (rationale or {}).get(case["id"]),
        )
        out[case["id"]] = {"expected": expected, "returned": returned, **view}
    return out


def score_cases(
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
    """The report for ``cases`` given ``answers`` (id -> returned value; a missing id is a refusal).

    Pure and deterministic: the same arguments give an equal report. ``schema_invalid_returns``
    counts, on any case, a returned value that is not a call its declared schema accepts
    (SCORING), so an invented call to an undeclared tool is also schema-invalid. ``errors``
    (id -> the error's tail) marks the cases where the adapter broke; their grade is the
    protocol's (an exception or a non-zero exit refuses), their count is ``adapter_errors``.
    ``rationale`` (id -> the corpus's {rule, rationale} row) goes into each failed case's view.
    """
    ids = {case["id"] for case in cases}
    errored = {key: str(text) for key, text in (errors or {}).items() if key in ids}
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
        "corpus_version": corpus_version,
        "adapter": adapter,
        "timing": timing_fields(timing),
        **counts,
        "adapter_errors": len(errored),
        "errors": {case["id"]: errored[case["id"]] for case in cases if case["id"] in errored},
        "categories": {name: categories[name] for name in CATEGORIES if name in categories},
        "per_case": per_case,
        "failure_details": failure_details(
            cases,
            answers,
            errored,
            {row["id"]: row["outcome"] for row in per_case if not row["passed"]},
            rationale,
        ),
    }


# --------------------------------------------------------------------------- the baseline gate


def timing_fields(timing: dict[str, Any]) -> dict[str, Any]:
    """A report's ``timing``, every track's: the run's seconds, per case, and the median."""
    return {
        k: timing.get(k) for k in ("total_seconds", "wall_seconds_per_case", "median_case_seconds")
    }


def counts_problem(report: Any, version: str, count_fields: Iterable[str]) -> str | None:
    """What every track's gate first asks of a report: a JSON object of ``version`` whose
    counts are integers; None when it is."""
    if not isinstance(report, dict):
        return "a report must be a JSON object"
    if report.get("report_version") != version:
        return f"report_version is {report.get('report_version')!r}, expected {version!r}"
    for key in count_fields:
        if not isinstance(report.get(key), int) or isinstance(report.get(key), bool):
            return f"missing or non-integer {key!r}"
    return None


def report_problem(report: Any) -> str | None:
    """Why ``report`` is not a score report this version can compare, or None."""
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


def compare_reports(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Compare two reports over the same corpus; ``regressed`` is the CI gate.

    It regresses when exact fell, any category's passes fell, invented_calls rose or
    schema_invalid_returns rose (docs/report.md). Raises :class:`ReportError` when
    either report is malformed or they were scored on different corpora.
    """
    for label, report in (("baseline", baseline), ("current", current)):
        problem = report_problem(report)
        if problem:
            raise ReportError(f"{label} report: {problem}")
    mismatch = version_mismatch(baseline, report_corpus_version(current))
    if mismatch:
        raise VersionMismatch(mismatch)
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


def read_input(path: str, what: str) -> bytes:
    """The bytes of a file the user named (a corpus, a baseline); any OS error, or a file over
    ``cliutil.MAX_INPUT_BYTES``, is one usage line."""
    try:
        return read_limited(path)
    except OSError as exc:
        raise UsageError(
            f"toolcall300 score: cannot read {what} {path}: {exc.strerror or exc}"
        ) from None
