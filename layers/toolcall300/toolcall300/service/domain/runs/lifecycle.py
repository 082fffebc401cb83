"""A run's life: submission (idempotent, counted against the daily cap), claim, lease, end.

Each step is one optimistic update of the record (:func:`record.update`); a step that is no
longer the caller's to take returns None instead of writing. Scoring is the caller's: it
passes the scorer's compare and summary functions in, and the report store.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from toolcall300.canonical import pretty_bytes
from toolcall300.jobs.failures import failure
from toolcall300.service.domain.records import iso
from toolcall300.service.domain.runs.baselines import (
    current_baseline,
    decide_verdict,
    recent_baselines,
    short_ref,
)
from toolcall300.service.domain.runs.objects import report_key
from toolcall300.service.domain.runs.record import (
    FINAL,
    ReportStore,
    Run,
    RunStore,
    get_for_team,
    idempotent_run_id,
    load,
    new_run_id,
    update,
)
from toolcall300.service.domain.runs.submission import Submission
from toolcall300.service.errors import BadRequest, Conflict, NotFound, StoreConflict

#: Count one run against a licence's daily cap, or raise TooManyRequests (with Retry-After).
TakeQuota = Callable[[str], None]


# ----------------------------------------------------------------------------- lifecycle


def submit(
    store: RunStore,
    sub: Submission,
    *,
    team: str,
    licence_id: str,
    take_quota: TakeQuota,
    now: datetime,
    idempotency_key: str | None = None,
    callback_secret: str | None = None,
    keep: Callable[[], None] | None = None,
) -> tuple[Run, bool]:
    """Create a queued run (or return the one an ``Idempotency-Key`` already made).

    Returns (run, created). A retried submission with the same key is the same run and is not
    counted against the daily cap again; the same key with a different body is a 409.
    ``keep`` stores what the run needs (``Launcher.keep``): called only once the quota is
    taken and before the run is written, so a refused submission stores nothing and no worker
    sees a run whose files are not there yet.
    """
    if idempotency_key is not None and not (1 <= len(idempotency_key) <= 255):
        raise BadRequest(
            "Idempotency-Key must be 1 to 255 characters", code="invalid_idempotency_key"
        )
    run_id = idempotent_run_id(team, idempotency_key) if idempotency_key else new_run_id(now)
    existing = load(store, run_id)
    if existing is not None:
        return _same_request(existing, sub), False
    take_quota(licence_id)
    if keep is not None:
        keep()
    run = Run(
        run_id=run_id,
        team=team,
        licence_id=licence_id,
        adapter=sub.adapter,
        ref=sub.ref,
        commit=sub.commit,
        baseline=sub.baseline,
        track=sub.track,
        callback_url=sub.callback_url,
        callback_secret=callback_secret if sub.callback_url else None,
        request_hash=sub.fingerprint(),
        created_at=iso(now),
        version=1,
    )
    try:
        store.put(run.to_item(), expected_version=None)
    except StoreConflict:
        raced = load(store, run_id)  # a concurrent retry with the same key won
        if raced is None:
            raise
        return _same_request(raced, sub), False
    return run, True


def _same_request(run: Run, sub: Submission) -> Run:
    if run.request_hash != sub.fingerprint():
        raise Conflict(
            "this Idempotency-Key was used for a different run", code="idempotency_mismatch"
        )
    return run


def claim(store: RunStore, run_id: str, *, owner: str, now: datetime, lease_s: int) -> Run | None:
    """queued -> running under a lease held by ``owner``; None when someone else got it first."""

    def edit(run: Run) -> Run | None:
        if run.status != "queued":
            return None
        return replace(
            run,
            status="running",
            started_at=iso(now),
            attempts=run.attempts + 1,
            lease_owner=owner,
            lease_expires=int(now.timestamp()) + lease_s,
        )

    try:
        return update(store, run_id, edit)
    except Conflict:
        return None


def heartbeat(store: RunStore, run_id: str, *, owner: str, now: datetime, lease_s: int) -> bool:
    """Extend ``owner``'s lease; False once the lease was lost (stop working on the run)."""

    def edit(run: Run) -> Run | None:
        if run.status != "running" or run.lease_owner != owner:
            return None
        return replace(run, lease_expires=int(now.timestamp()) + lease_s)

    return update(store, run_id, edit) is not None


