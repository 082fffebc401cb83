"""The constant documents (``GET /criteria``, ``GET /openapi.json``), answered by the local
stack's WSGI app before the gateway builds an event for them.

Each is a :class:`~toolcall300.service.api.resolver.ConstantDocument`: built, encoded and
hashed once, and the same for every caller, so its route reads nothing of the request but
``If-None-Match``, checks nothing and charges nothing. Through the handler, each request still
paid for an HTTP API event, the Lambda context, Powertools' logger, tracer, metrics, router
and validation middleware, about twice the HTTP floor's own work for bytes that never change
(``bench/bench_local_stack.py`` measures it). Here a GET or HEAD of exactly its path is
answered with the bytes and headers the route answers (:meth:`ConstantDocument.answer`, the
one place both read: a 304 when ``If-None-Match`` names its ``ETag``); every other request,
of any other method or target, goes to the gateway as before. The HTTP framing rules ran
before any application (``service.local.framing``, in the gateway's parser). On AWS the route
serves the document itself, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from toolcall300.service.api.resolver import ConstantDocument
from toolcall300.service.local.httpapi import BoundRoute, match

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class ConstantDocuments:
    """A WSGI app: ``documents`` (path -> document) answered here, the rest by ``app``."""

    def __init__(self, app: WSGIApp, documents: Mapping[str, ConstantDocument]) -> None:
        self.app = app
        self.documents = dict(documents)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method == "GET" or method == "HEAD":
            target = str(environ.get("REQUEST_URI") or environ.get("PATH_INFO") or "/")
            document = self.documents.get(target.partition("?")[0])
            if document is not None:
                status, headers, body = document.answer(environ.get("HTTP_IF_NONE_MATCH"))
                out = [(name.lower(), value) for name, value in headers.items()]
                out.append(("content-length", str(len(body))))
                start_response(f"{status} {HTTPStatus(status).phrase}", out)
                return [] if method == "HEAD" else [body]
        return self.app(environ, start_response)


def routed(
    routes: list[BoundRoute], documents: Mapping[str, ConstantDocument]
) -> dict[str, ConstantDocument]:
    """The documents whose path ``routes`` (the template's) serve to ``GET`` as written, a
    route without path parameters: a document of a function this stack does not serve is not
    answered for it."""
    served = {}
    for path, document in documents.items():
        found = match(routes, "GET", path)
        if found is not None and not found[1] and found[0].route.path == path:
            served[path] = document
    return served
