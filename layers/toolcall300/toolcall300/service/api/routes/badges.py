"""``GET /badges/{team}/{branch}.svg``: a team's README badge, public only when the team says so.

No key: a README image is fetched by anyone's browser (or GitHub's image proxy). A team that
does not exist, a string that is not a team, and a team whose badge is private all answer the
same 404, so the route tells no one which teams exist. The branch may hold slashes (the
template's greedy ``{branch+}``); the team's purchase key turns the badge on with
``PUT /teams/{team}/badge`` (``routes.licences``). docs/runs-contract.md, "Badges".
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from toolcall300.service.api import deps
from toolcall300.service.api.resolver import error_responses, make_router, names_tag
from toolcall300.service.domain import badge, licences
from toolcall300.service.domain.runs.record import Run
from toolcall300.service.domain.runs.submission import DEFAULT_TRACK, TRACKS
from toolcall300.service.errors import BadRequest, NotFound

router = make_router()
SVG = "image/svg+xml"
#: Short: a README shows the branch's latest run within a minute; the ETag makes a re-check
#: cheap (304). The SVG may draw nothing but itself (no script, style sheet or fetch).
HEADERS = {
    "Cache-Control": "public, max-age=60",
    "Content-Security-Policy": "default-src 'none'",
    "X-Content-Type-Options": "nosniff",
}
#: The Powertools route: the branch part matches slashes too (read from ``{branch+}``).
PATH = "/badges/<team>/.+"


def _not_public() -> NotFound:
    return NotFound("no public badge here", code="badge_not_found")


def _branch_path(team: str) -> str:
    """The ``{branch+}`` part of the request path, decoded (as API Gateway passes it)."""
    event = router.current_event
    given = (event.raw_event.get("pathParameters") or {}).get("branch")
    if isinstance(given, str):
        return given
    return unquote(str(event.path).split(f"/badges/{team}/", 1)[-1])


@router.get(
    PATH,
    summary="The team's badge for one branch (SVG; public only when the team has said so)",
    responses={
        200: {"description": "the badge", "content": {SVG: {"schema": {"type": "string"}}}},
        304: {"description": "unchanged since the ETag sent in If-None-Match"},
        **error_responses(400, 404),
    },
    tags=["runs"],
)
def team_badge(
    team: str,
    store: deps.Licences,
    runs: deps.Runs,
    track: Annotated[str | None, Query(max_length=32)] = None,
) -> Response[str]:
    chosen = track or DEFAULT_TRACK
    if chosen not in TRACKS:  # decided before the team is looked at: says nothing about it
        raise BadRequest(f"'track' must be one of {', '.join(TRACKS)}", code="invalid_track")
    if not licences.badge_public(store, team):
        raise _not_public()
    branch = badge.branch_of(_branch_path(team))
    if branch is None:
        raise _not_public()
    items = runs.by_team(team, limit=badge.BADGE_WINDOW)
    latest = badge.latest_scored((Run.from_item(i) for i in items), branch, chosen)
    drawn = badge.badge_for(latest, branch=branch, track=chosen)
    headers = {**HEADERS, "ETag": drawn.etag}
    if names_tag(router.current_event.headers.get("if-none-match"), drawn.etag):
        return Response(status_code=304, content_type=None, body="", headers=headers)
    return Response(status_code=200, content_type=SVG, body=drawn.svg, headers=headers)
