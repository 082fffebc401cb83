"""Hosted CI runs: the run record, its state machine, daily caps, baselines and verdicts.

A run is one submission of an adapter (an image by digest on AWS, an argument list on a local
stack) to be scored against the private corpus. It moves ``queued -> running -> scored |
failed``; ``running -> queued`` happens only when a worker's lease expired and attempts
remain, so a killed worker never leaves a run stuck and a run is finished (and counted) once:
every transition is a conditional write on the record's version. Baselines are not a second
table: a run that became a baseline carries ``baseline_set_at``, and the history is those
runs in order. This module imports no SDK: the run store, the report store and the quota are
parameters (DynamoDB, S3 and the usage table in production, dicts in tests). It does not run,
score or compare anything itself: the caller passes the scorer's functions in.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from toolcall300.canonical import canonical_bytes, pretty_bytes, sha256_hex
from toolcall300.service.errors import BadRequest, Conflict, NotFound, StoreConflict

Status = Literal["queued", "running", "scored", "failed"]
Verdict = Literal["pass", "regression", "baseline_set"]

#: The closed list of failure reasons (docs/runs-contract.md); anything else is a bug in the caller.
FAILURE_REASONS = (
    "image_pull_failed",
    "adapter_start_failed",
    "job_timeout",
    "out_of_memory",
    "output_malformed",
    "infra_error",
)
#: Allowed status transitions; ``running -> queued`` is the lease-expiry retry.
TRANSITIONS: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "failed"}),
    "running": frozenset({"scored", "failed", "queued"}),
    "scored": frozenset(),
    "failed": frozenset(),
}
FINAL: frozenset[str] = frozenset({"scored", "failed"})

RUN_ID_RE = re.compile(r"^run_[0-9A-HJKMNP-TV-Z]{26}$")
IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._\-/:]{0,254}@sha256:[0-9a-f]{64}$")
REF_RE = re.compile(r"^[A-Za-z0-9._/\-]{1,200}$")
COMMIT_RE = re.compile(r"^[0-9a-f]{7,40}$")
BASELINE_RE = re.compile(r"^[A-Za-z0-9._/\-]{1,64}$")
MAX_ARGS, MAX_ARG_CHARS, MAX_URL_CHARS = 32, 1024, 2048
STDERR_TAIL_CHARS = 4096
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RETRIES = 5


class RunStore(Protocol):
    """Run records with optimistic concurrency (``version``); ``put`` raises StoreConflict."""

    def get(self, run_id: str) -> dict[str, Any] | None: ...
    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None: ...
    def by_team(self, team: str, *, limit: int) -> list[dict[str, Any]]: ...
    def by_status(self, status: str) -> list[dict[str, Any]]: ...


class ReportStore(Protocol):
    """Immutable report objects: ``put_once`` refuses to overwrite (raises StoreConflict)."""

    def put_once(self, key: str, body: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...


#: Count one run against a licence's daily cap, or raise TooManyRequests (with Retry-After).
TakeQuota = Callable[[str], None]


# ----------------------------------------------------------------------------- ids and time


def _crockford(data: bytes, length: int) -> str:
    number = int.from_bytes(data, "big")
    chars = []
    for _ in range(length):
        number, rem = divmod(number, 32)
        chars.append(_CROCKFORD[rem])
    return "".join(reversed(chars))


def new_run_id(now: datetime) -> str:
    """A ULID-shaped id: 48-bit milliseconds then 80 random bits, so ids sort by creation."""
    ms = int(now.timestamp() * 1000).to_bytes(6, "big")
    return "run_" + _crockford(ms + secrets.token_bytes(10), 26)


def idempotent_run_id(team: str, key: str) -> str:
    """The run id an ``Idempotency-Key`` names for one team: same key + same team, same run."""
    digest = hashlib.sha256(f"toolcall300-run\0{team}\0{key}".encode()).digest()
    return "run_" + _crockford(digest[:17], 26)


def iso(ts: datetime | None) -> str | None:
    return ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if ts else None


def short_ref(ref: str) -> str:
    """``refs/heads/main`` and ``main`` name the same branch (a baseline is named by branch)."""
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


# ----------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class Submission:
    """A validated ``POST /runs`` body."""

    adapter: dict[
        str, Any
    ]  # {"kind": "image", "image": ...} or {"kind": "command", "command": [...]}
    ref: str
    commit: str
    baseline: str = "main"
    callback_url: str | None = None

    def fingerprint(self) -> str:
        """What an idempotent retry must repeat exactly (a different body is a 409)."""
        return sha256_hex(
            canonical_bytes([self.adapter, self.ref, self.commit, self.baseline, self.callback_url])
        )


def _need_str(
    body: Mapping[str, Any], name: str, pattern: re.Pattern[str], default: str | None = None
) -> str:
    value = body.get(name, default)
    if not isinstance(value, str) or not pattern.match(value):
        raise BadRequest(f"'{name}' is missing or malformed", code="invalid_run")
    return value


def _adapter(body: Mapping[str, Any], *, local: bool) -> dict[str, Any]:
    image, cmd = body.get("image"), body.get("adapter_cmd")
    if (image is None) == (cmd is None):
        raise BadRequest("send exactly one of 'image' and 'adapter_cmd'", code="invalid_run")
    if image is not None:
        if not isinstance(image, str) or not IMAGE_RE.match(image):
            raise BadRequest(
                "'image' must be pinned by digest: registry/repo@sha256:<64 hex>",
                code="invalid_image",
            )
        return {"kind": "image", "image": image}
    if not local:
        # docs/runs-contract.md: an argument list runs only on a local stack; AWS runs images by digest.
        raise BadRequest(
            "'adapter_cmd' is accepted only on a local stack; send 'image'",
            code="adapter_cmd_not_allowed",
        )
    if not isinstance(cmd, list):
        cmd = None
    ok = (
        cmd is not None
        and 1 <= len(cmd) <= MAX_ARGS
        and all(isinstance(a, str) and a and len(a) <= MAX_ARG_CHARS and "\0" not in a for a in cmd)
    )
    if not ok:
        raise BadRequest(
            f"'adapter_cmd' must be a list of 1 to {MAX_ARGS} non-empty strings", code="invalid_run"
        )
    return {"kind": "command", "command": list(cmd or [])}


def _callback(value: Any, *, local: bool) -> str | None:
    if value is None:
        return None
    schemes = ("https://", "http://") if local else ("https://",)
    if not isinstance(value, str) or len(value) > MAX_URL_CHARS or not value.startswith(schemes):
        raise BadRequest("'callback_url' must be an https:// URL", code="invalid_callback")
    netloc = value.split("://", 1)[1].split("/", 1)[0]
    if not netloc or "@" in netloc or any(c.isspace() for c in value):
        raise BadRequest(
            "'callback_url' must be an https:// URL without credentials", code="invalid_callback"
        )
    return value


def parse_submission(body: Any, *, local: bool) -> Submission:
    """Validate a ``POST /runs`` body (400 with a reason code on anything malformed)."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", code="invalid_run")
    return Submission(
        adapter=_adapter(body, local=local),
        ref=_need_str(body, "ref", REF_RE),
        commit=_need_str(body, "commit", COMMIT_RE),
        baseline=_need_str(body, "baseline", BASELINE_RE, "main"),
        callback_url=_callback(body.get("callback_url"), local=local),
    )


