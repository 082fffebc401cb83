"""The HTTP/1.1 framing rules on their own: bytes in, a refusal (or None) out, no socket.

The gateway over real sockets is tests/unit/test_gateway.py; here each rule is read as the
RFC section it cites, then held over inputs Hypothesis draws: no input raises, nothing is
judged before it has arrived, and each bound refuses exactly what is past it, whatever the
field names' case, the whitespace and the order.
"""

from __future__ import annotations

from typing import Any

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


# ------------------------------------------------ properties: any input, the bounds hold

_NAME_CASE = st.sampled_from([str.lower, str.upper, str.title])
_OWS = st.sampled_from(["", " ", "\t", "  "])


@given(st.binary(max_size=300).filter(lambda b: b"\n" not in b.lstrip(b"\r\n")))
def test_no_request_line_is_refused_before_it_ends(received: bytes) -> None:
    """A line still arriving is never judged: a refusal comes when its LF does."""
    assert framing.request_line_refusal(received) is None


@given(
    length=st.integers(min_value=0, max_value=2 * MAX),
    max_body=st.integers(min_value=0, max_value=2 * MAX),
    name=_NAME_CASE,
    ows=_OWS,
)
def test_a_declared_length_is_refused_exactly_past_the_cap(
    length: int, max_body: int, name: Any, ows: str
) -> None:
    """Whatever the field name's case and the whitespace around the value (RFC 9110 5.1,
    5.5), a Content-Length over the cap is the 413, and one within it passes."""
    field = f"{name('content-length')}:{ows}{length}{ows}"
    refused = framing.head_refusal(head("Host: a", field), max_body=max_body)
    assert refused == (framing.TOO_LARGE if length > max_body else None)


@given(
    te=st.sampled_from(["chunked", "gzip, chunked", "chunked, gzip", "identity", "x"]),
    length=st.integers(min_value=0, max_value=MAX),
    te_first=st.booleans(),
    names=st.tuples(_NAME_CASE, _NAME_CASE),
    ows=_OWS,
)
def test_both_length_fields_are_always_refused(
    te: str, length: int, te_first: bool, names: tuple[Any, Any], ows: str
) -> None:
    """RFC 9112 section 6.3 item 3, the request smuggling case: Transfer-Encoding and
    Content-Length together are refused whatever the coding, the order, the names' case and
    the whitespace, before a byte of the body is read."""
    fields = [
        f"{names[0]('transfer-encoding')}:{ows}{te}",
        f"{names[1]('content-length')}:{ows}{length}",
    ]
    request_head = head("Host: a", *(fields if te_first else fields[::-1]))
    refused = framing.head_refusal(request_head, max_body=MAX)
    assert refused is not None and (refused.status, refused.code) == (400, "invalid_framing")


@given(
    te=st.sampled_from(["chunked", "gzip, chunked", "chunked, "])
    | st.text(alphabet="chunkedgzip, \t", max_size=30),
    name=_NAME_CASE,
)
def test_no_transfer_coding_frames_an_http_1_0_request(te: str, name: Any) -> None:
    """RFC 9112 section 6.1: a Transfer-Encoding in an HTTP/1.0 request is refused (a
    server reading it as 1.0 would not decode it), whatever it names."""
    request_head = head(f"{name('transfer-encoding')}: {te}", version="HTTP/1.0")
    refused = framing.head_refusal(request_head, max_body=MAX)
    if any(te.strip(" \t").split(",")):  # the field (without its whitespace) says anything
        assert refused is not None and refused.status == 400
    else:
        assert refused is None


@given(
    size_line=st.integers(min_value=0, max_value=4 * framing.MAX_CHUNK_LINE),
    trailer=st.integers(min_value=0, max_value=4 * framing.MAX_TRAILER),
    buffered=st.integers(min_value=0, max_value=2 * MAX),
    declared=st.integers(min_value=0, max_value=2**64),
    max_body=st.integers(min_value=0, max_value=2 * MAX),
)
def test_a_chunked_body_passes_only_within_every_bound(
    size_line: int, trailer: int, buffered: int, declared: int, max_body: int
) -> None:
    """None exactly when every bound holds; past the line or trailer bound the chunking is
    malformed (400), else past the body cap it is the 413."""
    refused = framing.chunk_refusal(
        size_line=size_line, trailer=trailer, buffered=buffered, declared=declared,
        max_body=max_body,
    )  # fmt: skip
    framing_ok = size_line <= framing.MAX_CHUNK_LINE and trailer <= framing.MAX_TRAILER
    if not framing_ok:
        assert refused == framing.BAD_CHUNKS
    elif buffered + declared > max_body:
        assert refused == framing.TOO_LARGE
    else:
        assert refused is None


_HOSTS = st.from_regex(r"\A[a-z0-9](?:[a-z0-9.-]{0,30}[a-z0-9])?(?::[0-9]{1,5})?\Z")


@given(host=_HOSTS)
def test_a_host_and_port_is_accepted(host: str) -> None:
    assert framing.head_refusal(head(f"Host: {host}"), max_body=MAX) is None


@given(host=_HOSTS, bad=st.sampled_from(list(' /@?#\\"<>{}|^`')), at=st.integers(0, 40))
def test_a_host_with_a_character_no_host_has_is_refused(host: str, bad: str, at: int) -> None:
    """RFC 3986 section 3.2.2: a reg-name has no space, slash, at sign and so on; a Host
    carrying one (a path or credentials smuggled into it) is refused."""
    at = min(at, len(host))
    value = f"{host[:at]}{bad}{host[at:]}".strip(" ")
    if bad == " " and " " not in value:  # only at an end: optional whitespace, not the value
        return
    refused = framing.head_refusal(head(f"Host: {value}"), max_body=MAX)
    assert refused is not None and refused.code == "invalid_host"


@given(st.text(max_size=12))
def test_any_method_is_served_or_refused_as_405_or_501(method: str) -> None:
    refused = framing.method_refusal(method)
    if method in framing.METHODS:
        assert refused is None
    else:
        assert refused is not None and refused.status in (405, 501)
    assert framing.routed_method(method) in ({"GET"} if method == "HEAD" else {method})
