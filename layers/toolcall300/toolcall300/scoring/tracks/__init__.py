"""The tracks of one scorer: which kind of case a corpus holds, and everything that differs per kind.

A case names its track in its ``"track"`` field: absent (or ``"single"``) is the single-call
track (one text, one answer); the registry below maps each track name to a :class:`Track`,
the one object that knows how to read that track's cases, drive an adapter over them, judge
the answers, count the metrics, compare with a baseline and render the figures. The scorer's
shell (``scoring.cli``) is the same for every track: one corpus reader, one report writer, one
gate. A corpus holds one track; a baseline of another track is refused by name
(docs/tracks.md). This module holds no grading of its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from toolcall300.canonical import loads_strict
from toolcall300.cliutil import UsageError
from toolcall300.scoring import adapters
from toolcall300.scoring.corpus import CorpusError, parse_corpus
from toolcall300.scoring.report import read_input

#: The case field naming a case's track, and the track a case without it belongs to.
TRACK_KEY = "track"
DEFAULT_TRACK = "single"

#: Track name -> the module whose ``TRACK`` is that track (imported on first use).
REGISTRY = {
    "single": "toolcall300.scoring.tracks.single",
    "parallel": "toolcall300.scoring.tracks.parallel",
    "deltas": "toolcall300.scoring.tracks.deltas",
}


class Track(Protocol):
    """What the scorer needs of a track: read, drive, judge, count, compare, render."""

    name: str

    def case_problem(self, case: Any) -> str | None:
        """Why ``case`` is not a well-formed case of this track, or None."""

    def adapter_items(self, cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """What the adapter is handed for each case (never a label)."""

    def build_adapter(self, kind: str, value: str, *, stream: bool = False) -> adapters.Adapter:
        """The adapter one ``--adapter*`` flag names, speaking this track's protocol."""

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
        """The report: pure, no I/O. ``rationale`` (case id -> the corpus's {rule, rationale}
        row, when it is at hand) goes into each failed case's view (``scoring.caseview``)."""

    def report_problem(self, report: Any) -> str | None:
        """Why ``report`` is not a report of this track the gate can compare, or None."""

    def compare(self, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
        """The gate: ``regressed``, ``reasons`` and what moved."""

    def render_text(self, report: Mapping[str, Any], *, in_sample: bool) -> str: ...

    def render_side_by_side(
        self, reports: Sequence[Mapping[str, Any]], *, in_sample: bool
    ) -> str: ...

    def render_failures(
        self,
        report: Mapping[str, Any],
        cases: Sequence[Mapping[str, Any]],
        run: adapters.AdapterRun,
    ) -> str: ...

    def render_comparison(self, comparison: Mapping[str, Any]) -> str: ...

    def render_markdown(
        self,
        reports: Sequence[Mapping[str, Any]],
        *,
        in_sample: bool,
        comparison: Mapping[str, Any] | None,
        baseline_name: str,
    ) -> str: ...

    def render_junit(
        self,
        reports: Sequence[Mapping[str, Any]],
        *,
        baseline_name: str,
        baseline: Mapping[str, Any] | None,
        comparison: Mapping[str, Any] | None,
    ) -> bytes: ...


def track_of(case: Any) -> str:
    """The track a case names (absent: the single-call track).

    >>> track_of({"id": "tc300-0001"}), track_of({"track": "deltas"})
    ('single', 'deltas')
    """
    name = case.get(TRACK_KEY, DEFAULT_TRACK) if isinstance(case, dict) else DEFAULT_TRACK
    return name if isinstance(name, str) else repr(name)


def report_track(report: Mapping[str, Any]) -> str:
    """The track a report was scored on: a report without ``track`` is the single-call
    track's (every report written before tracks existed, and every single-track report)."""
    name = report.get(TRACK_KEY, DEFAULT_TRACK)
    return name if isinstance(name, str) else repr(name)


def get_track(name: str) -> Track:
    """The registered track called ``name``; raises ``KeyError`` for any other."""
    module = importlib.import_module(REGISTRY[name])
    track: Track = module.TRACK
    return track


def _case_problem(case: Any) -> str | None:
    name = track_of(case)
    if name not in REGISTRY:
        return f"unknown track {name!r} (known: {', '.join(sorted(REGISTRY))})"
    return get_track(name).case_problem(case)


def read_corpus(data: bytes) -> tuple[Track, list[dict[str, Any]]]:
    """The track and the cases of a corpus; a corpus holds one track. Raises
    :class:`~toolcall300.scoring.corpus.CorpusError` naming the line."""
    cases = parse_corpus(data, problem=_case_problem)
    names = [track_of(case) for case in cases]
    first = names[0]
    for number, name in enumerate(names, 1):
        if name != first:
            raise CorpusError(
                f"case {cases[number - 1]['id']!r} is of track {name!r}, the corpus's first "
                f"case of track {first!r}: a corpus holds one track"
            )
    return get_track(first), cases


def load_baseline(path: str, track: Track) -> dict[str, Any]:
    """A saved report of ``track``, checked for shape; a report of another track is refused
    by name; any problem is one usage line."""
    try:
        report = loads_strict(read_input(path, "baseline").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nesting
        raise UsageError(f"toolcall300 score: baseline {path} is not JSON: {exc}") from None
    if isinstance(report, dict) and report_track(report) != track.name:
        raise UsageError(
            f"toolcall300 score: baseline {path} is a report of track "
            f"{report_track(report)!r}, this corpus is track {track.name!r}: "
            "a baseline compares only with a run of its own track"
        )
    problem = track.report_problem(report)
    if problem:
        raise UsageError(f"toolcall300 score: baseline {path}: {problem}")
    assert isinstance(report, dict)
    return report
