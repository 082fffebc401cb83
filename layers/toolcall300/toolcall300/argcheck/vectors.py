"""``toolcall300-argument-vectors/v1``: this project's pinned conformance vectors, and their runner.

Each vector is one submission (a ``request`` object, a raw ``body`` string, or a ``body_bytes``
size for the cap) and the outcome the tool-argument/v1 criteria require: the verdict, the
arguments and the exact diff it carries, the defects as ``[path, code]`` pairs (``[path, code,
rule]`` for one a withdrawn repair would leave, D22), or the refusal
code. Messages are informative, not part of the contract, and are not compared. The pin is the
SHA-256 of the canonical serialisation of the corpus object without its ``sha256`` field.
The criteria pin another corpus, ``argument-check-corpus/v1``, which this project does not have;
these vectors carry their own id so that one id never names two corpora (criteria D21).

It is not a fuzzer and not generated from the checker: every expectation was written from the
criteria by hand, so a vector can disagree with the code.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, TextIO

from toolcall300.argcheck.check import check, check_body
from toolcall300.canonical import canonical, canonical_bytes, loads_strict, sha256_hex
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK

CORPUS_ID = "toolcall300-argument-vectors/v1"
CORPUS_FILE = "toolcall300-argument-vectors-v1.json"


def load_corpus() -> dict[str, Any]:
    """The corpus as shipped in the package."""
    raw = resources.files("toolcall300").joinpath("data", CORPUS_FILE).read_bytes()
    corpus: dict[str, Any] = loads_strict(raw)
    return corpus


def corpus_pin(corpus: dict[str, Any]) -> str:
    """SHA-256 of the canonical serialisation of the corpus without its ``sha256`` field."""
    return sha256_hex(canonical_bytes({k: v for k, v in corpus.items() if k != "sha256"}))


def submit(vector: dict[str, Any]) -> dict[str, Any]:
    """Run one vector's submission through the checker."""
    if "body_bytes" in vector:
        # The cap vector: a well-formed request padded with JSON whitespace to the given size.
        core = b'{"schema": {}, "arguments": {}}'
        return check_body(b" " * (vector["body_bytes"] - len(core)) + core)
    if "body" in vector:
        return check_body(vector["body"].encode("utf-8"))
    return check(vector["request"])


def outcome(response: dict[str, Any]) -> dict[str, Any]:
    """The part of a response a vector pins (refusal code; verdict, arguments, diff, defects)."""
    if "refusal" in response:
        return {"refusal": response["refusal"]["code"]}
    out: dict[str, Any] = {"verdict": response["verdict"]}
    for field in ("arguments", "diff"):
        if field in response:
            out[field] = response[field]
    if "defects" in response:
        # A defect left by a withdrawn repair (D22) also pins the rule it assumes.
        out["defects"] = [
            [d["path"], d["code"], *([d["after_repair"]] if "after_repair" in d else [])]
            for d in response["defects"]
        ]
    return out


def failures(corpus: dict[str, Any]) -> list[str]:
    """The ids of vectors whose outcome differs from the pinned one (compared canonically,
    so ``3`` and ``3.0`` differ as the JSON texts differ)."""
    return [
        v["id"]
        for v in corpus["vectors"]
        if canonical(outcome(submit(v))) != canonical(v["expect"])
    ]


def selftest(stdout: TextIO, stderr: TextIO) -> int:
    """Recompute the pin and run every vector; exit 0 only when both hold."""
    corpus = load_corpus()
    pin = corpus_pin(corpus)
    if pin != corpus.get("sha256"):
        stderr.write(
            f"{CORPUS_ID}: pin mismatch: file says {corpus.get('sha256')}, content is {pin}\n"
        )
        return EXIT_ERROR
    failed = failures(corpus)
    total = len(corpus["vectors"])
    for vid in failed:
        stdout.write(f"FAIL {vid}\n")
    stdout.write(f"{CORPUS_ID} sha256 {pin}\n")
    stdout.write(f"selftest: {total - len(failed)}/{total} vectors pass\n")
    return EXIT_OK if not failed else EXIT_ERROR
