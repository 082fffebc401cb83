"""The HTTP/1.1 framing rules on their own: bytes in, a refusal (or None) out, no socket.

The gateway over real sockets is tests/unit/test_gateway.py; here each rule is read as the
RFC section it cites.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.service.local import framing
from toolcall300.service.local.framing import Refusal

MAX = 10 * 1024 * 1024


def head(*lines: str, version: str = "HTTP/1.1", method: str = "POST") -> bytes:
    return "\r\n".join([f"{method} /x {version}", *lines]).encode("latin-1")


def code(refusal: Refusal | None) -> tuple[int, str] | None:
    return None if refusal is None else (refusal.status, refusal.code)


@pytest.mark.parametrize(
    ("received", "expected"),
    [
        (b"GET /x HTTP/1.1", None),  # the line has not ended: wait for it
        (b"GET /x HTTP/1.1\r\n", None),
        (b"\r\n\r\nGET /x HTTP/1.0\r\n", None),  # blank lines before it (RFC 9112 2.2)
        (b"GET /x\r\n", (400, "bad_request")),  # HTTP/0.9
        (b"garbage\r\n", (400, "bad_request")),
        (b"GET /x http/1.1\r\n", (400, "bad_request")),
        (b"GET /x HTTP/9.9\r\n", (505, "http_version_not_supported")),
        (b"GET /x HTTP/1.2\r\n", (505, "http_version_not_supported")),
        (b"GET /x HTTP/2.0\r\n", (505, "http_version_not_supported")),
        (b"GET /x HTTP/0.9\r\n", (505, "http_version_not_supported")),
    ],
)
def test_the_request_line_names_a_version_spoken_here(
    received: bytes, expected: tuple[int, str] | None
) -> None:
    assert code(framing.request_line_refusal(received)) == expected


@pytest.mark.parametrize(
    ("request_head", "expected"),
    [
        (head("Host: a"), None),
        (head("Host: a:8300"), None),
        (head("Host: [::1]:8300"), None),
        (head("Host: "), None),  # empty: a target without an authority (RFC 9112 3.2)
        (head(version="HTTP/1.0"), None),  # HTTP/1.0 needs none
        (head(), (400, "invalid_host")),
        (head("Host: a", "Host: a"), (400, "invalid_host")),
        (head("Host: a", "host: b", version="HTTP/1.0"), (400, "invalid_host")),
        (head("Host: a b"), (400, "invalid_host")),
        (head("Host: a/b"), (400, "invalid_host")),
        (head("Host: a@b"), (400, "invalid_host")),
    ],
)
def test_host_is_given_once_and_is_a_host(
    request_head: bytes, expected: tuple[int, str] | None
) -> None:
    """RFC 9112 section 3.2: 400 for an HTTP/1.1 request without Host, for more than one
    Host field line, and for an invalid Host value."""
    assert code(framing.head_refusal(request_head, max_body=MAX)) == expected


@pytest.mark.parametrize(
    ("lines", "version", "expected"),
    [
        (["Content-Length: 3"], "HTTP/1.1", None),
        (["Transfer-Encoding: chunked"], "HTTP/1.1", None),
        (["Transfer-Encoding: gzip, chunked"], "HTTP/1.1", None),
        (["Content-Length: 3", "Transfer-Encoding: chunked"], "HTTP/1.1", (400, "invalid_framing")),
        (["Transfer-Encoding: chunked"], "HTTP/1.0", (400, "invalid_framing")),
        (["Transfer-Encoding: chunked, gzip"], "HTTP/1.1", (400, "invalid_transfer_encoding")),
        (["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], "HTTP/1.1",
         (400, "invalid_transfer_encoding")),
        (["Transfer-Encoding: chunked, "], "HTTP/1.1", None),  # an empty element (9110 5.6.1)
        (["Transfer-Encoding: chunked, , gzip"], "HTTP/1.1", (400, "invalid_transfer_encoding")),
        (["Content-Length: 1", "Content-Length: 1"], "HTTP/1.1", (400, "invalid_content_length")),
        (["Content-Length: -1"], "HTTP/1.1", (400, "invalid_content_length")),
        (["Content-Length: 0x10"], "HTTP/1.1", (400, "invalid_content_length")),
        (["Content-Length: 1_0"], "HTTP/1.1", (400, "invalid_content_length")),  # int() reads it
        ([f"Content-Length: {MAX}"], "HTTP/1.1", None),
        ([f"Content-Length: {MAX + 1}"], "HTTP/1.1", (413, "payload_too_large")),
        # the 413 is decided from the head, before a 100 Continue could be sent
        (["Expect: 100-continue", f"Content-Length: {MAX + 1}"], "HTTP/1.1",
         (413, "payload_too_large")),
    ],
)  # fmt: skip
def test_the_length_fields_frame_one_body(
    lines: list[str], version: str, expected: tuple[int, str] | None
) -> None:
    """RFC 9112 section 6.1 (transfer codings) and 6.3 (message body length)."""
    request_head = head("Host: a", *lines, version=version)
    assert code(framing.head_refusal(request_head, max_body=MAX)) == expected


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"size_line": 10, "trailer": 0, "buffered": 0, "declared": 5}, None),
        ({"size_line": framing.MAX_CHUNK_LINE + 1, "trailer": 0, "buffered": 0, "declared": 0},
         (400, "invalid_chunked_body")),
        ({"size_line": 0, "trailer": framing.MAX_TRAILER + 1, "buffered": 0, "declared": 0},
         (400, "invalid_chunked_body")),
        ({"size_line": 0, "trailer": 0, "buffered": MAX - 4, "declared": 5},
         (413, "payload_too_large")),
    ],
)  # fmt: skip
def test_a_chunked_body_is_bounded_before_it_is_read(
    kw: dict[str, int], expected: tuple[int, str] | None
) -> None:
    assert code(framing.chunk_refusal(max_body=MAX, **kw)) == expected


def test_methods_and_head() -> None:
    assert framing.method_refusal("GET") is None and framing.method_refusal("HEAD") is None
    assert code(framing.method_refusal("TRACE")) == (405, "method_not_allowed")
    assert code(framing.method_refusal("BREW")) == (501, "http_error")
    assert framing.routed_method("HEAD") == "GET"  # RFC 9110 9.3.2
    assert framing.routed_method("POST") == "POST"


@given(st.binary(max_size=300))
def test_any_head_is_judged_without_an_exception(raw: bytes) -> None:
    refused = framing.head_refusal(raw, max_body=MAX)
    assert refused is None or 400 <= refused.status < 600
    refused = framing.request_line_refusal(raw)
    assert refused is None or refused.status in (400, 505)
