"""The trusted harness: feed an adapter the corpus inputs over the stream protocol, keep its answers.

Only each case's ``id``, ``text`` and ``tools`` ever reach the adapter (:func:`job_inputs`
strips everything else); labels and rationale never enter the job, and scoring happens
afterwards in trusted code with the CLI's scorer. :func:`run_job` drives
``streamproto.run_stream`` with a per-case and a whole-run time limit and output caps, and
:func:`classify` decides, purely, whether what came back can be scored or ends the run as
``failed`` with a reason from the closed list. The standard library only, so the Batch harness
image's entrypoint (``infra/harness/entrypoint.py``) runs it without the service's SDKs. It
does not sandbox (the caller passes ``popen_kwargs``) and it does not score.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import canonical_bytes, jsonl_bytes, loads_strict
from toolcall300.jobs.failures import failure
from toolcall300.scoring import protocol as streamproto

INPUT_FIELDS = ("id", "text", "tools")
#: The private corpus's file in the corpus bucket (what the manifest lists and scoring reads).
CORPUS_FILE = "toolcall300.jsonl"
#: The label-free inputs live beside it, derived once when the corpus is uploaded, so the
#: function that submits jobs never reads the labelled corpus: it reads this pointer.
INPUTS_POINTER = "job-inputs/current.json"
#: Signs in stderr that the adapter ran out of memory (RLIMIT_AS makes allocation fail).
OOM_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "out of memory",
    "OutOfMemoryError",
)


@dataclass(frozen=True)
class Limits:
    """The job's time and output limits."""

    per_case_timeout: float = 10.0
    total_timeout: float = 900.0
    max_output_bytes: int = 64 * 1024 * 1024
    max_line_bytes: int = 1024 * 1024
    #: JSON values the kept answers may hold in all (``protocol.count_values``): 64 MiB of
    #: ``{},`` parses to about 1.5 GiB in the worker; this keeps a run's answers near 150 MiB.
    max_answer_values: int = 2_000_000


@dataclass(frozen=True)
class JobOutput:
    """What a job hands back to the trusted side: answers and how the adapter behaved."""

    answers: dict[str, Any]
    diagnostics: dict[str, Any]
    failure: dict[str, str] | None
    #: id -> the adapter error's text, for each id the adapter broke on instead of answering
    #: (``protocol.stream_errors``): the report's ``adapter_errors`` (docs/report.md).
    errors: dict[str, str] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The answers file the Batch job writes (and the worker keeps in memory)."""
        return {
            "answers": self.answers,
            "diagnostics": self.diagnostics,
            "failure": self.failure,
            "errors": self.errors,
        }


def job_inputs(cases: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The only part of each case the job may see; labels never leave trusted code."""
    return [{k: case.get(k) for k in INPUT_FIELDS} for case in cases]


def inputs_key(corpus_sha256: str) -> str:
    """Where the label-free inputs of one corpus version live (one object per version)."""
    return f"job-inputs/{corpus_sha256}.jsonl"


def derive_inputs(corpus: bytes) -> dict[str, bytes]:
    """The objects to store beside the corpus: its inputs, then the pointer naming them.

    In upload order: the pointer last, so a reader never follows it to a missing file. The
    pointer says which corpus version the inputs came from (``corpus_sha256``), so a run
    records what it was given and is scored only against that version.
    """
    sha = hashlib.sha256(corpus).hexdigest()
    key = inputs_key(sha)
    rows = [loads_strict(line) for line in corpus.decode("utf-8").splitlines() if line.strip()]
    body = jsonl_bytes(job_inputs(rows))
    pointer = {"corpus_sha256": sha, "key": key, "cases": body.count(b"\n")}
    return {key: body, INPUTS_POINTER: canonical_bytes(pointer)}


def diagnostics_of(result: streamproto.StreamResult) -> dict[str, Any]:
    """How the adapter behaved, recorded in the stored report (no case content)."""
    return {
        "answered": len(result.answers) - len(result.unanswered),
        "unanswered": len(result.unanswered),
        "unknown_ids": len(result.unknown_ids),
        "malformed_lines": result.malformed_lines,
        "duplicate_answers": result.duplicate_answers,
        "exit_code": result.exit_code,
        "stopped_reason": result.stopped_reason,
        "elapsed_s": round(result.elapsed, 3),
    }


