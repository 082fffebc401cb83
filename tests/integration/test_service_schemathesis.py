"""Schemathesis against the local stack's own /openapi.json: no 500, no response off-schema.

Driven through schemathesis' Python API (one Hypothesis run per operation, bounded by
``MAX_EXAMPLES``) rather than its pytest plugin, because the stack starts in a session fixture.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 12


def test_api_conforms_to_its_own_schema(local_stack: Any) -> None:
    schema = schemathesis.openapi.from_url(f"{local_stack.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def run(case: Any) -> None:
            case.call_and_validate(
                base_url=local_stack.url,
                checks=[not_a_server_error, response_schema_conformance],
                timeout=10,
            )

        run()
