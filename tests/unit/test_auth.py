"""require_licence: the one auth helper every licence route uses (401 vs 403)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.stores import MemoryLicenceStore

from toolcall300.service.api.auth import bearer_key, optional_licence, require_licence
from toolcall300.service.domain import licences
from toolcall300.service.domain.licences import Change, Transition
from toolcall300.service.errors import BackendError, Forbidden, Unauthorized

NOW = datetime(2026, 11, 30, tzinfo=UTC)


@pytest.fixture
def store() -> MemoryLicenceStore:
    return MemoryLicenceStore()


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "key_missing"),
        ({"authorization": "Basic dXNlcjpwYXNz"}, "key_missing"),
        ({"authorization": "Bearer "}, "key_missing"),
        ({"authorization": "Bearer tc300_" + "x" * 32}, "key_invalid"),
        ({"authorization": "Bearer not-a-key"}, "key_invalid"),
    ],
)
def test_no_key_or_wrong_key_is_401(
    store: MemoryLicenceStore, headers: dict[str, str], code: str
) -> None:
    with pytest.raises(Unauthorized) as err:
        require_licence(headers, store=store)
    assert err.value.status == 401 and err.value.code == code


def test_revoked_is_401_suspended_is_403(store: MemoryLicenceStore) -> None:
    key, lic = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    licences.record_change(
        store, Change(lic.licence_id, Transition("d1", "charge.dispute.created", 2**31, "suspend"))
    )
    with pytest.raises(Forbidden):
        require_licence(bearer(key), store=store)
    licences.revoke(store, lic.licence_id, now=NOW)
    with pytest.raises(Unauthorized) as err:
        require_licence(bearer(key), store=store)
    assert err.value.code == "licence_revoked"


def test_single_licence_on_a_team_route_is_403(store: MemoryLicenceStore) -> None:
    key, _ = licences.issue_manual(store, tier="single", team=None, now=NOW)
    assert require_licence(bearer(key), store=store).tier == "single"
    with pytest.raises(Forbidden) as err:
        require_licence(bearer(key), store=store, tier="team")
    assert err.value.code == "tier_insufficient"


def test_other_teams_resources_are_403(store: MemoryLicenceStore) -> None:
    key, lic = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    _, rival = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    assert require_licence(bearer(key), store=store, tier="team", team=lic.team).team == lic.team
    with pytest.raises(Forbidden) as err:  # same display name, another team
        require_licence(bearer(key), store=store, tier="team", team=rival.team)
    assert err.value.code == "wrong_team"


def test_a_member_key_is_no_more_valid_than_its_team_purchase(store: MemoryLicenceStore) -> None:
    _, owner = licences.issue_manual(store, tier="team", team_name="acme", now=NOW)
    key, _ = licences.issue_member(store, owner, str(owner.team), now=NOW)
    assert (
        require_licence(bearer(key), store=store, tier="team", team=owner.team).team == owner.team
    )
    licences.record_change(
        store,
        Change(owner.licence_id, Transition("d1", "charge.dispute.created", 2**31, "suspend")),
    )
    with pytest.raises(Forbidden):
        require_licence(bearer(key), store=store)
    licences.revoke(store, owner.licence_id, now=NOW)
    with pytest.raises(Unauthorized) as err:
        require_licence(bearer(key), store=store)
    assert err.value.code == "licence_revoked"


def test_header_names_are_case_insensitive_and_free_tier_has_no_licence(
    store: MemoryLicenceStore,
) -> None:
    assert bearer_key({"AUTHORIZATION": "bearer abc"}) == "abc"
    assert optional_licence({}, store=store) is None
    with pytest.raises(BackendError):
        optional_licence({"authorization": "Bearer junk"}, store=store)