def mark_running(
    store: RunStore, run_id: str, *, now: datetime, job_id: str | None = None
) -> Run | None:
    """queued -> running from outside a worker (Batch's RUNNING event); idempotent."""

    def edit(run: Run) -> Run | None:
        if run.status != "queued":
            return None
        return replace(
            run,
            status="running",
            started_at=iso(now),
            attempts=run.attempts + 1,
            job_id=job_id or run.job_id,
        )

    return update(store, run_id, edit)


def set_job(
    store: RunStore,
    run_id: str,
    job_id: str,
    *,
    corpus_sha256: str | None = None,
    links_expire_at: int = 0,
) -> Run | None:
    """Record the Batch job a queued run was submitted as: its id, its inputs' corpus
    version and when its presigned links expire."""

    def edit(run: Run) -> Run | None:
        if run.status != "queued":
            return None
        return replace(
            run,
            job_id=job_id,
            corpus_sha256=corpus_sha256 or run.corpus_sha256,
            links_expire_at=links_expire_at or run.links_expire_at,
        )

    return update(store, run_id, edit)


def renew_job(
    store: RunStore,
    run_id: str,
    *,
    old_job_id: str,
    new_job_id: str,
    links_expire_at: int,
    corpus_sha256: str | None = None,
) -> Run | None:
    """Swap a queued run's job for the one submitted with fresh links, once: only while the run
    is still queued on ``old_job_id`` (a concurrent renewal, or a start, makes this None and the
    caller ends the job it submitted). Counts the renewal (``job_renewals``)."""

    def edit(run: Run) -> Run | None:
        if run.status != "queued" or run.job_id != old_job_id:
            return None
        return replace(
            run,
            job_id=new_job_id,
            links_expire_at=links_expire_at,
            corpus_sha256=corpus_sha256 or run.corpus_sha256,
            job_renewals=run.job_renewals + 1,
        )

    return update(store, run_id, edit)


def fail(
    store: RunStore,
    run_id: str,
    fail_with: dict[str, str],
    *,
    now: datetime,
    owner: str | None = None,
    sandbox: dict[str, Any] | None = None,
) -> Run | None:
    """-> failed. With ``owner``, only while that worker still holds the lease (else no-op)."""

    def edit(run: Run) -> Run | None:
        if run.status in FINAL or (owner is not None and run.lease_owner != owner):
            return None
        return replace(
            run,
            status="failed",
            failure=fail_with,
            finished_at=iso(now),
            lease_owner=None,
            sandbox=sandbox or run.sandbox,
        )

    return update(store, run_id, edit)


# ----------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Scoring:
    """What the trusted side produced for one finished job, before it is recorded."""

    report: dict[str, Any]  # the scorer's report
    corpus_sha256: str
    scorer_version: str
    diagnostics: dict[str, Any]  # the harness's (unknown ids, malformed lines, stop reason...)
    sandbox: dict[str, Any]


class NotComparable(Exception):
    """What a :data:`Compare` raises when the two reports cannot be compared (shape, corpus)."""


class BaselineRefused(NotComparable):
    """The baseline was scored on another corpus version: the run fails with this one line
    (``baseline_version``) instead of passing or silently setting a new baseline."""


#: (baseline report, this run's report) -> the comparison; raises :class:`NotComparable`.
Compare = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
Summarise = Callable[[dict[str, Any]], dict[str, Any]]


