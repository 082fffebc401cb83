"""The deltas track: one tool call per stream, replayed under every partition (docs/deltas.md).

A case is one stream of provider events and the partitions of its arguments fragment; the
adapter is driven once per partition, pulling events one by one, may commit argument values
before the end, and returns the call or refuses. A case passes when every partition's answer
is the label (rules 1 and 2 via ``grading.judge_case``), the answers are identical across
partitions, and no commit was unsafe (changed, withdrawn, or absent from the final call).
It repairs nothing and reads no event itself beyond cutting the fragment (``replay``).
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import shlex
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcall300.cliutil import UsageError
from toolcall300.controls import integrator, naive
from toolcall300.scoring import adapters
from toolcall300.scoring.grading import (
    FALSE_REFUSAL,
    INVENTED_CALL,
    PASSING,
    REFUSED_CORRECTLY,
    canonical_or_none,
    judge_case,
)
from toolcall300.scoring.render import junit_bytes, verdict_line
from toolcall300.scoring.report import short_value
from toolcall300.spec import SPEC_VERSION

REPORT_VERSION = "toolcall300-deltas-report/1"
SHAPES = ("openai_chat", "openai_responses", "anthropic", "gemini", "vertex")
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
#: What the adapter side is handed of a case (``DeltasTrack.adapter_items``; the hosted job
#: keeps these fields of its inputs and drops any other): the stream, never a label.
ADAPTER_FIELDS = (
    "id",
    "shape",
    "events",
    "fragment_event",
    "fragment_path",
    "continuation",
    "partitions",
    "tools",
)
#: Which way each gated figure moves when the adapter got better (the gate: docs/deltas.md).
BETTER_WHEN = {
    "exact": "up",
    "streams_exact": "up",
    "invariant": "up",
    "refused_correctly": "up",
    "invented_calls": "down",
    "invented_values": "down",
    "unsafe_commits": "down",
    "commit_lead": "up",
}


# --------------------------------------------------------------------------- reading a case


def _problem(case: Any) -> str | None:
    """Why ``case`` is not a deltas case (docs/deltas.md, "Case format"), or None."""
    from toolcall300.scoring.corpus import case_problem  # the single-call part of its shape

    if not isinstance(case, dict):
        return "a case must be a JSON object"
    missing = [
        k
        for k in ("shape", "form", "events", "fragment_event", "fragment_path", "partitions")
        if k not in case
    ]
    if missing:
        return "missing field(s): " + ", ".join(missing)
    if case["shape"] not in SHAPES:
        return f"unknown shape {case['shape']!r}"
    events = case["events"]
    if not isinstance(events, list) or not events or not all(isinstance(e, dict) for e in events):
        return "events must be a non-empty array of objects"
    k = case["fragment_event"]
    parts = case["partitions"]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, list) for p in parts):
        return "partitions must be a non-empty array of arrays"
    if k is not None:
        if not (isinstance(k, int) and 0 <= k < len(events)):
            return "fragment_event must index events"
        try:
            text = _get(events[k], case["fragment_path"])
        except (KeyError, IndexError, TypeError):
            return "fragment_path does not reach a fragment"
        if not isinstance(text, str) or not isinstance(case.get("continuation"), dict):
            return "the fragment must be a string and continuation an event"
        for offsets in parts:
            ok = all(isinstance(o, int) and 0 < o < len(text) for o in offsets)
            if not ok or offsets != sorted(set(offsets)):
                return f"partition {offsets!r} is not increasing cuts inside the fragment"
    elif parts != [[]]:
        return "a stream without a fragment has the one partition []"
    single = {**case, "text": ""}
    return case_problem(single)


def _get(value: Any, path: Sequence[Any]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: Sequence[Any], piece: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = piece


def replay(case: Mapping[str, Any], offsets: Sequence[int]) -> list[dict[str, Any]]:
    """The events of one partition: the fragment at ``fragment_path`` of event
    ``fragment_event`` cut at ``offsets``; the first piece stays in its event, each further
    piece rides in a copy of ``continuation`` right after it; ``sequence_number``, where every
    event has one, is renumbered in order; a ``willContinue`` beside the fragment (Vertex's
    ``PartialArg``) says true on every piece but the last, which says what the whole fragment
    said (true on a value cut mid-way) (docs/deltas.md, "Partitions")."""
    events = case["events"]
    k = case["fragment_event"]
    if k is None or not offsets:
        return copy.deepcopy(list(events))
    path = case["fragment_path"]
    text = _get(events[k], path)
    bounds = [0, *offsets, len(text)]
    head = copy.deepcopy(events[k])
    _set(head, path, text[: bounds[1]])
    more = []
    for a, b in itertools.pairwise(bounds[1:]):
        event = copy.deepcopy(case["continuation"])
        _set(event, path, text[a:b])
        more.append(event)
    parents = [_get(event, path[:-1]) for event in (head, *more)]
    if all(isinstance(p, dict) and "willContinue" in p for p in parents):
        last = _get(events[k], path[:-1])["willContinue"]
        for parent in parents:  # Vertex: every piece of a value but the last says it continues
            parent["willContinue"] = True
        parents[-1]["willContinue"] = last
    out = [*copy.deepcopy(events[:k]), head, *more, *copy.deepcopy(events[k + 1 :])]
    if all("sequence_number" in e for e in out):
        for number, event in enumerate(out):
            event["sequence_number"] = number
    return out


# --------------------------------------------------------------------------- driving an adapter

DeltasFn = Callable[[Iterator[dict[str, Any]], list[dict[str, Any]]], Any]


def _accumulated_text(events: Iterator[dict[str, Any]]) -> str:
    """The controls' reading: the name and every arguments fragment joined, as a call text."""
    name, parts, args = None, [], None
    for e in events:
        for choice in e.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                fn = call.get("function") or {}
                name = name or fn.get("name")
                parts.append(fn.get("arguments") or "")
        if e.get("type") == "response.output_item.added":
            name = e["item"].get("name")
        if e.get("type") == "response.function_call_arguments.delta":
            parts.append(e.get("delta") or "")
        if e.get("type") == "content_block_start":
            name = (e.get("content_block") or {}).get("name")
        if e.get("type") == "content_block_delta":
            parts.append((e.get("delta") or {}).get("partial_json") or "")
        for cand in e.get("candidates") or []:
            for part in (cand.get("content") or {}).get("parts") or []:
                if isinstance(part.get("functionCall"), dict):
                    name = part["functionCall"].get("name")
                    args = part["functionCall"].get("args")
    if args is not None:
        return json.dumps({"name": name, "arguments": args})
    return json.dumps({"name": name, "arguments": "".join(parts)})


