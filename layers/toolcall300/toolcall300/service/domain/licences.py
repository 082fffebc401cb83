"""Licences: keys, the status fold over recorded transitions, and the operations on a store.

A licence is one item per paid checkout (or per manual sale). Its status is never stored as
truth: it is folded from the list of transitions, each recorded with the Stripe event (or
operator action) that caused it, so arrival order does not matter (Stripe does not guarantee
it). Keys are ``tc300_`` plus 192 random bits; only their sha256 is stored, and a
key is shown exactly once, at claim or at (re)issue. This module imports no SDK: the store is a
parameter (``adapters.dynamo.LicenceTable`` in production, a dict-backed fake in tests).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from toolcall300.service.domain.records import iso, retry_on_conflict
from toolcall300.service.errors import Conflict, Forbidden, NotFound, StoreConflict

KEY_PREFIX = "tc300_"
KEY_RE = re.compile(r"^tc300_[A-Za-z0-9_-]{32,64}$")
TEAM_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$")
TIERS = ("single", "team")
Tier = Literal["single", "team"]
Effect = Literal["issue", "revoke", "suspend", "reinstate", "reissue", "note"]
Status = Literal["pending", "active", "suspended", "revoked"]


def new_key() -> str:
    """A fresh licence key: recognisable prefix + 192 random bits (>= 128 required)."""
    return KEY_PREFIX + secrets.token_urlsafe(24)


def hash_key(key: str) -> str:
    """The only form in which a key is stored (sha256 suffices: keys are 192-bit random)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def licence_id_for(*, payment_intent: str | None, session_id: str | None) -> str:
    """Stripe licences are keyed by their payment so refunds and disputes (which name only the
    payment) land on the same item whatever order the events arrive in."""
    basis = f"pi:{payment_intent}" if payment_intent else f"cs:{session_id}"
    return "lic_" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


def new_manual_id() -> str:
    """Licence id for an operator-issued licence (no payment to derive it from)."""
    return "lic_m" + secrets.token_hex(15)


def normalise_team(raw: object) -> str | None:
    """A team name as used in URLs (``/teams/{team}/...``), or None when not a valid one."""
    if not isinstance(raw, str):
        return None
    team = raw.strip().lower()
    return team if TEAM_RE.match(team) else None


@dataclass(frozen=True)
class Transition:
    """One recorded change: which event or operator action, when (epoch s), and its effect."""

    event_id: str
    kind: str
    at: int
    effect: Effect

    def to_item(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "kind": self.kind, "at": self.at, "effect": self.effect}

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Transition:
        return cls(str(item["event_id"]), str(item["kind"]), int(item["at"]), item["effect"])


def fold_status(transitions: Iterable[Transition]) -> Status:
    """Status from transitions, independent of arrival order.

    A full refund, a lost dispute or an operator revoke is final (a refund that
    arrives before its checkout still ends revoked); otherwise the latest dispute transition by
    Stripe's event time decides between suspended and active; without a paid checkout there
    is no licence yet.
    """
    ordered = sorted(transitions, key=lambda t: (t.at, t.event_id))
    if any(t.effect == "revoke" for t in ordered):
        return "revoked"
    if not any(t.effect == "issue" for t in ordered):
        return "pending"
    state: Status = "active"
    for t in ordered:
        if t.effect == "suspend":
            state = "suspended"
        elif t.effect == "reinstate":
            state = "active"
    return state


@dataclass(frozen=True)
class Licence:
    """A licence as stored (never the key itself)."""

    licence_id: str
    source: str = "stripe"
    tier: str | None = None
    team: str | None = None
    session_id: str | None = None
    payment_intent: str | None = None
    issued_at: str | None = None
    key_hash: str | None = None
    transitions: tuple[Transition, ...] = ()
    version: int = 0

    @property
    def status(self) -> Status:
        return fold_status(self.transitions)

    def has_event(self, event_id: str) -> bool:
        return any(t.event_id == event_id for t in self.transitions)

    def to_item(self) -> dict[str, Any]:
        """DynamoDB item: absent rather than null attributes (GSI keys must be strings)."""
        item: dict[str, Any] = {
            "licence_id": self.licence_id,
            "source": self.source,
            "transitions": [t.to_item() for t in self.transitions],
            "status": self.status,  # denormalised for reading; the fold is the truth
            "version": self.version,
        }
        optional = {
            "tier": self.tier,
            "team": self.team,
            "session_id": self.session_id,
            "payment_intent": self.payment_intent,
            "issued_at": self.issued_at,
            "key_hash": self.key_hash,
        }
        item.update({k: v for k, v in optional.items() if v is not None})
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Licence:
        return cls(
            licence_id=str(item["licence_id"]),
            source=str(item.get("source", "stripe")),
            tier=item.get("tier"),
            team=item.get("team"),
            session_id=item.get("session_id"),
            payment_intent=item.get("payment_intent"),
            issued_at=item.get("issued_at"),
            key_hash=item.get("key_hash"),
            transitions=tuple(Transition.from_item(t) for t in item.get("transitions", [])),
            version=int(item.get("version", 0)),
        )

    def public(self) -> dict[str, Any]:
        """What ``GET /licence`` and ``admin licence list`` show: never the key or its hash."""
        return {
            "licence_id": self.licence_id,
            "tier": self.tier,
            "status": self.status,
            "team": self.team,
            "issued_at": self.issued_at,
        }


