"""Why a run failed: the closed list of reasons and the one failure record every side writes.

The harness (inside the job), the local worker, the Batch event handler and the sweeper all
build a failed run's ``failure`` here, so its shape and its limits (the detail's length, the
stderr tail the stream protocol keeps) are decided once (docs/runs-contract.md).
Standard library only: the harness image runs it without the service's SDKs.
"""

from __future__ import annotations

from toolcall300.scoring.protocol import STDERR_TAIL_BYTES

#: The closed list of failure reasons (docs/runs-contract.md); anything else is a bug in the caller.
FAILURE_REASONS = (
    "image_pull_failed",
    "adapter_start_failed",
    "job_timeout",
    "out_of_memory",
    "output_malformed",
    "infra_error",
    "baseline_version",
)
#: The harness entrypoint's own exit codes (infra/harness/entrypoint.py): each says which side
#: failed, so Batch's bare "Essential container in task exited" can be told apart. 0 means the
#: answers file was written (an adapter failure is reported inside it); 1 is a harness crash.
EXIT_NO_COMMAND, EXIT_INPUTS_UNREADABLE, EXIT_ANSWERS_NOT_UPLOADED = 2, 3, 4
#: S3 answered that a link had expired (its X-Amz-Expires passed, or the session that signed
#: it ended): still ``infra_error`` (the links are ours), with its own detail.
EXIT_LINK_EXPIRED = 5
HARNESS_EXITS = {
    EXIT_LINK_EXPIRED: (
        "infra_error",
        "the job's link had expired when the job used it (it waited longer than its links "
        "lasted); submit it again",
    ),
    EXIT_NO_COMMAND: ("adapter_start_failed", "the image has no CMD (the adapter command)"),
    EXIT_INPUTS_UNREADABLE: (
        "infra_error",
        "the job could not read its inputs (its link expired or was refused)",
    ),
    EXIT_ANSWERS_NOT_UPLOADED: (
        "infra_error",
        "the job could not upload its answers (its link expired or was refused)",
    ),
}
#: Each reason in words, for people (the dashboard, the CI client's output).
FAILURE_TEXT = {
    "image_pull_failed": "The adapter image could not be pulled.",
    "adapter_start_failed": "The adapter did not start.",
    "job_timeout": "The run took longer than its time limit.",
    "out_of_memory": "The adapter ran out of memory.",
    "output_malformed": "The adapter's output could not be read as answers.",
    "infra_error": "The scoring infrastructure failed (not your adapter).",
    "baseline_version": "The baseline was scored on another corpus version; re-run to set one.",
}
#: The stderr tail kept in a record: what the stream protocol captures, no more.
STDERR_TAIL_CHARS = STDERR_TAIL_BYTES
DETAIL_CHARS = 1000


def failure(reason: str, detail: str, stderr_tail: str = "") -> dict[str, str]:
    """A failure record; the reason must come from the closed list.

    >>> failure("job_timeout", "too slow")
    {'reason': 'job_timeout', 'detail': 'too slow', 'stderr_tail': ''}
    """
    if reason not in FAILURE_REASONS:
        raise ValueError(f"unknown failure reason {reason!r}")
    return {
        "reason": reason,
        "detail": detail[:DETAIL_CHARS],
        "stderr_tail": stderr_tail[-STDERR_TAIL_CHARS:],
    }


#: What S3 says about an expired presigned link: past its ``X-Amz-Expires`` (403 AccessDenied,
#: "Request has expired"), or signed by a session that has ended (400 ExpiredToken).
_EXPIRED_ANSWERS = (b"Request has expired", b"<Code>ExpiredToken</Code>")


def link_expired(status: int, body: bytes) -> bool:
    """Whether S3's error answer to a presigned request says the link expired.

    >>> link_expired(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message>")
    True
    >>> link_expired(403, b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message>")
    False
    """
    return status in (400, 403) and any(sign in body for sign in _EXPIRED_ANSWERS)
