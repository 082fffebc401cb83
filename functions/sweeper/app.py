"""Lambda handler for the scheduled sweeper: reconcile runs whose job has gone; nothing else."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from toolcall300.service.api import wiring
from toolcall300.service.hosted import flow
from toolcall300.service.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    changed = flow.sweep_now(wiring.edition().hosted_deps)
    return {"reconciled": [{"run_id": r.run_id, "status": r.status} for r in changed]}
