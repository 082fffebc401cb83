"""The tool-argument/v1 endpoints: ``GET /criteria``, ``POST /precheck``, ``POST /check``, ``GET /metrics``.

The tool-argument/v1 criteria (``GET /criteria``, ``free_tier``): refusals are free and never count against the free tier; a check with a verdict
costs one free check (100 a day, 5 s apart) unless a valid licence is presented. The body is
handed to ``toolcall300.argcheck.check`` as raw bytes and never logged or stored: only the status
summary (verdict, counts, defect codes) reaches the metrics counters. Criteria D20: a schema
with a ``pattern`` is checked in a CPU-bounded child (``argcheck_bounded``); past the budget
the answer is the free refusal ``CAP-EXCEEDED:check_seconds`` (422).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.event_handler import Response

from toolcall300.argcheck import check as argcheck
from toolcall300.service.api import bounded_check as argcheck_bounded
from toolcall300.service.api.auth import optional_licence
from toolcall300.service.api.resolver import (
    error_responses,
    json_response,
    make_router,
    ok_response,
    raw_body,
    refusal_responses,
    source_ip,
)
from toolcall300.service.api.wiring import client_id_salt, licence_store, usage_store
from toolcall300.service.domain import usage
from toolcall300.service.errors import refusal_status
from toolcall300.service.observability import count
from toolcall300.service.settings import ArgcheckSettings, get_settings

router = make_router()


def _answer(response: dict[str, Any]) -> Response[str]:
    refusal = response.get("refusal")
    status = refusal_status(refusal["code"]) if isinstance(refusal, dict) else 200
    return json_response(status, response)


@router.get(
    "/criteria",
    summary="The tool-argument/v1 criteria document",
    responses=ok_response(),
    tags=["argcheck"],
)
def criteria() -> Response[str]:
    from toolcall300.argcheck.criteria import criteria_document

    return json_response(200, criteria_document())


@router.post(
    "/precheck",
    summary="Assessability only (free): a named refusal or assessable: true",
    responses={**ok_response(), **refusal_responses(400, 413, 422)},
    tags=["argcheck"],
)
def precheck() -> Response[str]:
    return _answer(
        argcheck_bounded.check_body_bounded(raw_body(router.current_event.raw_event), precheck=True)
    )


@router.post(
    "/check",
    summary="Check one arguments blob against one schema: VALID, REPAIRED or UNREPAIRABLE",
    responses={
        **ok_response(),
        **refusal_responses(400, 413, 422),
        **error_responses(401, 402, 403, 429),
    },
    tags=["argcheck"],
)
def check() -> Response[str]:
    event = router.current_event.raw_event
    settings = get_settings(ArgcheckSettings)
    store = usage_store(ArgcheckSettings)
    licence = optional_licence(router.current_event.headers, store=licence_store())
    response = argcheck_bounded.check_body_bounded(raw_body(event))
    if "refusal" not in response and licence is None:
        # tool-argument/v1 free tier; refusals above are free and never consume an allowance.
        usage.take_free_check(
            store,
            usage.client_id(source_ip(event), client_id_salt()),
            per_day=settings.free_checks_per_day,
            min_gap_s=settings.free_min_interval_s,
            now=datetime.now(UTC),
        )
    usage.record_metrics(store, argcheck.status_summary(response))
    count("Checks")
    return _answer(response)


@router.get(
    "/metrics",
    summary="Counts by verdict, defect code and refusal code (nothing else)",
    responses=ok_response(),
    tags=["argcheck"],
)
def metrics() -> Response[str]:
    return json_response(200, usage.read_metrics(usage_store(ArgcheckSettings)))
