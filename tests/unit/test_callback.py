"""Signed callbacks: the shipped verifier, the signer, and delivery with retries and backoff."""

from __future__ import annotations

import http.server
import ipaddress
import socket
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.service.domain import callback

SECRET = callback.callback_secret("tc300_" + "k" * 32)
NOW = 1_780_000_000


@given(body=st.binary(max_size=2048), stamp=st.integers(0, 2**40))
def test_what_is_signed_verifies(body: bytes, stamp: int) -> None:
    header = callback.sign_header(body, SECRET, stamp)
    assert callback.verify_callback(body, header, SECRET, now=stamp) == stamp


@given(body=st.binary(min_size=1, max_size=512), flip=st.integers(0, 511))
def test_any_changed_byte_fails(body: bytes, flip: int) -> None:
    header = callback.sign_header(body, SECRET, NOW)
    i = flip % len(body)
    tampered = body[:i] + bytes([body[i] ^ 1]) + body[i + 1 :]
    with pytest.raises(callback.SignatureError):
        callback.verify_callback(tampered, header, SECRET, now=NOW)


@pytest.mark.parametrize(
    ("header", "now"),
    [
        (None, NOW),
        ("", NOW),
        ("garbage", NOW),
        (f"t={NOW}", NOW),  # no signature
        (f"v1={'0' * 64}", NOW),  # no timestamp
        (callback.sign_header(b"{}", SECRET, NOW - 301), NOW),  # stale
        (callback.sign_header(b"{}", SECRET, NOW + 301), NOW),  # from the future
        (callback.sign_header(b"{}", "another-secret", NOW), NOW),
    ],
)
def test_bad_signatures_are_refused(header: str | None, now: int) -> None:
    with pytest.raises(callback.SignatureError):
        callback.verify_callback(b"{}", header, SECRET, now=now)


def test_one_matching_v1_among_several_is_enough() -> None:
    good = callback.signature(b"{}", SECRET, NOW)
    assert (
        callback.verify_callback(b"{}", f"t={NOW},v1={'0' * 64},v1={good}", SECRET, now=NOW) == NOW
    )


def test_the_secret_is_derived_from_the_licence_key_and_is_not_the_key() -> None:
    key = "tc300_" + "k" * 32
    assert callback.callback_secret(key) == SECRET
    assert key not in SECRET and callback.callback_secret(key + "x") != SECRET


class Recorder:
    def __init__(self, statuses: list[int | Exception]) -> None:
        self.statuses = statuses
        self.calls: list[tuple[str, bytes, dict[str, str]]] = []
        self.sleeps: list[float] = []

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        self.calls.append((url, body, headers))
        status = self.statuses.pop(0)
        if isinstance(status, Exception):
            raise status
        return status


def deliver(rec: Recorder, attempts: int = 4) -> callback.Delivery:
    return callback.deliver(
        "https://ci.example.com/hook",
        {"run_id": "r"},
        SECRET,
        attempts=attempts,
        base_delay=0.5,
        post=rec.post,
        sleep=rec.sleeps.append,
        clock=lambda: NOW,
    )


def test_delivery_retries_server_errors_and_timeouts_with_backoff() -> None:
    rec = Recorder([503, OSError("timed out"), 200])
    outcome = deliver(rec)
    assert outcome.delivered and outcome.attempts == 3 and outcome.last_status == 200
    assert rec.sleeps == [0.5, 1.0]
    for _url, body, headers in rec.calls:
        callback.verify_callback(body, headers[callback.HEADER], SECRET, now=NOW)


def test_delivery_gives_up_after_the_last_attempt() -> None:
    rec = Recorder([500, 500, 500])
    outcome = deliver(rec, attempts=3)
    assert not outcome.delivered and outcome.attempts == 3 and rec.sleeps == [0.5, 1.0]


def test_a_client_error_is_not_retried() -> None:
    rec = Recorder([404])
    outcome = deliver(rec)
    assert not outcome.delivered and outcome.attempts == 1 and rec.sleeps == []


