"""A local stand-in for API Gateway's HTTP API: waitress serves HTTP, an adapter turns each
request into an HTTP API v2 event for the handlers that ``template.yaml`` routes to.

Routes are read from ``template.yaml`` (each function's ``HttpApi`` events), so a function
added to the template is served without touching this module. Each function is imported once
from ``functions/<name>/app.py``; its requests run concurrently on the server's handler threads,
as concurrent Lambda environments would (the resolver keeps each request per thread,
``api/resolver.py``). Not a faithful API Gateway: no authorizers, no throttling, a 10 MB body
cap like the real one.

The HTTP server is waitress (pure Python, well kept): one event loop owns every connection, a
fixed pool of threads runs the handlers, and it has a connection limit, an idle timeout and a
body buffer that spills to disk. The framing rules it lacks live, pure and tested on their own,
in ``service.local.framing`` (versions, ``Host``, the length fields, chunk bounds, methods, HEAD
routed as GET, a 413 before any ``100 Continue``); this module is the adapter that asks them
and turns a refusal into the JSON error body of docs/api.md with the connection closed. What
:class:`GatewayServer` adds to waitress's connection handling (each attacked over a raw socket
in ``tests/unit/test_gateway.py``):

- a deadline for the whole request from its first byte (or from the accept): waitress's
  timeout counts from the last byte read, so a client that trickles a byte at a time holds its
  connection, and gets its request run, as late as it likes;
- at the connection limit, with a client waiting to be taken on, the connection that has gone
  longest without a request to serve is closed to make room (idle keep-alives first), so a
  thousand silent connections cannot make a real request wait for their deadline;
- a burst of clients accepted in one turn of the loop (up to the connection limit), not one
  per turn.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import logging
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.receiver import ChunkedReceiver
from waitress.server import TcpWSGIServer
from waitress.task import hop_by_hop
from waitress.utilities import Error, RequestEntityTooLarge, RequestHeaderFieldsTooLarge

from toolcall300.service.local import framing
from toolcall300.service.local.cfn import HttpRoute, http_routes

MAX_BODY = 10 * 1024 * 1024  # API Gateway's own payload limit
_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: Routes only a local stack serves (the dev checkout page): (method, target, body) -> the
#: answer, or None when the target is not one of them.
LocalRoutes = Callable[[str, str, bytes], "tuple[int, dict[str, str], bytes] | None"]


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
    """Every template route bound to its function's handler (one import per function)."""
    handlers: dict[str, Handler] = {}
    bound = []
    for route in http_routes(template):
        if route.function not in handlers:
            handlers[route.function] = load_handler(root, route)
        bound.append(BoundRoute(route, route.pattern(), handlers[route.function]))
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
            "domainName": domain or merged.get("host", "localhost"),
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
    domain: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """Route one request, invoke its handler, and turn the result into (status, headers, body)."""
    parts = urlsplit(target)
    found = match(routes, method, parts.path)
    if found is None:
        return _error(404, "not_found", "no such route")
    bound, params = found
    event = build_event(
        method=method, raw_path=parts.path, query=parts.query, headers=headers, body=body,
        source_ip=source_ip, route=bound.route, path_params=params, domain=domain,
    )  # fmt: skip
    try:
        result = bound.handler(event, LambdaContext(bound.route.function))
    except Exception:  # an unhandled crash is API Gateway's 500, as on AWS
        return _error(500, "internal", "Internal Server Error")
    out_headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    raw = result.get("body") or ""
    data = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return int(result.get("statusCode", 200)), out_headers, data


# ------------------------------------------------------------------------ the WSGI adapter


def request_headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    """The request's header fields from a WSGI environ, names lower-cased as API Gateway
    hands them over (waitress drops any name with an underscore, so none is forged)."""
    headers = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.append((key[5:].replace("_", "-").lower(), str(value)))
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.append((key.replace("_", "-").lower(), str(value)))
    return headers


