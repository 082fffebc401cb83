"""Hosted runs over HTTP: ``POST /runs``, ``GET /runs/{id}``, its report, a team's runs and baselines.

Team licences only (a single licence gets 403). Another team's run answers 404, so run ids
do not leak. The callback secret is derived from the bearer's key at submission
(``callback.callback_secret``) so the team can verify callbacks with the key it holds; the key
itself is never stored. The contract is docs/runs-contract.md (the user's guide: docs/hosted-scoring.md).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from toolcall300.service.api import wiring
from toolcall300.service.api.auth import bearer_key, require_licence
from toolcall300.service.api.resolver import (
    error_responses,
    json_response,
    make_router,
    ok_response,
    raw_body,
)
from toolcall300.service.api.wiring import licence_store
from toolcall300.service.domain import runs
from toolcall300.service.domain.callback import callback_secret
from toolcall300.service.domain.licences import Licence
from toolcall300.service.errors import BadRequest
from toolcall300.service.hosted import flow
from toolcall300.service.observability import count

router = make_router()
MAX_BODY = 16 * 1024


def _team_licence(team: str | None = None) -> Licence:
    return require_licence(
        router.current_event.headers, store=licence_store(), tier="team", team=team
    )


def _header(name: str) -> str | None:
    for key, value in (router.current_event.headers or {}).items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _json_body() -> Any:
    raw = raw_body(router.current_event.raw_event)
    if len(raw) > MAX_BODY:
        raise BadRequest("the body is too large", code="body_too_large")
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise BadRequest("the body is not JSON", code="invalid_json") from exc


@router.post(
    "/runs",
    summary="Submit a hosted scoring run (team licence); 202 with the run id",
    responses={
        202: {
            "description": "accepted",
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
        **error_responses(400, 401, 403, 409, 429),
    },
    tags=["runs"],
)
def submit() -> Response[str]:
    licence = _team_licence()
    conf = wiring.runs_settings()
    sub = runs.parse_submission(_json_body(), local=conf.toolcall300_local_stack)
    if conf.toolcall300_local_stack and sub.adapter["kind"] == "image":
        # A local stack has no AWS Batch to run images on; its worker runs commands.
        raise BadRequest("a local stack runs 'adapter_cmd', not images", code="image_not_supported")
    if conf.toolcall300_local_stack:
        from toolcall300.jobs.sandbox import command_problem  # the local worker's own rules

        problem = command_problem(sub.adapter["command"])
        if problem is not None:
            raise BadRequest(problem, code="adapter_cmd_unusable")
    key = bearer_key(router.current_event.headers) or ""
    now = datetime.now(UTC)
    run, created = runs.submit(
        wiring.run_store(),
        sub,
        team=str(licence.team),
        licence_id=licence.account_id,  # member keys share their team purchase's quota
        take_quota=wiring.quota_taker(),
        now=now,
        idempotency_key=_header("Idempotency-Key"),
        callback_secret=callback_secret(key),
    )
    if created:
        count("RunsSubmitted")
        if run.adapter["kind"] == "image":
            run = flow.dispatch(run, now=now)
    body = {"run_id": run.run_id, "status": run.status, "links": {"self": f"/runs/{run.run_id}"}}
    return json_response(202, body, {"Location": f"/runs/{run.run_id}"})


@router.get(
    "/runs/<run_id>",
    summary="A run: status, verdict, summary, comparison with the baseline",
    responses={**ok_response(description="the run"), **error_responses(401, 403, 404)},
    tags=["runs"],
)
def describe(run_id: str) -> Response[str]:
    licence = _team_licence()
    run = runs.get_for_team(wiring.run_store(), run_id, str(licence.team))
    return json_response(200, run.public())


@router.get(
    "/runs/<run_id>/report",
    summary="The run's stored, immutable report (a download)",
    responses={**ok_response(description="the report"), **error_responses(401, 403, 404)},
    tags=["runs"],
)
def report(run_id: str) -> Response[str]:
    licence = _team_licence()
    body = runs.stored_report(wiring.run_store(), wiring.report_store(), run_id, str(licence.team))
    return Response(
        status_code=200,
        content_type="application/json",
        body=body.decode("utf-8"),
        headers={
            "Content-Disposition": f'attachment; filename="{run_id}.json"',
            "Cache-Control": "private, max-age=31536000, immutable",
        },
    )


@router.get(
    "/teams/<team>/runs",
    summary="The team's runs, newest first",
    responses={**ok_response(description="runs"), **error_responses(401, 403)},
    tags=["runs"],
)
def team_runs(team: str, limit: Annotated[int, Query(ge=1, le=200)] = 50) -> Response[str]:
    _team_licence(team)
    rows = [r.listing() for r in runs.team_runs(wiring.run_store(), team, limit=limit)]
    return json_response(200, {"team": team, "runs": rows})


@router.get(
    "/teams/<team>/baselines",
    summary="The team's baseline history per baseline name, oldest first",
    responses={**ok_response(description="baselines"), **error_responses(401, 403)},
    tags=["runs"],
)
def baselines(team: str) -> Response[str]:
    _team_licence(team)
    history = runs.team_baselines(wiring.run_store(), team)
    return json_response(200, runs.baselines_document(team, history))
