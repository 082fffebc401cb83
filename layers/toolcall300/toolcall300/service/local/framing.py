"""The HTTP/1.1 framing rules the local gateway holds a request to, as pure functions.

What a request's bytes must look like before anything runs (RFC 9112, the message syntax;
RFC 9110, the semantics), decided from the bytes alone and answered as a :class:`Refusal`
(status, the JSON error code of docs/api.md, a message), so the rules are read and tested
apart from the server, the way h11 keeps its state machine apart from I/O
(tests/unit/test_framing.py). ``service.local.gateway`` is the adapter: waitress's parser
gets the bytes, the gateway asks these functions, and a refusal becomes an answer and a close.

Not a parser (waitress parses and buffers) and not a router: nothing here reads a socket,
a clock or a setting; the limits are arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The methods API Gateway's HTTP API routes; TRACE and CONNECT are known and refused (405),
#: anything else is not a method this server knows (501).
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
KNOWN_METHODS = METHODS | {"TRACE", "CONNECT"}
#: The versions spoken (RFC 9112 section 2.3): a request in any other is answered 505.
VERSIONS = frozenset({b"HTTP/1.0", b"HTTP/1.1"})
#: A chunk's size line (hex size and extensions) and the trailer section: far above what any
#: client sends, far below the body cap waitress would otherwise let them grow to.
MAX_CHUNK_LINE = 1024
MAX_TRAILER = 8 * 1024

# RFC 9110 section 5.1 (field-name is a token) and 5.5 (the value, optional whitespace around)
_FIELD = re.compile(rb"(?P<name>[!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(?P<value>.*?)[ \t]*")
# RFC 9110 section 7.2: Host = uri-host [ ":" port ]; uri-host is an IP literal, an IPv4
# address or a reg-name (RFC 3986 section 3.2.2); empty when the target has no authority.
_HOST = re.compile(rb"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]*)(?::[0-9]*)?")


@dataclass(frozen=True)
class Refusal:
    """A request refused before any handler runs: answered with the JSON error, then closed."""

    status: int
    code: str
    message: str


#: The refusals given by more than one rule, and by the server's own parser (it enforces the
#: body and header caps it is configured with, digits in ``Content-Length`` and the chunk
#: syntax itself), in this API's words.
TOO_LARGE = Refusal(413, "payload_too_large", "request body too large")
HEAD_TOO_LARGE = Refusal(431, "headers_too_large", "request header section too large")
BAD_LENGTH = Refusal(400, "invalid_content_length", "Content-Length must be one decimal number")
BAD_CHUNKS = Refusal(400, "invalid_chunked_body", "malformed chunked request body")


def _fields(header_plus: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The request line and the (lower-cased name, value) of each well-formed field line
    (a malformed one is the parser's to refuse)."""
    first_line, _, rest = header_plus.partition(b"\r\n")
    fields = []
    for line in rest.split(b"\r\n") if rest else []:
        m = _FIELD.fullmatch(line)
        if m:
            fields.append((m.group("name").lower(), m.group("value")))
    return first_line.rstrip(b"\r"), fields


def request_line_refusal(received: bytes) -> Refusal | None:
    """Whether the request line, once it has ended, can begin a request this server speaks:
    three words (no HTTP/0.9: a line without a version is refused when it ends, not left
    waiting for a header block that never comes) and a version of :data:`VERSIONS`
    (``HTTP/9.9`` is a 505). None while the line has not ended, or when it is fine."""
    start = received.lstrip(b"\r\n")  # blank lines before a request are allowed (RFC 9112 2.2)
    end = start.find(b"\n")
    if end < 0:
        return None
    words = start[:end].rstrip(b"\r").split(b" ")
    if len(words) != 3 or not words[2].startswith(b"HTTP/"):
        return Refusal(400, "bad_request", "the request line needs an HTTP version (no HTTP/0.9)")
    if words[2] not in VERSIONS:
        return Refusal(
            505, "http_version_not_supported", "this server speaks HTTP version 1.1 (and 1.0)"
        )
    return None


