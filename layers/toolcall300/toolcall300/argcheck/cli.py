"""``toolcall300 check``: the CLI shell of the tool-argument/v1 checker.

It reads one request body (a file or standard input) and prints the answer exactly as the
service's ``POST /check`` would give it; ``--selftest`` runs the pinned vector corpus.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from toolcall300.argcheck.check import check_body
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser

_DESCRIPTION = "tool-argument/v1: check one arguments blob against one caller-supplied schema"


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``toolcall300 check [FILE] [--selftest]``."""
    parser = ArgParser(prog="toolcall300 check", description=_DESCRIPTION)
    parser.add_argument("file", nargs="?", help="a request as JSON (default: standard input)")
    parser.add_argument(
        "--selftest", action="store_true", help="verify the corpus pin and run every vector"
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Print the response for one request (exit 0 for any verdict or refusal, 1 for I/O errors)."""
    if args.selftest:
        from toolcall300.argcheck import vectors as argcheck_corpus

        return argcheck_corpus.selftest(stdout, stderr)
    try:
        if args.file:
            with open(args.file, "rb") as fh:
                body = fh.read()
        else:
            body = sys.stdin.buffer.read()
    except OSError as exc:
        stderr.write(f"toolcall300 check: cannot read {args.file or 'stdin'}: {exc.strerror}\n")
        return EXIT_ERROR
    # The CLI has no transport cap of its own, but answers exactly as the service would.
    response = check_body(body)
    # Not key-sorted: the repaired blob keeps the caller's key order, as apply_diff rebuilds it.
    stdout.write(json.dumps(response, ensure_ascii=False, indent=2) + "\n")
    return EXIT_OK
