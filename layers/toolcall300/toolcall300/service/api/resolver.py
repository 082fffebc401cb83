"""The HTTP edge shared by every function: the resolver factory and the one error map.

``make_resolver(*routers)`` returns a Powertools ``APIGatewayHttpResolver`` with pydantic
validation on, the given routers included, and every exception mapped to the JSON error body
``{"error": {"code", "message"}}`` here and nowhere else (docs/api.md). Validation failures are
400 (not Powertools' default 422); unknown routes 404; an unexpected exception is logged once
and answered 500 without detail. A JSON body is read strictly (``_strict_json_body``). Also the helpers routes use to read the raw request.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import threading
import typing
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.data_classes.common import CaseInsensitiveDict
from pydantic import BaseModel

from toolcall300.canonical import NotJSON, loads_strict
from toolcall300.service.errors import BackendError, BadRequest, UnsupportedMediaType
from toolcall300.service.observability import logger

JSON = "application/json"


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    """The error body every route answers with on failure."""

    error: ErrorDetail


def make_router() -> Router:
    """A Powertools router (typed wrapper: Powertools' constructor is unannotated)."""
    router: Router = Router()  # type: ignore[no-untyped-call]
    return router


def error_responses(*statuses: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI ``responses`` entries documenting the JSON error body for ``statuses``."""
    return {s: {"description": "error", "content": {JSON: {"model": ErrorBody}}} for s in statuses}


_CODE_MESSAGE = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
}
_REFUSAL_OR_ERROR = {
    "anyOf": [
        {"type": "object", "required": ["refusal"], "properties": {"refusal": _CODE_MESSAGE}},
        {"type": "object", "required": ["error"], "properties": {"error": _CODE_MESSAGE}},
    ]
}


def refusal_responses(*statuses: int) -> dict[int, OpenAPIResponse]:
    """Checker statuses whose body is a tool-argument/v1 free refusal (or, from the edge, an error)."""
    return {
        s: {"description": "a named free refusal", "content": {JSON: {"schema": _REFUSAL_OR_ERROR}}}
        for s in statuses
    }


def ok_response(
    model: type[BaseModel] | None = None, description: str = "ok", *, status: int = 200
) -> dict[int, OpenAPIResponse]:
    """The success entry of a route that returns a ``Response`` itself: ``model`` or any object."""
    if model is None:
        return {
            status: {"description": description, "content": {JSON: {"schema": {"type": "object"}}}}
        }
    return {status: {"description": description, "content": {JSON: {"model": model}}}}


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=status,
        content_type=JSON,
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


class ConstantDocument:
    """A JSON document that does not change while the process runs (``GET /criteria``, ``GET
    /openapi.json``), built, encoded and hashed once, and served with a strong ``ETag``: a
    request whose ``If-None-Match`` names it is answered 304 with no body (RFC 9110 13.1.2,
    which compares weakly, so ``W/`` is ignored). A free, unauthenticated route then costs no
    more than the HTTP floor's work.

    Given its route's ``path``, the document is listed in :data:`CONSTANT_DOCUMENTS`, where a
    server in front of the functions may answer it with the same bytes and headers without
    building an event (the one-machine edition does, ``service/local/documents.py``)."""

    def __init__(self, build: Callable[[], Any], *, path: str | None = None) -> None:
        self._build = build
        if path is not None:
            CONSTANT_DOCUMENTS[path] = self

    @cached_property
    def _encoded(self) -> tuple[str, bytes, str]:
        body = json.dumps(self._build(), separators=(",", ":"), ensure_ascii=False)
        data = body.encode()
        return body, data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'

    def answer(self, if_none_match: str | None) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) for a GET whose ``If-None-Match`` is ``if_none_match``."""
        _, data, etag = self._encoded
        common = {"ETag": etag, "Cache-Control": "public, max-age=300"}
        if names_tag(if_none_match, etag):
            return 304, common, b""
        return 200, {"Content-Type": JSON, **common}, data

    def response(self, headers: Mapping[str, str]) -> Response[str]:
        status, out, _ = self.answer(headers.get("if-none-match"))
        body = self._encoded[0] if status == 200 else ""
        return Response(status_code=status, content_type=None, body=body, headers=out)


#: The constant documents routes serve, by path (each :class:`ConstantDocument` given one).
CONSTANT_DOCUMENTS: dict[str, ConstantDocument] = {}


def names_tag(header: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` value names ``etag`` (or is ``*``)."""
    if not header:
        return False
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def _backend_error(exc: BackendError) -> Response[str]:
    if exc.status >= 500:
        logger.error("request failed upstream", extra={"code": exc.code, "status": exc.status})
    else:
        logger.info("request refused", extra={"code": exc.code, "status": exc.status})
    return json_response(exc.status, exc.body(), exc.headers)


def _validation_error(exc: RequestValidationError) -> Response[str]:
    # Only the location and kind of each problem; never the submitted values.
    where = "; ".join(".".join(str(p) for p in e.get("loc", ())) for e in exc.errors()[:5])
    logger.info("request refused", extra={"code": "invalid_request", "status": 400})
    return json_response(
        400, BadRequest(f"invalid request: {where}", code="invalid_request").body()
    )


def _unsupported_media_type(_exc: RequestUnsupportedContentType) -> Response[str]:
    # Powertools raises this (not a RequestValidationError) for a body sent as text/plain,
    # XML or an image to a route that reads JSON; unmapped, it was a 500.
    return _backend_error(
        UnsupportedMediaType("send the body as application/json", code="unsupported_media_type")
    )


def _unexpected(exc: Exception) -> Response[str]:
    logger.exception("unhandled error", extra={"error_type": type(exc).__name__})
    return json_response(500, {"error": {"code": "internal", "message": "internal error"}})


def _not_found(_exc: Exception) -> Response[str]:
    return json_response(404, {"error": {"code": "not_found", "message": "no such route"}})


def _strict_json_body(text: str) -> Any:
    """A validated route's JSON body, read as every reader of the suite reads JSON
    (``canonical.loads_strict``): Python's ``json`` would read ``NaN``, ``1e400`` as infinity,
    keep the last of two duplicate keys silently, and crash (500) on nesting past the stack or
    on an integer past 4,300 digits. Each is a 400 ``invalid_request`` naming what is wrong,
    never the value; any other malformed text stays ``json``'s error (Powertools answers it
    ``invalid_request`` at the offending position)."""
    try:
        return loads_strict(text)
    except RecursionError:
        raise BadRequest("invalid request: body nests too deeply", code="invalid_request") from None
    except NotJSON as exc:
        said = str(exc)
        what = (
            "a duplicate key"
            if said.startswith("duplicate key")
            else "NaN or Infinity"
            if said.endswith("is not JSON")
            else "a number past a double's range"
        )
        raise BadRequest(
            f"invalid request: body is not strict JSON ({what})", code="invalid_request"
        ) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer too long to convert, or a byte-order mark
        raise BadRequest(
            "invalid request: body is not strict JSON (a number out of range or a BOM)",
            code="invalid_request",
        ) from None


class _StrictBodyEvent(APIGatewayProxyEventV2):
    """The HTTP API event with a body that is not UTF-8 refused (400 ``invalid_body``) instead of
    Powertools' ``UnicodeDecodeError`` (a 500): API Gateway base64-encodes such a body.

    Its ``headers`` are read into their case-insensitive map once: Powertools' own property
    builds a new one at every read, and a paid check read them five times (the validation
    middleware, the key, the idempotency key, ...). An event is never changed once built."""

    @cached_property
    def headers(self) -> dict[str, str]:
        found: dict[str, str] = CaseInsensitiveDict(self.get("headers"))  # type: ignore[no-untyped-call]
        return found

    @cached_property
    def decoded_body(self) -> str | None:
        if not self.body:
            return self.body
        try:
            return raw_body(self._data).decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest("the request body is not UTF-8", code="invalid_body") from None


#: The request each thread is handling (see ``_OneRequestPerThread``).
_REQUEST = threading.local()
#: Held while a route builds its middleware stack (once per route, on its first request).
_BUILDING = threading.Lock()


class _OneRequestPerThread(APIGatewayHttpResolver):
    """Powertools' resolver with the request it is handling kept per thread.

    Powertools stores the current event on ``BaseRouter`` itself, a class attribute shared by
    every resolver in the process. One Lambda environment handles one request at a time, but
    the local gateway serves every function from threads of one process, so two requests in
    flight at once would read each other's headers (another caller's key). Here the event and
    context live in storage local to the thread, shared by every resolver: a router belongs
    to whichever resolver included it last (``openapi.document`` includes them all again),
    and whichever that is, it reads the request this thread is handling.

    The routing context (``app.context``: the matched route, its path arguments, the
    validated request; cleared as each request ends) is a dict on the resolver, one per
    function: it is kept per thread too, else a request ending cleared the route of another
    in flight to the same function (500, ``KeyError: '_route_args'``). Each route builds its
    middleware stack once, on first use: that build is serialised, else two first requests
    at once wrap one stack twice over.
    """

    def __init__(self) -> None:
        super().__init__(enable_validation=True, json_body_deserializer=_strict_json_body)

    def _to_proxy_event(self, event: dict[str, Any]) -> Any:
        return _StrictBodyEvent(event, self._json_body_deserializer)

    @property
    def context(self) -> dict[str, Any]:
        held: dict[str, Any] | None = getattr(_REQUEST, "routing", None)
        if held is None:
            held = _REQUEST.routing = {}
        return held

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        _REQUEST.routing = value

    def _call_route(self, route: Any, route_arguments: dict[str, str]) -> Any:
        if not route._middleware_stack_built:
            with _BUILDING:
                if not route._middleware_stack_built:
                    route._build_middleware_stack(
                        router_middlewares=self._router_middlewares, app=self
                    )
        return super()._call_route(route, route_arguments)

    @property
    def current_event(self) -> Any:
        return _REQUEST.event

    @current_event.setter
    def current_event(self, value: Any) -> None:
        _REQUEST.event = value

    @property
    def lambda_context(self) -> Any:
        return _REQUEST.context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        _REQUEST.context = value

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        self.current_event = self._to_proxy_event(dict(event))
        self.lambda_context = context
        return super().resolve(event, context)


def make_resolver(*routers: Router) -> APIGatewayHttpResolver:
    """A resolver with validation, the given routers and the single error map."""
    app = _OneRequestPerThread()
    for router in routers:
        app.include_router(router)
    app.exception_handler(BackendError)(_backend_error)
    app.exception_handler(RequestValidationError)(_validation_error)
    app.exception_handler(RequestUnsupportedContentType)(_unsupported_media_type)
    app.exception_handler(Exception)(_unexpected)
    app.not_found(_not_found)
    _resolve_annotations(app)
    return app


def _resolve_annotations(app: APIGatewayHttpResolver) -> None:
    """Each route's annotations evaluated once, here. Powertools reads a handler's type hints
    on every request to find its ``Depends`` parameters (``api.deps``), and a module written
    with ``from __future__ import annotations`` holds them as strings, compiled and evaluated
    again at each read: most of the dependency work of a ``POST /check``. A handler whose
    hints do not evaluate is left as it is (Powertools reads it as having no dependency)."""
    for route in (*app._static_routes, *app._dynamic_routes):
        with contextlib.suppress(Exception):
            route.func.__annotations__ = typing.get_type_hints(route.func, include_extras=True)


def raw_body(event: dict[str, Any]) -> bytes:
    """The request body as sent, decoding base64 when API Gateway flagged it."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadRequest("body is not valid base64", code="invalid_body") from exc
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def source_ip(event: dict[str, Any]) -> str:
    """The caller's address from the HTTP API v2 request context (API Gateway sets it)."""
    return str(((event.get("requestContext") or {}).get("http") or {}).get("sourceIp") or "unknown")


def public_base_url(event: dict[str, Any]) -> str:
    """The service's own base URL as the caller reached it (for links sent back to buyers).

    API Gateway sets ``X-Forwarded-Proto`` and the domain; a named stage is part of the path.
    """
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    context = event.get("requestContext") or {}
    proto = headers.get("x-forwarded-proto", "https").split(",")[0].strip()
    host = str(context.get("domainName") or headers.get("host") or "localhost")
    stage = str(context.get("stage") or "$default")
    return f"{'http' if proto == 'http' else 'https'}://{host}" + (
        "" if stage == "$default" else f"/{stage}"
    )
