"""Benchmark: toolshim against the common pipeline (json_repair, then jsonschema) and json.loads.

One run over the same cases: for each case, each contender is timed over several repetitions
and the case's median is kept; the figure printed is the median of those per-case medians,
in microseconds, with ratios against the peers. Nothing here asserts a timing.

    .venv/bin/python bench/bench_toolshim.py [--corpus corpus_private/toolcall300.jsonl] [--reps 25]

The peers do less than toolshim: json_repair + jsonschema repairs syntax and reports
validity, it does not resolve names, coerce, re-nest or refuse; json.loads only parses.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json_repair
import jsonschema

from toolcall300.toolshim import normalise

Case = dict[str, Any]


def _schema_for(case: Case, name: Any) -> dict[str, Any] | None:
    for tool in case["tools"]:
        fn = tool.get("function", tool)
        if fn.get("name") == name:
            params: dict[str, Any] = fn.get("parameters", {})
            return params
    return None


def json_repair_then_jsonschema(case: Case) -> Any:
    """The common pipeline: repair the JSON, look the tool up, validate with jsonschema."""
    value = json_repair.loads(case["text"])
    if not isinstance(value, dict):
        return None
    schema = _schema_for(case, value.get("name"))
    if schema is None:
        return None
    try:
        jsonschema.validate(value.get("arguments"), schema)
    except jsonschema.ValidationError:
        return None
    return value


def json_repair_then_prebuilt_validator(case: Case) -> Any:
    """The same pipeline with the validator class chosen once (no per-call schema check)."""
    value = json_repair.loads(case["text"])
    if not isinstance(value, dict):
        return None
    schema = _schema_for(case, value.get("name"))
    if schema is None:
        return None
    return (
        value if jsonschema.Draft202012Validator(schema).is_valid(value.get("arguments")) else None
    )


def json_loads(case: Case) -> Any:
    try:
        return json.loads(case["text"])
    except ValueError:
        return None


def toolshim(case: Case) -> Any:
    return normalise(case["text"], case["tools"])


def per_case_us(
    contenders: list[tuple[str, Callable[[Case], Any]]], cases: list[Case], reps: int
) -> dict[str, list[float]]:
    """Each contender's median time per call on each case, in microseconds.

    The contenders take turns case by case (each runs its repetitions of a case back to
    back), so that a machine whose speed drifts during the run (a shared VM does) slows all
    of them alike and the ratios stay fair."""
    per_case: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for case in cases:
        for name, fn in contenders:
            samples = []
            for _ in range(reps):
                t0 = time.perf_counter_ns()
                fn(case)
                samples.append(time.perf_counter_ns() - t0)
            per_case[name].append(statistics.median(samples) / 1000)
    return per_case


def reaches_validation(case: Case) -> bool:
    """Whether the common pipeline gets as far as jsonschema on this case (a dict naming a
    declared tool); elsewhere it stops after parsing, having done far less than toolshim."""
    value = json_repair.loads(case["text"])
    return isinstance(value, dict) and _schema_for(case, value.get("name")) is not None


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default="corpus_private/toolcall300.jsonl")
    p.add_argument("--reps", type=int, default=25)
    args = p.parse_args(argv)
    cases = [
        json.loads(line)
        for line in Path(args.corpus).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    contenders: list[tuple[str, Callable[[Case], Any]]] = [
        ("toolshim.normalise", toolshim),
        ("json_repair + jsonschema.validate", json_repair_then_jsonschema),
        ("json_repair + Draft202012Validator", json_repair_then_prebuilt_validator),
        ("json.loads alone", json_loads),
    ]
    for _, fn in contenders:  # warm caches and imports before timing anything
        for case in cases:
            fn(case)
    timings = per_case_us(contenders, cases, args.reps)
    validated = [i for i, case in enumerate(cases) if reaches_validation(case)]
    print(f"{len(cases)} cases from {args.corpus}, {args.reps} repetitions each (us per case)")
    print(
        f"  {'':<38} {'median':>10} {'mean':>10}   median where the pipeline validates ({len(validated)})"
    )
    figures: dict[str, tuple[float, float, float]] = {}
    for name, us in timings.items():
        sub = [us[i] for i in validated]
        figures[name] = (
            statistics.median(us),
            statistics.fmean(us),
            statistics.median(sub) if sub else 0.0,
        )
        med, mean, subset = figures[name]
        print(f"  {name:<38} {med:10.1f} {mean:10.1f}   {subset:10.1f}")
    shim = figures["toolshim.normalise"]
    print(
        "ratios toolshim / peer (below 1: toolshim is faster): median, mean, validated-subset median"
    )
    for name, fig in figures.items():
        if name != "toolshim.normalise":
            ratios = "  ".join(
                f"{a / b:9.2f}x" if b else "      n/a" for a, b in zip(shim, fig, strict=True)
            )
            print(f"  toolshim / {name:<34} {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
