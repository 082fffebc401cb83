"""The composition root: one :class:`Edition` per deployment, and every port built from it.

An edition is chosen once, at start, and holds what differs between the two deployments:
its adapter set (:class:`Adapters`: :class:`AwsAdapters` over ``sdk`` (DynamoDB, S3, Secrets
Manager, KMS) on AWS, the one-machine ``statefolder.folder.LocalAdapters`` (SQLite and files
under the state folder) when ``TOOLCALL300_STATE_DIR`` is set), the settings it reads, and
each port built from those on first use and kept for its life. :func:`choose` is the only
place that decides the deployment. A Lambda environment's edition is chosen at its first
request (:func:`edition`); the local stack builds its own and hands that one object to its
routes (``api.deps``, through Powertools' ``dependency_overrides``) and to its worker pool,
and closes it at stop. A test that changes the environment starts a new edition
(:func:`renew`, :func:`installed`): there is no list of caches to clear. The two adapter
sets keep the same port contracts (tests/unit/test_store_contract.py runs one suite against
both, over the members :class:`Adapters` declares).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

from pydantic_settings import BaseSettings

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
)

if TYPE_CHECKING:
    from toolcall300.service.api.bounded_check import PatternLanes
    from toolcall300.service.domain.runs import Corpus, Launcher, PinnedCorpora, Run
    from toolcall300.service.hosted.flow import HostedDeps, JobLinks
    from toolcall300.service.sdk.signing import ReportKeys

S = TypeVar("S", bound=BaseSettings)


class Adapters(Protocol):
    """The adapter behind each port: what differs between the two deployments. Two
    implementations keep one shape, :class:`AwsAdapters` (``sdk``) and the one-machine
    ``statefolder.folder.LocalAdapters``; tests/unit/test_store_contract.py runs one contract
    per port against both, and checks that each provides every member declared here."""

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
    def close(self) -> None: ...


class AwsAdapters:
    """The AWS deployment's adapters (DynamoDB, S3, Secrets Manager, KMS), named by the
    function's settings and each built on first use (a function reads only its own). The
    boto3 clients and the secrets cache are the process's (``sdk.aws``, Powertools): a new
    set starts them afresh, so it signs with the endpoint and credentials it was chosen under,
    and its close forgets them."""

    def __init__(self, settings: Callable[[type[Any]], Any]) -> None:
        self._settings = settings
        self.close()

    @cached_property
    def licences(self) -> LicenceStore:
        return LicenceTable(self._settings(LicenceSettings).licences_table)

    @cached_property
    def ledger(self) -> CheckLedger:
        return CheckLedgerTable(self._settings(CheckLedgerSettings).check_ledger_table)

    @cached_property
    def runs(self) -> RunStore:
        return RunTable(self._settings(RunsSettings).runs_table)

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

    def close(self) -> None:
        """Forget the process's boto3 clients and cached secrets."""
        reset_clients()
        if "toolcall300.service.sdk.secrets" in sys.modules:  # its cache exists once loaded
            sys.modules["toolcall300.service.sdk.secrets"].clear_secret_cache()


