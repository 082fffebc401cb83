"""``toolcall300 toolshim``: the reference normaliser as an ``--adapter-cmd`` program.

One process per case by default (one ``{"text", "tools"}`` document on stdin, the call or
nothing on stdout), or ``--stream``'s JSON Lines; both protocols are in docs/. ``--all`` answers
the parallel track's list (``toolshim.parallel.normalise_all``) in either. The only part of
toolshim that does I/O.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import Any, TextIO

from toolcall300.canonical import loads_strict
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser
from toolcall300.toolshim.parallel import normalise_all
from toolcall300.toolshim.pipeline import normalise_explained


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``toolcall300 toolshim [--stream] [--explain]``."""
    p = ArgParser(
        prog="toolcall300 toolshim",
        description=(
            "The reference normaliser as an --adapter-cmd program. Default: one "
            '{"text", "tools"} JSON document on stdin; the call as JSON on stdout, or '
            "nothing at all on a refusal (exit 0: empty output is a refusal, D12.1). "
            '--stream: JSON Lines {"id", "text", "tools"} in, {"id", "call"} out (call null on '
            "a refusal), flushed per line. Input that is not such a document exits 1. Both "
            "protocols, and what the scorer counts as a refusal: docs/adapter-protocols.md."
        ),
    )
    p.add_argument("--stream", action="store_true", help="long-lived JSON Lines protocol")
    p.add_argument(
        "--all",
        action="store_true",
        help="the parallel track: answer the list of every call the text attempted (a call or "
        "null each, [] for none; normalise_all), never nothing; --explain writes no log then",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="also write each repair log (call, repairs, refusal) as JSON to stderr",
    )
    return p.parse_args(argv)


def _dumps(value: Any) -> str:
    # ASCII output: a lone surrogate in a model's string can never break the encoding of stdout.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


#: The longest request read (characters): a case with a large catalog is far below it; past
#: it a document is refused and a stream line skipped, never held whole in memory.
MAX_REQUEST_CHARS = 16 * 1024 * 1024


def _loads(line: str) -> Any:
    """``loads_strict``, with nesting past the stack as a ValueError like any other bad JSON."""
    try:
        return loads_strict(line)
    except RecursionError:
        raise ValueError("nested deeper than the reader's stack") from None


def _request(line: str) -> tuple[Any, str, Any]:
    """(id, text, tools) from one request document, or ValueError with a one-line reason."""
    if len(line) > MAX_REQUEST_CHARS:
        raise ValueError(f"a request over {MAX_REQUEST_CHARS} characters")
    doc = _loads(line)
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("text"), str)
        or not isinstance(doc.get("tools"), list)
    ):
        raise ValueError('expected a JSON object {"text": string, "tools": array}')
    return doc.get("id"), doc["text"], doc["tools"]


def run(
    args: argparse.Namespace, stdout: TextIO, stderr: TextIO, stdin: TextIO | None = None
) -> int:
    """Serve one request, or a stream of them with ``--stream``."""
    # UTF-8 whatever the locale, and a stray invalid byte becomes U+FFFD instead of killing
    # a long-lived --stream process (every later id would go unanswered).
    source = (
        stdin
        if stdin is not None
        else io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    )
    if args.stream:
        return _run_stream(source, stdout, stderr, args.explain, every=args.all)
    try:
        _, text, tools = _request(source.read(MAX_REQUEST_CHARS + 1))
    except ValueError as exc:
        stderr.write(f"toolcall300 toolshim: bad input: {exc}\n")
        return EXIT_ERROR
    if args.all:
        stdout.write(_dumps(normalise_all(text, tools)) + "\n")
        return EXIT_OK
    explained = normalise_explained(text, tools)
    if args.explain:
        stderr.write(_dumps(explained.as_dict()) + "\n")
    if explained.call is not None:
        stdout.write(_dumps(explained.call) + "\n")
    return EXIT_OK


def _run_stream(
    source: TextIO, stdout: TextIO, stderr: TextIO, explain: bool, *, every: bool = False
) -> int:
    """One answer line per request line, in order, flushed at once."""
    while line := source.readline(MAX_REQUEST_CHARS + 1):
        if len(line) > MAX_REQUEST_CHARS and not line.endswith("\n"):
            rest = line  # the rest of the line is read in bounded pieces and dropped
            while rest and not rest.endswith("\n"):
                rest = source.readline(MAX_REQUEST_CHARS)
            stderr.write(
                f"toolcall300 toolshim: skipped a request line over {MAX_REQUEST_CHARS} "
                "characters\n"
            )
            stderr.flush()
            continue
        if not line.strip():
            continue
        try:
            case_id, text, tools = _request(line)
        except ValueError as exc:
            stderr.write(f"toolcall300 toolshim: skipped a bad request line: {exc}\n")
            case_id = _id_of(line)
            if case_id is None:
                stderr.flush()
                continue
            text, tools = "", []
        if every:  # the parallel track: the list, whatever --explain says
            stdout.write(_dumps({"id": case_id, "call": normalise_all(text, tools)}) + "\n")
            stdout.flush()
            continue
        explained = normalise_explained(text, tools)
        if explain:
            stderr.write(_dumps({"id": case_id, **explained.as_dict()}) + "\n")
            stderr.flush()
        stdout.write(_dumps({"id": case_id, "call": explained.call}) + "\n")
        stdout.flush()
    return EXIT_OK


def _id_of(line: str) -> Any:
    """The id of a request line that is otherwise unusable, so it can still be answered."""
    try:
        doc = _loads(line)
    except ValueError:
        return None
    return doc.get("id") if isinstance(doc, dict) else None
