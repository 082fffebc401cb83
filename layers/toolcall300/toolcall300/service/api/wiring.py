"""Production collaborators, built at the edge on first use from the function's settings.

Routes call these to get the stores they pass to domain functions. Tests and the local stack
reset them with :func:`clear_ports` after changing the environment. :func:`edition` is the only
place that decides which adapter set backs the ports: :class:`AwsEdition` (``sdk.dynamo``,
``sdk.runs``, ``sdk.s3``, Secrets Manager, KMS) on a deployment, the one-machine edition's
``statefolder.folder.LocalEdition`` (SQLite and files under the state folder) when the local
stack has set ``TOOLCALL300_STATE_DIR``; the factories below ask it and branch on nothing.
The two sets keep the same port contracts (tests/unit/test_store_contract.py runs one suite
against both).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from toolcall300.service.domain import ledger, usage
from toolcall300.service.domain.ledger import CheckLedger
from toolcall300.service.domain.licences import LicenceStore
from toolcall300.service.domain.runs import RunStore
from toolcall300.service.domain.usage import LaneStore, UsageStore
from toolcall300.service.errors import TooManyRequests, UpstreamUnavailable
from toolcall300.service.observability import logger
from toolcall300.service.sdk.aws import reset_clients, signing_client
from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable, UsageTable
from toolcall300.service.sdk.ecr import EcrImages
from toolcall300.service.sdk.runs import BatchApi, ReportObjects, RunTable
from toolcall300.service.sdk.s3 import CorpusObjects
from toolcall300.service.settings import (
    ArgcheckSettings,
    CheckLedgerSettings,
    CorpusSettings,
    LicenceSettings,
    LocalEditionSettings,
    RunsSettings,
    WebhookSettings,
    clear_settings,
    get_settings,
)

if TYPE_CHECKING:
    from toolcall300.service.api.bounded_check import PatternLanes
    from toolcall300.service.domain.runs import Corpus, Launcher, PinnedCorpora, Run
    from toolcall300.service.hosted.flow import HostedDeps, JobLinks
    from toolcall300.service.sdk.signing import ReportKeys
    from toolcall300.service.statefolder.folder import LocalEdition


@cache
def local_edition() -> LocalEdition | None:
    """The one-machine edition's adapters over the state folder, or None on AWS."""
    conf = get_settings(LocalEditionSettings)
    if not conf.state_dir:
        return None
    from toolcall300.service.statefolder.folder import LocalEdition, StateFolder

    return LocalEdition(
        StateFolder(Path(conf.state_dir)),
        public_url=lambda: get_settings(LocalEditionSettings).public_url,
    )


def close_local_edition() -> None:
    """Close the state folder's database (the local stack's stop) and forget it."""
    edition = local_edition() if local_edition.cache_info().currsize else None
    if edition is not None:
        edition.close()
    local_edition.cache_clear()


class Edition(Protocol):
    """What differs between the two deployments: the adapter behind each port. Two
    implementations keep one shape, :class:`AwsEdition` (``sdk``) and the one-machine
    ``statefolder.folder.LocalEdition``; tests/unit/test_store_contract.py runs one contract
    per port against both. A new port is one member here and in each, and one factory below."""

    @property
    def licences(self) -> LicenceStore: ...
    @property
    def ledger(self) -> CheckLedger: ...
    @property
    def runs(self) -> RunStore: ...
    def usage_for(self, table: str) -> UsageStore: ...
    def corpus(self, bucket: str) -> Any: ...
    def reports(self, bucket: str) -> Any: ...
    def secret_json(self, name: str, *, max_age: int) -> dict[str, Any]: ...
    def report_mac_for(self, key_id: str) -> Callable[[bytes], bytes]: ...
    def idempotency(self) -> Any: ...
    def wake(self) -> None: ...
    def together(self) -> contextlib.AbstractContextManager[Any]: ...
    @property
    def lanes(self) -> LaneStore | None: ...


