"""Hosted runs over HTTP: ``POST /runs``, ``GET /runs/{id}``, its report, a team's runs and baselines.

Team licences only (a single licence gets 403). Another team's run answers 404, so run ids
do not leak. The callback secret is derived from the bearer's key at submission
(``callback.callback_secret``) so the team can verify callbacks with the key it holds; the key
itself is never stored. The contract is docs/runs-contract.md (the user's guide: docs/hosted-scoring.md).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from pydantic import BaseModel, Field

from toolcall300.service.api import deps
from toolcall300.service.api.auth import bearer_key, require_licence
from toolcall300.service.api.resolver import (
    error_responses,
    json_response,
    make_router,
    ok_response,
    raw_body,
)
from toolcall300.service.domain import callback, runs
from toolcall300.service.domain.callback import callback_secret
from toolcall300.service.domain.licences import TEAM_PATTERN, Licence, LicenceStore
from toolcall300.service.domain.runs import submission
from toolcall300.service.errors import BadRequest, PayloadTooLarge
from toolcall300.service.observability import count

router = make_router()
MAX_BODY = 16 * 1024
#: On a local stack the body may carry the adapter's files or image (base64, ``adapter_files``
#: or ``adapter_image``).
MAX_LOCAL_BODY = 16 * 1024 + (submission.MAX_FILES_BYTES + 2) // 3 * 4


def _team_licence(store: LicenceStore, team: str | None = None) -> Licence:
    return require_licence(router.current_event.headers, store=store, tier="team", team=team)


class RunRequest(BaseModel):
    """A ``POST /runs`` body (docs/runs-contract.md): exactly one of ``image`` (AWS),
    ``adapter_cmd`` and ``adapter_image`` (a local stack only); the patterns are the ones the
    domain enforces."""

    image: Annotated[str | None, Field(pattern=submission.IMAGE_PATTERN)] = None
    platform: Annotated[str | None, Field(pattern=submission.PLATFORM_PATTERN)] = None
    adapter_cmd: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=submission.MAX_ARG_CHARS)]] | None,
        Field(min_length=1, max_length=submission.MAX_ARGS),
    ] = None
    #: A local stack only: the adapter's folder as a tar archive (plain or gzip), base64.
    adapter_files: Annotated[
        str | None, Field(max_length=(submission.MAX_FILES_BYTES + 2) // 3 * 4)
    ] = None
    #: A local stack only: the adapter's image (an OCI layout's tar or a ``docker save``
    #: archive), base64; its CMD is the adapter command, as on AWS.
    adapter_image: Annotated[
        str | None, Field(max_length=(submission.MAX_FILES_BYTES + 2) // 3 * 4)
    ] = None
    ref: Annotated[str, Field(pattern=submission.REF_PATTERN)]
    commit: Annotated[str, Field(pattern=submission.COMMIT_PATTERN)]
    baseline: Annotated[str, Field(pattern=submission.BASELINE_PATTERN)] = "main"
    #: ``single`` (the default), ``parallel`` or ``deltas`` (docs/tracks.md); the domain
    #: refuses any other with ``400 invalid_track``.
    track: Annotated[str | None, Field(max_length=32)] = None
    callback_url: Annotated[str | None, Field(max_length=submission.MAX_URL_CHARS)] = None


class RunLinks(BaseModel):
    self_: Annotated[str, Field(alias="self")]


class RunAccepted(BaseModel):
    run_id: str
    status: str
    links: RunLinks


class RunView(BaseModel):
    """The contract's ``GET /runs/{run_id}`` body."""

    run_id: str
    team: str
    status: str
    ref: str
    commit: str
    baseline: str
    track: str
    adapter: dict[str, Any]
    created_at: str
    started_at: str | None
    finished_at: str | None
    failure: dict[str, Any] | None
    sandbox: dict[str, Any] | None
    verdict: str | None
    summary: dict[str, Any] | None
    comparison: dict[str, Any] | None
    baseline_updated: bool
    attempts: int
    report_url: str | None
    links: RunLinks


class RunRow(BaseModel):
    run_id: str
    status: str
    verdict: str | None
    ref: str
    commit: str
    baseline: str
    track: str
    created_at: str
    finished_at: str | None
    summary: dict[str, Any] | None


class TeamRunsView(BaseModel):
    team: str
    runs: list[RunRow]


class BaselineEntry(BaseModel):
    run_id: str
    ref: str
    commit: str
    track: str
    set_at: str | None
    summary: dict[str, Any] | None


class BaselinesView(BaseModel):
    """One page: the ``limit`` baselines set most recently after the cursor (of any name),
    grouped by name, each name's oldest first; ``next`` is the link to the older page, null
    on the last (docs/runs-contract.md, baselines)."""

    team: str
    baselines: dict[str, list[BaselineEntry]]
    next: str | None


