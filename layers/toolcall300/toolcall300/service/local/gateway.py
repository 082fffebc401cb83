"""A local stand-in for API Gateway's HTTP API on a socket: waitress serves HTTP, and this module
is the thin adapter between it, the framing rules (``service.local.framing``) and the emulated
API (``service.local.httpapi``). Not a faithful API Gateway: no authorizers, no throttling, a
10 MB body cap like the real one.

waitress's settings hold what they can (:class:`GatewayServer`): the body cap while a body is
read (``max_request_body_size``), the header cap (``max_request_header_size``, 431), the idle
timeout of a kept-alive connection (``channel_timeout``), the connection limit and the listen
backlog, no ``Server`` ident, no tracebacks. Its parser refuses a ``Content-Length`` that is
not digits and a malformed chunk itself. ``framing`` holds the rest and is asked here: the
request line, ``Host``, the length fields, bounds on a chunk's size line and trailer, the
methods (in the WSGI application, :class:`LambdaAdapter`), and the words of every refusal
(docs/api.md's JSON error, where waitress would send a text page).

Three waitress classes are still subclassed, each for a hook waitress has no setting for (each
attacked over a raw socket in ``tests/unit/test_gateway.py``): the request parser (to refuse a
request from its head, before its body is read or a ``100 Continue`` is sent, and to answer
every refusal in JSON), the channel (when a request's first byte came), and the server (a
deadline for a whole request, room made at the connection limit, a burst accepted at once).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.server import TcpWSGIServer
from waitress.task import hop_by_hop
from waitress.utilities import RequestEntityTooLarge, RequestHeaderFieldsTooLarge

from toolcall300.service.local import framing
from toolcall300.service.local.httpapi import BoundRoute, bind_routes, error_answer, invoke

#: ``bind_routes`` and ``invoke`` are httpapi's, named here too for the stack that serves them.
__all__ = ["GatewayServer", "LambdaAdapter", "LocalRoutes", "ServerLimits", "bind_routes", "invoke"]

MAX_BODY = 10 * 1024 * 1024  # API Gateway's own payload limit

#: Routes only a local stack serves (the dev checkout page): (method, target, body) -> the
#: answer, or None when the target is not one of them.
LocalRoutes = Callable[[str, str, bytes], "tuple[int, dict[str, str], bytes] | None"]


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
    """The WSGI application: environ -> HTTP API v2 event -> handler -> HTTP answer, with
    framing's method rules (TRACE and CONNECT 405, an unknown method 501, HEAD routed as the
    GET it asks about and answered without the body).

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
            status, headers, data = error_answer(refused.status, refused.code, refused.message)
        else:
            routed = framing.routed_method(method)  # HEAD: the GET's answer, without its body
            answer = self.local_routes(routed, target, body) if self.local_routes else None
            status, headers, data = answer or invoke(
                self.routes, method=routed, target=target, headers=request_headers(environ),
                body=body, source_ip=str(environ.get("REMOTE_ADDR") or ""), domain=self.domain,
            )  # fmt: skip
        out = [(k, v) for k, v in headers.items() if k not in hop_by_hop and k != "content-length"]
        out.append(("content-length", str(len(data))))
        start_response(_status_line(status), out)
        return [] if method == "HEAD" else [data]


def _status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


# ------------------------------------------- the hooks waitress has no setting for, added here


class _Refused:
    """``request.error`` for a request refused before any handler runs: waitress's error task
    sends ``error.to_response()`` and closes the connection. Its own errors render a text page
    and no setting changes that, so this renders docs/api.md's JSON error (the one method the
    error task calls; not a subclass of waitress's ``Error``, whose body it would replace)."""

    def __init__(self, refusal: framing.Refusal) -> None:
        self.refusal = refusal

    def to_response(self, ident: str | None = None) -> tuple[str, list[tuple[str, str]], bytes]:
        status, headers, body = error_answer(
            self.refusal.status, self.refusal.code, self.refusal.message
        )
        return _status_line(status), list(headers.items()), body


