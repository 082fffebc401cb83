"""Hosted runs' settings, production collaborators, and the glue to the CLI's scorer.

The settings model is built from the environment on first use (the template's ``Globals``
pass table and bucket names; Batch names come from the runs functions' own variables).
:func:`summary_of` and :func:`compare` adapt ``toolcall300.scorer``'s report and comparison
to the API contract; no grading happens here, the scorer is the CLI's own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from toolcall300 import scorer
from toolcall300.service import usage
from toolcall300.service.adapters.runs_aws import BatchApi, ReportObjects, RunTable
from toolcall300.service.errors import TooManyRequests
from toolcall300.spec import SPEC_VERSION

CORPUS_FILE = "toolcall300.jsonl"


class RunsSettings(BaseSettings):
    """What the runs functions, the worker and the sweeper need."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

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
    batch_adapter_role_arn: str = ""
    callback_attempts: int = Field(default=4, ge=1, le=10)
    callback_base_delay_s: float = Field(default=1.0, ge=0)
    max_attempts: int = Field(default=2, ge=1, le=5)


@cache
def settings() -> RunsSettings:
    return RunsSettings()  # type: ignore[call-arg]  # filled from the environment


@cache
def run_store() -> RunTable:
    return RunTable(settings().runs_table)


@cache
def report_store() -> ReportObjects:
    return ReportObjects(settings().reports_bucket)


@cache
def batch_api() -> BatchApi:
    return BatchApi()


def clear() -> None:
    """Forget settings and collaborators (tests, the local stack after setting the environment)."""
    for fn in (settings, run_store, report_store, batch_api):
        fn.cache_clear()


def quota_taker(now: datetime | None = None) -> Callable[[str], None]:
    """Count one run against a licence's daily cap (429 + Retry-After when it is spent)."""
    from toolcall300.service.adapters.dynamo import UsageTable

    table = UsageTable(settings().usage_table)
    limit = settings().runs_per_day

    def take(licence_id: str) -> None:
        usage.take(
            table,
            f"runs#{licence_id}",
            limit=limit,
            now=now or datetime.now(UTC),
            spent=TooManyRequests,
        )

    return take


# ----------------------------------------------------------------------------- scorer glue


@dataclass(frozen=True)
class Corpus:
    """The private corpus as the trusted side holds it: cases with labels, and its pin."""

    cases: list[dict[str, Any]]
    sha256: str


def load_corpus(read: Callable[[str], bytes], name: str = CORPUS_FILE) -> Corpus:
    """Read and parse the corpus with the scorer's own parser."""
    data = read(name)
    return Corpus(scorer.parse_corpus(data), hashlib.sha256(data).hexdigest())


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``summary``: the counts and the per-category table of a scorer report."""
    summary: dict[str, Any] = {k: report[k] for k in scorer.COUNT_FIELDS}
    summary["categories"] = {
        k: {"n": v["n"], "pass": v["pass"]} for k, v in report["categories"].items()
    }
    return summary


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The scorer's gate, in the contract's shape (``deltas`` is called ``counts`` there)."""
    c = scorer.compare_reports(baseline, current)
    return {
        "regressed": c["regressed"],
        "reasons": c["reasons"],
        "counts": c["deltas"],
        "categories": c["categories"],
        "flipped": c["flipped"],
    }


SCORER_VERSION = f"{scorer.REPORT_VERSION} ({SPEC_VERSION})"
