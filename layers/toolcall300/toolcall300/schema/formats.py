"""``format``: which strings satisfy the formats a tool schema names, and how to write one.

``format`` is an annotation in the schema engine (it never makes a call invalid: JSON Schema
2020-12's default, and tool-argument/v1's). A generated corpus still owes it respect: an
expected value of ``"format": "uri"`` that reads ``url-657`` marks an adapter that enforces
formats wrong for being right. So the generator writes values from the format
(:func:`format_value`) and an integrity check holds every expected value to it
(:func:`satisfies_format`). Only the formats below are known; any other ``format`` stays a
hint that constrains nothing. The definitions are the RFCs JSON Schema 2020-12 (validation
section 7.3) cites, read strictly: what every common checker accepts.

It is not a validator of the rest of the schema: the caller checks the value against the
schema's other keywords (length, pattern) with the engine.
"""

from __future__ import annotations

import datetime
import ipaddress
import random
import re
import uuid
from collections.abc import Callable

# RFC 3339 section 5.6: full-date, partial-time and time-offset, "T" and "Z" in either case.
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))", re.ASCII)
#: RFC 1123 section 2.1 host name label: letters, digits and hyphens, no hyphen at either end.
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)
#: RFC 5321 section 4.1.2 Dot-string (the local part; quoted strings are not written here).
_DOT_ATOM = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
#: RFC 3986 section 3: scheme ":" then only unreserved, reserved and percent-encoded characters.
_URI = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*",
    re.ASCII,
)
#: RFC 4122 section 3's string representation: 8-4-4-4-12 hexadecimal digits.
_UUID = re.compile(r"[0-9A-Fa-f]{8}-(?:[0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}", re.ASCII)


def _is_date(text: str) -> bool:
    m = _DATE.fullmatch(text)
    if m is None:
        return False
    try:
        datetime.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _is_time(text: str) -> bool:
    """RFC 3339 full-time: a time with its offset (``09:30:00Z``, ``09:30:00+01:00``); a leap
    second only at 23:59:60 UTC."""
    m = _TIME.fullmatch(text)
    if m is None:
        return False
    hour, minute, second = int(m[1]), int(m[2]), int(m[3])
    if m[6] is not None and (int(m[6]) > 23 or int(m[7]) > 59):
        return False
    if hour > 23 or minute > 59 or second > 60:
        return False
    if second == 60:  # a leap second is 23:59:60 in UTC
        offset = 0 if m[6] is None else (int(m[6]) * 60 + int(m[7])) * (-1 if "-" in m[5] else 1)
        utc = (hour * 60 + minute - offset) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def _is_date_time(text: str) -> bool:
    date, sep, time = text.partition("T") if "T" in text else text.partition("t")
    return bool(sep) and _is_date(date) and _is_time(time)


def _is_hostname(text: str) -> bool:
    """RFC 1123 host name: dot-separated labels of at most 63 characters, 253 in all (a final
    dot allowed, as DNS writes a fully qualified name)."""
    name = text[:-1] if text.endswith(".") else text
    if not name or len(name) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in name.split("."))


def _is_email(text: str) -> bool:
    """RFC 5321 Mailbox with a Dot-string local part (at most 64 octets) and a host name."""
    local, at, domain = text.rpartition("@")
    return (
        bool(at)
        and 0 < len(local) <= 64
        and _DOT_ATOM.fullmatch(local) is not None
        and local.isascii()
        and _is_hostname(domain)
    )


def _is_ipv4(text: str) -> bool:
    """RFC 2673 dotted-quad: four decimal octets, no leading zeros."""
    parts = text.split(".")
    return len(parts) == 4 and all(
        p.isascii() and p.isdigit() and int(p) <= 255 and (p == "0" or not p.startswith("0"))
        for p in parts
    )


def _is_ipv6(text: str) -> bool:
    """RFC 4291 section 2.2 text form (no zone index)."""
    if "%" in text or not text.isascii():
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _is_uri(text: str) -> bool:
    """RFC 3986 URI (absolute: a scheme, then only URI characters)."""
    return _URI.fullmatch(text) is not None


