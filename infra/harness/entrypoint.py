#!/usr/bin/env python3
"""The Batch job's entrypoint: fetch the label-free inputs, run the adapter, upload its answers.

Runs inside the team's adapter image (built FROM the harness image). Its arguments are the
image's CMD, the adapter's command. It reads ``TC300_INPUTS_URL`` (presigned GET: only
``id``, ``text``, ``tools`` per case, or a deltas case's streams and partitions, by the run's
``TC300_TRACK``), runs the adapter through the trusted harness (``toolcall300.jobs.harness``,
over the track's protocol) sandboxed as uid 65534 with rlimits and a clean environment,
and PUTs ``{"answers", "diagnostics", "failure"}`` to ``TC300_ANSWERS_URL``. Scoring happens
afterwards in the service, never here: labels never enter the job. Exit 0 whenever the answers
file was written (an adapter failure is reported inside it); otherwise one of the codes in
``toolcall300.jobs.failures.HARNESS_EXITS`` (no CMD, inputs unreadable, answers not uploaded,
a link S3 says expired),
which Batch reports as FAILED and the service maps to the reason each code names.
Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from toolcall300.jobs import harness, sandbox
from toolcall300.jobs.failures import (
    EXIT_ANSWERS_NOT_UPLOADED,
    EXIT_INPUTS_UNREADABLE,
    EXIT_LINK_EXPIRED,
    EXIT_NO_COMMAND,
    link_expired,
)

SCRUB_PREFIXES = ("TC300_", "AWS_", "ECS_CONTAINER_METADATA")


def limits_from(env: Mapping[str, str]) -> harness.Limits:
    base = harness.Limits()
    return harness.Limits(
        per_case_timeout=float(env.get("TC300_PER_CASE_TIMEOUT", base.per_case_timeout)),
        total_timeout=float(env.get("TC300_TOTAL_TIMEOUT", base.total_timeout)),
        max_output_bytes=int(env.get("TC300_MAX_OUTPUT_BYTES", base.max_output_bytes)),
    )


def adapter_env(env: Mapping[str, str], scratch: str) -> dict[str, str]:
    """The image's own environment (its PATH, its settings) minus links and credentials."""
    kept = {k: v for k, v in env.items() if not k.startswith(SCRUB_PREFIXES)}
    kept.update({"HOME": scratch, "TMPDIR": scratch})
    return kept


def fetch(url: str, timeout: float = 60) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # presigned S3 link
        return bytes(response.read())


def upload(url: str, body: bytes, timeout: float = 60) -> None:
    request = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if response.status >= 300:
            raise OSError(f"answers upload answered {response.status}")


def failed_link(exc: BaseException, otherwise: int) -> int:
    """``EXIT_LINK_EXPIRED`` when S3 said the link expired (read at most 4 KiB of its answer),
    else ``otherwise``."""
    if isinstance(exc, urllib.error.HTTPError):
        try:
            body = exc.read(4096)
        except OSError:
            body = b""
        if link_expired(exc.code, body):
            return EXIT_LINK_EXPIRED
    return otherwise


def parse_inputs(raw: bytes, track: str = "single") -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    fields = harness.input_fields(track)
    return [{k: row.get(k) for k in fields} for row in rows]


def main(argv: Sequence[str], env: Mapping[str, str]) -> int:
    command = list(argv)
    if not command:
        sys.stderr.write("toolcall300-harness: the image has no CMD (the adapter command)\n")
        return EXIT_NO_COMMAND
    track = env.get("TC300_TRACK", "single")  # a job submitted before tracks: single-call
    try:
        inputs = parse_inputs(fetch(env["TC300_INPUTS_URL"]), track)
    except (KeyError, OSError, ValueError) as exc:
        sys.stderr.write(f"toolcall300-harness: cannot read the inputs: {type(exc).__name__}\n")
        return failed_link(exc, EXIT_INPUTS_UNREADABLE)
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(command, scratch)
        kwargs = dict(prepared.popen_kwargs, env=adapter_env(env, str(scratch)))
        output = harness.run_track_job(
            track, prepared.argv, inputs, limits=limits_from(env), popen_kwargs=kwargs
        )
    document = output.document()
    document["diagnostics"] = dict(document["diagnostics"], sandbox=prepared.isolation.record())
    try:
        upload(env["TC300_ANSWERS_URL"], json.dumps(document, sort_keys=True).encode("utf-8"))
    except (KeyError, OSError) as exc:
        sys.stderr.write(f"toolcall300-harness: cannot upload the answers: {type(exc).__name__}\n")
        return failed_link(exc, EXIT_ANSWERS_NOT_UPLOADED)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ))