class AwsEdition:
    """The AWS deployment's adapters (DynamoDB, S3, Secrets Manager, KMS), named by the
    function's settings and each built on first use (a function reads only its own)."""

    @cached_property
    def licences(self) -> LicenceStore:
        return LicenceTable(get_settings(LicenceSettings).licences_table)

    @cached_property
    def ledger(self) -> CheckLedger:
        return CheckLedgerTable(get_settings(CheckLedgerSettings).check_ledger_table)

    @cached_property
    def runs(self) -> RunStore:
        return RunTable(runs_settings().runs_table)

    def usage_for(self, table: str) -> UsageStore:
        return UsageTable(table)

    def corpus(self, bucket: str) -> CorpusObjects:
        return CorpusObjects(bucket)

    def reports(self, bucket: str) -> ReportObjects:
        return ReportObjects(bucket)

    def secret_json(self, name: str, *, max_age: int) -> dict[str, Any]:
        # Imported here: Powertools' parameters utility loads boto3 (about 0.35 s), which the
        # one-machine edition never needs for a secret.
        from toolcall300.service.sdk import secrets as secrets_adapter

        return secrets_adapter.get_json_secret(name, max_age=max_age)

    def report_mac_for(self, key_id: str) -> Callable[[bytes], bytes]:
        from toolcall300.service.sdk.kms import generate_mac

        return lambda message: generate_mac(key_id, message)

    def idempotency(self) -> Any:
        return None  # the default: Powertools' DynamoDB persistence layer

    def wake(self) -> None:
        """Nothing to wake: on AWS, Batch is the queue."""

    def together(self) -> contextlib.AbstractContextManager[Any]:
        """Each write stays its own conditional write (DynamoDB's, as each port makes it)."""
        return contextlib.nullcontext()

    #: No shared lanes: a Lambda environment serves one request at a time (its own lanes).
    lanes: LaneStore | None = None


@cache
def aws_edition() -> AwsEdition:
    return AwsEdition()


def edition() -> Edition:
    """The one place that decides the deployment: the state folder's edition when the local
    stack has set ``TOOLCALL300_STATE_DIR`` (:func:`local_edition`), AWS otherwise."""
    local = local_edition()
    return local if local is not None else aws_edition()


def licence_store() -> LicenceStore:
    return edition().licences


@cache
def usage_store(kind: type[CorpusSettings] | type[ArgcheckSettings] | None = None) -> UsageStore:
    return edition().usage_for(
        get_settings(kind).usage_table if kind else runs_settings().usage_table
    )


@cache
def corpus_objects() -> Any:
    """The corpus bucket (``corpus.ObjectStore``: read, presign)."""
    return edition().corpus(get_settings(CorpusSettings).corpus_bucket)


def secret_json(name: str, *, max_age: int) -> dict[str, Any]:
    """The JSON object stored as secret ``name``: Secrets Manager through Powertools, or the
    state folder's file of that name (mode 600) on the one-machine edition."""
    return edition().secret_json(name, max_age=max_age)


def webhook_secrets() -> list[str]:
    """Current and previous Stripe signing secrets (both valid during a rotation)."""
    s = get_settings(WebhookSettings)
    doc = secret_json(s.stripe_webhook_secret_name, max_age=s.secrets_max_age_s)
    return [str(doc.get(k) or "") for k in ("current", "previous") if doc.get(k)]


def client_id_salt() -> bytes:
    """The HMAC key that pseudonymises free-tier callers (generated at deploy, cached)."""
    s = get_settings(ArgcheckSettings)
    doc = secret_json(s.client_id_salt_secret_name, max_age=s.secrets_max_age_s)
    salt = str(doc.get("salt") or "")
    if not salt:
        raise UpstreamUnavailable("the free tier is not configured", code="secret_unavailable")
    return salt.encode()


def together() -> contextlib.AbstractContextManager[Any]:
    """Port calls that commit together where the edition can (``Edition.together``): one
    transaction on the one-machine edition, each call's own write on AWS. Each call keeps its
    own conditions either way; this only saves commits and never splits what one call does."""
    return edition().together()


@cache
def pattern_lanes() -> PatternLanes:
    """Criteria D26's one check with a pattern in flight per payer: this process's lanes,
    shared through the edition's store where several processes serve one state (the
    one-machine stack's database)."""
    from toolcall300.service.api.bounded_check import PatternLanes

    return PatternLanes(shared=edition().lanes)


def check_ledger() -> CheckLedger:
    return edition().ledger


def report_keys() -> ReportKeys:
    """The keys that sign paid argument-check reports, derived once per process from the
    stack's KMS HMAC key, or on the one-machine edition from the state folder's seed, the same
    way (``sdk.signing``; a failure is not cached, so the next call retries)."""
    s = get_settings(ArgcheckSettings)
    return _derived_keys(s.report_signing_key_id, s.report_key_generations)