def head_refusal(header_plus: bytes, *, max_body: int) -> Refusal | None:
    """What must refuse a request from its head (request line and header fields), before a
    byte of its body is read or a ``100 Continue`` is sent:

    - its version (:func:`request_line_refusal`);
    - ``Host`` (RFC 9112 section 3.2): exactly one in an HTTP/1.1 request, at most one in an
      HTTP/1.0 one, and a valid value;
    - the length fields (RFC 9112 section 6): ``Content-Length`` beside ``Transfer-Encoding``
      (6.3 item 3), ``Content-Length`` given twice or not one decimal number, a transfer
      coding list that does not end in exactly one ``chunked`` (6.1), a transfer coding in an
      HTTP/1.0 request (6.1);
    - a declared body over ``max_body`` (413, so a client that asked ``Expect: 100-continue``
      is told no before it sends the body, RFC 9110 section 10.1.1).
    """
    first_line, fields = _fields(header_plus)
    line = request_line_refusal(first_line + b"\r\n")
    if line is not None:
        return line
    version = first_line.rsplit(b" ", 1)[-1]
    hosts = [value for name, value in fields if name == b"host"]
    if len(hosts) > 1 or (version == b"HTTP/1.1" and not hosts):
        return Refusal(
            400, "invalid_host", "a request carries one Host header, and a version 1.1 one must"
        )
    if hosts and not _HOST.fullmatch(hosts[0]):
        return Refusal(400, "invalid_host", "the Host header is not a host and port")
    return _length_refusal(version, fields, max_body)


def _length_refusal(
    version: bytes, fields: list[tuple[bytes, bytes]], max_body: int
) -> Refusal | None:
    codings = [  # an empty element counts (as waitress reads it): "chunked, " is refused
        c.strip(" \t").lower()
        for name, value in fields
        if name == b"transfer-encoding"
        for c in value.decode("latin-1").split(",")
        if c
    ]
    lengths = [value for name, value in fields if name == b"content-length"]
    if codings:
        if lengths:
            return Refusal(
                400, "invalid_framing", "Content-Length and Transfer-Encoding must not both be sent"
            )
        if version == b"HTTP/1.0":
            return Refusal(400, "invalid_framing", "HTTP/1.0 has no Transfer-Encoding")
        if codings[-1] != "chunked" or codings.count("chunked") != 1:
            return Refusal(
                400, "invalid_transfer_encoding", "the last transfer coding must be one 'chunked'"
            )
        return None
    if len(lengths) > 1:
        return Refusal(400, "invalid_content_length", "Content-Length must be given once")
    if lengths:
        if not lengths[0].isdigit():
            return BAD_LENGTH
        if int(lengths[0]) > max_body:
            return TOO_LARGE
    return None


def chunk_refusal(
    *, size_line: int, trailer: int, buffered: int, declared: int, max_body: int
) -> Refusal | None:
    """A chunked body being read: its size line or trailer past their bounds, or a declared
    chunk that would take the body past ``max_body`` (refused before it is read)."""
    if size_line > MAX_CHUNK_LINE or trailer > MAX_TRAILER:
        return BAD_CHUNKS
    if buffered + declared > max_body:
        return TOO_LARGE
    return None


def method_refusal(method: str) -> Refusal | None:
    """A method API Gateway does not route: TRACE and CONNECT 405, an unknown one 501."""
    if method in METHODS:
        return None
    if method in KNOWN_METHODS:
        return Refusal(405, "method_not_allowed", f"{method} is not served")
    return Refusal(501, "http_error", f"{method} is not a method this server knows")


def routed_method(method: str) -> str:
    """The method a request is routed as: HEAD as the GET it asks about (RFC 9110 section
    9.3.2: the same header fields, no content); every other as itself."""
    return "GET" if method == "HEAD" else method
