"""The report-signing keys: Ed25519 through ``cryptography``, seeded from a Secrets Manager secret.

The secret is JSON ``{"seed": "...", "previous_seed": "..."}``: a random string generated at
deploy (the template's ``GenerateSecretString``; the local stack's provisioner does the same),
whose SHA-256 is the 32-byte Ed25519 private key. ``previous_seed`` is set only during a
rotation, so reports signed before it still verify: both public keys are in the JWKS, and new
reports are signed with ``seed`` (docs/argcheck-report.md). A key's ``kid`` is its RFC 7638
JWK thumbprint, so it names the key itself and cannot collide across rotations.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from toolcall300.argcheck.report import b64url
from toolcall300.canonical import canonical_bytes


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
    def from_seed(cls, seed: str) -> SigningKey:
        private = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed.encode()).digest())
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
    previous: SigningKey | None = None

    @classmethod
    def from_secret(cls, doc: dict[str, object]) -> ReportKeys:
        seed = doc.get("seed")
        if not isinstance(seed, str) or len(seed) < 32:
            raise ValueError("the report-signing secret has no seed of at least 32 characters")
        previous = doc.get("previous_seed")
        return cls(
            SigningKey.from_seed(seed),
            SigningKey.from_seed(previous) if isinstance(previous, str) and previous else None,
        )

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JSON Web Key Set (RFC 7517) served at ``GET /.well-known/jwks.json``."""
        keys = [self.current] + ([self.previous] if self.previous else [])
        return {"keys": [k.public_jwk() for k in keys]}