# ----------------------------------------------------------------------------- the record


@dataclass(frozen=True)
class Run:
    """One run as stored. ``public()`` is what ``GET /runs/{id}`` shows (no secrets)."""

    run_id: str
    team: str
    licence_id: str
    adapter: dict[str, Any]
    ref: str
    commit: str
    baseline: str = "main"
    callback_url: str | None = None
    callback_secret: str | None = None
    request_hash: str = ""
    status: Status = "queued"
    created_at: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    failure: dict[str, str] | None = None
    sandbox: dict[str, Any] = field(
        default_factory=lambda: {"network_isolated": False, "notes": []}
    )
    verdict: Verdict | None = None
    summary: dict[str, Any] | None = None
    comparison: dict[str, Any] | None = None
    report_key: str | None = None
    baseline_set_at: str | None = None
    attempts: int = 0
    lease_owner: str | None = None
    lease_expires: int = 0
    job_id: str | None = None
    version: int = 0

    def to_item(self) -> dict[str, Any]:
        """The stored item: None attributes are left out (GSI keys and DynamoDB dislike nulls)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Run:
        known = {k: v for k, v in item.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def public(self) -> dict[str, Any]:
        """The contract's ``GET /runs/{run_id}`` body."""
        return {
            "run_id": self.run_id,
            "team": self.team,
            "status": self.status,
            "ref": self.ref,
            "commit": self.commit,
            "baseline": self.baseline,
            "adapter": self.adapter,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "failure": self.failure,
            "sandbox": self.sandbox,
            "verdict": self.verdict,
            "summary": self.summary,
            "comparison": self.comparison,
            "baseline_updated": self.baseline_set_at is not None,
            "attempts": self.attempts,
            "report_url": f"/runs/{self.run_id}/report" if self.report_key else None,
            "links": {"self": f"/runs/{self.run_id}"},
        }

    def listing(self) -> dict[str, Any]:
        """One row of ``GET /teams/{team}/runs``."""
        keys = (
            "run_id",
            "status",
            "verdict",
            "ref",
            "commit",
            "baseline",
            "created_at",
            "finished_at",
            "summary",
        )
        return {k: getattr(self, k) for k in keys}


