"""The signed argument-check report: what a paid ``POST /check`` answers, and its offline check.

A report is the check's answer plus the facts the signature vouches for (the criteria id and
version, the vectors' id and pin, a digest of the request, the time) and ``signature``: a
compact JWS (RFC 7515) with ``alg`` ``EdDSA`` (RFC 8037, Ed25519) and a ``kid`` naming a key of
the service's JWKS, whose payload is the report itself without ``signature``. So any JOSE
library verifies the signature and gets back exactly what the service answered, and
:func:`verify_report` also checks that the report around the signature says the same
(docs/argcheck-report.md).

Before a report is signed, :func:`invented_value_problems` replays the diff on the submitted
arguments (the criteria's stop-serving tripwire "a repair found to have invented a value").

Everything here is standard library except the Ed25519 arithmetic of :func:`ed25519_verifier`,
which needs the ``cryptography`` package (the kit's ``verify`` extra) and says so when it is
missing. Signing keys live with the service; this module only takes a signing function.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from typing import Any

from toolcall300.argcheck import text as text_reader
from toolcall300.argcheck.repairs import apply_diff
from toolcall300.canonical import canonical, canonical_bytes, loads_strict
from toolcall300.cliutil import install_line

JWS_ALG = "EdDSA"
#: What each whitelist rule may do to the blob (the criteria's diff format).
RULE_OPS = {
    "R1": "append",
    "R2": "remove",
    "R3": "replace",
    "R4": "replace",
    "R5": "replace",
    "R6": "replace",
    "R7": "replace",
    "R8": "remove",
    "R9": "replace",
}
_TEXT_RULES = frozenset({"R1", "R2"})

Verifier = Callable[[bytes, bytes, bytes], bool]  # (public key, signature, signed bytes)


class ReportError(Exception):
    """A report that does not verify: malformed, unknown key, bad signature, or altered."""


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515 section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Inverse of :func:`b64url`; :class:`ReportError` for anything else."""
    if not isinstance(text, str) or "=" in text:
        raise ReportError("not base64url without padding")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ReportError("not base64url") from exc


def request_digest(request: dict[str, Any]) -> str:
    """``sha256:`` and the hex SHA-256 of the request's canonical serialisation (sorted keys,
    no whitespace, UTF-8): the caller can prove what was checked; the service keeps nothing."""
    fields = {k: request[k] for k in ("schema", "arguments", "arguments_text") if k in request}
    return "sha256:" + hashlib.sha256(canonical_bytes(fields)).hexdigest()


def unsigned_report(
    answer: dict[str, Any],
    *,
    criteria_version: str,
    corpus: dict[str, str],
    digest: str,
    issued_at: str,
) -> dict[str, Any]:
    """The answer plus what the signature covers besides the verdict, blob, diff and defects."""
    return {
        **answer,
        "criteria_version": criteria_version,
        "corpus": dict(corpus),
        "request_digest": digest,
        "issued_at": issued_at,
    }


def payload_bytes(report: dict[str, Any]) -> bytes:
    """The JWS payload: the report without ``signature``, as compact UTF-8 JSON (key order kept,
    so the repaired blob keeps the caller's key order)."""
    body = {k: v for k, v in report.items() if k != "signature"}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def sign_report(
    report: dict[str, Any], *, kid: str, sign: Callable[[bytes], bytes]
) -> dict[str, Any]:
    """``report`` with ``signature``: compact JWS over :func:`payload_bytes`."""
    header = b64url(canonical_bytes({"alg": JWS_ALG, "kid": kid}))
    signing_input = f"{header}.{b64url(payload_bytes(report))}"
    signature = b64url(sign(signing_input.encode("ascii")))
    return {**report, "signature": f"{signing_input}.{signature}"}


