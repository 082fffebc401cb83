"""The report-signing keys derived from the stack's KMS HMAC key (toolcall300.service.sdk.signing,
docs/argcheck-report.md "Keys and rotation"), through the real handler under moto's KMS."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from support.gateway import Call

from toolcall300.argcheck.report import ReportError, verify_report
from toolcall300.service.api import wiring
from toolcall300.service.domain.licences import issue_manual
from toolcall300.service.sdk.aws import client
from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable

BODY = json.dumps({"schema": {"type": "object"}, "arguments": {"n": 1}}).encode()


def _auth(aws: Any, checks: int = 10) -> tuple[dict[str, str], str]:
    key, licence = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", now=datetime.now(UTC)
    )
    CheckLedgerTable(aws.names["CheckLedgerTable"]).grant(
        licence.licence_id, checks=checks, payment_id="house", granted_at="2026-12-01T00:00:00Z"
    )
    return {"authorization": f"Bearer {key}"}, licence.licence_id


def _generations(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("REPORT_KEY_GENERATIONS", value)
    wiring.renew()


def test_a_rotation_signs_with_the_new_generation_and_keeps_old_reports_verifiable(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth, _ = _auth(aws)
    status, _, old_report = call("POST", "/check", body=BODY, headers=auth)
    old_jwks = call("GET", "/.well-known/jwks.json")[2]
    assert status == 200 and len(old_jwks["keys"]) == 1
    assert verify_report(old_report, old_jwks)

    _generations(monkeypatch, "2,1")  # rotating: generation 2 signs, 1 is still published
    jwks = call("GET", "/.well-known/jwks.json")[2]
    assert [k["kid"] for k in jwks["keys"]][1:] == [old_jwks["keys"][0]["kid"]]
    assert verify_report(old_report, jwks)  # a report signed before still verifies
    new_report = call("POST", "/check", body=BODY, headers=auth)[2]
    assert verify_report(new_report, jwks)
    with pytest.raises(ReportError):  # not under the old key set: it is a new key
        verify_report(new_report, old_jwks)

    _generations(monkeypatch, "2")  # generation 1 withdrawn
    with pytest.raises(ReportError):
        verify_report(old_report, call("GET", "/.well-known/jwks.json")[2])
    # The same generation is the same key on every derivation (a cold start changes nothing).
    wiring.renew()
    assert call("GET", "/.well-known/jwks.json")[2]["keys"][0]["kid"] == jwks["keys"][0]["kid"]


def test_the_keys_come_from_the_kms_key_material_not_only_from_the_label(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = call("GET", "/.well-known/jwks.json")[2]["keys"][0]["kid"]
    other = client("kms").create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")
    monkeypatch.setenv("REPORT_SIGNING_KEY_ID", other["KeyMetadata"]["KeyId"])
    wiring.renew()
    assert call("GET", "/.well-known/jwks.json")[2]["keys"][0]["kid"] != first


def test_an_unusable_signing_key_answers_503_and_takes_no_check(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key KMS refuses (here: one that does not exist; in AWS also a disabled or
    scheduled-for-deletion key, or a role the key policy does not name) is a 503 before the
    pack is touched. moto does not refuse a disabled key's GenerateMac, so the test uses a
    missing one."""
    auth, payer = _auth(aws, checks=1)
    monkeypatch.setenv("REPORT_SIGNING_KEY_ID", "alias/tc300-unit-no-such-key")
    wiring.renew()
    status, _, data = call("POST", "/check", body=BODY, headers=auth)
    assert status == 503 and data["error"]["code"] == "signing_key_unavailable"
    assert call("GET", "/.well-known/jwks.json")[0] == 503
    book = CheckLedgerTable(aws.names["CheckLedgerTable"])
    assert (book.pack(payer) or {})["remaining"] == 1  # nothing was charged
    monkeypatch.setenv("REPORT_SIGNING_KEY_ID", aws.names["ReportSigningKey"])
    wiring.renew()
    assert call("POST", "/check", body=BODY, headers=auth)[0] == 200


def test_a_malformed_generation_list_is_refused_at_settings(
    monkeypatch: pytest.MonkeyPatch, aws: Any
) -> None:
    from pydantic import ValidationError

    from toolcall300.service.settings import ArgcheckSettings

    for bad in ("0", "1,1", "x", ""):
        monkeypatch.setenv("REPORT_KEY_GENERATIONS", bad)
        with pytest.raises(ValidationError):
            ArgcheckSettings()
    monkeypatch.setenv("REPORT_KEY_GENERATIONS", "3, 2")
    assert ArgcheckSettings().report_key_generations == (3, 2)
