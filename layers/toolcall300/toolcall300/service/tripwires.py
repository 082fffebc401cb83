"""The criteria's kill-line tripwires, measured on a schedule whether or not anyone reads them.

The template runs ``functions/tripwires`` every five minutes: it reads the 30-day window from
the check ledger (``domain.ledger.window_metrics``, the same figures ``GET /metrics`` shows) and
publishes each tripwire flag and figure as a CloudWatch metric through Powertools' EMF lines,
which the template's ``RefundTripwireAlarm`` and ``FreeUseTripwireAlarm`` read
(docs/argcheck-payment.md, "The tripwires").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from toolcall300.service.domain import ledger
from toolcall300.service.domain.ledger import CheckLedger
from toolcall300.service.observability import gauge, logger


def measure(now: datetime, book: CheckLedger) -> dict[str, Any]:
    """Compute the window ending ``now`` from ``book`` (the check ledger the function's edge
    builds) and publish it; the window, for the invocation's log."""
    window = ledger.window_metrics(book, now)
    for name, value in ledger.window_figures(window).items():
        gauge(name, value)
    crossed = [name for name, hit in window["tripwires"].items() if hit]
    (logger.warning if crossed else logger.info)(
        "tripwires measured", extra={"crossed": crossed, "paid_checks": window["paid_checks"]}
    )
    return window