def invented_value_problems(request: dict[str, Any], answer: dict[str, Any]) -> list[str]:
    """Why ``answer`` could have invented a value (empty when it did not).

    The repaired blob must be exactly the submitted one with the diff applied, and every diff
    entry a whitelist rule doing what that rule does (text rules only on ``$arguments_text``).
    A VALID answer must carry the submission unchanged. Only rule ids and counts are named.
    """
    verdict = answer.get("verdict")
    if verdict not in ("VALID", "REPAIRED"):
        return []
    problems: list[str] = []
    diff = answer.get("diff", []) if verdict == "REPAIRED" else []
    if verdict == "REPAIRED" and not diff:
        problems.append("REPAIRED with an empty diff")
    for entry in diff:
        rule, op = entry.get("rule"), entry.get("op")
        if RULE_OPS.get(rule) != op:
            problems.append(f"diff entry {rule!r}/{op!r} is not a whitelist rule")
        elif (rule in _TEXT_RULES) != (entry.get("path") == text_reader.TEXT_PATH):
            problems.append(f"{rule} applied outside its form")
    if problems:
        return problems
    submitted = request.get("arguments_text", request.get("arguments"))
    try:
        replayed = apply_diff(submitted, diff)
    except (KeyError, IndexError, TypeError, ValueError, text_reader.TextError):
        return ["the diff does not replay on the submitted arguments"]
    if canonical(replayed) != canonical(answer.get("arguments")):
        problems.append("the answer's arguments differ from the submitted ones plus the diff")
    return problems


def ed25519_verifier() -> Verifier:
    """Ed25519 verification through ``cryptography``; :class:`ReportError` saying how to get it."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as exc:
        raise ReportError(
            "verifying an Ed25519 signature needs the cryptography package: "
            f"{install_line('verify')} (or verify with any JOSE tool: docs/argcheck-report.md)"
        ) from exc

    def verify(public_key: bytes, signature: bytes, signed: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(public_key).verify(signature, signed)
        except (InvalidSignature, ValueError):
            return False
        return True

    return verify


def _jwk_public_key(jwks: Any, kid: str) -> bytes:
    keys = jwks.get("keys") if isinstance(jwks, dict) else None
    if not isinstance(keys, list):
        raise ReportError("the key set has no keys list")
    for key in keys:
        if isinstance(key, dict) and key.get("kid") == kid:
            if key.get("kty") != "OKP" or key.get("crv") != "Ed25519":
                raise ReportError(f"key {kid!r} is not an Ed25519 key")
            public = b64url_decode(key.get("x", ""))
            if len(public) != 32:
                raise ReportError(f"key {kid!r} has no 32-byte public key")
            return public
    raise ReportError(f"no key {kid!r} in the key set")


def verify_report(report: Any, jwks: Any, verifier: Verifier | None = None) -> dict[str, Any]:
    """The verified payload of a saved report, or :class:`ReportError` naming why not.

    The signature must verify under the JWKS key its ``kid`` names, with ``alg`` ``EdDSA``, and
    the report around it must equal the signed payload (so no byte of either can change).
    """
    if not isinstance(report, dict) or not isinstance(report.get("signature"), str):
        raise ReportError("the report carries no signature")
    parts = report["signature"].split(".")
    if len(parts) != 3:
        raise ReportError("the signature is not a compact JWS")
    try:
        header = loads_strict(b64url_decode(parts[0]))
        payload = loads_strict(b64url_decode(parts[1]))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReportError("the signature's header or payload is not JSON") from exc
    if not isinstance(header, dict) or header.get("alg") != JWS_ALG:
        raise ReportError("the signature's alg is not EdDSA")
    if set(header) - {"alg", "kid", "typ"} or not isinstance(header.get("kid"), str):
        raise ReportError("the signature's header has no kid or an unexpected field")
    public = _jwk_public_key(jwks, header["kid"])
    check = verifier or ed25519_verifier()
    if not check(public, b64url_decode(parts[2]), f"{parts[0]}.{parts[1]}".encode("ascii")):
        raise ReportError("the signature does not verify")
    unsigned = {k: v for k, v in report.items() if k != "signature"}
    if canonical(payload) != canonical(unsigned):
        raise ReportError("the report differs from what was signed")
    if not isinstance(payload, dict):
        raise ReportError("the signed payload is not an object")
    return payload