def classify(result: streamproto.StreamResult, limits: Limits) -> dict[str, str] | None:
    """None when the answers can be scored; else the failure that ends the run.

    Decisions (docs/runs-contract.md, failure reasons): the whole-run limit, the output cap and running out
    of memory fail the run even with answers in hand; a run with no usable answer at all
    fails with the most specific reason; otherwise unanswered ids are refusals (docs/adapter-protocols.md,
    the stream protocol) and a crash halfway, unknown ids or non-JSON lines are only recorded.
    """
    tail = result.stderr_tail
    answered = len(result.answers) - len(result.unanswered)
    if result.stopped_reason == "total_timeout":
        return failure(
            "job_timeout", f"the run exceeded its {limits.total_timeout:g} s limit", tail
        )
    if result.stopped_reason == "output_cap":
        return failure(
            "output_malformed", f"the adapter wrote more than {limits.max_output_bytes} bytes", tail
        )
    if result.stopped_reason == "value_cap":
        return failure(
            "output_malformed",
            f"the adapter's answers hold more than {limits.max_answer_values} JSON values",
            tail,
        )
    crashed = result.exit_code not in (0, None) and result.stopped_reason == "exited"
    if crashed and any(marker in tail for marker in OOM_MARKERS):
        return failure("out_of_memory", "the adapter ran out of memory", tail)
    if answered > 0 or not result.answers:
        return None
    if result.malformed_lines:
        return failure(
            "output_malformed", f"no valid answer line; {result.malformed_lines} malformed", tail
        )
    if result.stopped_reason == "idle_timeout":
        return failure(
            "job_timeout",
            f"no answer within the {limits.per_case_timeout:g} s per-case limit",
            tail,
        )
    detail = f"the adapter exited with {result.exit_code} before answering"
    return failure("adapter_start_failed", detail + missing_module_fix(tail), tail)


#: How Python says an import failed: ``ModuleNotFoundError: No module named 'jsonschema'``.
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_.]+)'")


def missing_module_fix(stderr_tail: str) -> str:
    """The fix, when the adapter stopped on a module it does not have ("" otherwise): the
    package goes in its requirements file (the folder form) or its image
    (docs/hosted-scoring.md).

    >>> missing_module_fix("ModuleNotFoundError: No module named 'jsonschema.validators'")[:47]
    ": it could not import 'jsonschema.validators': "
    """
    found = _MISSING_MODULE.findall(stderr_tail)
    if not found:
        return ""
    top = found[-1].split(".")[0]
    return (
        f": it could not import {found[-1]!r}: add the package that provides {top!r} to the "
        "adapter's requirements file (requirements.txt beside it, pinned with hashes) or "
        "install it in the adapter's image"
    )


def input_fields(track: str) -> tuple[str, ...]:
    """What of each input row a job of ``track`` keeps (the rest is dropped on arrival): the
    deltas track's stream fields, every other track's ``id``, ``text`` and ``tools``."""
    if track == "deltas":
        from toolcall300.jobs.deltas_job import INPUT_FIELDS as DELTAS_FIELDS

        return DELTAS_FIELDS
    return INPUT_FIELDS


def run_track_job(
    track: str,
    argv: list[str],
    inputs: list[dict[str, Any]],
    *,
    limits: Limits = Limits(),
    popen_kwargs: Mapping[str, Any] | None = None,
) -> JobOutput:
    """The job of a run of ``track`` (docs/tracks.md): the deltas track's adapter speaks its
    process protocol (``jobs.deltas_job``); the single-call and parallel tracks' the stream
    protocol (:func:`run_job`), answering a call or a list of calls."""
    if track == "deltas":
        from toolcall300.jobs.deltas_job import run_deltas_job

        return run_deltas_job(argv, inputs, limits=limits, popen_kwargs=popen_kwargs)
    return run_job(argv, inputs, limits=limits, popen_kwargs=popen_kwargs)


def run_job(
    argv: list[str],
    inputs: list[dict[str, Any]],
    *,
    limits: Limits = Limits(),
    popen_kwargs: Mapping[str, Any] | None = None,
) -> JobOutput:
    """Run the adapter over ``inputs``; a program that cannot even start is a failure, not a crash."""
    try:
        result = streamproto.run_stream(
            argv,
            inputs,
            per_case_timeout=limits.per_case_timeout,
            total_timeout=limits.total_timeout,
            max_output_bytes=limits.max_output_bytes,
            max_line_bytes=limits.max_line_bytes,
            popen_kwargs=popen_kwargs,
            max_answer_values=limits.max_answer_values,
        )
    except OSError as exc:  # not found, not executable
        fail = failure(
            "adapter_start_failed", f"cannot start the adapter: {exc.strerror or exc}", ""
        )
        return JobOutput({}, {"answered": 0, "start_error": type(exc).__name__}, fail)
    return JobOutput(
        dict(result.answers),
        diagnostics_of(result),
        classify(result, limits),
        streamproto.stream_errors(result),
    )
