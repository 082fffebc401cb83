"""The one place that creates the Powertools logger, tracer and metrics; everything imports these.

Service name, namespace and log level come from the template's ``Globals`` environment. Log
with structured keys (``logger.info("licence issued", extra={...})``), never with submitted
values: argument blobs, schemas and licence keys never reach a log line.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics()