class LambdaAdapter:
    """The WSGI application: environ -> HTTP API v2 event -> handler -> HTTP answer.

    The target is the request-target as sent (``REQUEST_URI``), not WSGI's decoded
    ``PATH_INFO``: API Gateway routes on the raw path and decodes path parameters itself.
    """

    def __init__(self, routes: list[BoundRoute], local_routes: LocalRoutes | None = None) -> None:
        self.routes = routes
        self.local_routes = local_routes
        self.domain = "localhost"  #: the server's own ``host:port`` once bound (GatewayServer)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        method = str(environ["REQUEST_METHOD"])
        target = str(environ.get("REQUEST_URI") or environ.get("PATH_INFO") or "/")
        body = environ["wsgi.input"].read()  # whole and capped: waitress buffered it
        refused = framing.method_refusal(method)
        if refused is not None:
            status, headers, data = _error(refused.status, refused.code, refused.message)
        else:
            routed = framing.routed_method(method)  # HEAD: the GET's answer, without its body
            answer = self.local_routes(routed, target, body) if self.local_routes else None
            status, headers, data = answer or invoke(
                self.routes, method=routed, target=target, headers=request_headers(environ),
                body=body, source_ip=str(environ.get("REMOTE_ADDR") or ""), domain=self.domain,
            )  # fmt: skip
        out = [(k, v) for k, v in headers.items() if k not in hop_by_hop and k != "content-length"]
        out.append(("content-length", str(len(data))))
        start_response(f"{status} {_reason(status)}", out)
        return [] if method == "HEAD" else [data]


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


# ---------------------------------------------------------- what waitress lacks, added here


class JsonError(Error):  # type: ignore[misc]
    """A refusal before any handler runs, answered with the JSON error body; waitress's error
    task sends it and closes the connection."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.code = status
        self.reason = _reason(status)
        self.error_code = code

    def to_response(self, ident: str | None = None) -> tuple[str, list[tuple[str, str]], bytes]:
        _status, headers, body = _error(self.code, self.error_code, str(self.body))
        return f"{self.code} {self.reason}", [(k, v) for k, v in headers.items()], body


def _refusal(refused: framing.Refusal) -> JsonError:
    return JsonError(refused.status, refused.code, refused.message)


def _as_json(error: Any) -> JsonError:
    """waitress's own refusals (bad header, bad chunk, too large) as JSON errors."""
    if isinstance(error, JsonError):
        return error
    if isinstance(error, RequestEntityTooLarge):
        return JsonError(413, "payload_too_large", "request body too large")
    if isinstance(error, RequestHeaderFieldsTooLarge):
        return JsonError(431, "headers_too_large", "request header section too large")
    message = str(getattr(error, "body", "") or "malformed request")
    status = int(getattr(error, "code", 400))
    if "Content-Length" in message:
        return JsonError(400, "invalid_content_length", "Content-Length must be one decimal number")
    if "hunk" in message:  # "Invalid chunk size", "Chunk not properly terminated", ...
        return JsonError(400, "invalid_chunked_body", "malformed chunked request body")
    return JsonError(status, "bad_request" if status == 400 else "http_error", message)


class _BoundedChunks(ChunkedReceiver):  # type: ignore[misc]
    """waitress's chunked body reader with bounds on the size line and the trailer, and a
    declared chunk that would take the body past the cap refused before it is read."""

    error: Any
    completed: bool

    def __init__(self, buf: Any, max_body: int) -> None:
        super().__init__(buf)
        self.max_body = max_body

    def received(self, s: bytes) -> int:
        consumed: int = super().received(s)
        if self.error is None and not self.completed:
            refused = framing.chunk_refusal(
                size_line=len(self.control_line),
                trailer=len(self.trailer),
                buffered=len(self.buf),
                declared=self.chunk_remainder,
                max_body=self.max_body,
            )
            if refused is not None:
                self.error = _refusal(refused)
                self.all_chunks_received = True
        return consumed