def check_transition(current: str, new: str) -> None:
    """Refuse a transition the state machine does not have (a final run never moves)."""
    if new not in TRANSITIONS.get(current, frozenset()):
        raise Conflict(f"a {current} run cannot become {new}", code="invalid_transition")


def load(store: RunStore, run_id: str) -> Run | None:
    item = store.get(run_id) if RUN_ID_RE.match(run_id) else None
    return Run.from_item(item) if item else None


def get_for_team(store: RunStore, run_id: str, team: str) -> Run:
    """A run of ``team``; another team's run is a 404, not a 403, so ids do not leak."""
    run = load(store, run_id)
    if run is None or run.team != team:
        raise NotFound("no such run", code="run_not_found")
    return run


def _save(store: RunStore, before: Run, after: Run) -> Run:
    stored = replace(after, version=before.version + 1)
    store.put(stored.to_item(), expected_version=before.version)
    return stored


def update(store: RunStore, run_id: str, edit: Callable[[Run], Run | None]) -> Run | None:
    """Apply ``edit`` with optimistic concurrency, retried; ``edit`` returns None to do nothing."""
    for _ in range(_RETRIES):
        before = load(store, run_id)
        if before is None:
            return None
        after = edit(before)
        if after is None:
            return None
        if after.status != before.status:
            check_transition(before.status, after.status)
        try:
            return _save(store, before, after)
        except StoreConflict:
            continue
    raise Conflict("the run is being updated concurrently; retry", code="busy")


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
) -> tuple[Run, bool]:
    """Create a queued run (or return the one an ``Idempotency-Key`` already made).

    Returns (run, created). A retried submission with the same key is the same run and is not
    counted against the daily cap again; the same key with a different body is a 409.
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
    run = Run(
        run_id=run_id,
        team=team,
        licence_id=licence_id,
        adapter=sub.adapter,
        ref=sub.ref,
        commit=sub.commit,
        baseline=sub.baseline,
        callback_url=sub.callback_url,
        callback_secret=callback_secret if sub.callback_url else None,
        request_hash=sub.fingerprint(),
        created_at=iso(now) or "",
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


def set_job(store: RunStore, run_id: str, job_id: str) -> Run | None:
    """Record the Batch job id a queued run was submitted as."""
    return update(
        store, run_id, lambda run: replace(run, job_id=job_id) if run.status == "queued" else None
    )


def failure(reason: str, detail: str, stderr_tail: str = "") -> dict[str, str]:
    """A failure record; the reason must come from the closed list."""
    if reason not in FAILURE_REASONS:
        raise ValueError(f"unknown failure reason {reason!r}")
    return {
        "reason": reason,
        "detail": detail[:1000],
        "stderr_tail": stderr_tail[-STDERR_TAIL_CHARS:],
    }


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


# ----------------------------------------------------------------------------- baselines


def team_runs(store: RunStore, team: str, *, limit: int = 50) -> list[Run]:
    """Newest first."""
    runs = [Run.from_item(i) for i in store.by_team(team, limit=limit)]
    return sorted(runs, key=lambda r: (r.created_at, r.run_id), reverse=True)[:limit]


def baseline_history(runs: Iterable[Run]) -> dict[str, list[Run]]:
    """name -> the runs that were that baseline, oldest first (earlier ones stay in history)."""
    out: dict[str, list[Run]] = {}
    for run in sorted(
        (r for r in runs if r.baseline_set_at), key=lambda r: (r.baseline_set_at or "", r.run_id)
    ):
        out.setdefault(run.baseline, []).append(run)
    return out


def baselines_document(team: str, runs: Iterable[Run]) -> dict[str, Any]:
    """The contract's ``GET /teams/{team}/baselines`` body."""
    history = baseline_history(runs)
    return {
        "team": team,
        "baselines": {
            name: [
                {
                    "run_id": r.run_id,
                    "ref": r.ref,
                    "commit": r.commit,
                    "set_at": r.baseline_set_at,
                    "summary": r.summary,
                }
                for r in entries
            ]
            for name, entries in history.items()
        },
    }