def integrator_control(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """C2 on a stream: accumulate every fragment, parse once, validate (the plain integrator
    users write; the corpus's integrity checks keep it failing every repairable stream)."""
    return integrator(_accumulated_text(events), tools)


def naive_control(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """C1 on a stream: accumulate, parse the arguments, pass them on unvalidated."""
    call = naive(_accumulated_text(events), tools)
    if isinstance(call, dict) and isinstance(call.get("arguments"), str):
        arguments = naive(call["arguments"], tools)
        return None if arguments is None else {**call, "arguments": arguments}
    return call


BUILT_IN = {
    "integrator": integrator_control,
    "naive": naive_control,
    "toolshim": "toolcall300.toolshim.deltas:stream_adapter",
}


@dataclass
class StreamResult:
    """One partition's run: the answer, the commits with how many events had been pulled."""

    answer: Any
    commits: list[dict[str, Any]]
    events: int
    error: str | None = None


@dataclass
class DeltasRun(adapters.AdapterRun):
    """An :class:`~toolcall300.scoring.adapters.AdapterRun` with every partition's result."""

    streams: dict[str, list[StreamResult]] = field(default_factory=dict)


def drive(fn: DeltasFn, events: list[dict[str, Any]], tools: list[dict[str, Any]]) -> StreamResult:
    """Hand ``events`` one by one to ``fn``: a generator function's yields are commits (each
    stamped with how many events it had pulled), its return value the answer; a plain
    function's return value is the answer."""
    pulled = 0

    def feed() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for event in events:
            pulled += 1
            yield event  # replay made these events for this run alone

    commits: list[dict[str, Any]] = []
    try:
        result = fn(feed(), copy.deepcopy(tools))
        if inspect.isgenerator(result):
            while True:
                try:
                    commit = next(result)
                except StopIteration as stop:
                    answer = stop.value
                    break
                commits.append({"commit": adapters.as_json(commit), "after": pulled})
        else:
            answer = result
        return StreamResult(adapters.as_json(answer), commits, len(events))
    except Exception as exc:  # D12.1: an exception refuses; recorded apart as an error
        return StreamResult(None, commits, len(events), f"{type(exc).__name__}: {exc}")


def stream_record(result: StreamResult) -> dict[str, Any]:
    """One partition's result as a hosted job hands it back: its call and its commits, each
    with how many events had been pulled (the event count and the error text travel apart)."""
    return {"call": result.answer, "commits": result.commits}


def _from_record(record: Any, events: int) -> StreamResult:
    """A job's record back as a :class:`StreamResult`; one that is not the record
    :func:`stream_record` writes (a commit's ``after`` outside ``1..events`` included) is that
    partition refused with no commit."""
    commits = record.get("commits") if isinstance(record, dict) else None
    well_formed = isinstance(commits, list) and all(
        isinstance(c, dict)
        and set(c) == {"commit", "after"}
        and isinstance(c["after"], int)
        and not isinstance(c["after"], bool)
        and 1 <= c["after"] <= events
        for c in commits
    )
    if not well_formed or not isinstance(commits, list) or "call" not in record:
        return StreamResult(None, [], events, "the job's record of this stream is malformed")
    return StreamResult(record["call"], commits, events)


def run_from_records(
    cases: Sequence[Mapping[str, Any]],
    answers: Mapping[str, Any],
    *,
    errors: Mapping[str, str] | None = None,
    total_seconds: float = 0.0,
) -> DeltasRun:
    """A hosted job's answers (case id -> one :func:`stream_record` per partition, in order)
    back as the run :func:`score` judges, in trusted code: each stream's event count is
    re-derived from the labelled case itself, and a partition the job did not answer (a run
    stopped early, a record missing or malformed) is refused with no commit."""
    out = DeltasRun(answers={}, errors=dict(errors or {}), total_seconds=total_seconds)
    for case in cases:
        key = str(case["id"])
        records = answers.get(key)
        records = records if isinstance(records, list) else []
        results = []
        for number, offsets in enumerate(case["partitions"]):
            events = len(replay(case, offsets))
            record = records[number] if number < len(records) else None
            if record is None:
                results.append(StreamResult(None, [], events))
            else:
                results.append(_from_record(record, events))
        out.streams[key] = results
        out.answers[key] = results[0].answer
    return out


@dataclass
class DeltasAdapter:
    """An in-process deltas adapter (docs/adapter-protocols.md, "Deltas")."""

    fn: DeltasFn
    description: str
    cases: Sequence[Mapping[str, Any]] = ()

    def run(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        timeout: float,
        progress: adapters.Progress | None = None,
    ) -> DeltasRun:
        out = DeltasRun(answers={})
        start = time.perf_counter()
        for done, item in enumerate(items, 1):
            key = str(item["id"])
            t0 = time.perf_counter()
            results = [drive(self.fn, replay(item, p), item["tools"]) for p in item["partitions"]]
            out.case_seconds.append(time.perf_counter() - t0)
            out.streams[key] = results
            out.answers[key] = results[0].answer
            errors = [r.error for r in results if r.error]
            if errors:
                out.errors[key] = errors[0]
            if progress:
                progress(done, len(items))
        out.total_seconds = time.perf_counter() - start
        return out


def build_adapter(kind: str, value: str, *, stream: bool = False) -> adapters.Adapter:
    """``--adapter`` on a deltas corpus: a built-in name or ``module:callable`` taking
    ``(events, tools)``; ``--adapter-cmd``/``--adapter-stream``: a program speaking the deltas
    process protocol (``deltas_process``; one long-lived program either way)."""
    if kind != "callable":
        from toolcall300.scoring.tracks.deltas_process import DeltasProcessAdapter

        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"toolcall300 score: {exc}") from None
        if not argv:
            raise UsageError(f"toolcall300 score: --adapter-{kind} is empty")
        return DeltasProcessAdapter(argv, adapters.command_description(argv, True))
    target = BUILT_IN.get(value, value)
    if callable(target):
        return DeltasAdapter(target, value)
    try:
        loaded = adapters.load_callable(str(target))
    except adapters.AdapterError as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    return DeltasAdapter(loaded.fn, loaded.description)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- judging


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
        "timing": {
            "total_seconds": timing.get("total_seconds"),
            "wall_seconds_per_case": timing.get("wall_seconds_per_case"),
            "median_case_seconds": timing.get("median_case_seconds"),
        },
        **counts,
        "commit_lead": round(sum(leads) / len(leads), 6) if leads else 0.0,
        "adapter_errors": len(errored),
        "errors": errored,
        **{group: dict(sorted(rows.items())) for group, rows in groups.items()},
        "per_case": per_case,
        "failure_details": details,
    }


