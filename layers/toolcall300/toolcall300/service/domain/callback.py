"""Signed run callbacks: sign, deliver with retries and backoff, and verify (shipped to teams).

Scheme (documented in docs/hosted-scoring.md): the header
``TC300-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`` is
sent with the JSON body. The secret is derived from the team's licence key
(:func:`callback_secret`), so a team can verify without any other secret being issued, and
the service never stores the key itself. Several ``v1=`` entries are allowed (any one may
match). Delivery uses the standard library only and never raises: a callback that cannot be
delivered is logged by the caller, it does not change the run.

Where a callback may go (docs/hosted-scoring.md, "Callbacks"): on AWS only to public addresses
(never private, loopback, link-local, the metadata service, or any other non-global range);
on a local stack only to loopback and never to the stack's own port (a callback there would be
the service sending requests to itself on a team's behalf). The rule is applied at submission and again at delivery,
after resolving the name, and the connection goes to the address that was checked (a name
that re-resolves elsewhere between check and connect changes nothing); redirects are not
followed.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from toolcall300.canonical import canonical_bytes
from toolcall300.client.callback import (  # the verifier a team runs, in the free kit
    DEFAULT_TOLERANCE_S,
    HEADER,
    SCHEME,
    SignatureError,
    callback_secret,
    sign_header,
    signature,
    verify_callback,
)

__all__ = [
    "DEFAULT_TOLERANCE_S",
    "HEADER",
    "SCHEME",
    "SignatureError",
    "callback_secret",
    "sign_header",
    "signature",
    "verify_callback",
]


@dataclass(frozen=True)
class Delivery:
    """How a delivery went: attempts made, the last HTTP status (None: no answer), success."""

    delivered: bool
    attempts: int
    last_status: int | None
    last_error: str = ""


#: (url, body, headers, timeout) -> HTTP status; raises OSError when there is no answer.
Post = Callable[[str, bytes, dict[str, str], float], int]
#: ``socket.getaddrinfo``'s signature (tests pass a stub, so no test resolves a real name).
Resolver = Callable[..., Sequence[tuple[Any, ...]]]


class DestinationRefused(ValueError):
    """The callback URL names a host the service does not send callbacks to."""


#: NAT64's well-known prefix (RFC 6052): the last 32 bits are the IPv4 address it reaches.
NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
#: NAT64's local-use prefix (RFC 8215): the operator chooses the embedding, so where an address
#: in it leads cannot be read from it; refused whole.
NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
#: IPv4-compatible addresses (RFC 4291, deprecated): ``::a.b.c.d``.
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to by a transition form: IPv4-mapped
    (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), NAT64 (``64:ff9b::a.b.c.d``), 6to4
    (``2002:AABB:CCDD::/48``) and Teredo (``2001::/32``: its server and its client).

    >>> [str(a) for a in embedded_ipv4(ipaddress.IPv6Address("64:ff9b::a9fe:a9fe"))]
    ['169.254.169.254']
    """
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in NAT64_WELL_KNOWN or ip in IPV4_COMPATIBLE:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def address_allowed(address: str, *, local: bool) -> bool:
    """Whether a callback may be sent to ``address``: loopback only on a local stack, only
    globally routable addresses on AWS (which excludes private, loopback, link-local with the
    metadata service 169.254.169.254, shared, reserved and multicast ranges).

    On AWS an IPv6 address that embeds an IPv4 address (:func:`embedded_ipv4`) is allowed only
    when that IPv4 address is, so NAT64, 6to4, Teredo or ``::a.b.c.d`` never reach a private or
    link-local IPv4 address the rule refuses (docs/hosted-scoring.md, "Callbacks")."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if local:
        return ip.is_loopback
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in NAT64_LOCAL_USE:
            return False
        if not all(_global(v4) for v4 in embedded_ipv4(ip)):
            return False
    return _global(ip)


def _global(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return ip.is_global and not ip.is_multicast


def _target(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise DestinationRefused("the callback URL must be http(s) with a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise DestinationRefused("the callback URL has an invalid port") from exc
    return parts.scheme, parts.hostname, port


#: On a local stack a callback goes to loopback, so to a service of the machine itself: the
#: ports below this one are the system's (ssh 22, http 80, printing 631), which only root can
#: open, so no team's own receiver is there (docs/hosted-scoring.md, "Callbacks").
FIRST_UNPRIVILEGED_PORT = 1024


def checked_addresses(
    url: str,
    *,
    local: bool,
    resolve: Resolver = socket.getaddrinfo,
    own_ports: frozenset[int] = frozenset(),
) -> list[str]:
    """Every address ``url``'s host resolves to, when all are allowed; else DestinationRefused.
    On a local stack, ``own_ports`` (the stack's listening port) is refused whatever the host."""
    _, host, port = _target(url)
    if local and port in own_ports:
        raise DestinationRefused("callbacks never go to the service's own port")
    if local and port < FIRST_UNPRIVILEGED_PORT:
        raise DestinationRefused(
            f"on a local stack callbacks go to a port from {FIRST_UNPRIVILEGED_PORT} up "
            "(the machine's own services listen below it)"
        )
    try:
        found = resolve(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise DestinationRefused("the callback host does not resolve") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise DestinationRefused("the callback host does not resolve")
    if not all(address_allowed(a, local=local) for a in addresses):
        where = "loopback" if local else "public"
        raise DestinationRefused(f"callbacks go only to {where} addresses")
    return addresses


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Plain HTTP to one already-checked address (the Host header still names the host)."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to one already-checked address; the certificate is checked against the host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address
        self._tls = ssl.create_default_context()

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def guarded_post(
    *,
    local: bool,
    resolve: Resolver = socket.getaddrinfo,
    own_ports: frozenset[int] = frozenset(),
) -> Post:
    """A :data:`Post` that checks the destination on every attempt, connects to the checked
    address and returns a redirect's status instead of following it."""

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        scheme, host, port = _target(url)
        address = checked_addresses(url, local=local, resolve=resolve, own_ports=own_ports)[0]
        kind = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
        conn = kind(host, port, address, timeout)
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request("POST", path, body=body, headers=headers)
            return int(conn.getresponse().status)
        finally:
            conn.close()

    return post


def backoff_delays(attempts: int, *, base: float = 1.0, cap: float = 30.0) -> list[float]:
    """Waits between attempts: base, 2*base, 4*base... capped.

    >>> backoff_delays(4, base=0.5)
    [0.5, 1.0, 2.0]
    """
    return [min(cap, base * 2**i) for i in range(max(0, attempts - 1))]


def retryable(status: int | None) -> bool:
    """No answer, 408, 429 and 5xx are worth retrying; other 4xx will not change."""
    return status is None or status in (408, 429) or status >= 500


def deliver(
    url: str,
    payload: object,
    secret: str,
    *,
    attempts: int = 5,
    base_delay: float = 1.0,
    timeout: float = 5.0,
    post: Post,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> Delivery:
    """POST ``payload`` signed, retrying with exponential backoff; each attempt is re-signed."""
    body = canonical_bytes(payload)
    delays = backoff_delays(attempts, base=base_delay)
    status: int | None = None
    error = ""
    for attempt in range(1, attempts + 1):
        headers = {
            "Content-Type": "application/json",
            HEADER: sign_header(body, secret, int(clock())),
        }
        try:
            status, error = post(url, body, headers, timeout), ""
        except DestinationRefused as exc:
            return Delivery(False, attempt, None, f"refused: {exc}")
        except (OSError, ValueError, http.client.HTTPException) as exc:
            status, error = None, type(exc).__name__
        if status is not None and 200 <= status < 300:
            return Delivery(True, attempt, status)
        if not retryable(status) or attempt == attempts:
            break
        sleep(delays[attempt - 1])
    return Delivery(False, attempt, status, error)
