"""Per-function settings: small pydantic-settings models read from the environment on first use.

The template passes resource and secret *names* as environment variables (see ``Globals`` in
``template.yaml``); secret values are fetched at run time through Powertools parameters.
Settings are built lazily, never at import, and kept by the deployment's edition
(``api.wiring.Edition.settings``): a new environment (a test's, the local stack's) is a new
edition, never a cleared cache.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

#: tool-argument/v1 free tier: 100 checks a day, at least 5 s apart (the criteria's ``free_tier``, ``GET /criteria``).
FREE_CHECKS_PER_DAY = 100
FREE_MIN_INTERVAL_S = 5
#: Criteria D26 (``argcheck.criteria.CHECK_SECONDS_REFUSALS_PER_DAY``, the same number): a
#: payer's checks that may run past the CPU budget in one UTC day.
CHECK_SECONDS_REFUSALS_PER_DAY = 20
#: Presigned corpus links are valid for at most five minutes (docs/api.md, ``GET /corpus``).
MAX_PRESIGN_SECONDS = 300


class _Base(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", frozen=True)


class LicenceSettings(_Base):
    """What any licence-checking function needs (and the Stripe key, by name, for checkout)."""

    licences_table: str
    stripe_api_key_secret_name: str = ""
    secrets_max_age_s: int = Field(default=300, ge=0, le=3600)


class WebhookSettings(LicenceSettings):
    """The Stripe webhook: secrets by name, idempotency table, secret cache age."""

    idempotency_table: str
    stripe_webhook_secret_name: str
    webhook_tolerance_s: int = Field(default=300, ge=1, le=300)
    idempotency_expiry_s: int = Field(default=7 * 24 * 3600, ge=60)


class CorpusSettings(LicenceSettings):
    """Corpus links: bucket, link lifetime (<= 300 s), per-licence daily download cap."""

    usage_table: str
    corpus_bucket: str
    presign_seconds: int = Field(default=MAX_PRESIGN_SECONDS, ge=1, le=MAX_PRESIGN_SECONDS)
    downloads_per_day: int = Field(default=20, ge=1)
    manifest_max_age_s: int = Field(default=300, ge=0)


class CheckLedgerSettings(_Base):
    """The argument checker's packs and ledger: the checker charges, the webhook grants and ends."""

    check_ledger_table: str


class ArgcheckSettings(LicenceSettings):
    """The argument checker's free tier."""

    usage_table: str
    client_id_salt_secret_name: str
    #: The KMS HMAC key the report-signing keys are derived from, and the generations to
    #: publish, current first ("2,1" while a rotation settles; docs/argcheck-report.md).
    report_signing_key_id: str
    report_key_generations: Annotated[tuple[int, ...], NoDecode] = (1,)
    free_checks_per_day: int = Field(default=FREE_CHECKS_PER_DAY, ge=1)
    free_min_interval_s: int = Field(default=FREE_MIN_INTERVAL_S, ge=0)
    #: Criteria D26: a payer's checks that may run past the CPU budget in a UTC day.
    check_seconds_refusals_per_day: int = Field(default=CHECK_SECONDS_REFUSALS_PER_DAY, ge=1)

    @field_validator("report_key_generations", mode="before")
    @classmethod
    def _generations(cls, raw: object) -> object:
        """``"2,1"`` -> (2, 1): distinct positive generation numbers, current first."""
        if not isinstance(raw, str):
            return raw
        found = tuple(int(part) for part in raw.split(",") if part.strip())
        if not found or min(found) < 1 or len(set(found)) != len(found):
            raise ValueError(
                "REPORT_KEY_GENERATIONS lists distinct generations >= 1, current first"
            )
        return found


class RunsSettings(_Base):
    """What the runs functions, the worker and the sweeper need (Batch names: their own variables)."""

    runs_table: str
    reports_bucket: str
    corpus_bucket: str = ""
    usage_table: str = ""
    licences_table: str = ""
    runs_per_day: int = Field(default=50, ge=1)
    #: Set only by the local stack: accept ``adapter_cmd`` and plain-http callbacks.
    toolcall300_local_stack: bool = False
    batch_job_queue: str = ""
    batch_job_definition: str = ""  # the template's harness job definition (name or ARN)
    #: The role the job's links are signed as (its session's expiry is known); empty: the
    #: function's own credentials.
    job_link_role_arn: str = ""
    #: The stack's region (Lambda sets AWS_REGION): adapter images must be in ECR here.
    aws_region: str = "us-east-1"
    #: True only when the template created the adapter network (no route out, endpoints only).
    adapter_network_isolated: bool = False
    callback_attempts: int = Field(default=4, ge=1, le=10)
    callback_base_delay_s: float = Field(default=1.0, ge=0)
    max_attempts: int = Field(default=2, ge=1, le=5)


class LocalWorkerSettings(BaseSettings):
    """The local stack's worker pool (``TOOLCALL300_WORKERS``, ``TOOLCALL300_LEASE_S``, ...)."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, env_prefix="TOOLCALL300_")

    workers: int = Field(default=2, ge=1, le=64)
    lease_s: int = Field(default=30, ge=1)
    #: RLIMIT_AS caps address space, not resident memory: runtimes that reserve large heaps
    #: (JVM, V8) may need more than the default 1 GiB.
    adapter_memory_mb: int = Field(default=1024, ge=64)
    #: Fairness (docs/local-sandbox.md): runs of one team running at once, and the whole-run
    #: limit every run is stopped at.
    team_runs: int = Field(default=1, ge=1)
    run_timeout_s: int = Field(default=900, ge=1)
    #: The harness image archive the stack holds (``make harness-image`` writes
    #: build/harness-image.tar): an ``adapter_image`` built FROM it may leave its layers out.
    harness_image: str = ""


class LocalEditionSettings(BaseSettings):
    """Set only by the local stack (``toolcall300 serve``): its state folder and its own URL.

    A state folder selects the one-machine edition's adapters (SQLite and files,
    ``statefolder.folder``) in ``api.wiring.choose``; without one, the AWS adapters.
    """

    model_config = SettingsConfigDict(extra="ignore", frozen=True, env_prefix="TOOLCALL300_")

    state_dir: str = ""
    #: Where the stack serves its signed object links (its one listening address).
    public_url: str = ""