class Edition:
    """One deployment: its adapters, the settings it reads (built from the environment on
    first use, then kept), and every port built from them on first use. One per deployment,
    chosen once at start (:func:`choose`); a new environment is a new edition, never a
    cleared one. Each port is one member here, over one member of :class:`Adapters`."""

    def __init__(self, adapters: Adapters | None = None, *, name: str = "aws") -> None:
        self._settings: dict[type[Any], Any] = {}
        self._closed = False
        self.name = name
        self.adapters: Adapters = adapters if adapters is not None else AwsAdapters(self.settings)

    def settings(self, kind: type[S]) -> S:
        """``kind`` built from the environment on first use, then the same object."""
        found = self._settings.get(kind)
        if found is None:
            found = self._settings.setdefault(kind, kind())
        return found  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close what the adapters hold open (the state folder's database) and the corpus
        caches read through them; a second call does nothing."""
        from toolcall300.service.domain import corpus

        if self._closed:
            return
        self._closed = True
        self.adapters.close()
        corpus.clear_cache()

    # ---------------------------------------------------------------- stores and buckets

    @property
    def licences(self) -> LicenceStore:
        return self.adapters.licences

    @property
    def ledger(self) -> CheckLedger:
        return self.adapters.ledger

    @property
    def runs(self) -> RunStore:
        return self.adapters.runs

    @cached_property
    def argcheck_usage(self) -> UsageStore:
        return self.adapters.usage_for(self.settings(ArgcheckSettings).usage_table)

    @cached_property
    def corpus_usage(self) -> UsageStore:
        return self.adapters.usage_for(self.settings(CorpusSettings).usage_table)

    @cached_property
    def runs_usage(self) -> UsageStore:
        return self.adapters.usage_for(self.runs_settings.usage_table)

    @cached_property
    def corpus_objects(self) -> Any:
        """The corpus bucket (``corpus.ObjectStore``: read, presign)."""
        return self.adapters.corpus(self.settings(CorpusSettings).corpus_bucket)

    @cached_property
    def report_store(self) -> Any:
        """The reports bucket (``runs.ReportStore`` plus ``presign``)."""
        return self.adapters.reports(self.runs_settings.reports_bucket)

    def together(self) -> contextlib.AbstractContextManager[Any]:
        """Port calls that commit together where the adapters can (``Adapters.together``):
        one transaction on the one-machine edition, each call's own write on AWS. Each call
        keeps its own conditions either way; this only saves commits and never splits what
        one call does."""
        return self.adapters.together()

    # ---------------------------------------------------------------- secrets and keys

    def secret_json(self, name: str, *, max_age: int) -> dict[str, Any]:
        """The JSON object stored as secret ``name``: Secrets Manager through Powertools, or
        the state folder's file of that name (mode 600) on the one-machine edition."""
        return self.adapters.secret_json(name, max_age=max_age)

    def webhook_secrets(self) -> list[str]:
        """Current and previous Stripe signing secrets (both valid during a rotation)."""
        s = self.settings(WebhookSettings)
        doc = self.secret_json(s.stripe_webhook_secret_name, max_age=s.secrets_max_age_s)
        return [str(doc.get(k) or "") for k in ("current", "previous") if doc.get(k)]

    def client_id_salt(self) -> bytes:
        """The HMAC key that pseudonymises free-tier callers (generated at deploy, cached)."""
        s = self.settings(ArgcheckSettings)
        doc = self.secret_json(s.client_id_salt_secret_name, max_age=s.secrets_max_age_s)
        salt = str(doc.get("salt") or "")
        if not salt:
            raise UpstreamUnavailable("the free tier is not configured", code="secret_unavailable")
        return salt.encode()

    @cached_property
    def report_keys(self) -> ReportKeys:
        """The keys that sign paid argument-check reports, derived once per edition from the
        stack's KMS HMAC key, or on the one-machine edition from the state folder's seed, the
        same way (``sdk.signing``; a failure is not kept, so the next request retries)."""
        from toolcall300.service.sdk.signing import ReportKeys  # cryptography: argcheck only

        s = self.settings(ArgcheckSettings)
        mac = self.adapters.report_mac_for(s.report_signing_key_id)
        return ReportKeys.derived(mac, s.report_key_generations)

    def stripe_api_key(self) -> str:
        """The stored restricted Stripe API key ("" when none is configured)."""
        s = self.settings(LicenceSettings)
        if not s.stripe_api_key_secret_name:
            return ""
        doc = self.secret_json(s.stripe_api_key_secret_name, max_age=s.secrets_max_age_s)
        return str(doc.get("api_key") or "")

    # ---------------------------------------------------------------- argcheck

    @cached_property
    def pattern_lanes(self) -> PatternLanes:
        """Criteria D26's one check with a pattern in flight per payer: this process's lanes,
        shared through the adapters' store where several processes serve one state (the
        one-machine stack's database)."""
        from toolcall300.service.api.bounded_check import PatternLanes

        return PatternLanes(shared=self.adapters.lanes)

    # ---------------------------------------------------------------- Stripe webhook

    @cached_property
    def stripe_event_processor(self) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        """``webhook.process_event`` bound to this edition's stores, once per Stripe event id."""
        from toolcall300.service.domain.webhook import process_event
        from toolcall300.service.sdk.idempotency import once_per_event_id
        from toolcall300.service.sdk.stripe import charge_payment_intent, session_payment_ids

        s = self.settings(WebhookSettings)
        return once_per_event_id(
            lambda event: process_event(
                event,
                store=self.licences,
                lookup=lambda charge: charge_payment_intent(charge, api_key=self.stripe_api_key()),
                session_lookup=lambda session: session_payment_ids(
                    session, api_key=self.stripe_api_key()
                ),
                log=lambda message, fields: logger.info(message, extra=fields),
                alert=lambda message, fields: logger.error(message, extra=fields),
                on_change=lambda licence, effect: ledger.on_licence_change(
                    self.ledger, licence, effect, now=datetime.now(UTC)
                ),
            ),
            table=s.idempotency_table,
            persistence=self.adapters.idempotency(),
            expires_after_s=s.idempotency_expiry_s,
        )

    # ---------------------------------------------------------------- hosted runs

    @property
    def runs_settings(self) -> RunsSettings:
        """What the runs functions, the local worker and the sweeper are configured with."""
        return self.settings(RunsSettings)

    @cached_property
    def batch_api(self) -> BatchApi:
        return BatchApi()

    @cached_property
    def image_registry(self) -> EcrImages:
        """What ECR says about adapter images (the runs function checks one before submitting)."""
        return EcrImages()

    def job_link_objects(self, *, session_name: str) -> JobLinks:
        """A fresh link-signing session (``JOB_LINK_ROLE_ARN``) for one job's two links; never
        kept: each job's links get the session's whole hour."""
        from toolcall300.service.hosted.flow import JobLinks

        conf = self.runs_settings
        s3, expires = signing_client(conf.job_link_role_arn, session_name=session_name)
        return JobLinks(
            CorpusObjects(conf.corpus_bucket, s3), ReportObjects(conf.reports_bucket, s3), expires
        )

    @cached_property
    def job_inputs_objects(self) -> CorpusObjects:
        """The corpus bucket as the runs function sees it: only ``job-inputs/`` (template policy)."""
        return CorpusObjects(self.runs_settings.corpus_bucket)

    @cached_property
    def scoring_corpora(self) -> PinnedCorpora:
        """The private corpora the trusted side scores against, by sha256, from the corpus
        bucket (a run is scored against the version its inputs came from:
        ``domain.runs.PinnedCorpora``)."""
        from toolcall300.service.domain.runs import PinnedCorpora

        return PinnedCorpora(self.adapters.corpus(self.runs_settings.corpus_bucket).read)

    def scoring_corpus(self) -> Corpus:
        """The current private corpus (read now)."""
        return self.scoring_corpora(None)

    def quota_taker(self, now: datetime | None = None) -> Callable[[str], None]:
        """Count one run against a licence's daily cap (429 + Retry-After when it is spent)."""
        table, limit = self.runs_usage, self.runs_settings.runs_per_day

        def take(licence_id: str) -> None:
            usage.take(
                table,
                f"runs#{licence_id}",
                limit=limit,
                now=now or datetime.now(UTC),
                spent=TooManyRequests,
            )

        return take

    def run_queued(self) -> None:
        """A run is in the table as ``queued`` for a local worker: wake the adapters' worker
        pool (the stack sets ``LocalAdapters.wake`` when it starts the pool; on AWS, Batch is
        the queue)."""
        self.adapters.wake()

    @property
    def own_ports(self) -> frozenset[int]:
        """The local stack's own listening port (from ``TOOLCALL300_PUBLIC_URL``): callbacks
        are never sent there (``domain.callback``); empty on AWS."""
        url = self.settings(LocalEditionSettings).public_url
        port = urlsplit(url).port if url else None
        return frozenset({port}) if port else frozenset()

    @cached_property
    def run_notifier(self) -> Callable[[Run], None]:
        """A run's end -> its signed callback, for both deployment modes (never raises): the
        settings' attempts and backoff, the destination rule checked again at each attempt
        (on a local stack never the stack's own port, :attr:`own_ports`)."""
        from toolcall300.service.domain import callback
        from toolcall300.service.domain.runs import callback_document

        conf = self.runs_settings

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
                        resolve=socket.getaddrinfo,
                        own_ports=self.own_ports,
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

    @cached_property
    def hosted_deps(self) -> HostedDeps:
        """The AWS path's collaborators (``service.hosted.flow``)."""
        from toolcall300.service.hosted.flow import HostedDeps

        conf = self.runs_settings
        return HostedDeps(
            store=self.runs,
            reports=self.report_store,
            batch=self.batch_api,
            read_inputs=self.job_inputs_objects.read,
            job_links=lambda name: self.job_link_objects(session_name=name),
            corpus=self.scoring_corpora,
            describe_image=lambda image: self.image_registry.describe(image),
            notify=self.run_notifier,
            queue=conf.batch_job_queue,
            base_definition=conf.batch_job_definition,
            max_attempts=conf.max_attempts,
            network_isolated=conf.adapter_network_isolated,
        )

    @cached_property
    def run_launcher(self) -> Launcher:
        """What runs a new run: AWS Batch, or a local stack's worker pool
        (docs/runs-contract.md)."""
        from toolcall300.service.domain.runs import LocalQueue

        if self.runs_settings.toolcall300_local_stack:
            from toolcall300.jobs.sandbox import held_layers
            from toolcall300.service.settings import LocalWorkerSettings

            image = self.settings(LocalWorkerSettings).harness_image
            return LocalQueue(
                files=self.report_store, wake=self.run_queued, held=lambda: held_layers(image)
            )
        from toolcall300.service.hosted.flow import BatchLauncher

        return BatchLauncher(self.hosted_deps)


def choose() -> Edition:
    """The one place that decides the deployment, from the environment now: the state
    folder's edition when the local stack has set ``TOOLCALL300_STATE_DIR``, AWS otherwise."""
    conf = LocalEditionSettings()
    if not conf.state_dir:
        return Edition()
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    adapters = LocalAdapters(  # its links point at the URL the edition's settings name
        StateFolder(Path(conf.state_dir)),
        public_url=lambda: chosen.settings(LocalEditionSettings).public_url,
    )
    chosen = Edition(adapters, name="local")
    return chosen


_current: list[Edition] = []  # the process's edition, once chosen
_choosing = threading.Lock()


def edition() -> Edition:
    """The process's edition: chosen from the environment at the first call (a Lambda
    environment's first request), then the same object."""
    if not _current:
        with _choosing:
            if not _current:
                _current.append(choose())
    return _current[0]


def renew() -> Edition:
    """Close the process's edition and choose a new one from the environment now (a test that
    changed the environment)."""
    with _choosing:
        old = _current.pop() if _current else None
        if old is not None:
            old.close()
        _current.append(choose())
        return _current[0]


@contextlib.contextmanager
def installed(new: Edition | None = None) -> Iterator[Edition]:
    """``new`` (by default one chosen from the environment now) as the process's edition for
    the block, closed at its end, and the edition before it back, open as it was."""
    with _choosing:
        before = list(_current)
        _current[:] = [new if new is not None else choose()]
        held = _current[0]
    try:
        yield held
    finally:
        with _choosing:
            current = _current[0] if _current else None
            _current[:] = before
        for done in {id(e): e for e in (held, current) if e is not None}.values():
            done.close()
