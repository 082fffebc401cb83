"""Scorer benchmark: overhead per case in-process, and one process per case against --stream.

Prints medians and ratios against a peer measured in the same run; asserts nothing.

1. In-process: the scorer's overhead per case (running the adapter through
   ``CallableAdapter`` with its per-case time limit, then ``score_cases``), against the peer
   of calling the same adapter function in a bare loop.
2. End to end over the corpus (``toolcall300 score`` in-process, adapter programs run by the
   same interpreter): ``--adapter-cmd`` one process per case against ``--adapter-cmd --stream``.
   Target: stream at least 20x faster.

Uses corpus_private/toolcall300.jsonl when it exists, else a synthetic 300-case corpus.
Run: .venv/bin/python bench/bench_scorer.py [--repeats N] [--cmd-repeats N]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolcall300.scoring import adapters
from toolcall300.scoring import cli as score_cli
from toolcall300.scoring.corpus import parse_corpus
from toolcall300.scoring.report import score_cases

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus_private" / "toolcall300.jsonl"

PER_CASE = """
import json, sys
req = json.load(sys.stdin)
try:
    value = json.loads(req["text"])
except ValueError:
    sys.exit(1)
print(json.dumps(value))
"""
STREAM = """
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    try:
        value = json.loads(req["text"])
    except ValueError:
        value = None
    sys.stdout.write(json.dumps({"id": req["id"], "call": value}) + "\\n")
    sys.stdout.flush()
"""


def synthetic_corpus(n: int = 300) -> bytes:
    tool = {
        "type": "function",
        "function": {
            "name": "book_room",
            "parameters": {
                "type": "object",
                "properties": {"room": {"type": "string"}, "hours": {"type": "integer"}},
                "required": ["room", "hours"],
                "additionalProperties": False,
            },
        },
    }
    rows = []
    for i in range(n):
        expected = {"name": "book_room", "arguments": {"room": f"r{i}", "hours": i % 9 + 1}}
        text = json.dumps(
            {"name": "book_room", "arguments": {"room": f"r{i}", "hours": str(i % 9 + 1)}}
        )
        rows.append(
            {"id": f"syn-{i:04d}", "category": "type_coercion", "text": text, "tools": [tool],
             "expected_kind": "value", "expected": expected}
        )  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def load() -> tuple[Path, list[dict[str, Any]], str]:
    if CORPUS.exists():
        return CORPUS, parse_corpus(CORPUS.read_bytes()), "corpus_private/toolcall300.jsonl"
    path = Path(tempfile.mkdtemp()) / "synthetic.jsonl"
    path.write_bytes(synthetic_corpus())
    return path, parse_corpus(path.read_bytes()), "synthetic 300-case corpus"


def in_process(cases: list[dict[str, Any]], repeats: int) -> None:
    truth = {c["text"]: c["expected"] for c in cases}

    def perfect(text: str, tools: list[dict[str, Any]]) -> Any:
        return truth[text]

    bare, full, grading = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for case in cases:
            perfect(case["text"], case["tools"])
        bare.append((time.perf_counter() - t0) / len(cases))
        t0 = time.perf_counter()
        run = adapters.CallableAdapter(perfect, "perfect").run(cases, timeout=10)
        t1 = time.perf_counter()
        score_cases(cases, run.answers)
        t2 = time.perf_counter()
        full.append((t2 - t0) / len(cases))
        grading.append((t2 - t1) / len(cases))
    us = 1e6
    b, f, g = (statistics.median(x) * us for x in (bare, full, grading))
    print(f"in-process, {len(cases)} cases, {repeats} repeats (median per case):")
    print(f"  bare adapter loop (peer)          {b:9.2f} us")
    print(f"  scorer: adapter run + grading     {f:9.2f} us   overhead {f - b:8.2f} us")
    print(f"    of which score_cases (grading)  {g:9.2f} us")


def end_to_end(corpus: Path, argv: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        code = score_cli.run(
            score_cli.parse_args(["--corpus", str(corpus), *argv]), io.StringIO(), io.StringIO()
        )
        times.append(time.perf_counter() - t0)
        assert code == 0
    return times


def processes(corpus: Path, repeats: int, cmd_repeats: int) -> None:
    folder = Path(tempfile.mkdtemp())
    (folder / "per_case.py").write_text(PER_CASE)
    (folder / "stream.py").write_text(STREAM)
    py = f"{sys.executable} -I -S"
    cmd = end_to_end(corpus, ["--adapter-cmd", f"{py} {folder / 'per_case.py'}"], cmd_repeats)
    stream = end_to_end(
        corpus, ["--adapter-cmd", f"{py} {folder / 'stream.py'}", "--stream"], repeats
    )
    c, s = statistics.median(cmd), statistics.median(stream)
    print(f"end to end over the corpus (naive logic in a program, {py.split()[0]} -I -S):")
    print(f"  --adapter-cmd, one process per case  {c:8.3f} s  (median of {len(cmd)})")
    print(f"  --adapter-cmd --stream               {s:8.3f} s  (median of {len(stream)})")
    print(f"  stream is {c / s:.1f}x faster (target >= 20x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="in-process and stream runs")
    parser.add_argument(
        "--cmd-repeats", type=int, default=1, help="one-process-per-case runs (slow)"
    )
    args = parser.parse_args()
    corpus, cases, label = load()
    print(f"bench_scorer on {label}")
    in_process(cases, args.repeats)
    processes(corpus, args.repeats, args.cmd_repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
