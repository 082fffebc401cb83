"""``toolcall300 score``: grade an adapter against any corpus in the published format, and gate CI.

The shell around the pure core (``corpus``, ``grading``, ``report``): it reads files, runs
the adapter (``adapters``), prints (``render``) and saves. It is not a normaliser and it does
not check a corpus's labels (that is ``generate --check-only``).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

from toolcall300.canonical import pretty_bytes, sha256_hex
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, EXIT_REGRESSION, ArgParser, UsageError
from toolcall300.scoring import adapters
from toolcall300.scoring.corpus import CorpusError, parse_corpus
from toolcall300.scoring.render import render_comparison, render_failures, render_text
from toolcall300.scoring.report import compare_reports, load_baseline, read_input, score_cases
from toolcall300.spec import render_spec


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Flags of ``toolcall300 score``; a bad flag raises UsageError (exit 1, never 2)."""
    p = ArgParser(prog="toolcall300 score", description="Score an adapter against a corpus.")
    p.add_argument("--corpus", metavar="FILE", help="the corpus, JSON Lines (docs/case-format.md)")
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--adapter", metavar="SPEC", help="module:callable, naive, integrator or toolshim"
    )
    who.add_argument("--adapter-cmd", metavar="CMD", help="a program: one process per case")
    p.add_argument(
        "--stream",
        action="store_true",
        help="with --adapter-cmd: one long-lived process, JSON Lines",
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
    p.add_argument("--show-failures", action="store_true", help="print every failed case")
    p.add_argument("--spec", action="store_true", help="print the grading contract and exit")
    p.add_argument("--selftest", action="store_true", help="check the grading logic on inline data")
    args = p.parse_args(list(argv))
    if args.spec or args.selftest:
        return args
    if not args.corpus:
        p.error("--corpus FILE is required")
    if not args.adapter and not args.adapter_cmd:
        p.error("one of --adapter or --adapter-cmd is required")
    if args.stream and not args.adapter_cmd:
        p.error("--stream needs --adapter-cmd")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        p.error("--timeout must be a positive number of seconds")
    return args


def build_adapter(args: argparse.Namespace) -> adapters.Adapter:
    """The adapter the flags name; an unknown module or empty command is a usage error."""
    try:
        if args.adapter:
            return adapters.load_callable(args.adapter)
        argv = shlex.split(args.adapter_cmd)
    except (adapters.AdapterError, ValueError) as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    if not argv:
        raise UsageError("toolcall300 score: --adapter-cmd is empty")
    description = adapters.command_description(argv, args.stream)
    if args.stream:
        return adapters.StreamAdapter(argv, description)
    return adapters.CommandAdapter(argv, description)


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


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Score, print, save, gate. Exit 0, 1 (usage or input error) or 2 (regression only)."""
    if args.spec:
        stdout.write(render_spec())
        return EXIT_OK
    if args.selftest:
        from toolcall300.scoring.selftest import run_selftest  # the checks import this module

        return run_selftest(stdout)
    data = read_input(args.corpus, "corpus")
    try:
        cases = parse_corpus(data)
    except CorpusError as exc:
        raise UsageError(f"toolcall300 score: corpus {args.corpus} {exc}") from None
    corpus_sha = sha256_hex(data)
    baseline = load_baseline(args.baseline) if args.baseline else None
    if baseline is not None and baseline["corpus_sha256"] != corpus_sha:
        raise UsageError(
            f"toolcall300 score: baseline {args.baseline} was scored on corpus "
            f"{baseline['corpus_sha256'][:12]}, not on {args.corpus} ({corpus_sha[:12]}); "
            "reports over different corpora cannot be compared"
        )
    adapter = build_adapter(args)
    try:
        result = adapter.run(cases, timeout=args.timeout, progress=_progress_bar(stderr))
    except adapters.AdapterError as exc:
        raise UsageError(f"toolcall300 score: {exc}") from None
    for warning in result.warnings:
        stderr.write(f"toolcall300 score: warning: {warning}\n")
    report = score_cases(
        cases,
        result.answers,
        adapter=adapter.description,
        corpus_sha256=corpus_sha,
        timing=result.timing(),
    )
    stdout.write(render_text(report))
    if args.show_failures:
        stdout.write("\n" + render_failures(report, cases, result.answers, result.notes))
    if args.json:
        try:
            with open(args.json, "wb") as fh:
                fh.write(pretty_bytes(report))
        except OSError as exc:
            raise UsageError(
                f"toolcall300 score: cannot write {args.json}: {exc.strerror or exc}"
            ) from None
    if baseline is None:
        return EXIT_OK
    comparison = compare_reports(baseline, report)
    stdout.write("\n" + render_comparison(comparison))
    return EXIT_REGRESSION if comparison["regressed"] else EXIT_OK


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m toolcall300.scoring.cli``: the same as ``toolcall300 score``."""
    try:
        return run(parse_args(list(sys.argv[1:] if argv is None else argv)), sys.stdout, sys.stderr)
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
