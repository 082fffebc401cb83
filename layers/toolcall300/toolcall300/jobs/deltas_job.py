"""The trusted harness's deltas-track job: drive the adapter over the deltas process protocol.

A deltas run's inputs are the track's label-free ``adapter_items`` (each case's events, the
fragment's place, its partitions and the tools; never ``expected``). For each case and each
partition, :func:`run_deltas_job` replays the partition's events (``tracks.deltas.replay``)
and hands them to the adapter one by one through ``tracks.deltas_process`` (the protocol the
CLI speaks, docs/adapter-protocols.md), started with the sandbox's ``Popen`` arguments: the
same sandbox, limits and seccomp filter as the stream protocol's job. A program that breaks
the protocol refuses that stream and is started again for the next one, as in the CLI.

What comes back, per case, is one record per partition (``tracks.deltas.stream_record``: the
call and the commits with how many events had been pulled); the trusted side rebuilds the run
from them and judges it (``tracks.deltas.run_from_records``). The run's limits are the stream
protocol's: ``per_case_timeout`` bounds each stream, ``total_timeout`` the run, the output cap
everything the adapter writes, the value cap what is kept; :func:`classify` maps them to the
same failure reasons. The standard library only (the Batch entrypoint runs it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcall300.jobs.failures import failure
from toolcall300.jobs.harness import OOM_MARKERS, JobOutput, Limits
from toolcall300.scoring.protocol import count_values
from toolcall300.scoring.tracks.deltas import ADAPTER_FIELDS, replay, stream_record
from toolcall300.scoring.tracks.deltas_process import DeltasProcessAdapter

#: The fields of a deltas input row the job keeps (``DeltasTrack.adapter_items``): never a label.
INPUT_FIELDS = ADAPTER_FIELDS
#: How ``tracks.deltas_process`` names a stream's broken answer: out of time (waiting for an
#: answer, or for the program to read what it was sent, its start included), not JSON.
_TIMEOUT = ("no answer within the time limit", "the program stopped reading within the time limit")
_MALFORMED = ("not a JSON line", "expected {", "commits must be a list", "an answer line past")
#: A program that broke this many streams without ever answering one is not started again:
#: the run fails with the most specific reason (:func:`classify`), not after one start per stream.
NEVER_ANSWERED_STARTS = 3


@dataclass
class _Tally:
    """What the run did so far, for the diagnostics and :func:`classify`."""

    streams: int = 0
    answered: int = 0
    broken: int = 0
    values: int = 0
    stopped_reason: str | None = None
    first_error: str = ""
    errors: list[str] = field(default_factory=list)


def _run_case(
    adapter: DeltasProcessAdapter,
    item: Mapping[str, Any],
    tally: _Tally,
    *,
    per_stream: float,
    end: float,
    max_values: int,
) -> tuple[list[dict[str, Any]], str | None]:
    """One case's records (partition by partition, until a run limit stops it) and its first
    adapter error."""
    key = str(item["id"])
    records: list[dict[str, Any]] = []
    error = None
    for number, offsets in enumerate(item["partitions"]):
        left = end - time.monotonic()
        if left <= 0:
            tally.stopped_reason = "total_timeout"
            break
        tools = list(item["tools"])
        result = adapter.run_stream(
            f"{key}/{number}", replay(item, offsets), tools, min(per_stream, left)
        )
        tally.streams += 1
        if result.error:
            tally.broken += 1
            tally.first_error = tally.first_error or result.error
            tally.errors.append(result.error)
            error = error or result.error
        else:
            tally.answered += 1
        record = stream_record(result)
        tally.values += count_values(record, max_values)
        records.append(record)
        if adapter.capped:
            tally.stopped_reason = "output_cap"
        elif tally.answered == 0 and tally.broken >= NEVER_ANSWERED_STARTS:
            tally.stopped_reason = "never_answered"
        elif tally.values > max_values:
            tally.stopped_reason = "value_cap"
        elif time.monotonic() >= end:
            tally.stopped_reason = "total_timeout"
        if tally.stopped_reason:
            break
    return records, error


def classify(tally: _Tally, limits: Limits) -> dict[str, str] | None:
    """None when the records can be scored; else the failure that ends the run, by the stream
    protocol's rules (``harness.classify``): a run limit fails the run even with records in
    hand, so does running out of memory; a run where no stream was answered at all (stopped
    after :data:`NEVER_ANSWERED_STARTS` broken ones) fails with the most specific reason;
    otherwise a broken stream is only that stream refused."""
    tail = tally.first_error
    if tally.stopped_reason == "total_timeout":
        return failure(
            "job_timeout", f"the run exceeded its {limits.total_timeout:g} s limit", tail
        )
    if tally.stopped_reason == "output_cap":
        detail = f"the adapter wrote more than {limits.max_output_bytes} bytes"
        return failure("output_malformed", detail, tail)
    if tally.stopped_reason == "value_cap":
        detail = f"the adapter's answers hold more than {limits.max_answer_values} JSON values"
        return failure("output_malformed", detail, tail)
    oom = next((e for e in tally.errors if any(m in e for m in OOM_MARKERS)), None)
    if oom is not None:
        return failure("out_of_memory", "the adapter ran out of memory", oom)
    if tally.answered > 0 or tally.streams == 0:
        return None
    if tail.startswith(_TIMEOUT):
        detail = f"no answer within the {limits.per_case_timeout:g} s per-stream limit"
        return failure("job_timeout", detail, tail)
    if tail.startswith(_MALFORMED):
        return failure("output_malformed", "no stream answered as the deltas protocol says", tail)
    return failure("adapter_start_failed", "the adapter broke every stream before answering", tail)


def run_deltas_job(
    argv: list[str],
    inputs: Sequence[Mapping[str, Any]],
    *,
    limits: Limits,
    popen_kwargs: Mapping[str, Any] | None = None,
) -> JobOutput:
    """Run the adapter over every partition of every input (``harness.run_track_job``)."""
    adapter = DeltasProcessAdapter(
        argv,
        "",
        popen_kwargs=popen_kwargs,
        max_line=limits.max_line_bytes,
        max_output=limits.max_output_bytes,
    )
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    tally = _Tally()
    start = time.monotonic()
    end = start + limits.total_timeout
    try:
        for item in inputs:
            records, error = _run_case(
                adapter,
                item,
                tally,
                per_stream=limits.per_case_timeout,
                end=end,
                max_values=limits.max_answer_values,
            )
            answers[str(item["id"])] = records
            if error:
                errors[str(item["id"])] = error
            if tally.stopped_reason:
                break
    finally:
        adapter.close()
    diagnostics = {
        "answered": tally.answered,
        "unanswered": tally.broken,
        "streams": tally.streams,
        "starts": adapter.starts,
        "output_bytes": adapter.output_bytes,
        "stopped_reason": tally.stopped_reason,
        "elapsed_s": round(time.monotonic() - start, 3),
    }
    return JobOutput(answers, diagnostics, classify(tally, limits), errors)