class _Parser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser with the checks above; every refusal a JSON error."""

    body_rcv: Any
    completed: bool
    error: Any

    def received(self, data: bytes) -> int:
        if self.body_rcv is None and not self.completed and not self.headers_finished:
            refused = framing.request_line_refusal(self.header_plus + data)
            if refused is not None:
                self.parse_header(b"GET / HTTP/1.0\r\n")  # what the error answer needs
                self.error = _refusal(refused)
                self.completed = True
                return len(data)
        consumed: int = super().received(data)
        if self.error is not None:
            self.error = _as_json(self.error)
            self.expect_continue = False  # refused: no 100 Continue, the refusal instead
        return consumed

    def parse_header(self, header_plus: bytes) -> None:
        refused = framing.head_refusal(header_plus, max_body=self.adj.max_request_body_size - 1)
        if refused is None:
            super().parse_header(header_plus)
            if self.chunked:
                self.body_rcv = _BoundedChunks(
                    self.body_rcv.getbuf(), self.adj.max_request_body_size - 1
                )
            return
        first_line = header_plus.partition(b"\r\n")[0]
        try:  # the request line alone: the answer's HTTP version; no body is read
            super().parse_header(first_line + b"\r\n")
        except ParsingError:
            super().parse_header(b"GET / HTTP/1.0\r\n")
        self.error = _refusal(refused)


class _Channel(HTTPChannel):  # type: ignore[misc]
    """A connection whose request (head and body) must arrive within the server's deadline."""

    parser_class = _Parser
    server: GatewayServer

    def __init__(self, server: GatewayServer, sock: Any, addr: Any, adj: Any, map: Any) -> None:
        #: When the request being received began (the accept, for the first one); None while
        #: no request is on its way (then waitress's idle timeout applies).
        self.waiting_since: float | None = server.clock()
        super().__init__(server, sock, addr, adj, map)

    def received(self, data: bytes) -> bool:
        if data and self.waiting_since is None:
            self.waiting_since = self.server.clock()
        handled: bool = super().received(data)
        if self.request is None:  # every byte so far is a whole request: none is on its way
            self.waiting_since = None
        return handled


def _since(channel: Any) -> float:
    """Since when a connection has had nothing to serve (its request's start, or its last
    activity when idle between requests)."""
    since = channel.waiting_since
    return float(channel.last_activity if since is None else since)


@dataclass(frozen=True)
class ServerLimits:
    """How much one local stack takes on (the defaults are what `toolcall300 serve` uses)."""

    threads: int = 16  # handler threads; further requests wait in waitress's queue
    connection_limit: int = 1000  # further clients wait in the listen backlog
    backlog: int = 1024
    request_timeout_s: float = 30.0  # a whole request, head and body, from its first byte
    idle_timeout_s: int = 60  # a kept-alive connection with nothing on its way
    max_body: int = MAX_BODY
    max_header: int = 64 * 1024