class LicenceStore(Protocol):
    """Persistence port; ``put`` is a conditional write on ``version`` (None = must not exist)."""

    def get(self, licence_id: str) -> dict[str, Any] | None: ...
    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None: ...
    def find_by_key_hash(self, key_hash: str) -> dict[str, Any] | None: ...
    def find_by_session(self, session_id: str) -> dict[str, Any] | None: ...
    def scan(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Change:
    """What one event does to one licence (the pure result of reading a Stripe event)."""

    licence_id: str
    transition: Transition
    checkout: dict[str, str | None] = field(default_factory=dict)  # tier, team, session_id, ...


def apply_change(current: Licence | None, change: Change, *, now: datetime) -> Licence | None:
    """The licence after ``change``, or None when the event was already recorded (no-op)."""
    base = current or Licence(licence_id=change.licence_id)
    if base.has_event(change.transition.event_id):
        return None
    updated = replace(base, transitions=(*base.transitions, change.transition))
    if change.checkout and updated.tier is None:
        # One licence per checkout session: the first paid checkout event fixes tier and team.
        updated = replace(
            updated,
            tier=change.checkout.get("tier"),
            team=change.checkout.get("team"),
            session_id=change.checkout.get("session_id"),
            payment_intent=change.checkout.get("payment_intent"),
            issued_at=iso(now),
        )
    return updated


def _read(store: LicenceStore, licence_id: str) -> Licence | None:
    item = store.get(licence_id)
    return Licence.from_item(item) if item else None


def _write(store: LicenceStore, before: Licence | None, after: Licence) -> Licence:
    """Conditional write of ``after`` over ``before``; returns what was stored."""
    stored = replace(after, version=(before.version + 1) if before else 1)
    store.put(stored.to_item(), expected_version=before.version if before else None)
    return stored


def record_change(
    store: LicenceStore, change: Change, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> tuple[Licence | None, bool]:
    """Record one transition (optimistic concurrency, retried); returns (licence, changed)."""

    def attempt() -> tuple[Licence | None, bool]:
        before = _read(store, change.licence_id)
        after = apply_change(before, change, now=now())
        if after is None:
            return before, False
        return _write(store, before, after), True

    return retry_on_conflict(attempt, what="licence")


def claim(
    store: LicenceStore, session_id: str, *, make_key: Callable[[], str] = new_key
) -> tuple[str, Licence]:
    """Hand the buyer their key, once: generate it now and store only its hash.

    A second claim of the same session is refused (409): the key cannot be shown again because
    it is not stored; the operator's ``reissue`` is the way back for a lost key.
    """
    found = store.find_by_session(session_id)
    licence = _read(store, str(found["licence_id"])) if found else None
    if licence is None or licence.status == "pending":
        raise NotFound("no paid checkout for this session yet; retry shortly", code="not_ready")
    if licence.status == "revoked":
        raise Forbidden("this licence has been revoked", code="licence_revoked")
    if licence.key_hash is not None:
        raise Conflict("this session's key was already claimed", code="already_claimed")
    key = make_key()
    try:
        return key, _write(store, licence, replace(licence, key_hash=hash_key(key)))
    except StoreConflict as exc:
        raise Conflict("this session's key was already claimed", code="already_claimed") from exc


def find_by_key(store: LicenceStore, key: str) -> Licence | None:
    """The licence a presented key belongs to (None for unknown or malformed keys)."""
    if not KEY_RE.match(key):
        return None
    item = store.find_by_key_hash(hash_key(key))
    return Licence.from_item(item) if item else None


def _operator_transition(kind: str, effect: Effect, now: datetime) -> Transition:
    return Transition(f"op_{secrets.token_hex(8)}", kind, int(now.timestamp()), effect)


def issue_manual(
    store: LicenceStore,
    *,
    tier: str,
    team: str | None,
    now: datetime,
    make_key: Callable[[], str] = new_key,
) -> tuple[str, Licence]:
    """Operator sale: a new licence with its key (shown once)."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}")
    if tier == "team" and team is None:
        raise ValueError("a team licence needs a team name")
    key = make_key()
    licence = Licence(
        licence_id=new_manual_id(),
        source="manual",
        tier=tier,
        team=team,
        issued_at=iso(now),
        key_hash=hash_key(key),
        transitions=(_operator_transition("operator.issue", "issue", now),),
    )
    return key, _write(store, None, licence)


def _update(store: LicenceStore, licence_id: str, edit: Callable[[Licence], Licence]) -> Licence:
    def attempt() -> Licence:
        before = _read(store, licence_id)
        if before is None:
            raise NotFound(f"no licence {licence_id}")
        return _write(store, before, edit(before))

    return retry_on_conflict(attempt, what="licence")


def revoke(store: LicenceStore, licence_id: str, *, now: datetime) -> Licence:
    """Operator revoke: recorded as a transition like any other, final."""
    t = _operator_transition("operator.revoke", "revoke", now)
    return _update(store, licence_id, lambda lic: replace(lic, transitions=(*lic.transitions, t)))


def reissue(
    store: LicenceStore, licence_id: str, *, now: datetime, make_key: Callable[[], str] = new_key
) -> tuple[str, Licence]:
    """Operator reissue for a lost key: a new key, the old one stops working at once."""
    key = make_key()
    t = _operator_transition("operator.reissue", "reissue", now)

    def edit(lic: Licence) -> Licence:
        if lic.status in ("revoked", "pending"):
            raise Forbidden(f"cannot reissue a {lic.status} licence", code=f"licence_{lic.status}")
        return replace(lic, key_hash=hash_key(key), transitions=(*lic.transitions, t))

    return key, _update(store, licence_id, edit)


def list_licences(store: LicenceStore) -> list[Licence]:
    """Every licence, oldest first (operator listing; never shows keys)."""
    return sorted(
        (Licence.from_item(i) for i in store.scan()),
        key=lambda lic: (lic.issued_at or "", lic.licence_id),
    )
