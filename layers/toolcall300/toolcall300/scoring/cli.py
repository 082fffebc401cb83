"""``toolcall300 score``: grade an adapter against any corpus in the published format, and gate CI.

The shell around the pure core (``corpus``, ``grading``, ``report``): it reads files, runs
the adapter (``adapters``), prints (``render``) and saves. It is not a normaliser and it does
not check a corpus's labels (that is ``generate --check-only``).
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from toolcall300.canonical import pretty_bytes, sha256_hex
from toolcall300.cliutil import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REGRESSION,
    ArgParser,
    UsageError,
    terminal_safe,
)
from toolcall300.scoring import adapters, tracks
from toolcall300.scoring.corpus import (
    CorpusError,
    built_by_this_suite,
    corpus_in,
    corpus_version,
    rationale_beside,
)
from toolcall300.scoring.render import render_markdown_error
from toolcall300.scoring.report import read_input, version_mismatch
from toolcall300.scoring.selection import (
    Selection,
    SelectionError,
    is_partial,
    partial_note,
    select,
    selection_field,
)
from toolcall300.spec import render_spec


class _AddAdapter(argparse.Action):
    """Appends ``(kind, value)`` to ``args.adapters``, so several adapters keep their order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        listed = list(getattr(namespace, "adapters", None) or [])
        listed.append((self.const, str(values)))
        namespace.adapters = listed


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Flags of ``toolcall300 score``; a bad flag raises UsageError (exit 1, never 2)."""
    p = ArgParser(
        prog="toolcall300 score",
        description=(
            "Score one or more adapters against a corpus. Several --adapter/--adapter-cmd/"
            "--adapter-stream print one table with a column per adapter. The protocols are in "
            "docs/adapter-protocols.md."
        ),
    )
    p.add_argument(
        "--corpus",
        metavar="FILE",
        help="the corpus, JSON Lines (docs/case-format.md), or its folder (its one corpus file)",
    )
    p.set_defaults(adapters=[])
    p.add_argument(
        "--adapter",
        metavar="SPEC",
        action=_AddAdapter,
        const="callable",
        help="module:callable, path/to/file.py:callable, naive, integrator or toolshim (repeatable)",
    )
    p.add_argument(
        "--adapter-cmd",
        metavar="CMD",
        action=_AddAdapter,
        const="cmd",
        help="a program: one process per case (repeatable)",
    )
    p.add_argument(
        "--adapter-stream",
        metavar="CMD",
        action=_AddAdapter,
        const="stream",
        help="a program speaking the JSON Lines stream protocol (repeatable)",
    )
    p.add_argument(
        "--stream",
        action="store_true",
        help="every --adapter-cmd is one long-lived process, JSON Lines",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="per-case time limit (default 10)",
    )
    p.add_argument(
        "--baseline", metavar="FILE", help="a saved report; exit 2 on a regression against it"
    )
    p.add_argument(
        "--json", metavar="FILE", help="write the report here (a saved report is a baseline)"
    )
    p.add_argument(
        "--junit", metavar="FILE", help="write JUnit XML: one testcase per case, per adapter"
    )
    p.add_argument(
        "--summary", metavar="FILE", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)"
    )
    p.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="NAME",
        help="score only this category's cases (repeatable); the run is partial",
    )
    p.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="GLOB",
        help="score only the cases whose id matches this glob, e.g. 'tc300-00*' (repeatable)",
    )
    p.add_argument(
        "-k",
        dest="expression",
        metavar="EXPR",
        help="score only the cases this expression keeps: words (substrings of the id or "
        "category) with and, or, not and parentheses, as pytest -k",
    )
    p.add_argument("--show-failures", action="store_true", help="print every failed case")
    p.add_argument("--spec", action="store_true", help="print the grading contract and exit")
    p.add_argument("--selftest", action="store_true", help="check the grading logic on inline data")
    args = p.parse_args(list(argv))
    if args.spec or args.selftest:
        return args
    if not args.corpus:
        p.error("--corpus FILE is required")
    if not args.adapters:
        p.error("one of --adapter, --adapter-cmd or --adapter-stream is required")
    if args.stream and not any(kind == "cmd" for kind, _ in args.adapters):
        p.error("--stream needs --adapter-cmd")
    if len(args.adapters) > 1 and (args.baseline or args.json or args.show_failures):
        p.error("--baseline, --json and --show-failures take a single adapter")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        p.error("--timeout must be a positive number of seconds")
    return args


def _progress_bar(stderr: TextIO) -> adapters.Progress | None:
    """A one-line progress bar, only when stderr is a terminal (never in CI logs)."""
    isatty = getattr(stderr, "isatty", None)
    if not (isatty and isatty()):
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done}/{total}")
        if done >= total:
            stderr.write("\r" + " " * (width + 24) + "\r")
        stderr.flush()

    return show


def _write(path: str, data: bytes, *, append: bool = False) -> None:
    try:
        with open(path, "ab" if append else "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise UsageError(f"toolcall300 score: cannot write {path}: {exc.strerror or exc}") from None


def all_errored_line(report: Mapping[str, Any]) -> str | None:
    """One line when the adapter broke on every case (nothing it returned was an answer)."""
    if not report["cases"] or report.get("adapter_errors", 0) < report["cases"]:
        return None
    first = next(iter(report["errors"].values()), "").strip().splitlines()
    return (
        f"toolcall300 score: {report['adapter']}: the adapter failed on every case "
        f"({report['cases']}/{report['cases']}), last error: {first[-1] if first else '?'}"
    )


def _select(
    args: argparse.Namespace, cases: list[dict[str, Any]], baseline: Mapping[str, Any] | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The cases ``--category``/``--case``/``-k`` keep and the report's ``selection`` field
    (None without a selection). The gate never compares a partial run: a partial run with
    ``--baseline``, or a partial report given as the baseline, is a usage error (exit 1)."""
    if baseline is not None and is_partial(baseline):
        raise UsageError(
            f"toolcall300 score: baseline {args.baseline} is a partial run "
            f"({baseline['selection'].get('flags')}): a baseline must score the whole corpus"
        )
    chosen = Selection(tuple(args.category), tuple(args.case), args.expression)
    if not chosen.active:
        return cases, None
    try:
        kept = select(cases, chosen)
    except SelectionError as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    field = selection_field(chosen, len(kept), len(cases))
    if field["partial"] and baseline is not None:
        raise UsageError(
            f"toolcall300 score: {chosen.describe()} scores {len(kept)} of {len(cases)} cases: "
            "a partial run is never gated against a baseline (drop --baseline, or the "
            "selection, to gate the whole corpus)"
        )
    return kept, field


