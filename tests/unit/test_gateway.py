"""The local gateway's pieces: CloudFormation tags, routes from the template, v2 events."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.service.local.cfn import HttpRoute, load_template, resolve
from toolcall300.service.local.gateway import build_event

ROUTE = HttpRoute(
    "CorpusFunction", "GET", "/cases/{id}/rationale", "functions/corpus/", "app.handler"
)


def test_loader_understands_short_form_intrinsics(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "Resources:\n  A:\n    Type: X\n    Properties:\n"
        "      R: !Ref B\n      G: !GetAtt B.Arn\n      S: !Sub '${B}-x'\n      I: !If [C, [!Ref B], !Ref AWS::NoValue]\n"
    )
    props = load_template(path)["Resources"]["A"]["Properties"]
    assert props["R"] == {"Ref": "B"} and props["G"] == {"Fn::GetAtt": ["B", "Arn"]}
    assert resolve(props, {"B": "bee"})["S"] == "bee-x"
    assert props["I"] == {"Fn::If": ["C", [{"Ref": "B"}], {"Ref": "AWS::NoValue"}]}


@given(
    st.text(
        alphabet=st.characters(blacklist_characters="/", blacklist_categories=["Cs"]),
        min_size=1,
        max_size=30,
    )
)
def test_path_parameter_is_one_segment(segment: str) -> None:
    m = ROUTE.pattern().match(f"/cases/{segment}/rationale")
    assert m is not None and m.group("id") == segment
    assert ROUTE.pattern().match(f"/cases/{segment}/x/rationale") is None


def event(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "method": "GET", "raw_path": "/cases/tc300-0001/rationale", "query": "", "headers": [],
        "body": b"", "source_ip": "192.0.2.1", "route": ROUTE, "path_params": {"id": "tc300-0001"},
    }  # fmt: skip
    args.update(kw)
    return build_event(**args)


def test_event_is_http_api_v2() -> None:
    e = event(query="a=1&a=2&b=", headers=[("Cookie", "x=1; y=2"), ("X-Thing", "v")])
    assert e["version"] == "2.0" and e["routeKey"] == "GET /cases/{id}/rationale"
    assert e["requestContext"]["http"]["sourceIp"] == "192.0.2.1"
    assert e["requestContext"]["stage"] == "$default"
    assert e["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert e["cookies"] == ["x=1", "y=2"] and e["headers"] == {
        "x-thing": "v",
        "x-forwarded-proto": "http",
    }
    assert e["pathParameters"] == {"id": "tc300-0001"}


@given(st.binary(max_size=64))
def test_binary_bodies_are_base64_and_round_trip(raw: bytes) -> None:
    e = event(method="POST", body=raw, headers=[("content-type", "application/octet-stream")])
    if raw:
        assert e["isBase64Encoded"] and base64.b64decode(e["body"]) == raw
    else:
        assert "body" not in e


@pytest.fixture
def echo_gateway() -> Iterator[tuple[str, int]]:
    """A gateway on 127.0.0.1 whose one route answers with the body it was given."""
    import re
    import threading

    from toolcall300.service.local.gateway import BoundRoute, GatewayServer

    def echo(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "body": event.get("body", ""), "headers": {}}

    route = HttpRoute("EchoFunction", "POST", "/echo", "functions/echo/", "app.handler")
    bound = BoundRoute(route, re.compile(r"\A/echo\Z"), echo, threading.Lock())
    server = GatewayServer(("127.0.0.1", 0), [bound])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[0], server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def raw_exchange(address: tuple[str, int], request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as bytes; (status, headers, body) of the first answer."""
    import socket

    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            assert chunk, f"connection closed without an HTTP answer: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        while len(body) < int(headers.get("content-length", 0)):
            body += sock.recv(4096)
        return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "invalid_content_length"),
        (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "invalid_content_length"),
        (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "invalid_content_length"),
        (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "invalid_chunked_body"),
        (b"TRACE /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed"),
        (b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed"),
        (b"BREW /echo HTTP/1.1\r\nHost: x\r\n\r\n", 501, "http_error"),
        (b"garbage\r\n\r\n", 400, "bad_request"),
    ],
)  # fmt: skip
def test_bad_framing_and_methods_get_a_json_error(
    echo_gateway: tuple[str, int], request_bytes: bytes, status: int, code: str
) -> None:
    import json

    got, headers, body = raw_exchange(echo_gateway, request_bytes)
    assert got == status and headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == code


def test_a_chunked_body_reaches_the_handler(echo_gateway: tuple[str, int]) -> None:
    request = (
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Transfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{"a"\r\n3\r\n:1}\r\n0\r\nX-T: y\r\n\r\n'
    )
    assert raw_exchange(echo_gateway, request)[::2] == (200, b'{"a":1}')
