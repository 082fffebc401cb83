"""The tool-argument/v1 endpoints: ``GET /criteria``, ``POST /precheck``, ``POST /check``, ``GET /metrics``.

The tool-argument/v1 criteria (``GET /criteria``, ``free_tier``): without a licence, every
``/check`` and ``/precheck`` attempt takes one free check (100 a day, 5 s apart) before any work
is done, a refusal included (decision D24: reaching a refusal is work too; a refusal is never
charged to a pack). With a licence, a verdict costs one paid check and a refusal nothing. The body is
handed to ``toolcall300.argcheck.check`` as raw bytes and never logged or stored: only the status
summary (verdict, counts, defect codes) reaches the metrics counters. Criteria D20: a schema
with a ``pattern`` is checked in a CPU-bounded child (``argcheck_bounded``); past the budget
the answer is the free refusal ``CAP-EXCEEDED:check_seconds`` (422). Criteria D26: those
checks are bounded per verified payer (one at a time, a daily count of budget overruns); the
payer of a licence is the purchase that paid (``Licence.account_id``), so a team's member keys,
which are free and uncapped in number, share their purchase's one lane and one budget rather
than each bringing another.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import Response

from toolcall300.argcheck import check as argcheck
from toolcall300.argcheck import report
from toolcall300.argcheck.criteria import criteria_document
from toolcall300.service.api import bounded_check as argcheck_bounded
from toolcall300.service.api import deps
from toolcall300.service.api.auth import optional_licence
from toolcall300.service.api.resolver import (
    ConstantDocument,
    error_responses,
    json_response,
    make_router,
    ok_response,
    raw_body,
    refusal_responses,
    source_ip,
)
from toolcall300.service.domain import ledger, usage
from toolcall300.service.domain.ledger import CheckLedger
from toolcall300.service.domain.licences import Licence
from toolcall300.service.errors import (
    BadRequest,
    PaymentRequired,
    UpstreamUnavailable,
    refusal_status,
)
from toolcall300.service.observability import count, logger
from toolcall300.service.settings import ArgcheckSettings

if TYPE_CHECKING:
    from toolcall300.service.sdk.signing import ReportKeys

router = make_router()
CRITERIA_PATH = "/criteria"


def _answer(response: dict[str, Any]) -> Response[str]:
    refusal = response.get("refusal")
    status = refusal_status(refusal["code"]) if isinstance(refusal, dict) else 200
    return json_response(status, response)


@router.get(
    CRITERIA_PATH,
    summary="The tool-argument/v1 criteria document",
    responses=ok_response(),
    tags=["argcheck"],
)
def criteria() -> Response[str]:
    return _CRITERIA.response(router.current_event.headers)


#: Built once per process, with its ETag (a constant document).
_CRITERIA = ConstantDocument(criteria_document, path=CRITERIA_PATH)


@router.post(
    "/precheck",
    summary="Assessability only (free): a named refusal or assessable: true",
    responses={
        **ok_response(),
        **refusal_responses(400, 413, 422),
        **error_responses(401, 402, 429),
    },
    tags=["argcheck"],
)
def precheck(served: deps.TheEdition, settings: deps.Argcheck, clock: deps.Clock) -> Response[str]:
    event = router.current_event.raw_event
    body = raw_body(event)
    # a bad key is its 401, as on /check
    licence = optional_licence(router.current_event.headers, store=served.licences)
    payer = licence.account_id if licence else _take_free_check(served, settings, event, clock)
    return _answer(_bounded(body, served, clock, payer=payer, settings=settings, precheck=True))


def _bounded(
    body: bytes,
    served: deps.Edition,
    clock: Callable[[], datetime],
    *,
    payer: str,
    settings: ArgcheckSettings,
    precheck: bool = False,
) -> dict[str, Any]:
    """The check, bounded (D20), and a pattern check bounded per payer (D26): refused before
    any work once the payer's checks ran past the budget too often today, one at a time per
    payer, and counted when it runs past the budget. ``payer`` is what the route verified."""
    if not argcheck_bounded.needs_bound(body):
        return argcheck_bounded.check_body_bounded(body, precheck=precheck)
    store, per_day = served.argcheck_usage, settings.check_seconds_refusals_per_day
    usage.check_seconds_left(store, payer, per_day=per_day, now=clock())
    with served.pattern_lanes.lane(payer):
        response = argcheck_bounded.check_body_bounded(body, precheck=precheck)
    if argcheck_bounded.ran_over(response):
        usage.count_check_seconds(store, payer, per_day=per_day, now=clock())
    return response


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
def check(served: deps.TheEdition, settings: deps.Argcheck, clock: deps.Clock) -> Response[str]:
    event = router.current_event.raw_event
    store = served.argcheck_usage
    licence = optional_licence(router.current_event.headers, store=served.licences, tier="checks")
    body = raw_body(event)
    # D24: an unauthenticated attempt is counted before the work, whatever it answers
    payer = licence.account_id if licence else _take_free_check(served, settings, event, clock)
    response = _bounded(body, served, clock, payer=payer, settings=settings)
    summary = argcheck.status_summary(response)
    paid = licence is not None and "refusal" not in response
    if "refusal" not in response:
        request = argcheck.parse_body(body)  # it parsed: the answer is a verdict
        _stop_if_invented(request, response)
        digest = report.request_digest(request)  # once, for the ledger's id and the report
    keys = served.report_keys if paid else None  # before the charge: no key, no check taken
    # The charge (with its day's count) and the metrics commit together: one transaction on
    # the one-machine edition, where each was its own (Edition.together).
    with served.together():
        if licence is not None and paid:
            _charge(served.ledger, licence, digest, summary)
        usage.record_metrics(store, summary)
    if keys is not None:
        response = _signed(digest, response, keys)
    count("Checks")
    return _answer(response)


def _take_free_check(
    served: deps.Edition,
    settings: ArgcheckSettings,
    event: dict[str, Any],
    clock: Callable[[], datetime],
) -> str:
    """The criteria's free tier (100 a day, 5 s apart), taken by every unauthenticated attempt
    before its work (D24), so neither a backtracking pattern nor a stream of refusals is free
    work for the service. Returns the payer it was charged to: the pseudonymous client."""
    now = clock()
    client = usage.client_id(source_ip(event), served.client_id_salt())
    try:
        with served.together():  # the free check taken and counted in one commit
            usage.take_free_check(
                served.argcheck_usage,
                client,
                per_day=settings.free_checks_per_day,
                min_gap_s=settings.free_min_interval_s,
                now=now,
            )
            ledger.count_free(served.ledger, now)
    except PaymentRequired as exc:
        exc.details = ledger.payment_details()  # the 402 says the price and where to buy
        raise
    return "free#" + client


def _charge(checks: CheckLedger, licence: Licence, digest: str, summary: dict[str, Any]) -> None:
    """One check from the licence's pack, counted once per ``Idempotency-Key`` (a retry with the
    same key and request is answered again and not charged again)."""
    key = router.current_event.headers.get("idempotency-key")
    if key is not None and not _IDEMPOTENCY_KEY.fullmatch(key):
        raise BadRequest(
            "Idempotency-Key must be 1 to 128 printable ASCII characters",
            code="invalid_idempotency_key",
        )
    version, _ = _criteria_facts()
    now = datetime.now(UTC)
    house = licence.source == "manual"
    record = ledger.ledger_record(
        payer=licence.licence_id,
        now=now,
        payment_id="",  # the store fills in the pack's payment
        criteria_version=version,
        summary=summary,
        house=house,
    )
    ident = ledger.check_id(licence.licence_id, key, digest, secrets.token_hex(16))
    if ledger.charge_check(
        checks, payer=licence.licence_id, check=ident, record=record, house=house
    ):
        count("PaidChecks")


_IDEMPOTENCY_KEY = re.compile(r"[!-~]{1,128}")


def _stop_if_invented(request: dict[str, Any], response: dict[str, Any]) -> None:
    """The criteria's stop-serving tripwire, checked before any answer leaves: the repaired
    blob must be the submitted one plus the diff, every entry a whitelist rule."""
    problems = report.invented_value_problems(request, response)
    if problems:
        count("InventedValue")
        logger.error("repair invented a value; answer withheld", extra={"problems": problems})
        raise UpstreamUnavailable(
            "the check's answer failed its own replay and was withheld; nothing was charged",
            code="answer_withheld",
        )


@cache
def _criteria_facts() -> tuple[str, dict[str, str]]:
    """The criteria version and the vectors' id and pin a report names (built once)."""
    doc = criteria_document()
    return doc["version"], doc["corpus"]


