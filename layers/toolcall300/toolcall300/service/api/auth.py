"""Bearer-licence authentication, reusable by every route (runs, dashboard, corpus, checker).

``require_licence(headers, tier=..., team=...)`` is the one helper: 401 for no key, a
malformed, unknown or revoked key; 403 for a suspended licence, a single licence on a team
route, or another team's resources. Keys are read only from the ``Authorization`` header
(never a URL) and never logged.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolcall300.service.domain.licences import Licence, LicenceStore, Status, find_by_key
from toolcall300.service.errors import Forbidden, Unauthorized


def bearer_key(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (header names case-insensitive)."""
    for name, value in (headers or {}).items():
        if name.lower() == "authorization" and isinstance(value, str):
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def _effective_status(store: LicenceStore, licence: Licence) -> Status:
    """A member key is no more valid than the team purchase it hangs from (docs/tenancy.md)."""
    if licence.parent_id is None or licence.status != "active":
        return licence.status
    item = store.get(licence.parent_id)
    return Licence.from_item(item).status if item else "revoked"


def require_licence(
    headers: Mapping[str, str] | None,
    *,
    store: LicenceStore,
    tier: str | None = None,
    team: str | None = None,
) -> Licence:
    """The bearer's licence, or the 401/403 that refuses it.

    ``tier="team"`` admits only team licences (a single licence may download but not run
    hosted scoring, docs/api.md); a check-pack key (tier ``checks``) is admitted only where
    ``tier="checks"`` (``POST /check``, which admits every tier and charges the key's pack); ``team`` additionally requires the licence to belong to that team.
    """
    key = bearer_key(headers)
    if key is None:
        raise Unauthorized(
            "send your licence key as 'Authorization: Bearer <key>'", code="key_missing"
        )
    licence = find_by_key(store, key)
    if licence is None:
        raise Unauthorized("unknown licence key", code="key_invalid")
    status = _effective_status(store, licence)
    if status == "revoked":
        raise Unauthorized("this licence has been revoked", code="licence_revoked")
    if status == "suspended":
        raise Forbidden(
            "this licence is suspended while a payment dispute is open", code="licence_suspended"
        )
    if status != "active":
        raise Unauthorized("unknown licence key", code="key_invalid")
    if tier == "team" and licence.tier != "team":
        raise Forbidden("this route needs a team licence", code="tier_insufficient")
    if licence.tier == "checks" and tier != "checks":
        raise Forbidden("a check-pack key pays for argument checks only", code="tier_insufficient")
    if team is not None and licence.team != team:
        raise Forbidden("this licence belongs to another team", code="wrong_team")
    return licence


def optional_licence(
    headers: Mapping[str, str] | None, *, store: LicenceStore, tier: str | None = None
) -> Licence | None:
    """The bearer's licence when a key is sent (then it must be valid), else None (free tier)."""
    if bearer_key(headers) is None:
        return None
    return require_licence(headers, store=store, tier=tier)
