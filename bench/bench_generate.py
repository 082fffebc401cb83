"""Generator benchmark: wall time to build the 300-case corpus with every integrity check.

Prints medians and ratios against peers measured in the same run; asserts nothing.
Measured per repeat, on the private catalog and pools at the recorded seed:

- ``build``: the whole ``generate`` core (catalog checks, 300 cases, sample, every check class);
- peer ``cases only``: the mutation rules alone, no integrity checks;
- peer ``checks only``: every check class over the finished corpus (what --check-only runs);
- peer ``json round trip``: ``json.loads`` + ``canonical`` of every case line, the floor of
  any pass over the corpus.

Target: ``build`` under 2 s. Run: .venv/bin/python bench/bench_generate.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from toolcall300.canonical import canonical
from toolcall300.catalog import load_catalog
from toolcall300.generator.build import (
    FILES,
    MANIFEST,
    Inputs,
    build,
    corpus_from_files,
    make_cases,
)
from toolcall300.generator.checks import run_checks

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = ROOT / "corpus_private"


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    recipe = json.loads((PRIVATE / "inputs" / "recipe.json").read_text())
    tools, pools = PRIVATE / recipe["tools"], PRIVATE / recipe["pools"]
    inputs = Inputs(tools.name, tools.read_bytes(), pools.name, pools.read_bytes(), recipe["seed"])
    catalog, pool_data = (
        load_catalog(json.loads(inputs.catalog_bytes)),
        json.loads(inputs.pools_bytes),
    )
    files = {n: (PRIVATE / n).read_bytes() for n in (*FILES, MANIFEST)}
    lines = files[FILES[0]].decode().splitlines()

    def cases_only() -> object:
        return make_cases(catalog, pool_data, inputs.seed)

    def checks_only() -> object:
        return run_checks(corpus_from_files(files))

    def round_trip() -> object:
        return [canonical(json.loads(line)) for line in lines]

    rows = [
        ("build (cases + every check)", median_seconds(lambda: build(inputs), args.repeats)),
        ("cases only (no checks)", median_seconds(cases_only, args.repeats)),
        ("checks only (--check-only)", median_seconds(checks_only, args.repeats)),
        ("json round trip of 300 cases", median_seconds(round_trip, args.repeats)),
    ]
    print(f"command: .venv/bin/python bench/bench_generate.py --repeats {args.repeats}")
    print(f"{'what':<32} {'median s':>9} {'x round trip':>13}")
    floor = rows[-1][1]
    for name, seconds in rows:
        print(f"{name:<32} {seconds:>9.3f} {seconds / floor:>13.1f}")
    report = build(inputs).report
    print(f"assertions per build: {report.assertions}; target for build: < 2 s")


if __name__ == "__main__":
    main()
