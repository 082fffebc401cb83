"""Lambda handler for the scheduled tripwire measure (see toolcall300.service.tripwires); nothing else."""

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from toolcall300.service import tripwires
from toolcall300.service.api import wiring
from toolcall300.service.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return tripwires.measure(datetime.now(UTC), wiring.edition().ledger)
