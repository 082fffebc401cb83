"""``GET /licence/claim`` (the buyer's key, once), ``GET /licence`` (the bearer's licence), a
team's member keys (``/teams/{team}/keys``: the one way into an existing team, docs/tenancy.md)
and whether its badge is public (``GET /teams/{team}/badge``: any key of the team;
``PUT``: its purchase key only).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, ConfigDict, StrictBool

from toolcall300.service.api import deps
from toolcall300.service.api.auth import require_licence
from toolcall300.service.api.resolver import (
    error_responses,
    json_response,
    make_router,
    ok_response,
    public_base_url,
)
from toolcall300.service.domain import licences
from toolcall300.service.observability import count

router = make_router()


class CheckPackView(BaseModel):
    """A key's pack of paid argument checks (docs/argcheck-payment.md): checks left of those bought."""

    remaining: int
    granted: int


class LicenceView(BaseModel):
    licence_id: str
    tier: str | None
    status: str
    team: str | None
    team_name: str | None
    issued_at: str | None
    #: the team's purchase key: it issues and revokes member keys (docs/tenancy.md)
    manages_members: bool
    #: the key's check pack, or null for a key that holds none
    checks: CheckPackView | None = None


class ClaimView(LicenceView):
    key: str


@router.get(
    "/licence/claim",
    summary="Hand the buyer the licence key of a paid checkout session (once)",
    responses={
        **ok_response(ClaimView, "the key"),
        **error_responses(400, 403, 404, 409),
    },
    tags=["licences"],
)
def claim(
    session_id: Annotated[str, Query(min_length=4, max_length=255, pattern=r"^cs_[A-Za-z0-9_]+$")],
    store: deps.Licences,
) -> Response[str]:
    key, licence = licences.claim(store, session_id)
    count("LicencesClaimed")
    return json_response(200, {**licence.public(), "key": key})


@router.get(
    "/licence",
    summary="Describe the bearer's licence: tier, status, team, issue date, check pack balance",
    responses={**ok_response(LicenceView, "the licence"), **error_responses(401, 403)},
    tags=["licences"],
)
def describe(store: deps.Licences, ledger: deps.Ledger) -> LicenceView:
    # Every key may describe itself, a check-pack key too (tier "checks" admits all tiers).
    licence = require_licence(router.current_event.headers, store=store, tier="checks")
    pack = ledger.pack(licence.licence_id)
    checks = (
        None
        if pack is None
        else {
            "remaining": int(pack.get("remaining") or 0),
            "granted": int(pack.get("granted") or 0),
        }
    )
    return LicenceView.model_validate({**licence.public(), "checks": checks})


class MemberKeyView(BaseModel):
    key_id: str
    status: str
    issued_at: str | None


class NewMemberKeyView(MemberKeyView):
    team: str
    key: str


class MemberKeysView(BaseModel):
    team: str
    keys: list[MemberKeyView]


TeamId = Annotated[str, Path(pattern=licences.TEAM_PATTERN)]
KeyId = Annotated[str, Path(pattern="^lic_k[0-9a-f]{30}$")]


def _owner(store: licences.LicenceStore) -> licences.Licence:
    return require_licence(router.current_event.headers, store=store, tier="team")


def _member_view(member: licences.Licence) -> MemberKeyView:
    return MemberKeyView(key_id=member.licence_id, status=member.status, issued_at=member.issued_at)


@router.post(
    "/teams/<team>/keys",
    summary="Issue a member key of the team (its purchase key only); the key is shown once",
    responses={
        **ok_response(NewMemberKeyView, "the new member key", status=201),
        **error_responses(400, 401, 403),
    },
    tags=["licences"],
)
def issue_member_key(team: TeamId, store: deps.Licences) -> Response[str]:
    key, member = licences.issue_member(store, _owner(store), team, now=datetime.now(UTC))
    count("MemberKeysIssued")
    view = NewMemberKeyView(**_member_view(member).model_dump(), team=team, key=key)
    return json_response(201, view.model_dump())


@router.get(
    "/teams/<team>/keys",
    summary="The team's member keys (never the keys themselves)",
    responses={**ok_response(MemberKeysView, "the member keys"), **error_responses(400, 401, 403)},
    tags=["licences"],
)
def member_keys(team: TeamId, store: deps.Licences) -> MemberKeysView:
    members = licences.team_members(store, _owner(store), team)
    return MemberKeysView(team=team, keys=[_member_view(m) for m in members])


@router.delete(
    "/teams/<team>/keys/<key_id>",
    summary="Revoke one member key of the team (its purchase key only)",
    responses={
        **ok_response(MemberKeyView, "the revoked key"),
        **error_responses(400, 401, 403, 404),
    },
    tags=["licences"],
)
def revoke_member_key(team: TeamId, key_id: KeyId, store: deps.Licences) -> MemberKeyView:
    member = licences.revoke_member(store, _owner(store), team, key_id, now=datetime.now(UTC))
    return _member_view(member)


class BadgeRequest(BaseModel):
    """``PUT /teams/{team}/badge``: ``{"public": true | false}`` and nothing else (a string,
    a number or another key is ``400 invalid_request``)."""

    model_config = ConfigDict(extra="forbid")
    public: StrictBool


class BadgeView(BaseModel):
    team: str
    public: bool
    #: the badge of branch ``main``; another branch is ``/badges/{team}/{branch}.svg``
    badge_url: str
    #: the line a README holds to show it
    markdown: str


def _badge_view(team: str, public: bool) -> BadgeView:
    url = f"{public_base_url(router.current_event.raw_event)}/badges/{team}/main.svg"
    return BadgeView(team=team, public=public, badge_url=url, markdown=f"![TOOLCALL-300]({url})")


@router.get(
    "/teams/<team>/badge",
    summary="Whether the team's badge is public, and its README line (any key of the team)",
    responses={**ok_response(BadgeView, "the badge setting"), **error_responses(400, 401, 403)},
    tags=["licences"],
)
def read_badge(team: TeamId, store: deps.Licences) -> BadgeView:
    licence = require_licence(router.current_event.headers, store=store, tier="team")
    return _badge_view(team, licences.team_badge_public(store, licence, team))


@router.put(
    "/teams/<team>/badge",
    summary="Make the team's badge public or private (its purchase key only; private by default)",
    responses={**ok_response(BadgeView, "the badge setting"), **error_responses(400, 401, 403)},
    tags=["licences"],
)
def set_badge(
    team: TeamId, request: Annotated[BadgeRequest, Body()], store: deps.Licences
) -> BadgeView:
    public = licences.set_badge_public(store, _owner(store), team, request.public)
    return _badge_view(team, public)
