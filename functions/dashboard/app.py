"""Lambda handler for the dashboard page (see toolcall300.service.api.routes.dashboard); nothing else."""

from aws_lambda_powertools.logging import correlation_paths

from toolcall300.service.api.resolver import make_resolver
from toolcall300.service.api.routes.dashboard import router
from toolcall300.service.observability import logger, metrics, tracer

app = make_resolver(router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict, context: object) -> dict:  # type: ignore[type-arg]
    return app.resolve(event, context)
