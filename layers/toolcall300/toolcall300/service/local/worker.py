"""The local stack's scoring worker pool: the local stand-in for AWS Batch.

Each worker thread claims a queued run under a lease (a conditional write), keeps the lease
alive with heartbeats, runs the adapter command in the sandbox (``jobs.sandbox.session``)
fed by the trusted harness, scores the answers with the CLI's scorer, stores the report once,
compares it with the team's baseline and fires the callback. A sweeper in the same pool
re-queues runs whose worker died (lease expired) or fails them after ``max_attempts``, so no
run is left stuck and none is finished twice (``runs.finish_scored`` checks the lease owner).

Fairness and stops (docs/local-sandbox.md): a team has at most ``team_limit`` runs running
at once (another team's queued run gets the next free worker), every run has the harness's
whole-run limit, ``stop()`` kills every adapter at once through its lifeline and fails its
run with a reason (scratch directories removed), and :func:`recover` fails the runs a
previous process left ``running`` when it died. Not a distributed scheduler: one process.

Woken, not polled: an idle worker waits until :meth:`WorkerPool.wake` (a submission through
``POST /runs`` calls it through ``LocalAdapters.wake``; so do a finished run and a re-queue), so an
idle stack reads nothing. Callbacks leave the workers: a bounded queue with threads of its own
(:class:`CallbackQueue`) delivers them, fairly between teams, so an endpoint that never answers
(4 attempts, 5 s each, with backoff: about 27 s) delays its own team's later callbacks, never the
next run nor another team's callback (docs/hosted-scoring.md, "Callbacks").
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolcall300.jobs import adapter_image, harness, sandbox
from toolcall300.scoring.tracks import DEFAULT_TRACK
from toolcall300.service.domain import runs
from toolcall300.service.domain.runs import Corpus, load_corpus, score_output
from toolcall300.service.domain.runs.scoring import job_inputs, load_track_corpus
from toolcall300.service.observability import logger

Clock = Callable[[], datetime]
#: Why a run ends when the stack stops under it (Ctrl-C now, or a crash seen at restart).
STOPPED_DETAIL = "the local stack stopped while this run was in flight; submit it again"
#: Why a run ends when the sandbox's probe did not finish (``sandbox.IsolationUnknown``): the
#: adapter is not started with weaker isolation than the machine may have (docs/local-sandbox.md).
ISOLATION_UNKNOWN_DETAIL = (
    "the adapter was not started rather than run less isolated; submit it again"
)


def utcnow() -> datetime:
    return datetime.now(UTC)


class InFlight:
    """The sandboxed adapters running now, so a stop can kill them all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, sandbox.Prepared] = {}
        self.stopping = threading.Event()

    def add(self, run_id: str, prepared: sandbox.Prepared) -> None:
        with self._lock:
            self._running[run_id] = prepared
        if self.stopping.is_set():
            prepared.kill()

    def remove(self, run_id: str) -> None:
        with self._lock:
            self._running.pop(run_id, None)

    def kill_all(self) -> None:
        self.stopping.set()
        with self._lock:
            running = list(self._running.values())
        for prepared in running:
            prepared.kill()


@dataclass
class WorkerDeps:
    """Everything a worker needs, passed in (the local stack builds the production ones)."""

    store: runs.RunStore
    reports: runs.ReportStore
    corpus: Callable[[], Corpus]
    #: Another track's labelled corpus by track name (docs/tracks.md); None: only the
    #: single-call track is served, and a run of another track fails with ``infra_error``.
    track_corpus: Callable[[str], Corpus] | None = None
    notify: Callable[[runs.Run], None] = lambda _run: None
    job_limits: harness.Limits = field(default_factory=harness.Limits)
    sandbox_limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    lease_s: int = 30
    max_attempts: int = 2
    clock: Clock = utcnow
    #: At most this many runs of one team run at once (the pool's other workers stay free).
    team_limit: int = 1
    #: Reads the adapter's own files by object key (``runs.adapter_files_key``): the tar the
    #: team handed over, unpacked afresh for each run (docs/local-sandbox.md).
    adapter_files: Callable[[str], bytes] = lambda _key: b""
    #: The layers this stack holds, which an adapter image may leave out
    #: (``sandbox.held_layers`` of ``TOOLCALL300_HARNESS_IMAGE``).
    held_layers: Callable[[], adapter_image.Blobs | None] = lambda: None
    in_flight: InFlight = field(default_factory=InFlight)


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


