"""``python -m toolcall300.generator.deltas_cli``: build or check the deltas corpus (docs/deltas.md).

The shell around ``generator.deltas``: it reads the main corpus, writes ``deltas.jsonl``,
``rationale.jsonl`` and ``manifest.json`` into ``--out`` (``corpus_private/deltas``) and the
free sample ``deltas-sample.jsonl`` into the package's ``data/``, or with
``--check-only`` rebuilds them in memory and says whether the files on disk are byte-identical
(a stale pin after the main corpus changed shows here). It makes no labelling decision.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from toolcall300.canonical import sha256_hex
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError, read_limited
from toolcall300.generator.build import read_jsonl
from toolcall300.generator.deltas import SAMPLE_FILE, corpus_files

#: The free sample goes into the package's data, so the kit and ``score`` carry it.
PACKAGED = Path(__file__).resolve().parents[1] / "data"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = ArgParser(prog="python -m toolcall300.generator.deltas_cli", description=__doc__)
    p.add_argument("--source", default="corpus_private/toolcall300.jsonl", help="the main corpus")
    p.add_argument("--out", default="corpus_private/deltas", help="the deltas corpus folder")
    p.add_argument(
        "--check-only", action="store_true", help="rebuild in memory, compare, write nothing"
    )
    return p.parse_args(list(argv))


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    try:
        data = read_limited(args.source)
    except OSError as exc:
        raise UsageError(f"cannot read {args.source}: {exc.strerror or exc}") from None
    try:
        files = corpus_files(read_jsonl("source", data), sha256_hex(data))
    except ValueError as exc:
        stderr.write(f"{exc}\n")
        return EXIT_ERROR
    out = Path(args.out)
    places = {name: (PACKAGED if name == SAMPLE_FILE else out) / name for name in files}
    if args.check_only:
        stale = [
            name
            for name, body in files.items()
            if not places[name].is_file() or places[name].read_bytes() != body
        ]
        if stale:
            stderr.write(
                f"deltas corpus in {out} is not what the build gives: {', '.join(stale)} (rebuild it)\n"
            )
            return EXIT_ERROR
        stdout.write(f"deltas corpus in {out}: byte-identical rebuild, integrity checks pass\n")
        return EXIT_OK
    out.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        places[name].write_bytes(body)
    stdout.write("wrote " + ", ".join(str(places[name]) for name in sorted(files)) + "\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(parse_args(sys.argv[1:] if argv is None else argv), sys.stdout, sys.stderr)
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
