"""The one place that creates the Powertools logger, tracer and metrics; everything imports these.

Service name, namespace and log level come from the template's ``Globals`` environment. Log
with structured keys (``logger.info("licence issued", extra={...})``), never with submitted
values: argument blobs, schemas and licence keys never reach a log line.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment


class _PerThreadKeysLogger(Logger):
    """Powertools' logger with the keys appended per invocation (``inject_lambda_context``'s
    context fields, the correlation id) kept per thread, in Powertools' own thread-safe keys.

    Its plain ``append_keys`` writes them into the one formatter every thread shares: one
    Lambda environment handles one request at a time, but the local gateway runs invocations
    of a function concurrently on threads of one process, where each log line could carry
    another request's ids. On AWS (one thread) nothing changes.
    """

    def append_keys(self, **additional_keys: object) -> None:
        self.thread_safe_append_keys(**additional_keys)


logger = _PerThreadKeysLogger()


class _UntracedSegment(BaseSegment):
    """A segment that records nothing (tracing is off)."""

    def close(self, end_time: int | None = None) -> None: ...
    def add_subsegment(self, subsegment: Any) -> None: ...
    def remove_subsegment(self, subsegment: Any) -> None: ...
    def put_annotation(self, key: str, value: Any) -> None: ...
    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None: ...
    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None: ...


class _UntracedProvider(BaseProvider):
    """Powertools' tracing provider interface (its documented ``provider=`` extension point),
    recording nothing. Where tracing is off, the default X-Ray provider still imports the X-Ray
    SDK and the botocore it loads, about 0.7 s of every local stack start for traces no one
    sends."""

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[BaseSegment]:
        yield _UntracedSegment()

    @asynccontextmanager
    async def in_subsegment_async(
        self, name: str | None = None, **kwargs: Any
    ) -> AsyncIterator[BaseSegment]:
        yield _UntracedSegment()

    def put_annotation(self, key: str, value: Any) -> None: ...
    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None: ...
    def patch(self, modules: Any) -> None: ...
    def patch_all(self) -> None: ...


def _tracer() -> Tracer:
    """X-Ray where tracing is on (Lambda: the template turns it on); where
    ``POWERTOOLS_TRACE_DISABLED`` turns it off (the local stack, the tests), a provider that
    never loads the X-Ray SDK."""
    if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in ("true", "1"):
        return Tracer(provider=_UntracedProvider(), disabled=True)
    return Tracer()


tracer = _tracer()
metrics = Metrics()

# Read-only routes publish no metric on most invocations; that is expected, not a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")


def count(name: str) -> None:
    """Add one to a CloudWatch (EMF) count metric for this invocation.

    Skipped when metrics are disabled (the local stack): Powertools then never flushes, and
    the buffer would grow until it prints at 100 entries.
    """
    if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() == "true":
        return
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def gauge(name: str, value: float) -> None:
    """Record one value of a CloudWatch (EMF) metric that alarms compare with a threshold."""
    if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() == "true":
        return
    metrics.add_metric(name=name, unit=MetricUnit.NoUnit, value=value)
