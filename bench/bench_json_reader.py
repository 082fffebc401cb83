"""The suite's one JSON reader (``canonical.loads_strict``) against the standard library's.

Prints medians and ratios against the peer measured in the same run; asserts nothing.

``loads_strict`` refuses what ``json.loads`` reads but JSON cannot hold (NaN, a repeated key,
a number past a double's range, an integer of 400 digits included: grading E1,
tool-argument/v1 D17). The range check of integers is a Python call per integer, so the cost
shows on texts made of integers and not on a tool call's text. Three inputs: the private
corpus's 300 texts (what the scorer, toolshim and the controls read), one document of 100,000
small integers, and one of 2,000 integers of 300 digits.

Run: .venv/bin/python bench/bench_json_reader.py [--repeats N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolcall300.canonical import loads_strict

CORPUS = Path(__file__).resolve().parent.parent / "corpus_private" / "toolcall300.jsonl"


def _inputs() -> dict[str, list[str]]:
    texts = (
        [json.loads(line)["text"] for line in CORPUS.read_text().splitlines()]
        if CORPUS.is_file()
        else [json.dumps({"name": "f", "arguments": {"n": i, "s": "x" * i}}) for i in range(300)]
    )
    return {
        "300 corpus texts": texts,
        "100,000 small integers": [json.dumps({"xs": list(range(100_000))})],
        "2,000 integers of 300 digits": [json.dumps({"xs": [int("9" * 300)] * 2_000})],
    }


def _median_ms(read: Callable[[str], Any], texts: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for text in texts:
            with contextlib.suppress(ValueError):  # a refused text costs its reading too
                read(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    print(f"median of {args.repeats} runs; peer: json.loads (no strictness)")
    for name, texts in _inputs().items():
        peer = _median_ms(json.loads, texts, args.repeats)
        ours = _median_ms(loads_strict, texts, args.repeats)
        print(
            f"{name:32} json.loads {peer:8.2f} ms   loads_strict {ours:8.2f} ms   x{ours / peer:.2f}"
        )


if __name__ == "__main__":
    main()
