"""The scorer glue both deployment modes share: the trusted corpus, and a job's answers scored.

:func:`score_output` scores a job's answers with the CLI's own scorer
(``toolcall300.scoring.report``) and records the run (``finish_scored``); :func:`summary_of`
and :func:`compare` adapt the scorer's report and comparison to the API contract
(docs/runs-contract.md). No grading happens here, and nothing here knows whether the answers
came from an AWS Batch job or the local worker: both call this module.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from toolcall300.canonical import canonical_bytes, jsonl_bytes
from toolcall300.jobs import harness
from toolcall300.jobs.harness import CORPUS_FILE, JobOutput
from toolcall300.scoring import adapters as scoring_adapters
from toolcall300.scoring import report as scorer
from toolcall300.scoring import tracks
from toolcall300.scoring.corpus import parse_corpus
from toolcall300.scoring.tracks import deltas as deltas_track
from toolcall300.service.domain import corpus as corpus_manifest
from toolcall300.service.domain.runs.lifecycle import (
    BaselineRefused,
    NotComparable,
    Scoring,
    finish_scored,
)
from toolcall300.service.domain.runs.objects import pinned_corpus_key
from toolcall300.service.domain.runs.record import ReportStore, Run, RunStore
from toolcall300.service.errors import NotFound
from toolcall300.spec import SPEC_VERSION


@dataclass(frozen=True)
class Corpus:
    """The private corpus as the trusted side holds it: cases with labels, its pin, and the
    version its published manifest gives it (None: no manifest pins these bytes)."""

    cases: list[dict[str, Any]]
    sha256: str
    version: str | None = None
    #: The track its cases are (docs/tracks.md): its inputs, judge and metrics are that track's.
    track: str = tracks.DEFAULT_TRACK


def load_corpus(
    read: Callable[[str], bytes], name: str = CORPUS_FILE, *, manifest_name: str | None = None
) -> Corpus:
    """Read and parse the corpus with the scorer's own parser; its version is the one the
    uploaded manifest says (what ``GET /corpus`` serves), when that manifest pins it (under
    ``manifest_name``, the file's name in the manifest, when it is stored under another)."""
    data = read(name)
    sha = hashlib.sha256(data).hexdigest()
    try:
        manifest = corpus_manifest.parse_manifest(read(corpus_manifest.MANIFEST))
    except NotFound:
        manifest = None
    listed = manifest_name or name
    pinned = manifest is not None and any(
        f["name"] == listed and f["sha256"] == sha for f in manifest.files
    )
    return Corpus(parse_corpus(data), sha, manifest.version if manifest and pinned else None)


#: Each track's labelled corpus, by its key in the corpus bucket: the main corpus at the top,
#: a track's in its own folder (``corpus_private/<track>/``, the names
#: ``data/published_corpora.json`` pins them under).
TRACK_CORPUS_FILES = {
    "single": CORPUS_FILE,
    "parallel": "parallel/toolcall300-parallel.jsonl",
    "deltas": "deltas/deltas.jsonl",
}


def track_folders(directory: Path) -> list[Path]:
    """The track corpus folders beside a main corpus: ``<track>/manifest.json`` of a track
    the scorer knows, whose manifest names that track."""
    found = []
    for name in sorted(TRACK_CORPUS_FILES):
        manifest = directory / name / "manifest.json"
        named = manifest.is_file() and json.loads(manifest.read_bytes()).get("track") == name
        if name != tracks.DEFAULT_TRACK and named:
            found.append(directory / name)
    return found


def inputs_pointer(track: str) -> str:
    """Where a track's job-inputs pointer lives: the single-call track's is
    ``harness.INPUTS_POINTER``, another track's ``job-inputs/<track>/current.json``."""
    if track == tracks.DEFAULT_TRACK:
        return harness.INPUTS_POINTER
    return f"job-inputs/{track}/current.json"


def derive_track_inputs(track: str, corpus: bytes) -> dict[str, bytes]:
    """A track corpus's label-free job inputs (its ``adapter_items``) and the pointer naming
    them, pointer last, as ``harness.derive_inputs`` does for the single-call track."""
    sha = hashlib.sha256(corpus).hexdigest()
    found, cases = tracks.read_corpus(corpus)
    if found.name != track:
        raise ValueError(f"the {track} corpus holds track {found.name!r}")
    key = f"job-inputs/{track}/{sha}.jsonl"
    body = jsonl_bytes(found.adapter_items(cases))
    pointer = {"corpus_sha256": sha, "key": key, "cases": len(cases), "track": track}
    return {key: body, inputs_pointer(track): canonical_bytes(pointer)}


def load_track_corpus(
    read: Callable[[str], bytes], track: str, *, key: str | None = None
) -> Corpus:
    """A track's labelled corpus from the corpus bucket (``<track>/...``, uploaded beside the
    main one), read with the tracks' own reader (a corpus of another track is refused), its
    version the one its own manifest gives when that manifest pins these bytes. The
    single-call track is :func:`load_corpus`. Raises ``NotFound`` when none was uploaded."""
    if track == tracks.DEFAULT_TRACK:
        return load_corpus(read)
    data = read(key or TRACK_CORPUS_FILES[track])
    sha = hashlib.sha256(data).hexdigest()
    folder, name = TRACK_CORPUS_FILES[track].split("/", 1)
    try:
        manifest = json.loads(read(f"{folder}/manifest.json"))
    except NotFound:
        manifest = {}
    pinned = any(
        f["name"] == name and f["sha256"] == sha
        for f in corpus_manifest.manifest_entries(manifest or {"files": []})
    )
    found, cases = tracks.read_corpus(data)
    if found.name != track:
        raise ValueError(f"the {track} corpus holds track {found.name!r}")
    version = manifest.get("version") if pinned else None
    return Corpus(cases, sha, str(version) if version else None, track=track)


def job_inputs(corpus: Corpus) -> list[dict[str, Any]]:
    """What the adapter is handed for each case of ``corpus``, never a label: the single-call
    track's ``id``, ``text`` and ``tools`` (``harness.job_inputs``), another track's own
    ``adapter_items`` (docs/tracks.md)."""
    if corpus.track == tracks.DEFAULT_TRACK:
        return harness.job_inputs(corpus.cases)
    return tracks.get_track(corpus.track).adapter_items(corpus.cases)


class CorpusVersionGone(LookupError):
    """The corpus a run's inputs came from is stored neither by its pin nor as the current one."""


def load_pinned_track_corpus(read: Callable[[str], bytes], sha256: str, track: str) -> Corpus:
    """:func:`load_pinned_corpus` for another track than the single-call one: the copy the
    upload keeps by its pin, else the track's current corpus if it is that version."""
    try:
        return load_track_corpus(read, track, key=pinned_corpus_key(sha256))
    except NotFound:
        pass
    current = load_track_corpus(read, track)
    if current.sha256 != sha256:
        raise CorpusVersionGone(
            f"the {track} corpus its inputs came from ({sha256[:12]}) is no longer stored; it "
            f"is now {current.sha256[:12]}"
        )
    return current


def load_pinned_corpus(read: Callable[[str], bytes], sha256: str | None) -> Corpus:
    """The corpus whose sha256 is ``sha256`` (a run's ``corpus_sha256``): the copy the upload
    keeps by its pin, else the current corpus if it is that version. ``None`` (a run recorded
    before runs named their corpus) is the current corpus. Raises :class:`CorpusVersionGone`."""
    if sha256 is None:
        return load_corpus(read)
    try:
        return load_corpus(read, pinned_corpus_key(sha256), manifest_name=CORPUS_FILE)
    except NotFound:
        pass
    current = load_corpus(read)
    if current.sha256 != sha256:
        raise CorpusVersionGone(
            f"the corpus its inputs came from ({sha256[:12]}) is no longer stored; the corpus "
            f"is now {current.sha256[:12]}"
        )
    return current


class PinnedCorpora:
    """Corpora by sha256, the few most recently used kept parsed (a version never changes, so
    a warm process can keep one; what it may not keep is "the" corpus: a run queued across an
    upload is scored against its own version, a run submitted after against the new one)."""

    def __init__(self, read: Callable[[str], bytes], keep: int = 2) -> None:
        self._read, self._keep = read, keep
        self._held: dict[str | None, Corpus] = {}
        self._lock = threading.Lock()

    def __call__(self, sha256: str | None, track: str = tracks.DEFAULT_TRACK) -> Corpus:
        if track != tracks.DEFAULT_TRACK:
            if sha256 is None:
                return load_track_corpus(self._read, track)
            return self._track_corpus(sha256, track)
        with self._lock:
            if sha256 is not None and sha256 in self._held:
                self._held[sha256] = self._held.pop(sha256)  # most recently used last
                return self._held[sha256]
        corpus = load_pinned_corpus(self._read, sha256)
        with self._lock:
            self._held[corpus.sha256] = corpus
            while len(self._held) > self._keep:
                self._held.pop(next(iter(self._held)))
        return corpus

    def _track_corpus(self, sha256: str, track: str) -> Corpus:
        """Another track's corpus by pin, kept parsed beside the single-call ones."""
        with self._lock:
            if sha256 in self._held:
                return self._held[sha256]
        corpus = load_pinned_track_corpus(self._read, sha256, track)
        with self._lock:
            self._held[corpus.sha256] = corpus
            while len(self._held) > self._keep:
                self._held.pop(next(iter(self._held)))
        return corpus


def _count_fields(report: dict[str, Any]) -> tuple[str, ...]:
    name = tracks.report_track(report)
    if name == tracks.DEFAULT_TRACK:
        return scorer.COUNT_FIELDS
    module = importlib.import_module(tracks.REGISTRY[name])
    return tuple(module.COUNT_FIELDS)


#: A track's headline figure that is no count of its counts, kept in the summary beside them
#: so the dashboard can draw it (docs/runs-contract.md): the deltas track's commit lead.
SUMMARY_FIGURES = {"deltas": ("commit_lead",)}


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``summary``: the counts and the per-category table of a scorer report
    (a track's report: that track's counts, docs/tracks.md, and its :data:`SUMMARY_FIGURES`)."""
    fields = _count_fields(report) + SUMMARY_FIGURES.get(tracks.report_track(report), ())
    summary: dict[str, Any] = {k: report[k] for k in fields if k in report}
    summary["categories"] = {
        k: {"n": v["n"], "pass": v["pass"]} for k, v in report["categories"].items()
    }
    return summary


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The scorer's gate, in the contract's shape (``deltas`` is called ``counts`` there)."""
    name = tracks.report_track(current)
    if tracks.report_track(baseline) != name:  # never reached: baselines are per track
        raise NotComparable(f"the baseline is a report of track {tracks.report_track(baseline)!r}")
    try:
        if name == tracks.DEFAULT_TRACK:
            c = scorer.compare_reports(baseline, current)
        else:
            c = tracks.get_track(name).compare(baseline, current)
    except scorer.VersionMismatch as exc:
        raise BaselineRefused(str(exc)) from exc
    except scorer.ReportError as exc:
        raise NotComparable(str(exc)) from exc
    return {
        "regressed": c["regressed"],
        "reasons": c["reasons"],
        "counts": c["deltas"],
        "categories": c["categories"],
        "flipped": c["flipped"],
    }


def track_run(corpus: Corpus, output: JobOutput) -> scoring_adapters.AdapterRun:
    """A job's answers as the run another track's judge reads: the deltas track's are one
    record per partition (``tracks.deltas.run_from_records`` rebuilds its streams, their event
    counts from the labelled case), the parallel track's one list of calls per turn."""
    elapsed = output.diagnostics.get("elapsed_s")
    seconds = float(elapsed) if isinstance(elapsed, (int, float)) else 0.0
    if corpus.track == "deltas":
        return deltas_track.run_from_records(
            corpus.cases, output.answers, errors=output.errors, total_seconds=seconds
        )
    return scoring_adapters.AdapterRun(
        answers={c["id"]: output.answers.get(c["id"]) for c in corpus.cases},
        errors=dict(output.errors),
        total_seconds=seconds,
    )


SCORER_VERSION = f"{scorer.REPORT_VERSION} ({SPEC_VERSION})"


def score_output(
    store: RunStore,
    reports: ReportStore,
    run: Run,
    output: JobOutput,
    *,
    corpus: Corpus,
    sandbox: dict[str, Any],
    now: datetime,
    owner: str | None = None,
) -> Run | None:
    """Score a job's answers in trusted code and record the run (the worker's and Batch's end)."""
    adapter = run.adapter.get("image") or "command: " + " ".join(run.adapter.get("command") or [])
    if corpus.track != run.track:  # the caller loads the run's own track's corpus
        raise ValueError(f"run {run.run_id} is track {run.track!r}, the corpus {corpus.track!r}")
    if corpus.track != tracks.DEFAULT_TRACK:
        report = tracks.get_track(corpus.track).score(
            corpus.cases,
            track_run(corpus, output),
            adapter=str(adapter),
            corpus_sha256=corpus.sha256,
            corpus_version=corpus.version,
        )
    else:
        report = scorer.score_cases(
            corpus.cases,
            output.answers,
            adapter=str(adapter),
            corpus_sha256=corpus.sha256,
            corpus_version=corpus.version,
            timing={"total_seconds": output.diagnostics.get("elapsed_s")},
            errors=output.errors,
        )
    scoring = Scoring(report, corpus.sha256, SCORER_VERSION, output.diagnostics, sandbox)
    return finish_scored(
        store,
        reports,
        run.run_id,
        scoring,
        compare=compare,
        summarise=summary_of,
        now=now,
        owner=owner,
    )
