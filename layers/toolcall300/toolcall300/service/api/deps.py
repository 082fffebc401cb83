"""What routes receive, through Powertools' dependency injection (``Depends``).

A route declares a port as a parameter, ``licences: deps.Licences``, and Powertools calls
the provider here before the handler (``aws_lambda_powertools.event_handler.depends``).
Every port comes from one object, the edition the request is served by (:func:`edition`):
on AWS the process's, chosen once at the first request (``api.wiring.edition``); on the
local stack the stack's own, set as an override on each function's resolver
(``app.dependency_overrides[deps.edition]``), the same object its worker pool holds. A test
replaces a provider the same way (``app.dependency_overrides[deps.clock] = ...``). Routes
import this module, never ``api.wiring`` (tests/core/test_import_rules.py).

Providers take nothing but other providers: Powertools would read any other parameter as a
query parameter of the route. An override is called with what the provider it replaces
takes (Powertools solves the provider's own dependencies first), so the providers a test
replaces (:func:`clock`, :func:`resolver`) take nothing.
"""

import socket
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Depends

from toolcall300.service.api import wiring
from toolcall300.service.api.wiring import Edition as Edition
from toolcall300.service.domain.ledger import CheckLedger
from toolcall300.service.domain.licences import LicenceStore
from toolcall300.service.domain.runs import RunStore
from toolcall300.service.settings import ArgcheckSettings, CorpusSettings, WebhookSettings


def edition() -> Edition:
    """The edition this request is served by (overridden by the local stack: its own)."""
    return wiring.edition()


TheEdition = Annotated[Edition, Depends(edition)]


def licences(served: TheEdition) -> LicenceStore:
    return served.licences


def check_ledger(served: TheEdition) -> CheckLedger:
    return served.ledger


def run_store(served: TheEdition) -> RunStore:
    return served.runs


def argcheck_settings(served: TheEdition) -> ArgcheckSettings:
    return served.settings(ArgcheckSettings)


def corpus_settings(served: TheEdition) -> CorpusSettings:
    return served.settings(CorpusSettings)


def webhook_settings(served: TheEdition) -> WebhookSettings:
    return served.settings(WebhookSettings)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def clock() -> Callable[[], datetime]:
    """Now, in UTC, as the free tier reads it: its "5 s apart" rule is decided on this clock,
    so a test overrides it instead of racing the wall clock on a loaded machine."""
    return _utc_now


def resolver() -> Callable[..., Any]:
    """How callback hosts are resolved at submission (``socket.getaddrinfo``; a test's stub
    resolves no real name and reaches no non-loopback address)."""
    return socket.getaddrinfo


Licences = Annotated[LicenceStore, Depends(licences)]
Ledger = Annotated[CheckLedger, Depends(check_ledger)]
Runs = Annotated[RunStore, Depends(run_store)]
Argcheck = Annotated[ArgcheckSettings, Depends(argcheck_settings)]
Corpus = Annotated[CorpusSettings, Depends(corpus_settings)]
Webhook = Annotated[WebhookSettings, Depends(webhook_settings)]
Clock = Annotated[Callable[[], datetime], Depends(clock)]
Resolver = Annotated[Callable[..., Any], Depends(resolver)]