@lru_cache(maxsize=4)
def _derived_keys(key_id: str, generations: tuple[int, ...]) -> ReportKeys:
    from toolcall300.service.sdk.signing import ReportKeys  # cryptography: argcheck only

    return ReportKeys.derived(edition().report_mac_for(key_id), generations)


def stripe_api_key() -> str:
    """The stored restricted Stripe API key ("" when none is configured)."""
    s = get_settings(LicenceSettings)
    if not s.stripe_api_key_secret_name:
        return ""
    doc = secret_json(s.stripe_api_key_secret_name, max_age=s.secrets_max_age_s)
    return str(doc.get("api_key") or "")


def payment_lookup() -> Callable[[str], str | None]:
    """charge id -> payment intent, through Stripe's API with the stored restricted key."""
    from toolcall300.service.sdk.stripe import charge_payment_intent

    return lambda charge_id: charge_payment_intent(charge_id, api_key=stripe_api_key())


def session_lookup() -> Callable[[str], list[str]]:
    """session id -> its payment intent and charge ids, through Stripe's API."""
    from toolcall300.service.sdk.stripe import session_payment_ids

    return lambda session_id: session_payment_ids(session_id, api_key=stripe_api_key())


@cache
def stripe_event_processor() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """``webhook.process_event`` bound to the production stores, once per Stripe event id."""
    from toolcall300.service.domain.webhook import process_event
    from toolcall300.service.sdk.idempotency import once_per_event_id

    s = get_settings(WebhookSettings)
    lookup, by_session = payment_lookup(), session_lookup()
    return once_per_event_id(
        lambda event: process_event(
            event,
            store=licence_store(),
            lookup=lookup,
            session_lookup=by_session,
            log=lambda message, fields: logger.info(message, extra=fields),
            alert=lambda message, fields: logger.error(message, extra=fields),
            on_change=lambda licence, effect: ledger.on_licence_change(
                check_ledger(), licence, effect, now=datetime.now(UTC)
            ),
        ),
        table=s.idempotency_table,
        persistence=edition().idempotency(),
        expires_after_s=s.idempotency_expiry_s,
    )


def runs_settings() -> RunsSettings:
    """What the runs functions, the local worker and the sweeper are configured with."""
    conf: RunsSettings = get_settings(RunsSettings)
    return conf


def run_store() -> RunStore:
    return edition().runs


@cache
def report_store() -> Any:
    """The reports bucket (``runs.ReportStore`` plus ``presign``)."""
    return edition().reports(runs_settings().reports_bucket)


@cache
def batch_api() -> BatchApi:
    return BatchApi()


@cache
def image_registry() -> EcrImages:
    """What ECR says about adapter images (the runs function checks one before submitting)."""
    return EcrImages()


def job_link_objects(*, session_name: str) -> JobLinks:
    """A fresh link-signing session (``JOB_LINK_ROLE_ARN``) for one job's two links; never
    cached: each job's links get the session's whole hour."""
    from toolcall300.service.hosted.flow import JobLinks

    conf = runs_settings()
    s3, expires = signing_client(conf.job_link_role_arn, session_name=session_name)
    return JobLinks(
        CorpusObjects(conf.corpus_bucket, s3), ReportObjects(conf.reports_bucket, s3), expires
    )


@cache
def job_inputs_objects() -> CorpusObjects:
    """The corpus bucket as the runs function sees it: only ``job-inputs/`` (template policy)."""
    return CorpusObjects(runs_settings().corpus_bucket)


@cache
def scoring_corpora() -> PinnedCorpora:
    """The private corpora the trusted side scores against, by sha256, from the corpus bucket
    (a run is scored against the version its inputs came from: ``domain.runs.PinnedCorpora``)."""
    from toolcall300.service.domain.runs import PinnedCorpora

    return PinnedCorpora(edition().corpus(runs_settings().corpus_bucket).read)


def scoring_corpus() -> Corpus:
    """The current private corpus (read now)."""
    return scoring_corpora()(None)


def quota_taker(now: datetime | None = None) -> Callable[[str], None]:
    """Count one run against a licence's daily cap (429 + Retry-After when it is spent)."""
    table = usage_store()
    limit = runs_settings().runs_per_day

    def take(licence_id: str) -> None:
        usage.take(
            table,
            f"runs#{licence_id}",
            limit=limit,
            now=now or datetime.now(UTC),
            spent=TooManyRequests,
        )

    return take