class GatewayServer(TcpWSGIServer):  # type: ignore[misc]
    """waitress serving :class:`LambdaAdapter`, with the additions above.

    ``serve_forever()`` runs the event loop on the calling thread until ``shutdown()``;
    ``clock`` times the request deadline (tests pass their own).
    """

    channel_class = _Channel

    def __init__(
        self,
        address: tuple[str, int],
        routes: list[BoundRoute],
        local_routes: LocalRoutes | None = None,
        *,
        limits: ServerLimits = ServerLimits(),
        clock: Callable[[], float] = time.monotonic,
        sock: socket.socket | None = None,
    ) -> None:
        """``sock``: a listening socket to serve instead of binding ``address`` (another
        process of the same stack accepts on it too: the kernel hands each connection to one)."""
        self.limits = limits
        self.clock = clock
        self.adapter = LambdaAdapter(routes, local_routes)
        self._next_deadline_check = 0.0
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._serving = False
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "queue depth" under load
        adj = Adjustments(
            host=address[0],
            port=address[1],
            threads=limits.threads,
            connection_limit=limits.connection_limit,
            backlog=limits.backlog,
            channel_timeout=limits.idle_timeout_s,
            cleanup_interval=1,
            max_request_body_size=limits.max_body + 1,  # waitress refuses at >=
            max_request_header_size=limits.max_header,
            asyncore_use_poll=True,  # select() stops at 1,024 descriptors
            log_socket_errors=False,  # a client that went away is not our error
            expose_tracebacks=False,
            ident="",
        )
        if sock is None:
            super().__init__(self.adapter, adj=adj)
        else:
            super().__init__(self.adapter, adj=adj, _sock=sock, bind_socket=False)
        host, port = self.server_address
        self.adapter.domain = f"{host}:{port}"  # as TOOLCALL300_PUBLIC_URL says

    @property
    def routes(self) -> list[BoundRoute]:
        return self.adapter.routes

    @property
    def local_routes(self) -> LocalRoutes | None:
        return self.adapter.local_routes

    @local_routes.setter
    def local_routes(self, value: LocalRoutes | None) -> None:
        self.adapter.local_routes = value

    @property
    def server_address(self) -> tuple[str, int]:
        return str(self.effective_host), int(self.effective_port)

    def readable(self) -> bool:
        now = self.clock()
        if now >= self._next_deadline_check:
            self._next_deadline_check = now + min(1.0, self.limits.request_timeout_s / 4)
            self.close_overdue(now)
        self.make_room()
        readable: bool = super().readable()  # waitress's idle timeout and connection limit
        return readable

    def make_room(self) -> None:
        """At the connection limit with a client waiting in the listen backlog, close the
        connection that has gone longest without a request to serve: an idle keep-alive, or
        one whose request has not arrived (the oldest first), never one whose request is being
        run or answered. One at a time: none while a connection is already closing.

        Without this, a thousand connections that send nothing held every place until their
        request deadline, and a real request waited in the backlog that long (27 s measured)."""
        if len(self._map) < self.adj.connection_limit or not self.accepting:
            return
        channels = list(self.active_channels.values())
        if any(ch.will_close for ch in channels):
            return  # a place is being freed already (this one's, or a deadline's)
        waiting = select.poll()
        waiting.register(self.socket.fileno(), select.POLLIN)
        if not waiting.poll(0):
            return  # nobody is waiting for a place
        idle = [ch for ch in channels if not ch.requests and not ch.total_outbufs_len]
        if idle:
            stalest = min(idle, key=lambda ch: (ch.waiting_since is not None, _since(ch)))
            stalest.will_close = True

    def handle_accept(self) -> None:
        """Take every connection waiting, up to the connection limit, not one per turn of the
        loop as waitress does: each turn walks every open connection, so a burst of n clients
        cost n turns of O(n) before the last was served (a thousand slow clients: seconds on a
        loaded machine before a whole request behind them was even read)."""
        while self.accepting and len(self._map) < self.adj.connection_limit:
            before = len(self._map)
            super().handle_accept()
            if len(self._map) == before:  # nothing more waiting (or a bogus socket): next turn
                return

    def close_overdue(self, now: float) -> None:
        """Close every connection whose request has not arrived whole within the deadline:
        the half request is never run, however late the rest comes."""
        cutoff = now - self.limits.request_timeout_s
        for channel in list(self.active_channels.values()):
            since = getattr(channel, "waiting_since", None)
            if since is not None and since < cutoff and not channel.requests:
                channel.will_close = True

    def serve_forever(self) -> None:
        self._serving = True
        try:
            while not self._stopping.is_set():
                wasyncore.loop(
                    timeout=self.adj.asyncore_loop_timeout, map=self._map, use_poll=True, count=1
                )
        finally:
            wasyncore.close_all(self._map)
            self.task_dispatcher.shutdown(timeout=5)
            self._stopped.set()

    def shutdown(self) -> None:
        """End the loop (from any thread) and wait until every connection is closed."""
        if self._stopping.is_set():
            self._stopped.wait(timeout=10)
            return
        self._stopping.set()
        if self._serving:
            # the loop may have seen the flag and closed its trigger already (it was woken by
            # a connection closing): then there is nothing left to wake
            with contextlib.suppress(OSError):
                self.pull_trigger()
            self._stopped.wait(timeout=10)

    def server_close(self) -> None:
        """Release the socket of a server that was never served (``shutdown`` does otherwise)."""
        if not self._serving:
            wasyncore.close_all(self._map)
            self.task_dispatcher.shutdown(timeout=5)
