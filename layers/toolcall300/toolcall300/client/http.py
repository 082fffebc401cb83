"""A tiny stdlib JSON-over-HTTP client shared by the service's own CLI commands.

Used by ``download`` and ``dev purchase``; standard library only so those commands run from a
plain install. Refuses to send a licence key over plain HTTP to anything but this machine.
Not a general HTTP client: JSON in, JSON out, no retries beyond what callers do.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from toolcall300.canonical import loads_strict

TIMEOUT_S = 30
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


class ApiError(Exception):
    """A non-2xx answer: status, the service's error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


def check_transport(api: str) -> None:
    """Keys travel only over HTTPS, or plain HTTP to this machine (the local stack)."""
    parts = urlsplit(api)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOCAL_HOSTS):
        return
    raise ValueError(f"refusing to send a licence key to {api!r}: use https:// (or a local stack)")


def check_key(key: str) -> str:
    """``key`` if it can travel in an ``Authorization`` header: visible ASCII only.

    A pasted key with a newline or a control character in it would make ``http.client``
    raise with the header, the key included, in its message (a CI log keeps it); this says
    what is wrong without echoing the key.
    """
    if key and all("!" <= ch <= "~" for ch in key):
        return key
    raise ValueError(
        "TOOLCALL300_LICENCE holds a character a licence key never has (a space, a line "
        "break, a control or non-ASCII character): set it to the key exactly as issued"
    )


def request_json(
    method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, dict[str, str], Any]:
    """(status, headers, parsed JSON body); raises ``ApiError`` on a non-2xx answer."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return resp.status, dict(resp.headers.items()), loads_strict(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            err = loads_strict(raw).get("error", {})
        except (ValueError, AttributeError):
            err = {}
        raise ApiError(
            exc.code, str(err.get("code", "http_error")), str(err.get("message", exc.reason))
        ) from None
