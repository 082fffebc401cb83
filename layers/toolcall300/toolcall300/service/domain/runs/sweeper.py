"""The sweeper's rules: reconcile runs nobody is finishing (expired leases, vanished jobs).

Pure decisions over the run store; which jobs are alive is the caller's ``job_alive``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from toolcall300.jobs.failures import failure
from toolcall300.service.domain.records import iso
from toolcall300.service.domain.runs.lifecycle import fail
from toolcall300.service.domain.runs.record import Run, RunStore, update
from toolcall300.service.errors import Conflict, UpstreamUnavailable

# ----------------------------------------------------------------------------- the sweeper

#: run -> True (its job is alive), False (gone: failed or vanished) or None (no job to ask about).
JobAlive = Callable[[Run], bool | None]


def sweep(
    store: RunStore,
    *,
    now: datetime,
    max_attempts: int = 2,
    queued_timeout_s: int = 3600,
    job_alive: JobAlive = lambda _run: None,
    link_need_s: int = 0,
    renew: Callable[[Run], Run | None] | None = None,
    max_renewals: int = 0,
) -> list[Run]:
    """Reconcile runs nobody is finishing: expired leases, vanished jobs, runs queued too long.

    An expired lease goes back to ``queued`` while attempts remain, else ``failed``
    (``infra_error``); a run whose Batch job is gone fails; nothing final is touched. Each
    run is reconciled on its own: a busy record or an unreachable Batch skips that run only.
    A queued run whose job's links expire within ``link_need_s`` could start but not deliver:
    ``renew`` replaces its job with one holding fresh links (None when the job has started or
    another sweep renewed it: the run is left as it is), at most ``max_renewals`` times; without
    ``renew``, or past that, the run fails.
    """
    stamp = int(now.timestamp())
    cutoff = iso(now - timedelta(seconds=queued_timeout_s))

    def reconcile(run: Run) -> Run | None:
        alive = job_alive(run)
        if run.status == "queued":
            if run.links_expire_at and stamp + link_need_s > run.links_expire_at:
                if renew is not None and run.job_renewals < max_renewals:
                    return renew(run)
                # A job starting now could not finish before its links die: say so now,
                # rather than let it start, fail to upload and be reported hours later.
                late = failure(
                    "infra_error",
                    "the job did not start in time for its links to last the run "
                    "(the queue was full too long); submit it again",
                )
                return fail(store, run.run_id, late, now=now)
            if run.created_at < cutoff and alive is not True:
                waited = failure("infra_error", "the run waited too long for a worker")
                return fail(store, run.run_id, waited, now=now)
            return None
        if alive is False:
            gone = failure("infra_error", "the run's job is gone (reconciled by the sweeper)")
            return fail(store, run.run_id, gone, now=now)
        if alive is None and run.lease_owner and run.lease_expires < stamp:
            return _expire_lease(store, run.run_id, now=now, max_attempts=max_attempts)
        return None

    changed: list[Run] = []
    for status in ("running", "queued"):
        for run in (Run.from_item(i) for i in store.by_status(status)):
            try:
                result = reconcile(run)
            except (Conflict, UpstreamUnavailable):  # this run only; the next sweep retries it
                continue
            if result is not None:
                changed.append(result)
    return changed


def _expire_lease(store: RunStore, run_id: str, *, now: datetime, max_attempts: int) -> Run | None:
    stamp = int(now.timestamp())

    def edit(run: Run) -> Run | None:
        if run.status != "running" or not run.lease_owner or run.lease_expires >= stamp:
            return None
        if run.attempts < max_attempts:
            return replace(run, status="queued", lease_owner=None, lease_expires=0, started_at=None)
        lost = failure("infra_error", f"the worker was lost {run.attempts} times; giving up")
        return replace(run, status="failed", failure=lost, finished_at=iso(now), lease_owner=None)

    return update(store, run_id, edit)
