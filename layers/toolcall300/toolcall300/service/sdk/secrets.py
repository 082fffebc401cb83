"""Secrets through Powertools parameters (cached for ``max_age`` seconds, fetched on demand).

Returns values only to the caller; never logs them. A missing or malformed secret becomes
``UpstreamUnavailable``, so a misconfigured deployment answers 503, not 500.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities import parameters

from toolcall300.service.errors import UpstreamUnavailable


def get_json_secret(name: str, *, max_age: int) -> dict[str, Any]:
    """The JSON object stored in the secret ``name``."""
    try:
        value = parameters.get_secret(name, transform="json", max_age=max_age)
    except parameters.exceptions.GetParameterError as exc:
        raise UpstreamUnavailable("a secret is unavailable", code="secret_unavailable") from exc
    except parameters.exceptions.TransformParameterError as exc:
        raise UpstreamUnavailable("a secret is malformed", code="secret_unavailable") from exc
    if not isinstance(value, dict):
        raise UpstreamUnavailable("a secret is malformed", code="secret_unavailable")
    return value


def clear_secret_cache() -> None:
    """Drop Powertools' parameter caches (tests; the local stack after seeding secrets)."""
    parameters.clear_caches()  # type: ignore[no-untyped-call]
