"""Verifying a signed run callback: what a team's receiver runs (docs/hosted-scoring.md, "Callbacks").

The header ``TC300-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>``
comes with the JSON body; the secret is derived from the team's licence key
(:func:`callback_secret`). Standard library only, so it is in the free kit: a receiver needs
nothing installed. The service signs with the same functions (``service.domain.callback``
imports them from here); delivery and where a callback may go are the service's.
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "TC300-Signature"
SCHEME = "v1"
DEFAULT_TOLERANCE_S = 300


class SignatureError(ValueError):
    """The callback's signature is missing, malformed, wrong or outside the tolerance."""


def callback_secret(licence_key: str) -> str:
    """The signing secret for a team's callbacks: HMAC of a fixed label under the licence key.

    The team computes the same value from the key it already holds; the key cannot be
    recovered from it.
    """
    return hmac.new(
        licence_key.encode("utf-8"), b"toolcall300-callback-v1", hashlib.sha256
    ).hexdigest()


def signature(body: bytes, secret: str, timestamp: int) -> str:
    """Hex HMAC-SHA256 over ``"<timestamp>.<body>"``."""
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def sign_header(body: bytes, secret: str, timestamp: int) -> str:
    """The ``TC300-Signature`` header value for ``body`` at ``timestamp``."""
    return f"t={timestamp},{SCHEME}={signature(body, secret, timestamp)}"


def _parse_header(header: str) -> tuple[int, list[str]]:
    stamp: int | None = None
    sigs: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            stamp = int(value)
        elif key == SCHEME and value:
            sigs.append(value)
    if stamp is None or not sigs:
        raise SignatureError("malformed signature header")
    return stamp, sigs


def verify_callback(
    body: bytes,
    header: str | None,
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE_S,
    *,
    now: float | None = None,
) -> int:
    """Check a received callback; returns its timestamp or raises :class:`SignatureError`.

    Verify the raw body exactly as received, before parsing it. A timestamp further than
    ``tolerance`` seconds from now (past or future) is refused, which bounds replays;
    deduplicate on ``run_id`` for exactly-once handling.
    """
    if not header:
        raise SignatureError("missing signature header")
    stamp, sigs = _parse_header(header)
    current = time.time() if now is None else now
    if abs(current - stamp) > tolerance:
        raise SignatureError("timestamp outside the tolerance")
    expected = signature(body, secret, stamp)
    if not any(hmac.compare_digest(expected, s) for s in sigs):
        raise SignatureError("signature mismatch")
    return stamp
