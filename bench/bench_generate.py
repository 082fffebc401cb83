"""Generator benchmark: wall time to build the 300-case corpus with every integrity check.

Prints medians and ratios against peers measured in the same run; asserts nothing.
Measured per repeat, on the private catalog and pools at the recorded seed:

- ``build``: the whole ``generate`` core (catalog checks, 300 cases, sample, every check class);
- peer ``cases only``: the mutation rules alone, no integrity checks;
- peer ``checks only``: every check class over the finished corpus (what --check-only runs);
- peer ``json round trip``: ``json.loads`` + ``canonical`` of every case line, the floor of
  any pass over the corpus.

Then how a build grows (``--scaling``, on by default): CPU seconds of ``build`` on a
one-tool catalog whose enum has 1,000 / 2,000 / 4,000 members (the largest the declaration size
limit lets a build take; a larger one is refused), and on catalogs of 500 / 1,000
/ 2,000 tools, each as the median of ``--scale-repeats`` runs, with the ratio per doubling
(time ratio ** (1 / log2(size ratio))): 2.0 is linear, 4.0 quadratic. Schema-derived values
(no pools), so this is what ``generate --tools`` does with a user's catalog.

Target: ``build`` under 2 s; growth per doubling near 2 (linear). Run:
.venv/bin/python bench/bench_generate.py [--repeats N] [--scale-repeats N] [--no-scaling]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from toolcall300.canonical import canonical
from toolcall300.catalog import MAX_BUILT_DECLARATION_CHARS as LIMIT
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


def median_cpu_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def enum_catalog(members: int) -> list[dict[str, object]]:
    """One tool whose string enum has ``members`` members."""
    colour = {"type": "string", "enum": [f"shade_{i}" for i in range(members)]}
    props = {"colour": colour, "count": {"type": "integer", "minimum": 1, "maximum": 9}}
    props["note"] = {"type": "string"}
    params = {"type": "object", "properties": props, "required": ["colour", "count"]}
    params["additionalProperties"] = False
    return [{"type": "function", "function": {"name": "pick_colour", "parameters": params}}]


def _declaration_chars(members: int) -> int:
    return len(json.dumps(enum_catalog(members)[0]))


def wide_catalog(tools: int) -> list[dict[str, object]]:
    """``tools`` tools of the same small shape under distinct names."""
    props = {
        "level": {"type": "string", "enum": ["low", "high"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
        "label": {"type": "string"},
    }
    params = {"type": "object", "properties": props, "required": ["level"]}
    params["additionalProperties"] = False
    return [
        {"type": "function", "function": {"name": f"tool_{i}_op", "parameters": params}}
        for i in range(tools)
    ]


def scaling(what: str, sizes: tuple[int, ...], make: Callable[[int], object], repeats: int) -> None:
    """Print the median build time at each size and the ratio per doubling between sizes."""
    print(f"{what:<22} {'size':>6} {'median cpu s':>13} {'x per doubling':>15}")
    previous: tuple[int, float] | None = None
    for size in sizes:
        inputs = Inputs("t.json", json.dumps(make(size)).encode(), "", None, 7)
        seconds = median_cpu_seconds(lambda inputs=inputs: build(inputs), repeats)
        per_doubling = ""
        if previous:
            growth = seconds / previous[1]
            per_doubling = f"{growth ** (1 / math.log2(size / previous[0])):.2f}"
        print(f"{what:<22} {size:>6} {seconds:>13.2f} {per_doubling:>15}")
        previous = (size, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--scale-repeats", type=int, default=3)
    parser.add_argument("--no-scaling", action="store_true")
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
    print(
        f"command: .venv/bin/python bench/bench_generate.py --repeats {args.repeats} "
        f"--scale-repeats {args.scale_repeats}"
    )
    print(f"{'what':<32} {'median s':>9} {'x round trip':>13}")
    floor = rows[-1][1]
    for name, seconds in rows:
        print(f"{name:<32} {seconds:>9.3f} {seconds / floor:>13.1f}")
    report = build(inputs).report
    print(f"assertions per build: {report.assertions}; target for build: < 2 s")
    if args.no_scaling:
        return
    print()
    # The sizes stay inside the declaration size limit: a larger enum is refused, not built.
    enums = tuple(n for n in (1000, 2000, 4000, 8000) if _declaration_chars(n) <= LIMIT)
    print(f"(an enum declaration is built up to {LIMIT:,} characters: {enums[-1]:,} members)")
    scaling("enum members", enums, enum_catalog, args.scale_repeats)
    scaling("tools in the catalog", (500, 1000, 2000), wide_catalog, args.scale_repeats)
    print("target: x per doubling near 2.0 (linear); 4.0 would be quadratic")


if __name__ == "__main__":
    main()
