"""Argument-checker benchmark: checks per second over the toolcall300-argument-vectors/v1 vectors.

Prints medians and ratios against peers measured in the same run; asserts nothing.

The set: every corpus vector that reaches a verdict and whose blob parses (text vectors are
checked from their text; the peers get the parsed blob). Two like-for-like pairs:

(a) warm: ``argcheck.check``, the full tool-argument/v1 check (request checks, schema
    coverage, tentative repairs, every defect, the response) with what each schema's content
    decides kept between calls (a caller sends the same tool schemas again), against peer
    ``jsonschema`` with ``Draft202012Validator(schema)`` built once per schema and reused,
    ``iter_errors`` listed in full (all defects, no repair);
(b) cold: the same check with that cache emptied before every check (every schema seen for
    the first time: judged for coverage, walked interpreted), against the ``jsonschema``
    validator built per blob.

Also: ``argcheck.check_body``, the service's entry, from the request's JSON bytes (strict
reading included, which the peers are spared: they get the parsed blob), warm and cold; peer
``jsonschema is_valid`` (first error only, built per blob); ``schema.is_valid``, the suite's
own engine alone, validation only.

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

from toolcall300.argcheck import check as argcheck
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
    load (it is shared) falls on every variant alike instead of on whichever ran then; each is
    this process's CPU time (``time.process_time``), so time spent waiting for the CPU while
    another process runs is not counted against whichever variant was running.
    """
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--inner", type=int, default=20, help="passes over the set per sample")
    args = parser.parse_args()
    work = workload()
    n = len(work) * args.inner
    bodies = [json.dumps(request).encode() for request, _, _ in work]
    built_once: dict[str, Draft202012Validator] = {}
    for _, schema, _ in work:
        built_once.setdefault(json.dumps(schema, sort_keys=True), Draft202012Validator(schema))
    reused = [(built_once[json.dumps(schema, sort_keys=True)], blob) for _, schema, blob in work]

    def ours() -> None:
        for _ in range(args.inner):
            for request, _, _ in work:
                check(request)

    def ours_cold() -> None:
        for _ in range(args.inner):
            for request, _, _ in work:
                argcheck._SCHEMA_FACTS.clear()  # every schema new, as for a first call
                check(request)

    def ours_body() -> None:
        for _ in range(args.inner):
            for body in bodies:
                check_body(body)

    def ours_body_cold() -> None:
        for _ in range(args.inner):
            for body in bodies:
                argcheck._SCHEMA_FACTS.clear()
                check_body(body)

    def js_reused() -> None:
        for _ in range(args.inner):
            for validator, blob in reused:
                list(validator.iter_errors(blob))

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

    warm, cold = "argcheck.check, cache warm", "argcheck.check, cache cold"
    body, body_cold = "argcheck.check_body, cache warm", "argcheck.check_body, cache cold"
    js_once, js_blob = "jsonschema iter_errors, built once", "jsonschema iter_errors, per blob"
    results = timed_together(
        {
            warm: ours,
            js_once: js_reused,
            cold: ours_cold,
            js_blob: js_all,
            body: ours_body,
            body_cold: ours_body_cold,
            "jsonschema is_valid, per blob": js_first,
            "schema.is_valid (suite engine only)": engine,
        },
        args.repeats,
    )
    print(
        f"{argcheck_corpus.CORPUS_ID}: {len(work)} blobs x {args.inner} passes, median of {args.repeats}"
    )
    for name, seconds in results.items():
        print(f"  {name:<38} {n / seconds:>10,.0f} checks/s  {seconds / n * 1e6:>8.1f} us/check")

    def ratio(ours_name: str, peer: str) -> str:
        return f"{results[peer] / results[ours_name]:.2f}x"

    print("ratios (argcheck speed / peer speed, this run):")
    print(f"  (a) cache warm vs jsonschema built once:   {ratio(warm, js_once)}")
    print(f"  (b) cache cold vs jsonschema per blob:     {ratio(cold, js_blob)}")
    print(f"  check_body warm vs jsonschema built once:  {ratio(body, js_once)}")
    print(f"  check_body cold vs jsonschema per blob:    {ratio(body_cold, js_blob)}")


if __name__ == "__main__":
    main()
