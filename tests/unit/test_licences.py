"""Licence keys, the order-independent status fold, and the licence operations on a store."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.stores import MemoryLicenceStore

from toolcall300.service.domain import licences
from toolcall300.service.domain.licences import Change, Transition, fold_status
from toolcall300.service.errors import Conflict, Forbidden, NotFound

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_key_has_prefix_and_at_least_128_random_bits() -> None:
    keys = {licences.new_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert key.startswith("tc300_") and licences.KEY_RE.match(key)
        # urlsafe base64: 6 bits per character after the prefix
        assert (len(key) - len("tc300_")) * 6 >= 128
    assert math.log2(64) * 32 >= 128


def test_only_the_hash_is_stored() -> None:
    store = MemoryLicenceStore()
    key, lic = licences.issue_manual(store, tier="single", team=None, now=NOW)
    stored = store.items[lic.licence_id]
    assert key not in str(stored)
    assert stored["key_hash"] == licences.hash_key(key)


transitions = st.lists(
    st.builds(
        Transition,
        event_id=st.text("abcdef0123456789", min_size=4, max_size=8),
        kind=st.just("x"),
        at=st.integers(0, 100),
        effect=st.sampled_from(["issue", "revoke", "suspend", "reinstate", "note", "reissue"]),
    ),
    max_size=8,
    unique_by=lambda t: t.event_id,
)


@given(transitions, st.randoms())
def test_status_does_not_depend_on_arrival_order(ts: list[Transition], rnd: object) -> None:
    shuffled = list(ts)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert fold_status(ts) == fold_status(shuffled)


@given(transitions)
def test_revoke_is_final_and_nothing_is_active_without_a_checkout(ts: list[Transition]) -> None:
    status = fold_status(ts)
    if any(t.effect == "revoke" for t in ts):
        assert status == "revoked"
    elif not any(t.effect == "issue" for t in ts):
        assert status == "pending"
    else:
        assert status in ("active", "suspended")


def test_dispute_then_won_reinstates_whatever_the_arrival_order() -> None:
    issue = Transition("e1", "checkout.session.completed", 10, "issue")
    created = Transition("e2", "charge.dispute.created", 20, "suspend")
    won = Transition("e3", "charge.dispute.closed", 30, "reinstate")
    assert fold_status([issue, created]) == "suspended"
    assert fold_status([won, created, issue]) == "active"


def _checkout(event_id: str = "evt_1", pi: str = "pi_1") -> Change:
    lid = licences.licence_id_for(payment_intent=pi, session_id="cs_1")
    return Change(
        lid,
        Transition(event_id, "checkout.session.completed", 1, "issue"),
        {"tier": "team", "team": "acme", "session_id": "cs_1", "payment_intent": pi},
    )


def test_same_event_twice_changes_nothing() -> None:
    store = MemoryLicenceStore()
    first, changed = licences.record_change(store, _checkout())
    again, changed_again = licences.record_change(store, _checkout())
    assert changed and not changed_again
    assert store.writes == 1 and again == first


def test_second_checkout_event_for_the_session_keeps_one_licence() -> None:
    store = MemoryLicenceStore()
    licences.record_change(store, _checkout("evt_1"))
    licences.record_change(store, _checkout("evt_2"))
    assert len(store.items) == 1
    assert len(store.scan()[0]["transitions"]) == 2


def test_claim_hands_the_key_once() -> None:
    store = MemoryLicenceStore()
    licences.record_change(store, _checkout())
    key, lic = licences.claim(store, "cs_1")
    assert licences.find_by_key(store, key) == lic
    with pytest.raises(Conflict):
        licences.claim(store, "cs_1")


def test_claim_before_payment_is_not_ready_and_revoked_is_forbidden() -> None:
    store = MemoryLicenceStore()
    with pytest.raises(NotFound):
        licences.claim(store, "cs_1")
    licences.record_change(store, _checkout())
    lid = licences.licence_id_for(payment_intent="pi_1", session_id=None)
    licences.record_change(store, Change(lid, Transition("evt_r", "charge.refunded", 5, "revoke")))
    with pytest.raises(Forbidden):
        licences.claim(store, "cs_1")


def test_reissue_replaces_the_key_and_revoke_ends_it() -> None:
    store = MemoryLicenceStore()
    old, lic = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    new, _ = licences.reissue(store, lic.licence_id, now=NOW)
    assert licences.find_by_key(store, old) is None
    assert licences.find_by_key(store, new) is not None
    revoked = licences.revoke(store, lic.licence_id, now=NOW)
    assert revoked.status == "revoked"
    assert [t.effect for t in revoked.transitions] == ["issue", "reissue", "revoke"]
    with pytest.raises(Forbidden):
        licences.reissue(store, lic.licence_id, now=NOW)


@settings(max_examples=examples(50))
@given(st.text(max_size=80))
def test_malformed_keys_never_match(text: str) -> None:
    store = MemoryLicenceStore()
    licences.issue_manual(store, tier="single", team=None, now=NOW)
    assert licences.find_by_key(store, text) is None


@pytest.mark.parametrize(
    ("raw", "usable"),
    [("Acme", True), ("acme_corp", True), ("  Café Ω  ", True), ("x" * 64, True),
     ("", False), ("   ", False), ("x" * 65, False), ("a\nb", False), ("a\x00", False), (3, False)],
)  # fmt: skip
def test_any_printable_team_name_is_a_display_name(raw: object, usable: bool) -> None:
    assert (licences.team_name_problem(raw) is None) is usable


def test_team_sales_get_a_fresh_identity_whatever_the_name() -> None:
    store = MemoryLicenceStore()
    _, one = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    _, two = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    assert one.team != two.team and one.team_name == two.team_name == "acme"
    assert all(licences.TEAM_RE.match(str(t)) for t in (one.team, two.team))
    _, seat = licences.issue_manual(store, tier="team", team_name="acme", team=one.team, now=NOW)
    assert seat.team == one.team


def test_a_dispute_opened_and_won_in_the_same_second_ends_active() -> None:
    """Whatever the event ids' order: the dispute's own closing decides, not event time."""
    issue = Transition("evt_b", "checkout.session.completed", 10, "issue")
    for opened_id, won_id in (("evt_z", "evt_a"), ("evt_a", "evt_z")):
        opened = Transition(opened_id, "charge.dispute.created", 20, "suspend", "dp_1")
        won = Transition(won_id, "charge.dispute.closed", 20, "reinstate", "dp_1")
        assert licences.fold_status([issue, opened, won]) == "active"
        assert licences.fold_status([issue, won, opened]) == "active"
    second = Transition("evt_y", "charge.dispute.created", 20, "suspend", "dp_2")
    assert licences.fold_status([issue, opened, won, second]) == "suspended"


def test_member_keys_hang_from_the_team_purchase() -> None:
    store = MemoryLicenceStore()
    _, owner = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    _, other = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    key, member = licences.issue_member(store, owner, str(owner.team), now=NOW)
    assert member.team == owner.team and member.account_id == owner.licence_id
    assert [m.licence_id for m in licences.team_members(store, owner, str(owner.team))] == [
        member.licence_id
    ]
    with pytest.raises(Forbidden):  # another team's purchase key
        licences.issue_member(store, other, str(owner.team), now=NOW)
    with pytest.raises(Forbidden):  # a member key cannot make more members
        licences.issue_member(store, member, str(owner.team), now=NOW)
    with pytest.raises(NotFound):  # another team's owner cannot revoke it
        licences.revoke_member(store, other, str(other.team), member.licence_id, now=NOW)
    revoked = licences.revoke_member(store, owner, str(owner.team), member.licence_id, now=NOW)
    assert revoked.status == "revoked" and licences.find_by_key(store, key) is not None
