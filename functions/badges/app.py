"""Lambda handler for the public badge route (toolcall300.service.api.routes.badges); nothing else."""

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from toolcall300.service.api.resolver import make_resolver
from toolcall300.service.api.routes.badges import router
from toolcall300.service.observability import logger, metrics, tracer

app = make_resolver(router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