@dataclass(frozen=True)
class Executed:
    """What one sandboxed run of an adapter gave back."""

    output: harness.JobOutput
    sandbox: dict[str, Any]
    corpus: Corpus
    stopped: bool  # the pool stopped under it: the output means nothing


def _adapter_parts(
    deps: WorkerDeps, run: runs.Run
) -> tuple[list[str], bytes | None, bytes | None, bytes | None]:
    """What the run's adapter is made of: its command, its folder's archive, its image's
    archive (its CMD is then the command) and its installed requirements (packed)."""
    command = list(run.adapter.get("command") or [])
    files = run.adapter.get("files")
    key = runs.adapter_files_key(run.team, files["sha256"]) if files else None
    archive = deps.adapter_files(key) if key else None
    packages = None
    if key is not None and files and files.get("requirements"):
        digest = files.get("requirements_sha256")  # none in runs recorded before it
        at = runs.requirements_key(run.team, digest) if digest else runs.packages_key(key)
        packages = deps.adapter_files(at)
    if run.adapter.get("kind") != "image_archive":
        return command, archive, None, packages
    return command, None, archive or b"", None


@contextmanager
def _image_for(deps: WorkerDeps, archive: bytes | None) -> Iterator[sandbox.ImageRoot | None]:
    """The run's adapter image unpacked (None without one), kept from removal while the run
    uses it (``sandbox.image_in_use``)."""
    if archive is None:
        yield None
        return
    with contextlib.ExitStack() as using:
        try:  # its CMD under the sandbox, as on AWS
            image = using.enter_context(sandbox.image_in_use(archive, deps.held_layers()))
        except adapter_image.ImageRefused as exc:  # checked at submission too
            raise sandbox.CommandRefused(f"the adapter image: {exc}") from exc
        yield image


def execute(deps: WorkerDeps, run: runs.Run) -> Executed:
    """Run the adapter of a claimed run in the sandbox (raises ``sandbox.CommandRefused``)."""
    if run.track == DEFAULT_TRACK:
        corpus = deps.corpus()
    elif deps.track_corpus is None:
        raise ValueError(f"this stack serves no corpus of track {run.track!r}")
    else:
        corpus = deps.track_corpus(run.track)
    inputs = job_inputs(corpus)  # labels never reach the adapter: the track's own inputs
    command, archive, image_archive, packages = _adapter_parts(deps, run)
    with (
        _image_for(deps, image_archive) as image,
        sandbox.adapter_copy(archive) as adapter_dir,
        sandbox.packages_copy(packages) as packages_dir,
        sandbox.session(
            image.command if image else command,
            limits=deps.sandbox_limits,
            adapter_dir=adapter_dir,
            image=image,
            packages_dir=packages_dir,
        ) as prepared,
    ):
        deps.in_flight.add(run.run_id, prepared)
        try:
            output = harness.run_track_job(
                run.track,
                prepared.argv,
                inputs,
                limits=deps.job_limits,
                popen_kwargs=prepared.popen_kwargs,
            )
        finally:
            deps.in_flight.remove(run.run_id)
        stopped = prepared.killed
    return Executed(output, prepared.isolation.record(), corpus, stopped)


def process(deps: WorkerDeps, run_id: str, owner: str) -> runs.Run | None:
    """Claim, run, score and record one run; None when it was not ours to process."""
    run = runs.claim(deps.store, run_id, owner=owner, now=deps.clock(), lease_s=deps.lease_s)
    if run is None:
        return None
    return process_claimed(deps, run, owner)