TeamId = Annotated[str, Path(pattern=TEAM_PATTERN)]
RunId = Annotated[str, Path(max_length=64)]


@router.post(
    "/runs",
    summary="Submit a hosted scoring run (team licence); 202 with the run id",
    responses={
        **ok_response(RunAccepted, "accepted", status=202),
        **error_responses(400, 401, 403, 409, 413, 429),
    },
    tags=["runs"],
)
def submit(
    request: Annotated[RunRequest, Body()],
    served: deps.TheEdition,
    resolve: deps.Resolver,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)] = None,
) -> Response[str]:
    conf = served.runs_settings
    local = conf.toolcall300_local_stack
    if len(raw_body(router.current_event.raw_event)) > (MAX_LOCAL_BODY if local else MAX_BODY):
        raise PayloadTooLarge("the body is too large", code="body_too_large")
    licence = _team_licence(served.licences)
    sub = runs.parse_submission(
        request.model_dump(exclude_unset=True),
        local=local,
        ecr_region=None if local else conf.aws_region,
    )
    launcher = served.run_launcher
    launcher.admit(sub, team=str(licence.team))  # before a run exists or a quota is taken
    if sub.callback_url is not None:
        try:  # checked here and again at each delivery (docs/hosted-scoring.md, "Callbacks")
            callback.checked_addresses(
                sub.callback_url,
                local=local,
                resolve=resolve,
                own_ports=served.own_ports,
            )
        except callback.DestinationRefused as exc:
            raise BadRequest(f"'callback_url' refused: {exc}", code="callback_not_allowed") from exc
    key = bearer_key(router.current_event.headers) or ""
    now = datetime.now(UTC)
    run, created = runs.submit(
        served.runs,
        sub,
        team=str(licence.team),
        licence_id=licence.account_id,  # member keys share their team purchase's quota
        take_quota=served.quota_taker(),
        now=now,
        idempotency_key=idempotency_key,
        callback_secret=callback_secret(key),
        keep=lambda: launcher.keep(sub, team=str(licence.team)),
    )
    if created:
        count("RunsSubmitted")
        run = launcher.launch(run, now=now)
    body = RunAccepted.model_validate(
        {"run_id": run.run_id, "status": run.status, "links": {"self": f"/runs/{run.run_id}"}}
    )
    return json_response(202, body.model_dump(by_alias=True), {"Location": f"/runs/{run.run_id}"})


@router.get(
    "/runs/<run_id>",
    summary="A run: status, verdict, summary, comparison with the baseline",
    responses={**ok_response(RunView, "the run"), **error_responses(400, 401, 403, 404)},
    tags=["runs"],
)
def describe(run_id: RunId, store: deps.Licences, run_store: deps.Runs) -> Response[str]:
    licence = _team_licence(store)
    run = runs.get_for_team(run_store, run_id, str(licence.team))
    return json_response(200, RunView.model_validate(run.public()).model_dump(by_alias=True))


@router.get(
    "/runs/<run_id>/report",
    summary="The run's stored, immutable report (a download)",
    responses={**ok_response(description="the report"), **error_responses(401, 403, 404)},
    tags=["runs"],
)
def report(run_id: RunId, served: deps.TheEdition) -> Response[str]:
    licence = _team_licence(served.licences)
    body = runs.stored_report(served.runs, served.report_store, run_id, str(licence.team))
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
    responses={**ok_response(TeamRunsView, "runs"), **error_responses(400, 401, 403)},
    tags=["runs"],
)
def team_runs(
    team: TeamId,
    store: deps.Licences,
    run_store: deps.Runs,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> TeamRunsView:
    _team_licence(store, team)
    rows = [r.listing() for r in runs.team_runs(run_store, team, limit=limit)]
    return TeamRunsView.model_validate({"team": team, "runs": rows})


@router.get(
    "/teams/<team>/baselines",
    summary="The team's baselines, a page at a time: newest first, grouped by name; `next` for older",
    responses={**ok_response(BaselinesView, "baselines"), **error_responses(400, 401, 403)},
    tags=["runs"],
)
def baselines(
    team: TeamId,
    store: deps.Licences,
    run_store: deps.Runs,
    limit: Annotated[int, Query(ge=1, le=runs.MAX_BASELINE_PAGE)] = runs.BASELINE_PAGE,
    cursor: Annotated[str | None, Query()] = None,
) -> BaselinesView:
    _team_licence(store, team)
    page, next_cursor = runs.baselines_page(run_store, team, limit=limit, cursor=cursor)
    doc = runs.baselines_document(team, page)
    doc["next"] = (
        f"/teams/{team}/baselines?{urlencode({'limit': limit, 'cursor': next_cursor})}"
        if next_cursor
        else None
    )
    return BaselinesView.model_validate(doc)
