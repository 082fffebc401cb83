"""``toolcall300 check``: the CLI shell of the tool-argument/v1 checker.

It reads one request body (a file or standard input) and prints the answer exactly as the
service's ``POST /check`` would give it; ``--selftest`` runs the pinned vector corpus;
``toolcall300 check verify REPORT --jwks KEYS`` checks a saved signed report offline against the
service's published keys (docs/argcheck-report.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from toolcall300.argcheck.check import MAX_BODY_BYTES, check_body
from toolcall300.argcheck.report import ReportError, verify_report
from toolcall300.canonical import loads_strict
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, read_limited

_DESCRIPTION = "tool-argument/v1: check one arguments blob against one caller-supplied schema"


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``toolcall300 check [FILE] [--selftest]`` or ``toolcall300 check verify REPORT --jwks KEYS``
    (a request file named ``verify`` is given as ``./verify``)."""
    if argv[:1] == ["verify"]:
        verify = ArgParser(
            prog="toolcall300 check verify",
            description="verify a saved signed argument-check report offline",
        )
        verify.add_argument("report", help="the saved answer of a paid POST /check (JSON)")
        verify.add_argument(
            "--jwks", required=True, help="the saved GET /.well-known/jwks.json of the service"
        )
        return verify.parse_args(argv[1:])
    parser = ArgParser(
        prog="toolcall300 check",
        usage="toolcall300 check [-h] [--selftest] [file]\n       toolcall300 check verify REPORT --jwks KEYS",
        description=_DESCRIPTION,
        epilog=(
            "toolcall300 check verify REPORT --jwks KEYS checks a saved signed report (the answer "
            "of a paid POST /check) offline against the service's saved GET /.well-known/jwks.json "
            "(docs/argcheck-report.md); `toolcall300 check verify --help` says more. A request "
            "file named verify is given as ./verify."
        ),
    )
    parser.add_argument("file", nargs="?", help="a request as JSON (default: standard input)")
    parser.add_argument(
        "--selftest", action="store_true", help="verify the corpus pin and run every vector"
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Print the response for one request (exit 0 for any verdict or refusal, 1 for I/O errors)."""
    if "report" in args:
        return _verify(args.report, args.jwks, stdout, stderr)
    if args.selftest:
        from toolcall300.argcheck import vectors as argcheck_corpus

        return argcheck_corpus.selftest(stdout, stderr)
    try:
        if args.file:
            with open(args.file, "rb") as fh:
                body = fh.read(MAX_BODY_BYTES + 1)  # one byte past the cap: check_body refuses it
        else:
            body = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
    except OSError as exc:
        stderr.write(f"toolcall300 check: cannot read {args.file or 'stdin'}: {exc.strerror}\n")
        return EXIT_ERROR
    # The CLI has no transport cap of its own, but answers exactly as the service would.
    response = check_body(body)
    # Not key-sorted: the repaired blob keeps the caller's key order, as apply_diff rebuilds it.
    stdout.write(json.dumps(response, ensure_ascii=False, indent=2) + "\n")
    return EXIT_OK


def _read_json(path: str, what: str) -> Any:
    try:
        return loads_strict(read_limited(path))
    except OSError as exc:
        raise ReportError(f"cannot read the {what} {path}: {exc.strerror}") from exc
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReportError(f"the {what} {path} is not strict JSON") from exc


def _verify(report_path: str, jwks_path: str, stdout: TextIO, stderr: TextIO) -> int:
    """Exit 0 and print what was verified, or exit 1 and say why the report does not verify."""
    try:
        payload = verify_report(_read_json(report_path, "report"), _read_json(jwks_path, "key set"))
    except ReportError as exc:
        stderr.write(f"toolcall300 check verify: NOT VERIFIED: {exc}\n")
        return EXIT_ERROR
    stdout.write(
        f"verified: {payload.get('criteria_id')} {payload.get('verdict')} "
        f"request {payload.get('request_digest')} at {payload.get('issued_at')}\n"
    )
    return EXIT_OK