def _is_uuid(text: str) -> bool:
    return _UUID.fullmatch(text) is not None


#: The formats this suite knows, each with its predicate. ``url`` is no JSON Schema format but
#: real schemas write it (pydantic's ``HttpUrl`` did): it is read as ``uri``.
FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _is_date,
    "date-time": _is_date_time,
    "time": _is_time,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "uri": _is_uri,
    "url": _is_uri,
    "uuid": _is_uuid,
}


def satisfies_format(value: object, fmt: object) -> bool:
    """Whether ``value`` satisfies ``fmt``: a non-string, or a format this suite does not know,
    always does (the format constrains strings only, and only the known ones).

    >>> satisfies_format("2026-12-09", "date"), satisfies_format("2026-02-30", "date")
    (True, False)
    >>> satisfies_format("url-657", "uri"), satisfies_format("url-657", "x-custom")
    (False, True)
    """
    check = FORMATS.get(fmt) if isinstance(fmt, str) else None
    return check is None or not isinstance(value, str) or check(value)


def _fit(
    candidates: list[str], pad: Callable[[str, int], str | None], low: int, high: int | None
) -> str | None:
    """The first candidate within ``[low, high]`` characters, padded up to ``low`` if needed."""
    for text in candidates:
        if high is not None and len(text) > high:
            continue
        if len(text) < low:
            padded = pad(text, low - len(text))
            if padded is None or (high is not None and len(padded) > high):
                continue
            text = padded
        return text
    return None


def _pad_uri(text: str, n: int) -> str:
    return text + "x" * n  # the path grows: a path character


def _pad_email(text: str, n: int) -> str | None:
    local, _, domain = text.partition("@")
    return f"{local}{'x' * n}@{domain}" if len(local) + n <= 64 else None


def _pad_hostname(text: str, n: int) -> str | None:
    first, _, rest = text.partition(".")
    if len(first) + n > 63:
        return None
    return f"{first}{'x' * n}.{rest}" if rest else first + "x" * n


def _no_pad(text: str, n: int) -> str | None:
    return None  # a fixed-length format cannot grow


def format_value(
    rng: random.Random, fmt: str, min_length: int = 0, max_length: int | None = None
) -> str | None:
    """A string satisfying ``fmt`` and the length bounds, drawn with ``rng``, or ``None`` when
    the format is unknown or no string of it fits the bounds (the caller names the property).

    >>> format_value(random.Random(1), "uuid")
    'cd613e30-d8f1-4adf-91b7-584a2265b1f5'
    """
    if fmt == "date":
        candidates = [f"2026-12-{rng.randint(1, 28):02d}"]
        pad = _no_pad
    elif fmt == "date-time":
        candidates = [f"2026-12-{rng.randint(1, 28):02d}T{rng.randint(7, 19):02d}:30:00Z"]
        pad = _no_pad
    elif fmt == "time":
        candidates = [f"{rng.randint(7, 19):02d}:{rng.choice((0, 15, 30, 45)):02d}:00Z"]
        pad = _no_pad
    elif fmt == "email":
        n = rng.randint(10, 99)
        candidates = [f"user{n}@example.com", f"u{n}@ex.co"]
        pad = _pad_email
    elif fmt == "hostname":
        n = rng.randint(10, 99)
        candidates = [f"host{n}.example.com", f"h{n}.example", f"h{n}"]
        pad = _pad_hostname
    elif fmt == "ipv4":
        candidates = [f"192.0.2.{rng.randint(1, 254)}"]
        pad = _no_pad
    elif fmt == "ipv6":
        candidates = [f"2001:db8::{rng.randint(1, 0xFFFF):x}"]
        pad = _no_pad
    elif fmt in ("uri", "url"):
        n = rng.randint(100, 999)
        candidates = [f"https://example.com/item/{n}", f"https://example.com/{n}", f"urn:{n}"]
        pad = _pad_uri
    elif fmt == "uuid":
        candidates = [str(uuid.UUID(int=rng.getrandbits(128), version=4))]  # never uuid4()
        pad = _no_pad
    else:
        return None
    return _fit(candidates, pad, min_length, max_length)
