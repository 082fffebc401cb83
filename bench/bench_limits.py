"""How promptly each time limit stops a misbehaving adapter (the figures tests must not assert).

Tests check *that* a limit fired (the stop reason, the kill, the refusal); how long it took is
measured here instead, since a wall-clock bound in a test fails on a loaded machine without a
bug. For each limit: the median seconds from start to the result, the configured limit, and
the ratio of the two, against the peer of a well-behaved adapter answering the same input
through the same protocol in the same run. Asserts nothing.

1. ``run_once``: a program that hangs, under a 0.5 s limit.
2. ``run_stream``, per-case (idle) limit 0.5 s: a program that answers once, then hangs.
3. ``run_stream``, whole-run limit 1.0 s: a program that answers once every 60 s.
4. ``run_stream``, per-case limit 0.5 s: a program that never reads its 2 MB of stdin.
5. ``CallableAdapter``, per-case limit 0.3 s: an in-process callable that hangs on one case.

Run: .venv/bin/python bench/bench_limits.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from toolcall300.scoring import protocol
from toolcall300.scoring.adapters import CallableAdapter

PRELUDE = "import json, sys, time\n"
ANSWER_ALL = PRELUDE + (
    "for line in sys.stdin:\n"
    "    print(json.dumps({'id': json.loads(line)['id'], 'call': None}), flush=True)\n"
)
ITEMS = [{"id": f"c{i}", "text": "{}", "tools": []} for i in range(3)]
BIG = [{"id": f"b{i}", "text": "z" * 100_000, "tools": []} for i in range(20)]


def program(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def timed(fn: Callable[[], Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def hung_callable(text: str, tools: list[Any]) -> Any:
    if text == "hang":
        time.sleep(3)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    n = args.repeats

    cases: list[tuple[str, float, Callable[[], Any], Callable[[], Any]]] = [
        (
            "run_once, a hang",
            0.5,
            lambda: protocol.run_once(program("import time; time.sleep(60)"), b"{}", timeout=0.5),
            lambda: protocol.run_once(program("print('null')"), b"{}", timeout=0.5),
        ),
        (
            "stream, per-case limit",
            0.5,
            lambda: protocol.run_stream(
                program(
                    PRELUDE + "sys.stdin.readline(); print(json.dumps({'id':'c0','call':None}),"
                    " flush=True); time.sleep(60)"
                ),
                ITEMS,
                per_case_timeout=0.5,
                total_timeout=30,
            ),
            lambda: protocol.run_stream(
                program(ANSWER_ALL), ITEMS, per_case_timeout=0.5, total_timeout=30
            ),
        ),
        (
            "stream, whole-run limit",
            1.0,
            lambda: protocol.run_stream(
                program(
                    PRELUDE + "for line in sys.stdin:\n    print(json.dumps({'id': json.loads"
                    "(line)['id'], 'call': None}), flush=True); time.sleep(60)\n"
                ),
                ITEMS,
                per_case_timeout=30,
                total_timeout=1.0,
            ),
            lambda: protocol.run_stream(
                program(ANSWER_ALL), ITEMS, per_case_timeout=30, total_timeout=1.0
            ),
        ),
        (
            "stream, stdin never read",
            0.5,
            lambda: protocol.run_stream(
                program("import time; time.sleep(60)"), BIG, per_case_timeout=0.5, total_timeout=30
            ),
            lambda: protocol.run_stream(
                program(ANSWER_ALL), BIG, per_case_timeout=0.5, total_timeout=30
            ),
        ),
        (
            "in process, a hung callable",
            0.3,
            lambda: CallableAdapter(hung_callable, "hung").run(
                [{"id": "a", "text": "hang", "tools": []}], timeout=0.3
            ),
            lambda: CallableAdapter(hung_callable, "prompt").run(
                [{"id": "a", "text": "ok", "tools": []}], timeout=0.3
            ),
        ),
    ]
    print(f"time to stop a misbehaving adapter: medians of {n} runs")
    print(f"{'limit':<30}{'limit s':>9}{'stopped s':>11}{'/ limit':>9}{'peer s':>9}")
    for name, limit, misbehaving, peer in cases:
        stopped, prompt = timed(misbehaving, n), timed(peer, n)
        print(f"{name:<30}{limit:>9.2f}{stopped:>11.3f}{stopped / limit:>8.2f}x{prompt:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
