"""Deltas benchmark: what reading every partition of every stream costs, against reading each
stream's final text once, in the same run.

For each case of the deltas corpus (the paid one when it is here, else the free sample) and
each of its partitions, the partition's events are built first (not timed), then timed side by
side, stream by stream so load falls on both alike:

- ``normalise_events``: toolshim reading the stream event by event (``DeltaSession``, the
  commits included) to its call;
- ``normalise`` once: toolshim on the final text the stream carries, ``{"name", "arguments"}``
  with the arguments text whole (what a client that waits for the end parses);
- ``json.loads`` once: the final arguments text alone.

Prints the totals over every stream and the ratios; asserts nothing. CPU time
(``time.process_time``); the load average before and after.

Run: ``make bench`` or ``.venv/bin/python bench/bench_deltas.py [--sample]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from toolcall300.generator.deltas import reassemble
from toolcall300.scoring.tracks.deltas import replay
from toolcall300.toolshim import normalise
from toolcall300.toolshim.deltas import normalise_events

ROOT = Path(__file__).resolve().parents[1]
FULL = ROOT / "corpus_private" / "deltas" / "deltas.jsonl"
SAMPLE = ROOT / "layers" / "toolcall300" / "toolcall300" / "data" / "deltas-sample.jsonl"


def final_texts(case: dict[str, Any]) -> tuple[str, str]:
    """The final call text the whole stream carries (left open where the provider cut it,
    as rule 11 reads it) and its arguments text, by the generator's own reader."""
    name, text, end = reassemble(case, case["events"])
    call = '{"name": ' + json.dumps(name) + ', "arguments": ' + (text or "{}")
    return (call if end == "cut" else call + "}"), text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sample", action="store_true", help="the free sample even if the corpus is here"
    )
    args = parser.parse_args(argv)
    path = SAMPLE if args.sample or not FULL.is_file() else FULL
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    print(f"corpus {path.relative_to(ROOT)}: {len(cases)} cases; load average {os.getloadavg()}")
    streams = events_total = 0
    t_events = t_once = t_loads = 0.0
    for case in cases:
        call_text, args_text = final_texts(case)
        tools = case["tools"]
        normalise(call_text, tools)  # warm the tool caches once, as a caller keeps them
        for offsets in case["partitions"]:
            events = replay(case, offsets)
            streams += 1
            events_total += len(events)
            t0 = time.process_time()
            normalise_events(events, tools)
            t1 = time.process_time()
            normalise(call_text, tools)
            t2 = time.process_time()
            with contextlib.suppress(ValueError):  # a cut or broken text does not parse
                json.loads(args_text)
            t3 = time.process_time()
            t_events += t1 - t0
            t_once += t2 - t1
            t_loads += t3 - t2
    print(f"{streams} streams, {events_total} events")
    print(
        f"normalise_events, every partition:        {t_events:8.3f} s  ({1e6 * t_events / streams:7.1f} us per stream)"
    )
    print(
        f"normalise of the final text, once each:    {t_once:8.3f} s  ({1e6 * t_once / streams:7.1f} us per stream)"
    )
    print(
        f"json.loads of the final arguments, once:   {t_loads:8.3f} s  ({1e6 * t_loads / streams:7.1f} us per stream)"
    )
    print(f"ratio normalise_events / normalise once:   {t_events / t_once:8.2f}x")
    print(f"ratio normalise_events / json.loads once:  {t_events / t_loads:8.2f}x")
    print(f"load average after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
