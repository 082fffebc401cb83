"""Argument-checker benchmark: argcheck against jsonschema-rs and fastjsonschema in the same run.

Prints medians and ratios; asserts nothing. Three sets, each blob against its own schema:

- ``valid``: the corpus's 250 value cases, each expected call's arguments against its tool's
  parameters (every blob conforms);
- ``invalid``: the same blobs with one value damaged (the first number sent as its string,
  else the first string sent as a number): repaired or unrepairable;
- ``vectors``: the toolcall300-argument-vectors/v1 and held-out vectors that reach a verdict.

Contenders, warm (what each keeps per schema is kept between calls, as a caller sending the
same tool schemas again gets):

- ``argcheck.check(request)``: the whole tool-argument/v1 check (the schema found by its
  content, the request checks, tentative repairs, every defect, the response);
- ``argcheck.SchemaCheck(schema).check({"arguments": blob})``: the same check with the schema
  kept by the caller (the like of a kept validator: no lookup of the schema by content);
- ``argcheck.check_body(bytes)``: the service's entry, from the request's JSON bytes (strict
  reading included, which the peers are spared);
- peer ``jsonschema-rs``: ``validator_for(schema)`` once per schema, ``list(iter_errors(blob))``
  (every error, no repair);
- peer ``fastjsonschema``: ``compile(schema)`` once per schema, ``validate`` (first error only);
- peer ``jsonschema``: ``Draft202012Validator`` kept, ``list(iter_errors(blob))``.

Blobs whose schema a peer refuses (its regex dialect differs) are left out of every set, and
counted. CPU time (``time.process_time``), samples taken round-robin so load falls on every
contender alike; the load average is printed before and after.

Run: ``make bench`` or ``bench/.venv/bin/python bench/bench_argcheck.py [--repeats N]`` (the
peers are installed in bench/.venv, pinned in bench/requirements.txt).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema_rs
from jsonschema import Draft202012Validator

from toolcall300.argcheck import vectors as argcheck_corpus
from toolcall300.argcheck.check import SchemaCheck, check, check_body

ROOT = Path(__file__).resolve().parents[1]
Request = dict[str, Any]


def _damaged(arguments: dict[str, Any]) -> dict[str, Any]:
    bad = copy.deepcopy(arguments)
    for key, value in bad.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bad[key] = json.dumps(value)
            return bad
    for key, value in bad.items():
        if isinstance(value, str):
            bad[key] = 12345
            return bad
    return bad


def corpus_sets() -> tuple[list[Request], list[Request]]:
    valid, invalid = [], []
    for line in (ROOT / "corpus_private" / "toolcall300.jsonl").read_text("utf-8").splitlines():
        case = json.loads(line)
        if case["expected_kind"] != "value":
            continue
        call = case["expected"]
        [tool] = [t for t in case["tools"] if t["function"]["name"] == call["name"]]
        schema = tool["function"]["parameters"]
        valid.append({"schema": schema, "arguments": call["arguments"]})
        invalid.append({"schema": schema, "arguments": _damaged(call["arguments"])})
    return valid, invalid


def vector_set() -> list[Request]:
    heldout = json.loads((ROOT / "tests" / "data" / "argcheck-heldout-vectors.json").read_text())
    out = []
    for corpus in (argcheck_corpus.load_corpus(), heldout):
        for vector in corpus["vectors"]:
            request = vector.get("request")
            verdict = "verdict" in vector["expect"] and isinstance(request, dict)
            if verdict and isinstance(request.get("arguments"), dict):
                out.append(request)
    return out


class Peers:
    """Each peer's kept validator per schema (by its JSON text); None where a peer refuses it."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[Any, Any, Any] | None] = {}

    def of(self, schema: dict[str, Any]) -> tuple[Any, Any, Any] | None:
        key = json.dumps(schema, sort_keys=True)
        if key not in self.kept:
            try:
                self.kept[key] = (
                    jsonschema_rs.validator_for(schema),
                    fastjsonschema.compile(schema),
                    Draft202012Validator(schema),
                )
            except Exception:  # a peer's own refusal of a schema, of any kind
                self.kept[key] = None
        return self.kept[key]