def report_problem(report: Any) -> str | None:
    if not isinstance(report, dict):
        return "a report must be a JSON object"
    if report.get("report_version") != REPORT_VERSION:
        return f"report_version is {report.get('report_version')!r}, expected {REPORT_VERSION!r}"
    for key in COUNT_FIELDS:
        if not isinstance(report.get(key), int) or isinstance(report.get(key), bool):
            return f"missing or non-integer {key!r}"
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


def compare(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """The gate: it regresses when a figure of :data:`BETTER_WHEN` moved the wrong way, or
    any category's, form's or shape's passes fell."""
    from toolcall300.scoring.report import ReportError

    for label, report in (("baseline", baseline), ("current", current)):
        problem = report_problem(report)
        if problem:
            raise ReportError(f"{label} report: {problem}")
    if baseline["corpus_sha256"] != current["corpus_sha256"]:
        raise ReportError("reports over different corpora cannot be compared")
    deltas = {
        key: {
            "baseline": baseline[key],
            "current": current[key],
            "delta": current[key] - baseline[key],
        }
        for key in BETTER_WHEN
    }
    reasons = []
    for key, way in BETTER_WHEN.items():
        delta = deltas[key]["delta"]
        if (way == "up" and delta < -1e-9) or (way == "down" and delta > 0):
            verb = "fell" if way == "up" else "rose"
            reasons.append(f"{key} {verb} {baseline[key]} -> {current[key]}")
    categories = {}  # each category's passes, as the single-call gate lists them
    for group in ("categories", "forms", "shapes"):
        for name in sorted(set(baseline[group]) | set(current[group])):
            before = baseline[group].get(name, {}).get("pass", 0)
            after = current[group].get(name, {}).get("pass", 0)
            if group == "categories":
                categories[name] = {"baseline": before, "current": after, "delta": after - before}
            if after < before:
                reasons.append(
                    f"{group[:-1] if group != 'categories' else 'category'} {name} fell {before} -> {after}"
                )
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
        "categories": categories,
        "flipped": {"fixed": fixed, "broken": broken},
    }


