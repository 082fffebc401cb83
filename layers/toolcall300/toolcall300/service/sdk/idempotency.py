"""Powertools idempotency on a DynamoDB table (key ``id``, TTL ``expiration``), or on any other
persistence layer given (the one-machine edition's ``statefolder.idempotency``).

Wraps a function of one ``event`` dict so that a second call with the same ``event["id"]``
returns the first call's stored result without running it again (Stripe redelivers). One
persistence layer per wrapped function (Powertools keeps the first key expression it sees).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    BasePersistenceLayer,
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

from toolcall300.service.errors import Conflict

EventFn = Callable[[dict[str, Any]], dict[str, Any]]
#: The wrapped form: (event, Lambda context or None) -> result.
OnceFn = Callable[[dict[str, Any], Any], dict[str, Any]]


def once_per_event_id(
    fn: EventFn,
    *,
    table: str,
    expires_after_s: int,
    persistence: BasePersistenceLayer | None = None,
) -> OnceFn:
    """``fn`` made idempotent on ``event["id"]``; an in-flight duplicate answers 409 (retry).
    The records go to ``persistence`` when given, else to the DynamoDB table ``table``."""
    if persistence is None:
        persistence = DynamoDBPersistenceLayer(table_name=table)
    config = IdempotencyConfig(
        event_key_jmespath="id",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=expires_after_s,
    )

    def process_stripe_event(*, event: dict[str, Any]) -> dict[str, Any]:
        return fn(event)

    # The function name is part of the idempotency key: keep it stable across releases.
    wrapped: Callable[..., dict[str, Any]] = idempotent_function(
        data_keyword_argument="event", persistence_store=persistence, config=config
    )(process_stripe_event)

    def call(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        if context is not None:  # lets Powertools expire an in-progress record with the invocation
            config.register_lambda_context(context)
        try:
            result: dict[str, Any] = wrapped(event=event)
        except IdempotencyAlreadyInProgressError as exc:
            raise Conflict("this event is being processed; retry", code="in_progress") from exc
        return result

    return call