def timed_together(fns: dict[str, Callable[[], None]], repeats: int) -> dict[str, float]:
    """Median CPU seconds of each of ``fns`` over ``repeats`` interleaved rounds (one warm-up)."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def contenders(requests: list[Request], peers: Peers, inner: int) -> dict[str, Callable[[], None]]:  # noqa: C901
    kept = [(peers.of(r["schema"]), r["arguments"]) for r in requests]
    bodies = [json.dumps(r).encode() for r in requests]
    ours: dict[str, SchemaCheck] = {}
    for r in requests:
        ours.setdefault(json.dumps(r["schema"]), SchemaCheck(r["schema"]))
    ours_kept = [(ours[json.dumps(r["schema"])], {"arguments": r["arguments"]}) for r in requests]

    def argcheck_check() -> None:
        for _ in range(inner):
            for request in requests:
                check(request)

    def argcheck_kept() -> None:
        for _ in range(inner):
            for schema_check, fields in ours_kept:
                schema_check.check(fields)

    def argcheck_body() -> None:
        for _ in range(inner):
            for body in bodies:
                check_body(body)

    def rs() -> None:
        for _ in range(inner):
            for validators, blob in kept:
                list(validators[0].iter_errors(blob))  # type: ignore[index]

    def fast() -> None:
        for _ in range(inner):
            for validators, blob in kept:
                with contextlib.suppress(fastjsonschema.JsonSchemaException):
                    validators[1](blob)  # type: ignore[index]

    def python_jsonschema() -> None:
        for _ in range(inner):
            for validators, blob in kept:
                list(validators[2].iter_errors(blob))  # type: ignore[index]

    return {
        "argcheck.check": argcheck_check,
        "argcheck SchemaCheck kept": argcheck_kept,
        "argcheck.check_body": argcheck_body,
        "jsonschema-rs iter_errors": rs,
        "fastjsonschema validate": fast,
        "jsonschema iter_errors": python_jsonschema,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=4, help="passes over a set per sample")
    args = parser.parse_args()
    peers = Peers()
    valid, invalid = corpus_sets()
    sets = {"valid": valid, "invalid": invalid, "vectors": vector_set()}
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores shared)")
    print(
        f"command: bench/.venv/bin/python bench/bench_argcheck.py --repeats {args.repeats} "
        f"--inner {args.inner}"
    )
    ratios = []
    for name, requests in sets.items():
        kept = [r for r in requests if peers.of(r["schema"]) is not None]
        verdicts: dict[str, int] = {}
        for request in kept:
            verdict = check(request).get("verdict", "refusal")
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
        results = timed_together(contenders(kept, peers, args.inner), args.repeats)
        n = len(kept) * args.inner
        left_out = len(requests) - len(kept)
        print(
            f"\n{name}: {len(kept)} blobs ({left_out} left out: a peer refused the schema), "
            f"verdicts {dict(sorted(verdicts.items()))}; median of {args.repeats}"
        )
        for contender, seconds in results.items():
            print(f"  {contender:<28} {seconds / n * 1e6:>8.2f} us/check")
        rs = results["jsonschema-rs iter_errors"]
        fast = results["fastjsonschema validate"]
        line = (
            f"  argcheck.check / jsonschema-rs: {results['argcheck.check'] / rs:.2f}x;"
            f" SchemaCheck kept / jsonschema-rs: {results['argcheck SchemaCheck kept'] / rs:.2f}x;"
            f" / fastjsonschema: {results['argcheck.check'] / fast:.2f}x;"
            f" check_body / jsonschema-rs: {results['argcheck.check_body'] / rs:.2f}x"
        )
        print(line)
        ratios.append((name, results["argcheck.check"] / rs))
        ratios.append((f"{name} kept", results["argcheck SchemaCheck kept"] / rs))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    print(
        "target: argcheck.check warm <= 2x jsonschema-rs on valid and invalid: "
        + ", ".join(f"{name} {ratio:.2f}x" for name, ratio in ratios)
    )


if __name__ == "__main__":
    main()
