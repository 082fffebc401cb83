"""The service's OpenAPI document, built from every router listed in ``routes.OPENAPI_ROUTERS``.

Powertools derives paths, parameters and response models from the routers; this module adds
what it cannot see: the request bodies of routes that read the raw body themselves (the
checker hands bytes to ``toolcall300.argcheck.check``; the webhook verifies bytes), and the
path parameter of a route that matches slashes (Powertools routes it by a pattern, the
template by ``{branch+}``). It serves the document; it does not route any other request.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from toolcall300.service.api.resolver import JSON, make_resolver
from toolcall300.service.api.routes import OPENAPI_ROUTERS

TITLE = "TOOLCALL-300 service"

_ARGUMENT_CHECK_BODY = {
    "type": "object",
    "properties": {
        "schema": {"type": "object"},
        "arguments": {"type": "object"},
        "arguments_text": {"type": "string"},
    },
}
#: (path, method) -> request body schema for routes that parse the raw body themselves.
RAW_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("/check", "post"): _ARGUMENT_CHECK_BODY,
    ("/precheck", "post"): _ARGUMENT_CHECK_BODY,
    ("/webhooks/stripe", "post"): {"type": "object"},
}


#: Powertools path (a pattern) -> (the documented path, its parameter that may hold slashes).
GREEDY_PATHS: dict[str, tuple[str, dict[str, Any]]] = {
    "/badges/{team}/.+": (
        "/badges/{team}/{branch}.svg",
        {
            "name": "branch",
            "in": "path",
            "required": True,
            "description": "the branch (slashes allowed: feature/x), then .svg",
            "schema": {"type": "string"},
        },
    ),
}


def _greedy_paths_named(doc: dict[str, Any]) -> None:
    paths = doc.get("paths", {})
    for pattern, (path, parameter) in GREEDY_PATHS.items():
        if pattern in paths:
            ops = paths.pop(pattern)
            for op in ops.values():
                op["parameters"] = [*op.get("parameters", []), parameter]
            paths[path] = ops


def _statuses_as_answered(doc: dict[str, Any]) -> None:
    """Powertools documents a 422 ``HTTPValidationError`` for invalid input; the resolver
    answers those with 400 (``resolver._validation_error``), so the document says 400 there.
    A 422 the service really answers (the checker's refusals) stays."""
    error_400: dict[str, Any] | None = None
    for ops in doc.get("paths", {}).values():
        for op in ops.values():
            error_400 = error_400 or op.get("responses", {}).get("400")
    for ops in doc.get("paths", {}).values():
        for op in ops.values():
            responses = op.get("responses", {})
            if "HTTPValidationError" not in str(responses.get("422", "")):
                continue
            del responses["422"]
            takes_input = op.get("parameters") or op.get("requestBody")
            if takes_input and "400" not in responses and error_400:
                responses["400"] = error_400


@cache
def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (built once per process)."""
    routers = [importlib.import_module(name).router for name in OPENAPI_ROUTERS]
    app = make_resolver(*routers)
    from toolcall300 import __version__

    doc: dict[str, Any] = app.get_openapi_schema(title=TITLE, version=__version__).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    _statuses_as_answered(doc)
    _greedy_paths_named(doc)
    for (path, method), schema in RAW_BODIES.items():
        op = doc.get("paths", {}).get(path, {}).get(method)
        if op is not None and "requestBody" not in op:
            op["requestBody"] = {"required": True, "content": {JSON: {"schema": schema}}}
    return doc
