"""The run record: its fields, its state machine, its ids, and optimistic updates.

A run moves ``queued -> running -> scored | failed``; ``running -> queued`` happens only when a
worker's lease expired and attempts remain. Every transition is a conditional write on the
record's ``version`` (:func:`update`), so a run is finished (and counted) once. This module
imports no SDK: the run store is a parameter. It does not submit, score or sweep runs.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from toolcall300.service.domain.records import retry_on_conflict
from toolcall300.service.errors import Conflict, NotFound

Status = Literal["queued", "running", "scored", "failed"]
Verdict = Literal["pass", "regression", "baseline_set"]

#: Allowed status transitions; ``running -> queued`` is the lease-expiry retry.
TRANSITIONS: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "failed"}),
    "running": frozenset({"scored", "failed", "queued"}),
    "scored": frozenset(),
    "failed": frozenset(),
}
FINAL: frozenset[str] = frozenset({"scored", "failed"})
#: How long a finished run that never became a baseline stays in the table (its report stays).
RETENTION_DAYS = 400

RUN_ID_RE = re.compile(r"^run_[0-9A-HJKMNP-TV-Z]{26}$")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


#: Where a page of baselines ends: ``(baseline_set_at, run_id)`` of its last run.
BaselineKey = tuple[str, str]


class RunStore(Protocol):
    """Run records with optimistic concurrency (``version``); ``put`` raises StoreConflict."""

    def get(self, run_id: str) -> dict[str, Any] | None: ...
    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None: ...
    def by_team(self, team: str, *, limit: int) -> list[dict[str, Any]]: ...
    def by_status(self, status: str) -> list[dict[str, Any]]:
        """Every run in ``status`` (queued or running only: read from the sparse index)."""
        ...

    def baselines_page(
        self, team: str, *, limit: int, after: BaselineKey | None
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` runs of ``team`` set as a baseline, newest first by
        ``(baseline_set_at, run_id)``, strictly after ``after`` (the last one of the page
        before) or from the newest: one bounded index read however long the history grows
        (what scoring compares with, and ``GET /teams/{team}/baselines``)."""
        ...


class ReportStore(Protocol):
    """Immutable report objects: ``put_once`` refuses to overwrite (raises StoreConflict)."""

    def put_once(self, key: str, body: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...


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


# ----------------------------------------------------------------------------- the record


#: The fields of one row of ``GET /teams/{team}/runs`` (the dashboard's run list).
LISTING_FIELDS = (
    "run_id",
    "status",
    "verdict",
    "ref",
    "commit",
    "baseline",
    "track",
    "created_at",
    "finished_at",
    "summary",
)


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
    #: The track it is scored on (docs/tracks.md); a run stored before tracks is ``single``.
    track: str = "single"
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
    #: When the job's presigned links stop working (epoch seconds; 0: no job links).
    links_expire_at: int = 0
    #: How many times a queued job was replaced by one with fresh links (the sweeper's renewal).
    job_renewals: int = 0
    #: The corpus version the run was scored on; baselines compare only like with like.
    corpus_sha256: str | None = None
    version: int = 0

    def to_item(self) -> dict[str, Any]:
        """The stored item: None attributes are left out (GSI keys and DynamoDB dislike nulls).

        Two derived attributes keep the table cheap to reconcile: ``active_status`` (only
        while queued or running: the sparse index the sweeper queries) and ``expires_at``
        (a finished run that is not a baseline expires after :data:`RETENTION_DAYS`).
        """
        item = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.status not in FINAL:
            item["active_status"] = self.status
        elif self.baseline_set_at is None and self.finished_at:
            finished = datetime.fromisoformat(self.finished_at)
            item["expires_at"] = int((finished + timedelta(days=RETENTION_DAYS)).timestamp())
        return item

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
            "track": self.track,
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
        return {k: getattr(self, k) for k in LISTING_FIELDS}


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

    def attempt() -> Run | None:
        before = load(store, run_id)
        if before is None:
            return None
        after = edit(before)
        if after is None:
            return None
        if after.status != before.status:
            check_transition(before.status, after.status)
        return _save(store, before, after)

    return retry_on_conflict(attempt, what="the run")