@dataclass(frozen=True)
class _Scored:
    """One run's corpus and what scoring it gave: enough to print, save and gate."""

    track: tracks.Track
    cases: list[dict[str, Any]]
    in_sample: bool
    baseline: Mapping[str, Any] | None
    reports: list[dict[str, Any]]
    runs: list[Any]


def _read_corpus(args: argparse.Namespace) -> tuple[tracks.Track, list[dict[str, Any]], str]:
    """The corpus ``--corpus`` names (a file, or a folder holding one): its track, its cases
    and its sha256. A folder is replaced in ``args`` by the file it holds."""
    if os.path.isdir(args.corpus):  # a downloaded or generated corpus folder: its one corpus
        try:
            args.corpus = str(corpus_in(args.corpus))
        except ValueError as exc:
            raise UsageError(f"toolcall300 score: --corpus {exc}") from None
    data = read_input(args.corpus, "corpus")
    try:
        track, cases = tracks.read_corpus(data)
    except CorpusError as exc:
        raise UsageError(f"toolcall300 score: corpus {args.corpus} {exc}") from None
    return track, cases, sha256_hex(data)


def _read_baseline(
    args: argparse.Namespace, track: tracks.Track, corpus_sha: str, version: str | None
) -> Mapping[str, Any] | None:
    """The ``--baseline`` report (None without one), refused when it was scored on another
    corpus version or on other bytes: reports over different corpora cannot be compared."""
    baseline = tracks.load_baseline(args.baseline, track) if args.baseline else None
    mismatch = version_mismatch(baseline, version) if baseline is not None else None
    if mismatch:
        raise UsageError(
            f"toolcall300 score: {args.baseline}: {mismatch}, with: {_rescore_command(args)}"
        )
    if baseline is not None and baseline["corpus_sha256"] != corpus_sha:
        raise UsageError(
            f"toolcall300 score: baseline {args.baseline} was scored on corpus "
            f"{baseline['corpus_sha256'][:12]}, not on {args.corpus} ({corpus_sha[:12]}); "
            "reports over different corpora cannot be compared"
        )
    return baseline


def _score_adapters(args: argparse.Namespace, stderr: TextIO) -> _Scored:
    """Read the corpus and the baseline, run every adapter over the selected cases, and score
    each run (its warnings go to ``stderr``)."""
    track, cases, corpus_sha = _read_corpus(args)
    in_sample = built_by_this_suite(args.corpus, corpus_sha)
    version = corpus_version(args.corpus, corpus_sha)
    baseline = _read_baseline(args, track, corpus_sha, version)
    cases, selected = _select(args, cases, baseline)
    chosen = [track.build_adapter(kind, value, stream=args.stream) for kind, value in args.adapters]
    items = track.adapter_items(cases)
    rationale = rationale_beside(args.corpus, corpus_sha)  # the case view's "why", if at hand
    reports, runs = [], []
    for adapter in chosen:
        try:
            result = adapter.run(items, timeout=args.timeout, progress=_progress_bar(stderr))
        except adapters.AdapterError as exc:
            raise UsageError(f"toolcall300 score: {exc}") from None
        for warning in result.warnings:
            stderr.write(
                terminal_safe(f"toolcall300 score: warning: {adapter.description}: {warning}\n")
            )
        runs.append(result)
        reports.append(
            track.score(
                cases,
                result,
                adapter=adapter.description,
                corpus_sha256=corpus_sha,
                corpus_version=version,
                rationale=rationale,
            )
        )
    if selected is not None:
        for one in reports:
            one["selection"] = selected
    return _Scored(track, cases, in_sample, baseline, reports, runs)


