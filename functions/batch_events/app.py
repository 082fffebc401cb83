"""Lambda handler for AWS Batch job-state events (EventBridge): update the run; nothing else."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from toolcall300.service.api import wiring
from toolcall300.service.hosted import flow
from toolcall300.service.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event)
    return {"run_id": ended.run_id if ended else None, "ended": ended is not None}
