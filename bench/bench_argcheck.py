"""Argument-checker benchmark: checks per second over the toolcall300-argument-vectors/v1 vectors.

Prints medians and ratios against peers measured in the same run; asserts nothing.

The set: every corpus vector that reaches a verdict and whose blob parses (text vectors are
checked from their text; the peers get the parsed blob). Measured per pass over the set:

- ``argcheck.check``: the full tool-argument/v1 check (request checks, schema coverage,
  tentative repairs, all defects, the response), from the request object, with what each
  schema's content decides kept between calls (a caller sends the same tool schemas again);
- the same with that cache emptied before every check (every schema seen for the first time);
- ``argcheck.check_body``: the service's entry, from the request's JSON bytes (strict reading
  included, which the peers are spared: they get the parsed blob);
- peer ``jsonschema``: ``Draft202012Validator(schema)`` built per blob (a service sees a new
  schema every call) and ``iter_errors`` listed in full (all defects, no repair);
- peer ``jsonschema is_valid``: the same validator, first error only;
- peer ``schema.is_valid``: the suite's own engine alone, validation only.

Run: .venv/bin/python bench/bench_argcheck.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from toolcall300.argcheck import vectors as argcheck_corpus
from toolcall300.argcheck.check import check, check_body
from toolcall300.schema import is_valid


def workload() -> list[tuple[dict[str, Any], dict[str, Any], Any]]:
    """(request, schema, parsed blob) for every verdict vector whose blob parses."""
    out = []
    for vector in argcheck_corpus.load_corpus()["vectors"]:
        expect, request = vector["expect"], vector.get("request")
        if "verdict" not in expect or not isinstance(request, dict):
            continue
        if "arguments" in request:
            blob = request["arguments"]
        else:
            try:
                blob = json.loads(request["arguments_text"])
            except ValueError:
                continue
        out.append((request, request["schema"], blob))
    return out


def timed_together(fns: dict[str, Callable[[], None]], repeats: int) -> dict[str, float]:
    """Median seconds of ``repeats`` runs of each of ``fns`` (after one warm-up run each).

    The samples are taken round-robin, one of each per round, so a change in the machine's
    load (it is shared) falls on every variant alike instead of on whichever ran then.
    """
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--inner", type=int, default=20, help="passes over the set per sample")
    args = parser.parse_args()
    work = workload()
    n = len(work) * args.inner

    def ours() -> None:
        for _ in range(args.inner):
            for request, _, _ in work:
                check(request)

    bodies = [json.dumps(request).encode() for request, _, _ in work]

    def ours_body() -> None:
        for _ in range(args.inner):
            for body in bodies:
                check_body(body)

    def ours_cold() -> None:
        from toolcall300.argcheck import check as argcheck

        for _ in range(args.inner):
            for request, _, _ in work:
                argcheck._SCHEMA_FACTS.clear()  # every schema new, as for a first call
                check(request)

    def js_all() -> None:
        for _ in range(args.inner):
            for _, schema, blob in work:
                list(Draft202012Validator(schema).iter_errors(blob))

    def js_first() -> None:
        for _ in range(args.inner):
            for _, schema, blob in work:
                Draft202012Validator(schema).is_valid(blob)

    def engine() -> None:
        for _ in range(args.inner):
            for _, schema, blob in work:
                is_valid(blob, schema)

    results = timed_together(
        {
            "argcheck.check (validate + repair)": ours,
            "argcheck.check, schema cache cold": ours_cold,
            "argcheck.check_body (request bytes)": ours_body,
            "jsonschema iter_errors (all defects)": js_all,
            "jsonschema is_valid (first error)": js_first,
            "schema.is_valid (suite engine only)": engine,
        },
        args.repeats,
    )
    base = results["argcheck.check (validate + repair)"]
    print(
        f"{argcheck_corpus.CORPUS_ID}: {len(work)} blobs x {args.inner} passes, median of {args.repeats}"
    )
    for name, seconds in results.items():
        per_sec = n / seconds
        print(
            f"  {name:<40} {per_sec:>10,.0f} checks/s  {seconds / n * 1e6:>8.1f} us/check  ratio vs argcheck {base / seconds:5.2f}x"
        )


if __name__ == "__main__":
    main()
