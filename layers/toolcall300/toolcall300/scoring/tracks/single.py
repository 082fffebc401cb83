"""The single-call track: one text, one answer (the suite's original track, spec.py's rules).

A thin wrapper: every step is the function the scorer has always called (``corpus``,
``report``, ``render``, ``adapters``), so a single-track run is exactly what it was before
tracks existed. What it adds is nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from toolcall300.cliutil import UsageError
from toolcall300.scoring import adapters, render, report
from toolcall300.scoring.corpus import adapter_items, case_problem


def build_adapter(kind: str, value: str, *, stream: bool = False) -> adapters.Adapter:
    """The adapter one flag names; an unknown module or empty command is a usage error."""
    try:
        if kind == "callable":
            return adapters.load_callable(value)
        argv = shlex.split(value)
    except (adapters.AdapterError, ValueError) as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    if not argv:
        raise UsageError(f"toolcall300 score: --adapter-{kind} is empty")
    streaming = kind == "stream" or stream
    description = adapters.command_description(argv, streaming)
    if streaming:
        return adapters.StreamAdapter(argv, description)
    return adapters.CommandAdapter(argv, description)


class SingleTrack:
    """The :class:`~toolcall300.scoring.tracks.Track` of the single-call track."""

    name = "single"

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
        return report.score_cases(
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
        return report.report_problem(value)

    def compare(self, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
        return report.compare_reports(baseline, current)

    def render_text(self, value: Mapping[str, Any], *, in_sample: bool) -> str:
        return render.render_text(value, in_sample=in_sample)

    def render_side_by_side(self, reports: Sequence[Mapping[str, Any]], *, in_sample: bool) -> str:
        return render.render_side_by_side(reports, in_sample=in_sample)

    def render_failures(
        self,
        value: Mapping[str, Any],
        cases: Sequence[Mapping[str, Any]],
        run: adapters.AdapterRun,
    ) -> str:
        return render.render_failures(value, cases, run.answers, run.notes)

    def render_comparison(self, comparison: Mapping[str, Any]) -> str:
        return render.render_comparison(comparison)

    def render_markdown(
        self,
        reports: Sequence[Mapping[str, Any]],
        *,
        in_sample: bool,
        comparison: Mapping[str, Any] | None,
        baseline_name: str,
    ) -> str:
        return render.render_markdown(
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


TRACK = SingleTrack()
