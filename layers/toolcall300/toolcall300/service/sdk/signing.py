"""The report-signing keys: Ed25519 through ``cryptography``, derived from a KMS HMAC key.

Generation ``N``'s private key is the 32-byte HMAC-SHA-256, under the stack's KMS key
(``sdk.kms``), of the label :func:`label` names: nothing secret is stored anywhere, and only a
principal the key policy allows to call ``GenerateMac`` (the checker's role) can derive it.
The settings list the generations to publish, current first (``REPORT_KEY_GENERATIONS``,
``"2,1"`` during a rotation): new reports are signed with the first, and the JWKS lists them
all, so reports signed before a rotation still verify (docs/argcheck-report.md). A key's
``kid`` is its RFC 7638 JWK thumbprint, so it names the key itself and never collides.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from toolcall300.argcheck.report import b64url
from toolcall300.canonical import canonical_bytes


def label(generation: int) -> bytes:
    """What the KMS key MACs to give generation ``generation``'s private key."""
    return f"toolcall300 argument-check report signing key, generation {generation}".encode()


def _jwk(public: bytes) -> dict[str, str]:
    return {"kty": "OKP", "crv": "Ed25519", "x": b64url(public)}


def thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638: base64url SHA-256 of the required members in lexicographic order."""
    required = {k: jwk[k] for k in ("crv", "kty", "x")}
    return b64url(hashlib.sha256(canonical_bytes(required)).digest())


@dataclass(frozen=True)
class SigningKey:
    """One Ed25519 key: ``sign`` bytes, publish ``public_jwk``."""

    private: Ed25519PrivateKey
    kid: str

    @classmethod
    def from_private_bytes(cls, raw: bytes) -> SigningKey:
        private = Ed25519PrivateKey.from_private_bytes(raw)
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cls(private, thumbprint(_jwk(public)))

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)

    def public_jwk(self) -> dict[str, str]:
        public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {**_jwk(public), "kid": self.kid, "alg": "EdDSA", "use": "sig"}


@dataclass(frozen=True)
class ReportKeys:
    """The key that signs new reports and the keys a verifier may meet (current first)."""

    current: SigningKey
    older: tuple[SigningKey, ...] = ()

    @classmethod
    def derived(cls, mac: Callable[[bytes], bytes], generations: Sequence[int]) -> ReportKeys:
        """The keys of ``generations`` (current first), each the MAC of its :func:`label`."""
        if not generations:
            raise ValueError("no report-signing key generation is configured")
        keys = [SigningKey.from_private_bytes(mac(label(g))) for g in generations]
        return cls(keys[0], tuple(keys[1:]))

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JSON Web Key Set (RFC 7517) served at ``GET /.well-known/jwks.json``."""
        return {"keys": [k.public_jwk() for k in (self.current, *self.older)]}
