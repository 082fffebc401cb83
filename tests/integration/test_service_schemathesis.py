"""Schemathesis against the local stack's own /openapi.json: no 500, no response off-schema.

Every operation, with the response-schema, status-code and content-type checks: a status the
document does not list (a 422 where the service answers 400) fails as surely as a 500. Run
once without a key and once with a team licence key for the read-only operations, so the
200 bodies are checked too. Driven through schemathesis' Python API (one Hypothesis run per
operation, bounded by ``MAX_EXAMPLES``) because the stack starts in a session fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 12
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]


def _conforms(operation: Any, base_url: str, headers: dict[str, str]) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(case: Any) -> None:
        case.headers = {**(case.headers or {}), **headers}
        case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=10)

    run()


def test_api_conforms_to_its_own_schema(local_stack: Any) -> None:
    schema = schemathesis.openapi.from_url(f"{local_stack.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    for operation in operations:
        _conforms(operation, local_stack.url, {})


def test_read_operations_conform_with_a_team_key(
    local_stack: Any, buy_licence: Callable[..., str]
) -> None:
    key = buy_licence("team", "schemathesis")
    schema = schemathesis.openapi.from_url(f"{local_stack.url}/openapi.json")
    reads = [r.ok() for r in schema.get_all_operations() if r.ok().method.upper() == "GET"]
    for operation in reads:
        _conforms(operation, local_stack.url, {"Authorization": f"Bearer {key}"})
