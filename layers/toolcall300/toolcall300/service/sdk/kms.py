"""The KMS HMAC key the report-signing keys are derived from (docs/argcheck-report.md).

``GenerateMac`` under the template's ``ReportSigningKey`` (``HMAC_256``, key usage
``GENERATE_VERIFY_MAC``): the key never leaves KMS, and its key policy lets only the
checker's role call ``GenerateMac``. Failures become ``UpstreamUnavailable`` (503).
"""

from __future__ import annotations

from toolcall300.service.sdk.aws import client, translated

MAC_ALGORITHM = "HMAC_SHA_256"  # the one the key policy allows


def generate_mac(key_id: str, message: bytes) -> bytes:
    """HMAC-SHA-256 of ``message`` under the KMS key ``key_id`` (32 bytes)."""
    with translated("the report-signing key", code="signing_key_unavailable"):
        answer = client("kms").generate_mac(
            KeyId=key_id, Message=message, MacAlgorithm=MAC_ALGORITHM
        )
    mac: bytes = answer["Mac"]
    return mac