def process_claimed(deps: WorkerDeps, run: runs.Run, owner: str) -> runs.Run | None:
    """Run, score and record a run this worker has claimed."""
    run_id = run.run_id
    beat = _Heartbeat(deps, run_id, owner)
    result: runs.Run | None
    try:
        if run.adapter.get("kind") not in ("command", "image_archive"):
            raise ValueError("the local worker runs only adapter commands and image archives")
        done = execute(deps, run)
        if done.stopped:
            stop = runs.failure("infra_error", STOPPED_DETAIL)
            result = runs.fail(deps.store, run_id, stop, now=deps.clock(), owner=owner)
        elif done.output.failure is not None:
            result = runs.fail(
                deps.store,
                run_id,
                done.output.failure,
                now=deps.clock(),
                owner=owner,
                sandbox=done.sandbox,
            )
        else:
            result = score_output(
                deps.store,
                deps.reports,
                run,
                done.output,
                corpus=done.corpus,
                sandbox=done.sandbox,
                now=deps.clock(),
                owner=owner,
            )
    except (
        sandbox.CommandRefused
    ) as exc:  # checked at submission too; the sandbox has the last word
        refused = runs.failure("adapter_start_failed", str(exc))
        result = runs.fail(deps.store, run_id, refused, now=deps.clock(), owner=owner)
    except sandbox.IsolationUnknown as exc:  # never run with less than the machine may have
        logger.warning("sandbox isolation unknown", extra={"run_id": run_id, "why": str(exc)})
        unknown = runs.failure("infra_error", f"{exc}; {ISOLATION_UNKNOWN_DETAIL}")
        result = runs.fail(deps.store, run_id, unknown, now=deps.clock(), owner=owner)
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


def recover(deps: WorkerDeps) -> list[runs.Run]:
    """Fail (with a reason and a callback) every run a previous stack left ``running``.

    Call before a pool starts on restored state: no worker of this process holds those leases,
    and the process that did is gone, so the adapter it ran is gone too (its lifeline). The
    callbacks are the caller's to send (a pool's :class:`CallbackQueue`), so a slow endpoint
    delays nothing.
    """
    ended = []
    for item in deps.store.by_status("running"):
        lost = runs.failure("infra_error", STOPPED_DETAIL)
        result = runs.fail(deps.store, item["run_id"], lost, now=deps.clock())
        if result is not None:
            ended.append(result)
            logger.info("run ended at restart", extra={"run_id": result.run_id})
    return ended


def _notify(deps: WorkerDeps, run: runs.Run) -> None:
    try:
        deps.notify(run)
    except Exception:
        logger.exception("callback failed", extra={"run_id": run.run_id})