def clock() -> datetime:
    """Now, in UTC, as the free tier reads it: its "5 s apart" rule is decided on this clock,
    so a test replaces it (``monkeypatch.setattr(wiring, "clock", ...)``) instead of racing
    the wall clock on a loaded machine."""
    return datetime.now(UTC)


def callback_resolver() -> Callable[..., Any]:
    """How callback hosts are resolved (``socket.getaddrinfo``; tests replace it so that no
    test resolves a real name or reaches a non-loopback address)."""
    import socket

    return socket.getaddrinfo


def run_queued() -> None:
    """A run is in the table as ``queued`` for a local worker: wake the edition's worker pool
    (the stack sets ``LocalEdition.wake`` when it starts the pool; on AWS, Batch is the queue)."""
    edition().wake()


def own_ports() -> frozenset[int]:
    """The local stack's own listening port (from ``TOOLCALL300_PUBLIC_URL``): callbacks are
    never sent there (``domain.callback``); empty on AWS."""
    url = get_settings(LocalEditionSettings).public_url
    port = urlsplit(url).port if url else None
    return frozenset({port}) if port else frozenset()


@cache
def run_notifier() -> Callable[[Run], None]:
    """A run's end -> its signed callback, for both deployment modes (never raises): the
    settings' attempts and backoff, the destination rule checked again at each attempt (on a
    local stack never the stack's own port, :func:`own_ports`)."""
    from toolcall300.service.domain import callback
    from toolcall300.service.domain.runs import callback_document

    conf = runs_settings()

    def notify(run: Run) -> None:
        if not run.callback_url or not run.callback_secret:
            return
        try:
            outcome = callback.deliver(
                run.callback_url,
                callback_document(run),
                run.callback_secret,
                attempts=conf.callback_attempts,
                base_delay=conf.callback_base_delay_s,
                post=callback.guarded_post(  # resolver and own port looked up per delivery
                    local=conf.toolcall300_local_stack,
                    resolve=callback_resolver(),
                    own_ports=own_ports(),
                ),
            )
        except Exception:
            logger.exception("callback failed", extra={"run_id": run.run_id})
            return
        logger.info(
            "callback delivered" if outcome.delivered else "callback undelivered",
            extra={
                "run_id": run.run_id,
                "attempts": outcome.attempts,
                "status": outcome.last_status,
            },
        )

    return notify


@cache
def hosted_deps() -> HostedDeps:
    """The AWS path's collaborators (``service.hosted.flow``), built once per process."""
    from toolcall300.service.hosted.flow import HostedDeps

    conf = runs_settings()
    return HostedDeps(
        store=run_store(),
        reports=report_store(),
        batch=batch_api(),
        read_inputs=job_inputs_objects().read,
        job_links=lambda name: job_link_objects(session_name=name),
        corpus=scoring_corpora(),
        describe_image=lambda image: image_registry().describe(image),
        notify=run_notifier(),
        queue=conf.batch_job_queue,
        base_definition=conf.batch_job_definition,
        max_attempts=conf.max_attempts,
        network_isolated=conf.adapter_network_isolated,
    )


@cache
def run_launcher() -> Launcher:
    """What runs a new run: AWS Batch, or a local stack's worker pool (docs/runs-contract.md)."""
    from toolcall300.service.domain.runs import LocalQueue

    if runs_settings().toolcall300_local_stack:
        from toolcall300.jobs.sandbox import held_layers
        from toolcall300.service.settings import LocalWorkerSettings

        image = get_settings(LocalWorkerSettings).harness_image
        return LocalQueue(files=report_store(), wake=run_queued, held=lambda: held_layers(image))
    from toolcall300.service.hosted.flow import BatchLauncher

    return BatchLauncher(hosted_deps())


def clear_ports() -> None:
    """Forget every cached collaborator, setting, client and secret (closing the state
    folder's database, if one was open)."""
    close_local_edition()
    for fn in (
        aws_edition,
        usage_store,
        pattern_lanes,
        corpus_objects,
        stripe_event_processor,
        report_store,
        batch_api,
        job_inputs_objects,
        image_registry,
        scoring_corpora,
        run_notifier,
        hosted_deps,
        run_launcher,
        _derived_keys,
    ):
        fn.cache_clear()
    clear_settings()
    reset_clients()
    if "toolcall300.service.sdk.secrets" in sys.modules:  # its cache exists once it is loaded
        sys.modules["toolcall300.service.sdk.secrets"].clear_secret_cache()
    from toolcall300.service.domain import corpus

    corpus.clear_cache()
