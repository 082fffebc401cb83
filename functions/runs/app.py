"""Lambda handler for the hosted-runs routes (see toolcall300.service.routes.runs); nothing else."""

from aws_lambda_powertools.logging import correlation_paths

from toolcall300.service.http import make_resolver
from toolcall300.service.observability import logger, metrics, tracer
from toolcall300.service.routes.runs import router

app = make_resolver(router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict, context: object) -> dict:  # type: ignore[type-arg]
    return app.resolve(event, context)