def current_baseline(runs: Iterable[Run], name: str, *, exclude: str | None = None) -> Run | None:
    """The latest run set as baseline ``name`` (not ``exclude``, the run being scored)."""
    entries = [r for r in baseline_history(runs).get(name, []) if r.run_id != exclude]
    return entries[-1] if entries else None


def decide_verdict(*, regressed: bool | None, on_baseline_ref: bool) -> tuple[Verdict, bool]:
    """(verdict, becomes_baseline) from the comparison (None: no baseline yet) and the ref.

    docs/runs-contract.md, verdicts: a run on the baseline's ref that does not regress becomes the new baseline. With
    no baseline yet, such a run is ``baseline_set``; a run on another ref with nothing to
    compare against passes (there is no regression to report) and sets nothing.
    """
    if regressed is None:
        return ("baseline_set", True) if on_baseline_ref else ("pass", False)
    if regressed:
        return "regression", False
    return "pass", on_baseline_ref


# ----------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Scoring:
    """What the trusted side produced for one finished job, before it is recorded."""

    report: dict[str, Any]  # the scorer's report
    corpus_sha256: str
    scorer_version: str
    diagnostics: dict[str, Any]  # the harness's (unknown ids, malformed lines, stop reason...)
    sandbox: dict[str, Any]


Compare = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
Summarise = Callable[[dict[str, Any]], dict[str, Any]]


def report_key(run: Run) -> str:
    """Immutable per attempt, so a retried attempt never collides with a dead one's object."""
    return f"reports/{run.team}/{run.run_id}/attempt-{run.attempts}.json"


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
        team_runs(store, run.team, limit=1000), run.baseline, exclude=run.run_id
    )
    comparison = None
    if base is not None and base.report_key:
        base_doc = _load_json(reports.get(base.report_key))
        try:
            compared = compare(base_doc.get("score", base_doc), scoring.report)
            comparison = dict(compared, baseline_run_id=base.run_id)
        except ValueError:
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
) -> list[Run]:
    """Reconcile runs nobody is finishing: expired leases, vanished jobs, runs queued too long.

    An expired lease goes back to ``queued`` while attempts remain, else ``failed``
    (``infra_error``); a run whose Batch job is gone fails; nothing final is touched.
    """
    changed: list[Run] = []
    stamp = int(now.timestamp())
    for run in (Run.from_item(i) for i in store.by_status("running")):
        alive = job_alive(run)
        if alive is False:
            result = fail(
                store,
                run.run_id,
                failure("infra_error", "the run's job is gone (reconciled by the sweeper)"),
                now=now,
            )
        elif alive is None and run.lease_owner and run.lease_expires < stamp:
            result = _expire_lease(store, run.run_id, now=now, max_attempts=max_attempts)
        else:
            continue
        if result is not None:
            changed.append(result)
    cutoff = iso(now - timedelta(seconds=queued_timeout_s)) or ""
    for run in (Run.from_item(i) for i in store.by_status("queued")):
        if run.created_at < cutoff and job_alive(run) is not True:
            result = fail(
                store,
                run.run_id,
                failure("infra_error", "the run waited too long for a worker"),
                now=now,
            )
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
        "summary": run.summary,
        "failure": run.failure,
        "regressed": bool(run.comparison and run.comparison.get("regressed")),
        "reasons": (run.comparison or {}).get("reasons", []),
        "finished_at": run.finished_at,
        "links": {"self": f"/runs/{run.run_id}", "report": f"/runs/{run.run_id}/report"},
    }