def _print_reports(args: argparse.Namespace, scored: _Scored, stdout: TextIO) -> None:
    """The report (or the side-by-side table) on stdout, after a partial run's note, and then
    the failures when ``--show-failures`` asks."""
    track, reports = scored.track, scored.reports
    partial = partial_note(reports[0])
    if partial:
        stdout.write(terminal_safe(partial) + "\n")  # first, so no reader takes it for a full run
    if len(reports) == 1:
        stdout.write(terminal_safe(track.render_text(reports[0], in_sample=scored.in_sample)))
    else:
        stdout.write(terminal_safe(track.render_side_by_side(reports, in_sample=scored.in_sample)))
    if args.show_failures:
        failures = track.render_failures(reports[0], scored.cases, scored.runs[0])
        stdout.write("\n" + terminal_safe(failures))  # case ids, stderr tails


def _save_reports(
    args: argparse.Namespace, scored: _Scored, comparison: Mapping[str, Any] | None
) -> None:
    """The files the flags ask for: ``--json`` (the first report), ``--junit``, ``--summary``."""
    track, reports = scored.track, scored.reports
    if args.json:
        _write(args.json, pretty_bytes(reports[0]))
    baseline_name = f"baseline {args.baseline}"
    if args.junit:
        junit = track.render_junit(
            reports, baseline_name=baseline_name, baseline=scored.baseline, comparison=comparison
        )
        _write(args.junit, junit)
    if args.summary:
        markdown = track.render_markdown(
            reports, in_sample=scored.in_sample, comparison=comparison, baseline_name=baseline_name
        )
        _write(args.summary, markdown.encode("utf-8"), append=True)  # CI summaries accumulate


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Score, print, save, gate. Exit 0, 1 (usage or input error, or an adapter that failed on
    every case) or 2 (regression only)."""
    if args.spec:
        stdout.write(render_spec())
        return EXIT_OK
    if args.selftest:
        from toolcall300.scoring.selftest import run_selftest  # the checks import this module

        return run_selftest(stdout)
    scored = _score_adapters(args, stderr)
    broken = [line for line in map(all_errored_line, scored.reports) if line]
    if broken:
        stderr.write(terminal_safe("\n".join(broken) + "\n"))  # an adapter's error line
        if args.summary:
            error = render_markdown_error(" ".join(broken).replace("toolcall300 score: ", ""))
            _write(args.summary, error.encode("utf-8"), append=True)
        return EXIT_ERROR
    track, baseline = scored.track, scored.baseline
    comparison = track.compare(baseline, scored.reports[0]) if baseline is not None else None
    _print_reports(args, scored, stdout)
    _save_reports(args, scored, comparison)
    if comparison is None:
        return EXIT_OK
    stdout.write("\n" + terminal_safe(track.render_comparison(comparison)))  # flipped case ids
    return EXIT_REGRESSION if comparison["regressed"] else EXIT_OK


#: The flag each kind of adapter was given by (``_AddAdapter``'s ``const``).
_ADAPTER_FLAGS = {"callable": "--adapter", "cmd": "--adapter-cmd", "stream": "--adapter-stream"}


def _rescore_command(args: argparse.Namespace) -> str:
    """The command that writes a new baseline for this run's corpus and adapter (quoted for a
    POSIX shell), for the line refusing a baseline of another corpus version.

    >>> ns = argparse.Namespace(corpus="c.jsonl", adapters=[("cmd", "python3 a.py")],
    ...     stream=True, timeout=10.0, baseline="base.json")
    >>> _rescore_command(ns)
    "toolcall300 score --corpus c.jsonl --adapter-cmd 'python3 a.py' --stream --json base.json"
    """
    words = ["toolcall300", "score", "--corpus", str(args.corpus)]
    for kind, value in args.adapters:
        words += [_ADAPTER_FLAGS.get(kind, "--adapter"), str(value)]
    if args.stream:
        words.append("--stream")
    words += ["--json", str(args.baseline)]
    return " ".join(shlex.quote(w) for w in words)


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m toolcall300.scoring.cli``: the same as ``toolcall300 score``."""
    try:
        return run(parse_args(list(sys.argv[1:] if argv is None else argv)), sys.stdout, sys.stderr)
    except UsageError as exc:
        sys.stderr.write(terminal_safe(f"{exc}\n"))
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
