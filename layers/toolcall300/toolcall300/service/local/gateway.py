"""A local stand-in for API Gateway's HTTP API: real HTTP in, HTTP API v2 events to handlers.

Routes are read from ``template.yaml`` (each function's ``HttpApi`` events), so a function
added to the template is served without touching this module. Each function is imported once
from ``functions/<name>/app.py`` and invoked one request at a time (one warm Lambda instance
per function), except that the functions in :data:`ANONYMOUS_LANE` run requests without a key
beside those with one, as two Lambda environments would (the resolver keeps each request
per thread). This
is not a faithful API Gateway: no authorizers, no throttling, a 10 MB body cap like the real one.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from toolcall300.service.local.cfn import HttpRoute, http_routes

MAX_BODY = 10 * 1024 * 1024  # API Gateway's own payload limit
_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: Functions whose requests without an ``Authorization`` header are invoked in a lane of their
#: own. The checker: a free check may spend its CPU budget in the bounded child, and that must
#: not hold up a licensed caller's check (docs/api.md). Each lane still takes one request at a
#: time: moto's in-process tables are not safe under concurrent transactions.
ANONYMOUS_LANE = frozenset({"ArgcheckFunction"})
#: Routes only a local stack serves (the dev checkout page): (method, target, body) -> the
#: answer, or None when the target is not one of them.
LocalRoutes = Callable[[str, str, bytes], "tuple[int, dict[str, str], bytes] | None"]
#: The methods API Gateway's HTTP API routes; anything else (TRACE, CONNECT) is refused.
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


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


@dataclass
class BoundRoute:
    route: HttpRoute
    pattern: Any
    handler: Handler
    lock: threading.Lock
    anonymous_lock: threading.Lock | None = None  # the lane for keyless requests, if any

    def lane(self, headers: list[tuple[str, str]]) -> threading.Lock:
        keyless = all(name.lower() != "authorization" for name, _ in headers)
        return self.anonymous_lock if keyless and self.anonymous_lock else self.lock


def load_handler(root: Path, route: HttpRoute) -> Handler:
    """Import ``<CodeUri>/<module>.py`` under a unique module name; return its handler."""
    module_name, _, attr = route.handler.rpartition(".")
    path = root / route.code_uri / f"{module_name}.py"
    spec = importlib.util.spec_from_file_location(f"tc300_function_{route.function}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, attr)
    return handler


def bind_routes(root: Path, template: dict[str, Any]) -> list[BoundRoute]:
    """Every template route bound to its function's handler (one import and one lock per
    function, a second lock for its keyless requests when it has that lane)."""
    handlers: dict[str, tuple[Handler, threading.Lock, threading.Lock | None]] = {}
    bound = []
    for route in http_routes(template):
        if route.function not in handlers:
            anonymous = threading.Lock() if route.function in ANONYMOUS_LANE else None
            handlers[route.function] = (load_handler(root, route), threading.Lock(), anonymous)
        handler, lock, anonymous_lock = handlers[route.function]
        bound.append(BoundRoute(route, route.pattern(), handler, lock, anonymous_lock))
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
) -> dict[str, Any]:
    """An HTTP API payload-format 2.0 event, as API Gateway would build it."""
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    merged["x-forwarded-proto"] = "http"  # as API Gateway sets it; this gateway speaks plain HTTP
    params: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v
    content_type = merged.get("content-type", "")
    is_text = any(content_type.startswith(t) for t in _TEXT_TYPES)
    try:
        text_body = body.decode("utf-8") if is_text else None
    except UnicodeDecodeError:
        text_body = None
    now = time.time()
    route_key = f"{route.method} {route.path}"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": merged,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": merged.get("host", "localhost"),
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
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if params:
        event["queryStringParameters"] = params
    if path_params:
        event["pathParameters"] = path_params
    if body:
        if text_body is not None:
            event["body"] = text_body
        else:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
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
) -> tuple[int, dict[str, str], bytes]:
    """Route one request, invoke its handler, and turn the result into (status, headers, body)."""
    parts = urlsplit(target)
    found = match(routes, method, parts.path)
    if found is None:
        return _error(404, "not_found", "no such route")
    bound, params = found
    event = build_event(
        method=method, raw_path=parts.path, query=parts.query, headers=headers, body=body,
        source_ip=source_ip, route=bound.route, path_params=params,
    )  # fmt: skip
    with bound.lane(headers):
        try:
            result = bound.handler(event, LambdaContext(bound.route.function))
        except Exception:  # an unhandled crash is API Gateway's 500, as on AWS
            return _error(500, "internal", "Internal Server Error")
    out_headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    raw = result.get("body") or ""
    data = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return int(result.get("statusCode", 200)), out_headers, data


class _RequestHandler(BaseHTTPRequestHandler):
    server: GatewayServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes; with Nagle on, a keep-alive client's delayed
        # ACK stalls every response by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _read_body(self) -> bytes | tuple[int, dict[str, str], bytes]:
        """The request body (``Content-Length`` or chunked), or the JSON error that refuses it.

        An unreadable framing closes the connection after the answer: what follows on it
        cannot be told apart from the body.
        """
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            return self._read_chunked()
        raw = self.headers.get_all("content-length") or []
        if len(set(raw)) > 1 or (raw and not raw[0].strip().isdigit()):
            self.close_connection = True
            return _error(
                400, "invalid_content_length", "Content-Length must be one decimal number"
            )
        length = int(raw[0]) if raw else 0
        if length > MAX_BODY:
            self.close_connection = True
            return _error(413, "payload_too_large", "request body too large")
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes | tuple[int, dict[str, str], bytes]:
        body = bytearray()
        while True:
            line = self.rfile.readline(1026).split(b";", 1)[0].strip()
            try:
                size = int(line, 16)
            except ValueError:
                self.close_connection = True
                return _error(400, "invalid_chunked_body", "malformed chunked request body")
            if size == 0:
                self._discard_trailers()
                return bytes(body)
            if len(body) + size > MAX_BODY:
                self.close_connection = True
                return _error(413, "payload_too_large", "request body too large")
            body += self.rfile.read(size)
            self.rfile.readline(3)  # the CRLF after each chunk

    def _discard_trailers(self) -> None:
        """Read past the trailer section after the last chunk (RFC 9112 section 7.1.2): like API
        Gateway, the local gateway hands no trailer field to a handler."""
        line = self.rfile.readline(1026)
        while line not in (b"\r\n", b"\n", b""):
            line = self.rfile.readline(1026)

    def _serve(self) -> None:
        body = self._read_body()
        if isinstance(body, tuple):
            status, headers, data = body
        elif self.command not in _METHODS:
            status, headers, data = _error(
                405, "method_not_allowed", f"{self.command} is not served"
            )
        else:
            local = self.server.local_routes
            answer = local(self.command, self.path, body) if local else None
            status, headers, data = answer or invoke(
                self.server.routes, method=self.command, target=self.path,
                headers=list(self.headers.items()), body=body, source_ip=self.client_address[0],
            )  # fmt: skip
        self._answer(status, headers, data)

    def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve
    do_TRACE = do_CONNECT = _serve

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """``http.server``'s own refusals (bad request line, unknown method) as JSON errors."""
        self.close_connection = True
        self.request_version = self.protocol_version  # never a headerless HTTP/0.9 answer
        self._answer(
            *_error(code, "bad_request" if code == 400 else "http_error", message or "refused")
        )

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: request lines would put query strings (session ids) in the terminal."""


class GatewayServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        routes: list[BoundRoute],
        local_routes: LocalRoutes | None = None,
    ) -> None:
        super().__init__(address, _RequestHandler)
        self.routes = routes
        self.local_routes = local_routes
