"""Every object key a run touches, in one place both deployment modes read.

The label-free inputs are named by ``jobs.harness`` (the corpus upload and the harness image
share those names, and the core never imports the service): re-exported here so a reader of
this module sees the whole layout. A run's answers (written from inside a Batch job), its
report (written once by trusted code) and a local run's adapter files are named here. Not a store: the buckets are the
adapters' (``service.sdk``).
"""

from __future__ import annotations

from toolcall300.jobs.harness import INPUTS_POINTER, inputs_key
from toolcall300.service.domain.runs.record import Run

__all__ = [
    "INPUTS_POINTER",
    "adapter_files_key",
    "answers_key",
    "inputs_key",
    "packages_key",
    "pinned_corpus_key",
    "report_key",
]


def pinned_corpus_key(corpus_sha256: str) -> str:
    """Where the corpus upload keeps a labelled corpus by its sha256, never overwritten: a run
    is scored against the version its inputs came from (``Run.corpus_sha256``), however many
    uploads happened while it was queued. In the corpus bucket, beside the current one."""
    return f"scoring/{corpus_sha256}.jsonl"


def answers_key(run: Run, *, attempt: int) -> str:
    """Where attempt ``attempt`` of ``run`` writes its answers (one object per attempt).

    A run is submitted before Batch starts it (``attempt = run.attempts + 1``) and read when the
    job ended (``attempt = run.attempts``, counted when it started), so both name the same key.
    A job that replaced one whose links would expire (``run.job_renewals``) writes its own key,
    so a replaced job that started after all cannot write the answers its successor's run reads.
    """
    renewed = f"-links-{run.job_renewals}" if run.job_renewals else ""
    return f"answers/{run.team}/{run.run_id}/attempt-{attempt}{renewed}.json"


def report_key(run: Run) -> str:
    """Immutable per attempt, so a retried attempt never collides with a dead one's object."""
    return f"reports/{run.team}/{run.run_id}/attempt-{run.attempts}.json"


def adapter_files_key(team: str, sha256: str) -> str:
    """Where a team's adapter files are kept (content-addressed: the same folder, one object)."""
    return f"adapters/{team}/{sha256}.tar"


def requirements_key(team: str, digest: str) -> str:
    """Where a team's installed requirements are kept, by the canonical digest of the
    requirements file (``jobs.adapter_requirements.digest``): one install per distinct file,
    whichever of the team's folders carry it, written once and never changed."""
    return f"adapters/{team}/requirements-{digest}.packages.tar.gz"


def packages_key(files_key: str) -> str:
    """Where the requirements a folder carries were kept once installed by runs recorded
    before :func:`requirements_key` (the folder's key: one install per folder)."""
    return files_key.removesuffix(".tar") + ".packages.tar.gz"