def _signed(digest: str, response: dict[str, Any], keys: ReportKeys) -> dict[str, Any]:
    """A paid answer as a signed report (docs/argcheck-report.md); ``digest``: the request's
    (``report.request_digest``)."""
    version, corpus = _criteria_facts()
    unsigned = report.unsigned_report(
        response,
        criteria_version=version,
        corpus=corpus,
        digest=digest,
        issued_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return report.sign_report(unsigned, kid=keys.current.kid, sign=keys.current.sign)


@router.get(
    "/.well-known/jwks.json",
    summary="The public keys that sign argument-check reports (JWKS, RFC 7517)",
    responses=ok_response(),
    tags=["argcheck"],
)
def jwks(served: deps.TheEdition) -> Response[str]:
    return json_response(200, served.report_keys.jwks(), {"Cache-Control": "public, max-age=300"})


@router.get(
    "/metrics",
    summary="Shares by verdict, defect code and refusal code and the 30-day tripwires; the "
    "counts with an operator's key",
    responses={**ok_response(), **error_responses(401)},
    tags=["argcheck"],
)
def metrics(served: deps.TheEdition) -> Response[str]:
    """Anyone sees what the criteria promise in public: how verdicts, defects and refusals
    are shared out, and the 30-day tripwires with their ratios. The counts themselves (the
    business's volumes) only an operator's own licence sees (``source`` manual, the house
    licences the ledger already keeps out of paid use); docs/api.md."""
    licence = optional_licence(router.current_event.headers, store=served.licences)
    # The same window the scheduled measure publishes for the alarms (service/tripwires.py).
    window = ledger.window_metrics(served.ledger, datetime.now(UTC))
    counts = usage.read_metrics(served.argcheck_usage)
    if licence is not None and licence.source == "manual":
        return json_response(200, {**counts, "window": window})
    return json_response(200, {**usage.shares(counts), "window": ledger.public_window(window)})
