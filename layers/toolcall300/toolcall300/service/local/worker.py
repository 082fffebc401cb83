"""The local stack's scoring worker pool: the local stand-in for AWS Batch.

Each worker thread claims a queued run under a lease (a conditional write), keeps the lease
alive with heartbeats, runs the adapter command as a sandboxed subprocess fed by the trusted
harness, scores the answers with the CLI's scorer, stores the report once, compares it with
the team's baseline and fires the callback. A sweeper in the same pool re-queues runs whose
worker died (lease expired) or fails them after ``max_attempts``, so no run is left stuck and
none is finished twice (``runs.finish_scored`` checks the lease owner). The pool registers
itself with the local stack's background hook. Not a distributed scheduler: one process,
polling the runs table.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolcall300.jobs import harness, sandbox
from toolcall300.service.domain import runs
from toolcall300.service.hosted.flow import Corpus, score_output
from toolcall300.service.observability import logger

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class WorkerDeps:
    """Everything a worker needs, passed in (the local stack builds the production ones)."""

    store: runs.RunStore
    reports: runs.ReportStore
    corpus: Callable[[], Corpus]
    notify: Callable[[runs.Run], None] = lambda _run: None
    job_limits: harness.Limits = field(default_factory=harness.Limits)
    sandbox_limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    lease_s: int = 30
    max_attempts: int = 2
    clock: Clock = utcnow


class _Heartbeat:
    """Extends a run's lease every third of its length until stopped; notes a lost lease."""

    def __init__(self, deps: WorkerDeps, run_id: str, owner: str) -> None:
        self.lost = False
        self._stop = threading.Event()
        self._args = (deps, run_id, owner)
        self._thread = threading.Thread(target=self._beat, name=f"lease-{run_id}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        deps, run_id, owner = self._args
        while not self._stop.wait(max(0.2, deps.lease_s / 3)):
            try:
                if not runs.heartbeat(
                    deps.store, run_id, owner=owner, now=deps.clock(), lease_s=deps.lease_s
                ):
                    self.lost = True
                    return
            except Exception:  # a store hiccup: try again next beat; the lease has slack
                logger.warning("lease heartbeat failed", extra={"run_id": run_id})

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def execute(deps: WorkerDeps, run: runs.Run) -> tuple[harness.JobOutput, dict[str, Any], Corpus]:
    """Run the adapter of a claimed run in the sandbox; returns its output, isolation, corpus."""
    corpus = deps.corpus()
    inputs = harness.job_inputs(corpus.cases)  # labels never reach the adapter
    command = list(run.adapter.get("command") or [])
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(command, scratch, limits=deps.sandbox_limits)
        output = harness.run_job(
            prepared.argv, inputs, limits=deps.job_limits, popen_kwargs=prepared.popen_kwargs
        )
    return output, prepared.isolation.record(), corpus


def process(deps: WorkerDeps, run_id: str, owner: str) -> runs.Run | None:
    """Claim, run, score and record one run; None when it was not ours to process."""
    run = runs.claim(deps.store, run_id, owner=owner, now=deps.clock(), lease_s=deps.lease_s)
    if run is None:
        return None
    beat = _Heartbeat(deps, run_id, owner)
    result: runs.Run | None
    try:
        if run.adapter.get("kind") != "command":
            raise ValueError("the local worker runs only adapter commands")
        output, iso, corpus = execute(deps, run)
        if output.failure is not None:
            result = runs.fail(
                deps.store, run_id, output.failure, now=deps.clock(), owner=owner, sandbox=iso
            )
        else:
            result = score_output(
                deps.store,
                deps.reports,
                run,
                output,
                corpus=corpus,
                sandbox=iso,
                now=deps.clock(),
                owner=owner,
            )
    except Exception as exc:  # anything of ours that broke: the run fails, it is never stuck
        logger.exception("run failed in the worker", extra={"run_id": run_id})
        infra = runs.failure("infra_error", f"the worker failed: {type(exc).__name__}")
        result = runs.fail(deps.store, run_id, infra, now=deps.clock(), owner=owner)
    finally:
        beat.stop()
    if result is not None:
        logger.info(
            "run finished",
            extra={"run_id": run_id, "status": result.status, "verdict": result.verdict},
        )
        _notify(deps, result)
    return result


def _notify(deps: WorkerDeps, run: runs.Run) -> None:
    try:
        deps.notify(run)
    except Exception:
        logger.exception("callback failed", extra={"run_id": run.run_id})


class WorkerPool:
    """``size`` worker threads polling for queued runs, plus the lease sweeper."""

    def __init__(
        self, deps: WorkerDeps, *, size: int = 2, poll_s: float = 0.2, sweep_s: float = 2.0
    ) -> None:
        self.deps = deps
        self.size = size
        self.poll_s = poll_s
        self.sweep_s = sweep_s
        self.name = "w" + secrets.token_hex(4)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> WorkerPool:
        for i in range(self.size):
            t = threading.Thread(
                target=self._work, args=(f"{self.name}-{i}",), name=f"tc300-worker-{i}", daemon=True
            )
            t.start()
            self._threads.append(t)
        sweeper = threading.Thread(target=self._sweep, name="tc300-sweeper", daemon=True)
        sweeper.start()
        self._threads.append(sweeper)
        return self

    def wake(self) -> None:
        """Look for queued runs now rather than at the next poll."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=30)

    def _next_queued(self) -> list[str]:
        items = self.deps.store.by_status("queued")
        return [
            i["run_id"] for i in sorted(items, key=lambda i: (i.get("created_at", ""), i["run_id"]))
        ]

    def _work(self, owner: str) -> None:
        failures = 0
        while not self._stop.is_set():
            did = False
            try:
                for run_id in self._next_queued():
                    if self._stop.is_set():
                        return
                    if process(self.deps, run_id, owner) is not None:
                        did = True
                        break
                failures = 0
            except Exception as exc:  # the store is down: back off, say so once per streak
                failures += 1
                if failures == 1:
                    logger.warning(
                        "worker cannot read the runs table", extra={"error": type(exc).__name__}
                    )
            if not did:
                self._wake.wait(self._pause(failures))
                self._wake.clear()

    def _pause(self, failures: int) -> float:
        """The poll interval, doubled per consecutive store failure up to 5 s."""
        return min(5.0, self.poll_s * float(2 ** min(failures, 10)))

    def _sweep(self) -> None:
        failures = 0
        while not self._stop.wait(max(self.sweep_s, self._pause(failures))):
            try:
                changed = runs.sweep(
                    self.deps.store, now=self.deps.clock(), max_attempts=self.deps.max_attempts
                )
                failures = 0
            except Exception as exc:
                failures += 1
                if failures == 1:
                    logger.warning(
                        "sweeper cannot read the runs table", extra={"error": type(exc).__name__}
                    )
                continue
            for run in changed:
                logger.info("run reconciled", extra={"run_id": run.run_id, "status": run.status})
                if run.status == "queued":
                    self._wake.set()
                else:
                    _notify(self.deps, run)


# ----------------------------------------------------------------------------- local stack


def cached_corpus(read: Callable[[str], bytes]) -> Callable[[], Corpus]:
    """Load the corpus on first use and keep it (the local stack's corpus never changes)."""
    from toolcall300.service.hosted.flow import load_corpus

    lock = threading.Lock()
    held: list[Corpus] = []

    def get() -> Corpus:
        with lock:
            if not held:
                held.append(load_corpus(read))
            return held[0]

    return get


def start_local(context: Any) -> Callable[[], None]:
    """The local stack's background hook: start a pool on the stack's tables and buckets."""
    from toolcall300.service.api import wiring
    from toolcall300.service.hosted import flow
    from toolcall300.service.sdk.s3 import CorpusObjects
    from toolcall300.service.settings import LocalWorkerSettings, get_settings

    conf, local = wiring.runs_settings(), get_settings(LocalWorkerSettings)
    deps = WorkerDeps(
        store=wiring.run_store(),
        reports=wiring.report_store(),
        corpus=cached_corpus(CorpusObjects(conf.corpus_bucket).read),
        notify=flow.notify,
        lease_s=local.lease_s,
        sandbox_limits=sandbox.Limits(memory_bytes=local.adapter_memory_mb * 2**20),
        max_attempts=conf.max_attempts,
    )
    pool = WorkerPool(deps, size=local.workers).start()
    context.extra["run_workers"] = pool

    def stop() -> None:
        # the pool may have been replaced (tests pause and restart it): stop the current one
        context.extra["run_workers"].stop()

    return stop


def _register() -> None:
    try:
        from toolcall300.service.local.stack import register_background
    except ImportError:  # pragma: no cover - the local extras are not installed
        return
    register_background(start_local)


_register()