# --------------------------------------------------------------------------- rendering


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


class DeltasTrack:
    """The :class:`~toolcall300.scoring.tracks.Track` of the deltas track."""

    name = "deltas"

    def case_problem(self, case: Any) -> str | None:
        return _problem(case)

    def adapter_items(self, cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        from toolcall300.catalog import model_view

        return [
            {
                **{k: c.get(k) for k in ADAPTER_FIELDS if k != "tools"},
                "tools": [model_view(t) for t in c["tools"]],
            }
            for c in cases
        ]

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
        return score(
            cases,
            run,
            adapter=adapter,
            corpus_sha256=corpus_sha256,
            corpus_version=corpus_version,
            rationale=rationale,
        )

    def report_problem(self, report: Any) -> str | None:
        return report_problem(report)

    def compare(self, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
        return compare(baseline, current)

    def render_text(self, report: Mapping[str, Any], *, in_sample: bool) -> str:
        return render_text(report, in_sample=in_sample)

    def render_side_by_side(self, reports: Sequence[Mapping[str, Any]], *, in_sample: bool) -> str:
        return render_side_by_side(reports, in_sample=in_sample)

    def render_failures(
        self,
        report: Mapping[str, Any],
        cases: Sequence[Mapping[str, Any]],
        run: adapters.AdapterRun,
    ) -> str:
        return render_failures(report, cases, run)

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
        return render_junit(
            reports, baseline_name=baseline_name, baseline=baseline, comparison=comparison
        )


TRACK = DeltasTrack()