def finish_scored(
    store: RunStore,
    reports: ReportStore,
    run_id: str,
    scoring: Scoring,
    *,
    compare: Compare,
    summarise: Summarise,
    now: datetime,
    owner: str | None = None,
) -> Run | None:
    """running -> scored: compare with the team's baseline, store the report once, set the verdict.

    Returns None (and records nothing) when the run is no longer this caller's to finish, so a
    run is never counted twice.
    """
    run = load(store, run_id)
    if run is None or run.status != "running" or (owner is not None and run.lease_owner != owner):
        return None
    base = current_baseline(
        recent_baselines(store, run.team),
        run.baseline,
        corpus_sha256=scoring.corpus_sha256,
        exclude=run.run_id,
        track=run.track,
    )
    comparison = None
    if base is not None and base.report_key:
        base_doc = _load_json(reports.get(base.report_key))
        try:
            compared = compare(base_doc.get("score", base_doc), scoring.report)
            comparison = dict(compared, baseline_run_id=base.run_id)
        except BaselineRefused as exc:
            return fail(store, run_id, failure("baseline_version", str(exc)), now=now, owner=owner)
        except NotComparable:
            base = None  # scored on another corpus version: not comparable, so no baseline yet
    verdict, becomes = decide_verdict(
        regressed=None if comparison is None else bool(comparison.get("regressed")),
        on_baseline_ref=short_ref(run.ref) == run.baseline,
    )
    key = report_key(run)
    document = {
        "report_version": 1,
        "run_id": run.run_id,
        "team": run.team,
        "ref": run.ref,
        "commit": run.commit,
        "adapter": run.adapter,
        "corpus_sha256": scoring.corpus_sha256,
        "scorer_version": scoring.scorer_version,
        "baseline": run.baseline,
        "track": run.track,
        "baseline_run_id": base.run_id if base else None,
        "comparison": comparison,
        "verdict": verdict,
        "sandbox": scoring.sandbox,
        "harness": scoring.diagnostics,
        "score": scoring.report,
        "scored_at": iso(now),
    }
    # A retried call of this same attempt already stored it: immutable, keep the first.
    with contextlib.suppress(StoreConflict):
        reports.put_once(key, pretty_bytes(document))

    def edit(current: Run) -> Run | None:
        if current.status != "running" or (owner is not None and current.lease_owner != owner):
            return None
        return replace(
            current,
            status="scored",
            finished_at=iso(now),
            verdict=verdict,
            summary=summarise(scoring.report),
            comparison=comparison,
            report_key=key,
            corpus_sha256=scoring.corpus_sha256,
            baseline_set_at=iso(now) if becomes else None,
            sandbox=scoring.sandbox,
            lease_owner=None,
        )

    return update(store, run_id, edit)


def _load_json(raw: bytes) -> dict[str, Any]:
    doc = json.loads(raw)
    if not isinstance(doc, dict):
        raise ValueError("stored report is not an object")
    return doc


def stored_report(store: RunStore, reports: ReportStore, run_id: str, team: str) -> bytes:
    """The stored report of a scored run of ``team`` (404 before it is scored)."""
    run = get_for_team(store, run_id, team)
    if not run.report_key:
        raise NotFound("this run has no report yet", code="report_not_ready")
    return reports.get(run.report_key)


def callback_document(run: Run) -> dict[str, Any]:
    """The summary POSTed to ``callback_url`` when a run ends."""
    return {
        "event": "run.finished",
        "run_id": run.run_id,
        "team": run.team,
        "status": run.status,
        "verdict": run.verdict,
        "ref": run.ref,
        "commit": run.commit,
        "baseline": run.baseline,
        "track": run.track,
        "summary": run.summary,
        "failure": run.failure,
        "regressed": bool(run.comparison and run.comparison.get("regressed")),
        "reasons": (run.comparison or {}).get("reasons", []),
        "finished_at": run.finished_at,
        "links": {"self": f"/runs/{run.run_id}", "report": f"/runs/{run.run_id}/report"},
    }
