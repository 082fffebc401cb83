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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcall300.cliutil import UsageError
from toolcall300.controls import integrator, naive
from toolcall300.scoring import adapters
from toolcall300.scoring.tracks.deltas_judge import (
    COUNT_FIELDS,
    REPORT_VERSION,
    StreamResult,
    judge_stream,
    report_problem,
    score,
)
from toolcall300.scoring.tracks.deltas_render import (
    render_comparison,
    render_failures,
    render_junit,
    render_markdown,
    render_side_by_side,
    render_text,
)

SHAPES = ("openai_chat", "openai_responses", "anthropic", "gemini", "vertex")
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


__all__ = [
    "ADAPTER_FIELDS",
    "BETTER_WHEN",
    "BUILT_IN",
    "COUNT_FIELDS",
    "REPORT_VERSION",
    "SHAPES",
    "TRACK",
    "DeltasAdapter",
    "DeltasFn",
    "DeltasRun",
    "DeltasTrack",
    "StreamResult",
    "build_adapter",
    "compare",
    "drive",
    "integrator_control",
    "judge_stream",
    "naive_control",
    "render_comparison",
    "render_failures",
    "render_junit",
    "render_markdown",
    "render_side_by_side",
    "render_text",
    "replay",
    "report_problem",
    "run_from_records",
    "score",
    "stream_record",
]
