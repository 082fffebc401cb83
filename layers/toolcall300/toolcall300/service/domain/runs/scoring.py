"""The scorer glue both deployment modes share: the trusted corpus, and a job's answers scored.

:func:`score_output` scores a job's answers with the CLI's own scorer
(``toolcall300.scoring.report``) and records the run (``finish_scored``); :func:`summary_of`
and :func:`compare` adapt the scorer's report and comparison to the API contract
(docs/runs-contract.md). No grading happens here, and nothing here knows whether the answers
came from an AWS Batch job or the local worker: both call this module.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from toolcall300.jobs.harness import CORPUS_FILE, JobOutput
from toolcall300.scoring import report as scorer
from toolcall300.scoring.corpus import parse_corpus
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


class CorpusVersionGone(LookupError):
    """The corpus a run's inputs came from is stored neither by its pin nor as the current one."""


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

    def __call__(self, sha256: str | None) -> Corpus:
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


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``summary``: the counts and the per-category table of a scorer report."""
    summary: dict[str, Any] = {k: report[k] for k in scorer.COUNT_FIELDS}
    summary["categories"] = {
        k: {"n": v["n"], "pass": v["pass"]} for k, v in report["categories"].items()
    }
    return summary


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The scorer's gate, in the contract's shape (``deltas`` is called ``counts`` there)."""
    try:
        c = scorer.compare_reports(baseline, current)
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