def test_delivery_over_real_http_verifies_at_the_receiver() -> None:
    received: list[tuple[bytes, str | None]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((body, self.headers.get(callback.HEADER)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        outcome = callback.deliver(
            url,
            {"run_id": "r", "verdict": "pass"},
            SECRET,
            attempts=1,
            post=callback.guarded_post(local=True),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert outcome.delivered
    body, header = received[0]
    assert callback.verify_callback(body, header, SECRET)
    assert b'"verdict":"pass"' in body


def resolves_to(*addresses: str) -> callback.Resolver:
    """A stub resolver: every name resolves to ``addresses`` (no test resolves a real name)."""

    def resolve(host: str, port: int, **_kw: Any) -> list[tuple[Any, ...]]:
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return resolve


REFUSED_ON_AWS = [
    "10.0.0.1", "172.16.5.4", "192.168.1.1", "127.0.0.1", "127.8.8.8", "169.254.169.254",
    "169.254.170.2", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::1", "fd00:ec2::254",
    "::ffff:10.0.0.1", "::ffff:169.254.169.254", "224.0.0.1", "192.0.2.1", "198.18.0.1",
    "240.0.0.1", "255.255.255.255",
]  # fmt: skip


@pytest.mark.parametrize("address", REFUSED_ON_AWS)
def test_on_aws_no_private_loopback_link_local_or_metadata_address_is_allowed(address: str) -> None:
    assert not callback.address_allowed(address, local=False)
    with pytest.raises(callback.DestinationRefused):
        callback.checked_addresses(
            "https://hooks.example.com/x", local=False, resolve=resolves_to(address)
        )


EMBEDDING_REFUSED_IPV4 = [
    "64:ff9b::a9fe:a9fe",  # NAT64 well-known prefix -> 169.254.169.254
    "64:ff9b::10.0.0.1",
    "64:ff9b:1::a00:1",  # NAT64 local-use prefix: refused whole
    "2002:a9fe:a9fe::1",  # 6to4 -> 169.254.169.254
    "2002:c0a8:101::",  # 6to4 -> 192.168.1.1
    "::10.0.0.1",  # IPv4-compatible
    "::169.254.169.254",
    "::127.0.0.1",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo: client 10.0.0.1 (obfuscated)
]


@pytest.mark.parametrize("address", EMBEDDING_REFUSED_IPV4)
def test_on_aws_an_ipv6_form_of_a_refused_ipv4_address_is_refused(address: str) -> None:
    assert not callback.address_allowed(address, local=False)
    with pytest.raises(callback.DestinationRefused):
        callback.checked_addresses(
            "https://hooks.example.com/x", local=False, resolve=resolves_to(address)
        )


_V4_REFUSED = st.ip_addresses(v=4).filter(
    lambda ip: not callback.address_allowed(str(ip), local=False)
)


def _embeddings(
    v4: ipaddress.IPv4Address, low: int, teredo_server: ipaddress.IPv4Address
) -> list[str]:
    n = int(v4)
    teredo_prefix = (0x20010000 << 96) | (int(teredo_server) << 64)
    return [
        str(ipaddress.IPv6Address((0xFFFF << 32) | n)),  # ::ffff:a.b.c.d
        str(ipaddress.IPv6Address(n)),  # ::a.b.c.d
        str(ipaddress.IPv6Address((0x0064FF9B << 96) | n)),  # 64:ff9b::a.b.c.d
        str(ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | (low & (2**80 - 1)))),  # 6to4
        # Teredo: the client's address is stored inverted in the last 32 bits
        str(ipaddress.IPv6Address(teredo_prefix | (low & 0xFFFF_FFFF) << 32 | (n ^ 0xFFFFFFFF))),
        str(
            ipaddress.IPv6Address((0x2001 << 112) | (n << 64) | (low & (2**64 - 1)))
        ),  # Teredo server
        str(ipaddress.IPv6Address((0x0064FF9B0001 << 80) | (low & (2**80 - 1)))),  # local-use NAT64
    ]


@given(v4=_V4_REFUSED, low=st.integers(0, 2**80 - 1), server=st.ip_addresses(v=4))
def test_any_ipv6_address_embedding_a_refused_ipv4_address_is_refused(
    v4: ipaddress.IPv4Address, low: int, server: ipaddress.IPv4Address
) -> None:
    for address in _embeddings(v4, low, server):
        assert not callback.address_allowed(address, local=False), address


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "::ffff:93.184.216.34"])
def test_on_aws_an_ipv6_form_of_a_public_ipv4_address_is_allowed(address: str) -> None:
    assert callback.address_allowed(address, local=False)


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:4700::1111", "8.8.8.8"])
def test_on_aws_public_addresses_are_allowed_and_locally_they_are_not(address: str) -> None:
    assert callback.address_allowed(address, local=False)
    assert not callback.address_allowed(address, local=True)


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1"])
def test_locally_only_loopback_is_allowed(address: str) -> None:
    assert callback.address_allowed(address, local=True)


def test_one_bad_address_among_several_refuses_the_host() -> None:
    with pytest.raises(callback.DestinationRefused):
        callback.checked_addresses(
            "https://x.example/", local=False, resolve=resolves_to("93.184.216.34", "10.0.0.7")
        )


def test_an_unresolvable_host_is_refused() -> None:
    def fail(*_a: Any, **_kw: Any) -> list[tuple[Any, ...]]:
        raise socket.gaierror("no such name")

    with pytest.raises(callback.DestinationRefused):
        callback.checked_addresses("https://nowhere.invalid/", local=False, resolve=fail)


class Connections:
    """Records where a delivery would connect, and connects nowhere."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def __call__(self, address: tuple[str, int], *_a: Any, **_kw: Any) -> Any:
        self.seen.append(address)
        raise ConnectionRefusedError("test: no traffic leaves this machine")


def test_delivery_rechecks_after_resolution_and_never_connects_to_a_rebound_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Allowed at submission, the name now resolves to the metadata service: no connection."""
    connections = Connections()
    monkeypatch.setattr(socket, "create_connection", connections)
    outcome = callback.deliver(
        "https://hooks.example.com/x",
        {"run_id": "r"},
        SECRET,
        attempts=3,
        sleep=lambda _s: None,
        post=callback.guarded_post(local=False, resolve=resolves_to("169.254.169.254")),
    )
    assert not outcome.delivered and outcome.attempts == 1 and "refused" in outcome.last_error
    assert connections.seen == []


def test_delivery_connects_to_the_address_it_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    connections = Connections()
    monkeypatch.setattr(socket, "create_connection", connections)
    post = callback.guarded_post(local=False, resolve=resolves_to("93.184.216.34"))
    with pytest.raises(ConnectionRefusedError):
        post("https://hooks.example.com:8443/x", b"{}", {}, 1.0)
    assert connections.seen == [("93.184.216.34", 8443)]


def test_redirects_are_not_followed() -> None:
    hits: list[str] = []

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            hits.append(self.path)
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(307)
            self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        outcome = callback.deliver(
            url, {"run_id": "r"}, SECRET, attempts=2, post=callback.guarded_post(local=True)
        )
    finally:
        server.shutdown()
        server.server_close()
    assert not outcome.delivered and outcome.last_status == 307 and hits == ["/hook"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8300/webhooks/stripe",
        "http://localhost:8300/dev/checkout/cs_test_x",
        "http://[::1]:8300/runs",
        "http://127.0.0.9:8300/",
    ],
)
def test_locally_the_stack_s_own_port_is_refused_on_any_loopback_name(url: str) -> None:
    """docs/local-stack.md: a callback is the service posting on a tenant's behalf; at the
    stack's own port it would reach the stack's webhook and dev checkout page."""
    own = frozenset({8300})
    with pytest.raises(callback.DestinationRefused, match="own port"):
        callback.checked_addresses(url, local=True, resolve=resolves_to("127.0.0.1"), own_ports=own)
    with pytest.raises(callback.DestinationRefused, match="own port"):
        callback.guarded_post(local=True, resolve=resolves_to("127.0.0.1"), own_ports=own)(
            url, b"{}", {}, 1.0
        )
    other = url.replace(":8300", ":8301")
    assert callback.checked_addresses(
        other, local=True, resolve=resolves_to("127.0.0.1"), own_ports=own
    ) == ["127.0.0.1"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "https://localhost/hook",
        "http://127.0.0.1:22/",
        "http://[::1]:631/",
    ],
)
def test_locally_a_port_below_1024_is_refused(url: str) -> None:
    """Before: any loopback port but the stack's own was allowed, the machine's own services
    (ssh, http, printing) included; no team's receiver listens there without root."""
    with pytest.raises(callback.DestinationRefused, match="from 1024 up"):
        callback.checked_addresses(url, local=True, resolve=resolves_to("127.0.0.1"))
    assert callback.checked_addresses(
        "http://127.0.0.1:1024/hook", local=True, resolve=resolves_to("127.0.0.1")
    ) == ["127.0.0.1"]
