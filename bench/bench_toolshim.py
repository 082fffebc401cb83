"""Benchmark: toolshim against the common pipeline (json_repair, then jsonschema) and json.loads.

One run over the same cases: for each case, each contender is timed over several repetitions
and the case's median is kept; the figure printed is the median of those per-case medians,
in microseconds, with ratios against the peers. Nothing here asserts a timing.

    .venv/bin/python bench/bench_toolshim.py [--corpus corpus_private/toolcall300.jsonl] [--reps 25]

The peers do less than toolshim: json_repair + jsonschema repairs syntax, unwraps the usual
envelopes and reports validity; it does not resolve names, coerce, re-nest or refuse, and it
stops early on a case whose tool name is not written exactly. json.loads only parses.
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

from toolcall300.toolshim.pipeline import normalise

Case = dict[str, Any]


def _schema_for(case: Case, name: Any) -> dict[str, Any] | None:
    for tool in case["tools"]:
        fn = tool.get("function", tool)
        if fn.get("name") == name:
            params: dict[str, Any] = fn.get("parameters", {})
            return params
    return None


def _repaired_call(case: Case) -> tuple[Any, dict[str, Any]] | None:
    """What a team writes without a normaliser, up to validation: repair the JSON, take the
    first call out of the usual envelopes (a list, ``tool_calls``, ``function``), read the
    arguments under ``arguments``/``parameters``/``input`` and repair them too if they are a
    string, and look the tool up by its exact name. ``None`` when it finds no such call."""
    value = json_repair.loads(case["text"])
    if isinstance(value, list):
        value = value[0] if value else None
    if (
        isinstance(value, dict)
        and isinstance(value.get("tool_calls"), list)
        and value["tool_calls"]
    ):
        value = value["tool_calls"][0]
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict):
        return None
    schema = _schema_for(case, value.get("name"))
    if schema is None:
        return None
    args = next((value[k] for k in ("arguments", "parameters", "input") if k in value), {})
    if isinstance(args, str):
        args = json_repair.loads(args)
    return args, schema


def json_repair_then_jsonschema(case: Case) -> Any:
    """The common pipeline: the call as json_repair reads it, then ``jsonschema.validate``."""
    found = _repaired_call(case)
    if found is None:
        return None
    args, schema = found
    try:
        jsonschema.validate(args, schema)
    except jsonschema.ValidationError:
        return None
    return args


_VALIDATORS: dict[int, tuple[Any, Any]] = {}


def json_repair_then_prebuilt_validator(case: Case) -> Any:
    """The same pipeline at its fastest: one Draft202012Validator per schema, built once and
    kept (as toolshim keeps its compiled schemas), so no per-call schema check."""
    found = _repaired_call(case)
    if found is None:
        return None
    args, schema = found
    kept = _VALIDATORS.get(id(schema))
    if kept is None or kept[0] is not schema:
        kept = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    return args if kept[1].is_valid(args) else None


def json_loads(case: Case) -> Any:
    try:
        return json.loads(case["text"])
    except ValueError:
        return None


def toolshim(case: Case) -> Any:
    return normalise(case["text"], case["tools"])


def toolshim_fresh_tools(case: Case) -> Any:
    """toolshim for a caller that parses its tools afresh for every call (as the stream
    protocol delivers them): no cache keyed on the tool objects can hit. The copies are made
    before the clock starts."""
    return normalise(case["text"], case["_fresh_tools"].pop())


def per_case_us(
    contenders: list[tuple[str, Callable[[Case], Any]]],
    cases: list[Case],
    reps: int,
    before_case: Callable[[Case], None],
) -> dict[str, list[float]]:
    """Each contender's median time per call on each case, in microseconds.

    The contenders take turns case by case (each runs its repetitions of a case back to
    back), so that a machine whose speed drifts during the run (a shared VM does) slows all
    of them alike and the ratios stay fair."""
    per_case: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for case in cases:
        before_case(case)
        for name, fn in contenders:
            samples = []
            for _ in range(reps):
                t0 = time.perf_counter_ns()
                fn(case)
                samples.append(time.perf_counter_ns() - t0)
            per_case[name].append(statistics.median(samples) / 1000)
    return per_case


def reaches_validation(case: Case) -> bool:
    """Whether the common pipeline gets as far as jsonschema on this case (it found a call
    naming a declared tool exactly); elsewhere it stops early, having done less than toolshim."""
    return _repaired_call(case) is not None


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

    def fresh_copies(case: Case) -> None:
        """One new copy of the tools per call, made outside the timing, for one case at a time."""
        tools_text = json.dumps(case["tools"])
        case["_fresh_tools"] = [json.loads(tools_text) for _ in range(args.reps + 1)]

    contenders: list[tuple[str, Callable[[Case], Any]]] = [
        ("toolshim.normalise", toolshim),
        ("toolshim.normalise, tools parsed afresh", toolshim_fresh_tools),
        ("json_repair + jsonschema.validate", json_repair_then_jsonschema),
        ("json_repair + kept Draft202012Validator", json_repair_then_prebuilt_validator),
        ("json.loads alone", json_loads),
    ]
    for _, fn in contenders:  # warm caches and imports before timing anything
        for case in cases:
            fresh_copies(case)
            fn(case)
    timings = per_case_us(contenders, cases, args.reps, fresh_copies)
    validated = [i for i, case in enumerate(cases) if reaches_validation(case)]
    print(f"{len(cases)} cases from {args.corpus}, {args.reps} repetitions each (us per case)")
    print(
        f"  {'':<42} {'median':>10} {'mean':>10}   median where the pipeline validates ({len(validated)})"
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
        print(f"  {name:<42} {med:10.1f} {mean:10.1f}   {subset:10.1f}")
    shims = [name for name in figures if name.startswith("toolshim")]
    print(
        "ratios toolshim / peer (below 1: toolshim is faster): median, mean, validated-subset median"
    )
    for shim in shims:
        for name, fig in figures.items():
            if name not in shims:
                ratios = "  ".join(
                    f"{a / b:9.2f}x" if b else "      n/a"
                    for a, b in zip(figures[shim], fig, strict=True)
                )
                label = f"{shim.replace('toolshim.normalise', 'toolshim')} / {name}"
                print(f"  {label:<72} {ratios}")
    median = {name: fig[0] for name, fig in figures.items()}
    shim = median["toolshim.normalise"]
    fresh = median["toolshim.normalise, tools parsed afresh"]
    print(
        f"  toolshim, tools parsed afresh / tools kept (median): {fresh / shim:.2f}x (target 1.3x)"
    )
    print(
        "targets (medians, tools kept between calls): faster than json_repair + "
        f"jsonschema.validate: {'met' if shim < median['json_repair + jsonschema.validate'] else 'NOT met'}; "
        f"within 5x of json.loads: {shim / median['json.loads alone']:.2f}x, "
        f"{'met' if shim <= 5 * median['json.loads alone'] else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
