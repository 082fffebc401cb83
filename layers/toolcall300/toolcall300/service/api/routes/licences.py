"""``GET /licence/claim`` (the buyer's key, once) and ``GET /licence`` (the bearer's licence)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel

from toolcall300.service.api.auth import require_licence
from toolcall300.service.api.resolver import (
    error_responses,
    json_response,
    make_router,
    ok_response,
)
from toolcall300.service.api.wiring import licence_store
from toolcall300.service.domain import licences
from toolcall300.service.observability import count

router = make_router()


class LicenceView(BaseModel):
    licence_id: str
    tier: str | None
    status: str
    team: str | None
    issued_at: str | None


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
) -> Response[str]:
    key, licence = licences.claim(licence_store(), session_id)
    count("LicencesClaimed")
    return json_response(200, {**licence.public(), "key": key})


@router.get(
    "/licence",
    summary="Describe the bearer's licence: tier, status, team, issue date",
    responses=error_responses(401, 403),
    tags=["licences"],
)
def describe() -> LicenceView:
    licence = require_licence(router.current_event.headers, store=licence_store())
    return LicenceView.model_validate(licence.public())
