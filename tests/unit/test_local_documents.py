"""The local stack answers its constant documents before the gateway builds an event, with the
very bytes and headers their routes answer (service/local/documents.py)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import pytest

PATHS = ["/criteria", "/openapi.json"]


def _environ(method: str, target: str, **headers: str) -> dict[str, Any]:
    environ = {
        "REQUEST_METHOD": method,
        "REQUEST_URI": target,
        "PATH_INFO": target.partition("?")[0],
        "REMOTE_ADDR": "198.51.100.7",
        "wsgi.input": io.BytesIO(b""),
        "HTTP_HOST": "127.0.0.1:8300",
    }
    environ.update({"HTTP_" + name.upper(): value for name, value in headers.items()})
    return environ


def _answer(app: Callable[..., Iterable[bytes]], environ: dict[str, Any]) -> tuple[str, Any, bytes]:
    got: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        got["status"], got["headers"] = status, sorted(headers)

    body = b"".join(app(environ, start_response))
    return got["status"], got["headers"], body


class _Counted:
    """The gateway's WSGI app, counting the requests that reach it."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app, self.calls = app, 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        self.calls += 1
        return self.app(environ, start_response)


@pytest.fixture
def apps(routes: list[Any]) -> tuple[Any, _Counted]:
    from toolcall300.service.api.resolver import CONSTANT_DOCUMENTS
    from toolcall300.service.local.documents import ConstantDocuments, routed
    from toolcall300.service.local.gateway import LambdaAdapter

    gateway = _Counted(LambdaAdapter(routes))
    return ConstantDocuments(gateway, routed(routes, CONSTANT_DOCUMENTS)), gateway


@pytest.mark.parametrize("path", PATHS)
def test_a_constant_document_is_answered_as_its_route_answers_it_without_the_handler(
    apps: tuple[Any, _Counted], path: str
) -> None:
    documents, gateway = apps
    _, _, first = _answer(gateway, _environ("GET", path))
    [etag] = [v for k, v in _answer(gateway, _environ("GET", path))[1] if k == "etag"]
    asked = [
        _environ("GET", path),
        _environ("GET", path + "?any=query"),
        _environ("GET", path, IF_NONE_MATCH=etag),
        _environ("GET", path, IF_NONE_MATCH=f'"other", W/{etag}'),
        _environ("GET", path, IF_NONE_MATCH='"other"'),
        _environ("HEAD", path),
        _environ("HEAD", path, IF_NONE_MATCH=etag),
    ]
    for environ in asked:
        gateway.calls = 0
        expected = _answer(gateway, dict(environ, **{"wsgi.input": io.BytesIO(b"")}))
        assert gateway.calls == 1
        assert _answer(documents, environ) == expected
        assert gateway.calls == 1  # the document was answered without the handler
    assert first and _answer(documents, _environ("GET", path))[0] == "200 OK"
    assert _answer(documents, _environ("GET", path, IF_NONE_MATCH=etag))[:1] == (
        "304 Not Modified",
    )


@pytest.mark.parametrize(
    ("method", "target"),
    [("POST", "/criteria"), ("GET", "/criteria/"), ("GET", "/%63riteria"), ("GET", "/licence")],
)
def test_any_other_request_goes_to_the_gateway(
    apps: tuple[Any, _Counted], method: str, target: str
) -> None:
    documents, gateway = apps
    gateway.calls = 0
    _answer(documents, _environ(method, target))
    assert gateway.calls == 1


def test_a_document_whose_path_the_routes_do_not_serve_is_not_answered(routes: list[Any]) -> None:
    from toolcall300.service.api.resolver import ConstantDocument
    from toolcall300.service.local.documents import routed

    stray = ConstantDocument(lambda: {"a": 1})
    assert routed(routes, {"/nowhere": stray, "/cases/{id}/rationale": stray}) == {}
    assert set(routed(routes, {path: stray for path in PATHS})) == set(PATHS)