class CallbackQueue:
    """Run callbacks, delivered by threads of their own and fairly between teams.

    Used as a worker's ``notify``: queuing never blocks, so a slow or silent endpoint holds a
    delivery thread, never a worker. Each team's callbacks are delivered in order, one at a
    time, by any of ``threads`` delivery threads, and the next team is served in the order
    teams became ready: so one team's silent endpoint (4 attempts, 5 s each, with backoff:
    about 27 s a callback) holds at most one thread, and another team's callback waits for it
    only when ``threads`` teams are slow at once (docs/hosted-scoring.md,
    "Callbacks"). At most ``per_team`` callbacks of a team and ``size`` in all wait; past
    either, a callback is dropped with a warning (the run's outcome stays readable at
    ``GET /runs/{id}``). ``stop`` delivers what is queued for a bounded time.
    """

    def __init__(
        self,
        deliver: Callable[[runs.Run], None],
        *,
        size: int = 256,
        per_team: int = 32,
        threads: int = 4,
    ) -> None:
        self._deliver = deliver
        self.size, self.per_team = size, per_team
        self._cond = threading.Condition()
        self._waiting: dict[str, deque[runs.Run]] = {}  # team -> its callbacks, in order
        self._ready: deque[str] = deque()  # teams with a callback waiting and none in flight
        self._busy: set[str] = set()  # teams with a delivery in flight
        self._count = 0
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._run, name=f"tc300-callbacks-{i}", daemon=True)
            for i in range(threads)
        ]

    def start(self) -> CallbackQueue:
        for t in self._threads:
            t.start()
        return self

    def __call__(self, run: runs.Run) -> None:
        with self._cond:
            waiting = self._waiting.setdefault(run.team, deque())
            if self._count >= self.size or len(waiting) >= self.per_team:
                logger.warning(
                    "callback dropped: delivery queue full", extra={"run_id": run.run_id}
                )
                return
            waiting.append(run)
            self._count += 1
            if run.team not in self._busy and len(waiting) == 1:
                self._ready.append(run.team)
                self._cond.notify()

    def _next(self) -> tuple[str, runs.Run] | None:
        with self._cond:
            while not self._ready and not self._stopping:
                self._cond.wait()
            if not self._ready:
                return None
            team = self._ready.popleft()
            run = self._waiting[team].popleft()
            self._count -= 1
            self._busy.add(team)
            return team, run

    def _done(self, team: str) -> None:
        with self._cond:
            self._busy.discard(team)
            if self._waiting.get(team):
                self._ready.append(team)
                self._cond.notify()
            else:
                self._waiting.pop(team, None)

    def _run(self) -> None:
        while (taken := self._next()) is not None:
            team, run = taken
            try:
                self._deliver(run)
            except Exception:
                logger.exception("callback failed", extra={"run_id": run.run_id})
            finally:
                self._done(team)

    def stop(self, timeout: float = 5.0) -> None:
        """Deliver what is queued for up to ``timeout`` seconds, then leave the rest."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout=max(0.0, deadline - time.monotonic()))


class WorkerPool:
    """``size`` worker threads taking queued runs when woken, plus the lease sweeper.

    ``poll_s`` (None: never) is how long an idle worker waits for a wake before it looks at
    the runs table anyway. The pool's callbacks go through its own :class:`CallbackQueue`
    around ``deps.notify`` (``deps`` stays as given, so a pool can be rebuilt from it).
    """

    def __init__(
        self,
        deps: WorkerDeps,
        *,
        size: int = 2,
        poll_s: float | None = None,
        sweep_s: float = 2.0,
        retry_s: float = 0.2,
    ) -> None:
        self.deps = deps
        self.size = size
        self.poll_s = poll_s
        self.sweep_s = sweep_s
        self.retry_s = retry_s
        self.callbacks = CallbackQueue(deps.notify)
        self._deps = replace(deps, notify=self.callbacks)
        self.name = "w" + secrets.token_hex(4)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._claiming = threading.Lock()  # picking and claiming, so team limits hold
        self._threads: list[threading.Thread] = []
        self._waiting = 0  # workers that found nothing and wait for a wake
        self._counting = threading.Lock()

    @property
    def waiting(self) -> int:
        """How many workers have found nothing to take and wait to be woken."""
        with self._counting:
            return self._waiting

    def start(self) -> WorkerPool:
        self.deps.in_flight.stopping.clear()
        self.callbacks.start()
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

    def stop(self, timeout: float = 10.0) -> None:
        """Stop at once: every running adapter is killed and its run failed with a reason;
        the callbacks queued by then get what is left of ``timeout``."""
        self._stop.set()
        self._wake.set()
        self.deps.in_flight.kill_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self.callbacks.stop(timeout=max(0.5, deadline - time.monotonic()))

    def _claim_next(self, owner: str) -> runs.Run | None:
        """The oldest queued run whose team is under its limit, claimed; None if none."""
        with self._claiming:
            running: dict[str, int] = {}
            for item in self.deps.store.by_status("running"):
                running[item.get("team", "")] = running.get(item.get("team", ""), 0) + 1
            queued = sorted(
                self.deps.store.by_status("queued"),
                key=lambda i: (i.get("created_at", ""), i["run_id"]),
            )
            for item in queued:
                if self._stop.is_set():
                    return None
                if running.get(item.get("team", ""), 0) >= self.deps.team_limit:
                    continue
                run = runs.claim(
                    self._deps.store,
                    item["run_id"],
                    owner=owner,
                    now=self._deps.clock(),
                    lease_s=self._deps.lease_s,
                )
                if run is not None:
                    return run
        return None

    def _work(self, owner: str) -> None:
        failures = 0
        while not self._stop.is_set():
            # Cleared before the table is read: a wake after this point (its run already
            # written) ends the wait below at once, so no submission is missed.
            self._wake.clear()
            try:
                run = self._claim_next(owner)
                failures = 0
            except Exception as exc:  # the store is down: back off, say so once per streak
                failures += 1
                if failures == 1:
                    logger.warning(
                        "worker cannot read the runs table", extra={"error": type(exc).__name__}
                    )
                self._stop.wait(self._pause(failures))
                continue
            if run is None:
                with self._counting:
                    self._waiting += 1
                self._wake.wait(self.poll_s)
                with self._counting:
                    self._waiting -= 1
                continue
            process_claimed(self._deps, run, owner)
            self._wake.set()  # a team slot is free: another worker may take its next run

    def _pause(self, failures: int) -> float:
        """The retry interval, doubled per consecutive store failure up to 5 s."""
        return min(5.0, self.retry_s * float(2 ** min(failures, 10)))

    def _sweep(self) -> None:
        failures = 0
        while not self._stop.wait(max(self.sweep_s, self._pause(failures))):
            try:
                changed = runs.sweep(
                    self._deps.store, now=self._deps.clock(), max_attempts=self._deps.max_attempts
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
                    _notify(self._deps, run)


# ----------------------------------------------------------------------------- local stack


def cached_corpus(read: Callable[[str], bytes]) -> Callable[[], Corpus]:
    """Load the corpus on first use and keep it (the local stack's corpus never changes)."""
    lock = threading.Lock()
    held: list[Corpus] = []

    def get() -> Corpus:
        with lock:
            if not held:
                held.append(load_corpus(read))
            return held[0]

    return get


def cached_track_corpus(read: Callable[[str], bytes]) -> Callable[[str], Corpus]:
    """Each track's corpus loaded on first use and kept (the local stack's never changes)."""
    lock = threading.Lock()
    held: dict[str, Corpus] = {}

    def get(track: str) -> Corpus:
        with lock:
            if track not in held:
                held[track] = load_track_corpus(read, track)
            return held[track]

    return get


def refuse_exposed(protected: tuple[Path, ...]) -> None:
    """The sandbox shows the system read-only: a corpus or state folder kept there would be
    readable by every adapter, so the stack does not start its workers on one."""
    for folder in protected:
        if sandbox.shows(folder):
            raise SystemExit(
                f"toolcall300 serve: {folder} lies in what every adapter's sandbox shows "
                "(the system, /usr, part of /etc); keep the corpus and the state elsewhere"
            )


def start_local(context: Any, deps: WorkerDeps, *, workers: int) -> Callable[[], None]:
    """Start the local stack's pool of ``workers`` on the collaborators the stack built
    (``deps``), after ending what a dead stack left running; the stack wakes it after each
    queued run (``LocalAdapters.wake``). Returns the stop."""
    refuse_exposed(tuple(getattr(context, "protected", ())))
    sandbox.sweep_leftovers()  # what a killed stack left in /tmp
    # A lease can only lapse under a run in flight here (heartbeats stop only with a crash,
    # and a crashed stack's runs are ended by recover): a third of the lease is soon enough.
    pool = WorkerPool(deps, size=workers, sweep_s=max(2.0, deps.lease_s / 3))
    for ended in recover(deps):  # before the pool claims anything, so only the dead stack's
        pool.callbacks(ended)  # queued: a slow endpoint delays nothing
    context.extra["run_workers"] = pool.start()
    # the pool may have been replaced (tests pause and restart it): stop the current one
    return lambda: context.extra["run_workers"].stop()
