"""API Gateway's HTTP API, emulated for the one-machine stack: a request routed by
``template.yaml``, turned into the payload-format 2.0 event the handler reads, and the
handler's answer turned back into (status, header fields, body).

Routes are read from ``template.yaml`` (each function's ``HttpApi`` events), so a function
added to the template is served without touching this module. Each function is imported once
from ``functions/<name>/app.py``; its requests run concurrently on the server's handler threads,
as concurrent Lambda environments would (the resolver keeps each request per thread,
``api/resolver.py``). Not a faithful API Gateway: no authorizers, no throttling. Nothing here
speaks HTTP on a socket: ``service.local.gateway`` serves it.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from toolcall300.service.local.cfn import HttpRoute, http_routes

_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: (status, header fields, body): an answer, as the gateway sends it.
Answer = tuple[int, dict[str, str], bytes]


@dataclass
class LambdaContext:
    """The attributes Powertools reads from a Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "local"
    log_stream_name: str = "local"
    deadline: float = field(default_factory=lambda: time.monotonic() + 30)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


@dataclass(frozen=True)
class BoundRoute:
    route: HttpRoute
    pattern: Any
    handler: Handler
    #: The function's Powertools resolver (its module's ``app``), or None: the local stack
    #: sets its ``dependency_overrides`` to serve the stack's own edition (``api.deps``).
    app: Any = None


def load_handler(root: Path, route: HttpRoute) -> Handler:
    """Import ``<CodeUri>/<module>.py`` under a unique module name; return its handler (with
    the module's resolver as ``handler.app``, when it has one)."""
    module_name, _, attr = route.handler.rpartition(".")
    path = root / route.code_uri / f"{module_name}.py"
    spec = importlib.util.spec_from_file_location(f"tc300_function_{route.function}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, attr)
    if hasattr(module, "app"):
        handler.app = module.app  # type: ignore[attr-defined]
    return handler


def bind_routes(root: Path, template: dict[str, Any]) -> list[BoundRoute]:
    """Every template route bound to its function's handler (one import per function)."""
    handlers: dict[str, Handler] = {}
    bound = []
    for route in http_routes(template):
        if route.function not in handlers:
            handlers[route.function] = load_handler(root, route)
        handler = handlers[route.function]
        bound.append(BoundRoute(route, route.pattern(), handler, getattr(handler, "app", None)))
    return bound


def match(
    routes: list[BoundRoute], method: str, path: str
) -> tuple[BoundRoute, dict[str, str]] | None:
    """The route for ``method path`` and its path parameters (decoded), or None."""
    for bound in routes:
        if bound.route.method not in (method, "ANY"):
            continue
        m = bound.pattern.match(path)
        if m:
            return bound, {k: unquote(v) for k, v in m.groupdict().items()}
    return None


def build_event(
    *,
    method: str,
    raw_path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    route: HttpRoute,
    path_params: dict[str, str],
    domain: str | None = None,
) -> dict[str, Any]:
    """An HTTP API payload-format 2.0 event, as API Gateway would build it.

    ``domain`` is the API's own address (``requestContext.domainName``): the server passes its
    own, never the request's ``Host``, since API Gateway answers only for its own domains and
    the links a handler builds from it (the checkout's success URL, ``public_base_url``) must
    not follow a forged ``Host``. Only an in-process call (a test standing in for API Gateway,
    where the two agree) leaves it None and gets the ``Host`` header."""
    merged, cookies = _merged_headers(headers)
    route_key = f"{route.method} {route.path}"
    domain = domain or merged.get("host", "localhost")
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": merged,
        "requestContext": _request_context(method, raw_path, source_ip, route_key, merged, domain),
        "isBase64Encoded": False,
    }
    params: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v
    optional = {"cookies": cookies, "queryStringParameters": params, "pathParameters": path_params}
    event.update({key: value for key, value in optional.items() if value})
    if body:
        event.update(_body_fields(body, merged.get("content-type", "")))
    return event


def _merged_headers(headers: list[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """The header fields by lower-cased name (repeated ones joined with commas, as API Gateway
    does) and the cookies apart, as payload format 2.0 carries them."""
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    merged["x-forwarded-proto"] = "http"  # as API Gateway sets it; this gateway speaks plain HTTP
    return merged, cookies


def _request_context(
    method: str, raw_path: str, source_ip: str, route_key: str, merged: dict[str, str], domain: str
) -> dict[str, Any]:
    now = time.time()
    return {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": domain,
        "domainPrefix": "local",
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": merged.get("user-agent", ""),
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": route_key,
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }


def _body_fields(body: bytes, content_type: str) -> dict[str, Any]:
    """A text body as text (UTF-8), any other as base64, as API Gateway hands them over."""
    if any(content_type.startswith(t) for t in _TEXT_TYPES):
        try:
            return {"body": body.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"body": base64.b64encode(body).decode("ascii"), "isBase64Encoded": True}


def error_answer(status: int, code: str, message: str) -> Answer:
    """The JSON error body of docs/api.md, as every refusal before a handler is answered."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, {"content-type": "application/json"}, body


def invoke(
    routes: list[BoundRoute],
    *,
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    domain: str | None = None,
) -> Answer:
    """Route one request, invoke its handler, and turn the result into (status, headers, body)."""
    parts = urlsplit(target)
    found = match(routes, method, parts.path)
    if found is None:
        return error_answer(404, "not_found", "no such route")
    bound, params = found
    event = build_event(
        method=method, raw_path=parts.path, query=parts.query, headers=headers, body=body,
        source_ip=source_ip, route=bound.route, path_params=params, domain=domain,
    )  # fmt: skip
    try:
        result = bound.handler(event, LambdaContext(bound.route.function))
    except Exception:  # an unhandled crash is API Gateway's 500, as on AWS
        return error_answer(500, "internal", "Internal Server Error")
    out_headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    raw = result.get("body") or ""
    data = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return int(result.get("statusCode", 200)), out_headers, data