def _as_json(error: Any) -> _Refused:
    """waitress's own refusals (the caps it is configured with, a Content-Length that is not
    digits, a bad chunk, a transfer coding it does not implement) in framing's words."""
    if isinstance(error, _Refused):
        return error
    if isinstance(error, RequestEntityTooLarge):
        return _Refused(framing.TOO_LARGE)
    if isinstance(error, RequestHeaderFieldsTooLarge):
        return _Refused(framing.HEAD_TOO_LARGE)
    message = str(getattr(error, "body", "") or "malformed request")
    if "Content-Length" in message:
        return _Refused(framing.BAD_LENGTH)
    if "hunk" in message:  # "Invalid chunk size", "Chunk not properly terminated", ...
        return _Refused(framing.BAD_CHUNKS)
    status = int(getattr(error, "code", 400))
    return _Refused(
        framing.Refusal(status, "bad_request" if status == 400 else "http_error", message)
    )


class _Parser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser held to ``framing``'s rules, every refusal a JSON error.

    A subclass because waitress has no public hook between the bytes and its parse: no
    callback with the request line once it ends (HTTP/0.9 would wait for a header block,
    ``HTTP/9.9`` would be served), none with the head before the body is read (where
    ``Content-Length`` beside ``Transfer-Encoding``, ``Host`` and an HTTP/1.0
    ``Transfer-Encoding`` are refused, and where a refusal must cancel the ``100 Continue``
    waitress would otherwise send before its own 413), no bound on a chunk's size line or
    trailer but the whole body cap (``max_control_line`` is commented out in its chunked
    reader), and no setting for the body of its refusals (:class:`_Refused`).
    """

    body_rcv: Any
    completed: bool
    error: Any

    def received(self, data: bytes) -> int:
        if self.body_rcv is None and not self.completed and not self.headers_finished:
            refused = framing.request_line_refusal(self.header_plus + data)
            if refused is not None:
                self.parse_header(b"GET / HTTP/1.0\r\n")  # what the error answer needs
                self.error, self.completed = _Refused(refused), True
                return len(data)
        consumed: int = super().received(data)
        if self.chunked and not self.completed:
            chunks = self.body_rcv  # waitress's chunked reader, read between two receipts
            refused = framing.chunk_refusal(
                size_line=len(chunks.control_line), trailer=len(chunks.trailer),
                buffered=len(chunks.buf), declared=chunks.chunk_remainder,
                max_body=self.adj.max_request_body_size - 1,
            )  # fmt: skip
            if refused is not None:
                self.error, self.completed = _Refused(refused), True
        if self.error is not None:
            self.error = _as_json(self.error)
            self.expect_continue = False  # refused: no 100 Continue, the refusal instead
        return consumed

    def parse_header(self, header_plus: bytes) -> None:
        refused = framing.head_refusal(header_plus, max_body=self.adj.max_request_body_size - 1)
        if refused is None:
            super().parse_header(header_plus)
            return
        first_line = header_plus.partition(b"\r\n")[0]
        try:  # the request line alone: the answer's HTTP version; no body is read
            super().parse_header(first_line + b"\r\n")
        except ParsingError:
            super().parse_header(b"GET / HTTP/1.0\r\n")
        self.error = _Refused(refused)


class _Channel(HTTPChannel):  # type: ignore[misc]
    """A connection that knows since when its request (head and body) has been on its way.

    A subclass because waitress keeps the time of a connection's last byte only (its idle
    timeout counts from it), not when the request being received began."""

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
    """waitress serving :class:`LambdaAdapter` with the limits of :class:`ServerLimits`.

    A subclass because waitress has no setting for three things it must do here: a deadline
    for a whole request from its first byte (``channel_timeout`` counts from the last byte
    read, so a client that trickles a byte at a time holds its connection, and gets its
    request run, as late as it likes); at the connection limit with a client waiting, closing
    the connection that has gone longest without a request to serve (without it, a thousand
    silent connections held every place until their deadline); and taking every waiting
    client in one turn of the loop (waitress takes one a turn, and each turn walks every open
    connection). ``serve_forever()`` runs the loop on the calling thread until
    ``shutdown()`` from another (waitress's ``run()`` has no stop); ``clock`` times the
    request deadline (tests pass their own).
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
