"""The signed argument-check report: JWS EdDSA over the answer, offline verification, the
invented-value gate (toolcall300.argcheck.report; docs/argcheck-report.md)."""

from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jws
from joserfc.jwk import OKPKey
from support.budget import examples

from toolcall300.argcheck import report
from toolcall300.argcheck import vectors as argcheck_corpus
from toolcall300.argcheck.check import check
from toolcall300.cli import dispatch

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array"}, "x": {"type": "string"}},
}
REQUEST = {"schema": SCHEMA, "arguments": {"tags": "a", "n": "3", "x": None}}
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
JWKS = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": report.b64url(PUBLIC), "kid": "k1"}]}


def signed(request: dict[str, Any] = REQUEST) -> dict[str, Any]:
    unsigned = report.unsigned_report(
        check(request),
        criteria_version="1.0.0",
        corpus={"id": argcheck_corpus.CORPUS_ID, "sha256": "ab" * 32},
        digest=report.request_digest(request),
        issued_at="2026-12-01T12:00:00+00:00",
    )
    return report.sign_report(unsigned, kid="k1", sign=KEY.sign)


def test_a_signed_report_verifies_and_its_payload_is_the_answer() -> None:
    r = signed()
    assert r["verdict"] == "REPAIRED" and list(r["arguments"]) == ["tags", "n"]  # caller's order
    payload = report.verify_report(r, JWKS)
    assert payload == {k: v for k, v in r.items() if k != "signature"}
    for field in ("criteria_id", "criteria_version", "corpus", "verdict", "arguments", "diff"):
        assert field in payload
    assert payload["request_digest"] == report.request_digest(REQUEST)


# RFC 9864 deprecates the polymorphic "EdDSA" for "Ed25519"; the report keeps EdDSA, which every
# JOSE library still reads (docs/argcheck-report.md).
@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
def test_a_generic_jose_library_verifies_it_and_gets_back_the_answer() -> None:
    r = signed()
    key = OKPKey.import_key({k: v for k, v in JWKS["keys"][0].items() if k != "kid"})
    obj = jws.deserialize_compact(r["signature"], key, algorithms=["EdDSA"])
    assert obj.headers() == {"alg": "EdDSA", "kid": "k1"}
    assert json.loads(obj.payload) == {k: v for k, v in r.items() if k != "signature"}


def _flip(text: str, index: int) -> str:
    ch = text[index]
    return text[:index] + ("B" if ch != "B" else "C") + text[index + 1 :]


@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_one_changed_byte_anywhere_in_a_saved_report_fails(data: st.DataObject) -> None:
    saved = json.dumps(signed(), ensure_ascii=False)
    # Any byte inside a JSON string or number of the saved file (not its punctuation).
    positions = [i for i, c in enumerate(saved) if c.isalnum()]
    i = data.draw(st.sampled_from(positions))
    try:
        altered = json.loads(_flip(saved, i))
    except ValueError:
        return  # no longer JSON: refused before any signature check
    if altered == json.loads(saved):
        return
    with pytest.raises(report.ReportError):
        report.verify_report(altered, JWKS)


def test_an_unknown_key_a_wrong_alg_or_a_foreign_key_set_fails() -> None:
    r = signed()
    with pytest.raises(report.ReportError, match="no key"):
        report.verify_report(r, {"keys": [{**JWKS["keys"][0], "kid": "other"}]})
    other = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    with pytest.raises(report.ReportError, match="does not verify"):
        report.verify_report(r, {"keys": [{**JWKS["keys"][0], "x": report.b64url(other)}]})
    header = report.b64url(json.dumps({"alg": "none", "kid": "k1"}).encode())
    forged = {**r, "signature": header + r["signature"][r["signature"].index(".") :]}
    with pytest.raises(report.ReportError, match="alg"):
        report.verify_report(forged, JWKS)
    for bad in (None, [], {"signature": "a.b"}, {"signature": 3}):
        with pytest.raises(report.ReportError):
            report.verify_report(bad, JWKS)


def test_cli_verify_passes_a_saved_report_and_fails_an_altered_one(tmp_path: Path) -> None:
    saved, keys = tmp_path / "report.json", tmp_path / "jwks.json"
    saved.write_text(json.dumps(signed()), encoding="utf-8")
    keys.write_text(json.dumps(JWKS), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert dispatch(["check", "verify", str(saved), "--jwks", str(keys)], out, err) == 0
    assert out.getvalue().startswith("verified: tool-argument/v1 REPAIRED request sha256:")
    saved.write_text(saved.read_text("utf-8").replace('"n": 3', '"n": 4'), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert dispatch(["check", "verify", str(saved), "--jwks", str(keys)], out, err) == 1
    assert "NOT VERIFIED" in err.getvalue() and out.getvalue() == ""


def test_verify_without_cryptography_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved, keys = tmp_path / "report.json", tmp_path / "jwks.json"
    saved.write_text(json.dumps(signed()), encoding="utf-8")
    keys.write_text(json.dumps(JWKS), encoding="utf-8")
    for name in [m for m in sys.modules if m.split(".")[0] == "cryptography"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cryptography", None)  # import cryptography -> ImportError
    err = io.StringIO()
    assert dispatch(["check", "verify", str(saved), "--jwks", str(keys)], io.StringIO(), err) == 1
    # an install line that works: this checkout's own folder (no package index carries it)
    root = Path(__file__).resolve().parents[2]
    assert f"pip install '{root}[verify]'" in err.getvalue()


def test_request_digest_is_of_the_submission_only() -> None:
    text = {"schema": SCHEMA, "arguments_text": '{"n": 1'}
    assert report.request_digest(text) != report.request_digest(REQUEST)
    reordered = {"arguments": REQUEST["arguments"], "schema": SCHEMA}
    assert report.request_digest(reordered) == report.request_digest(REQUEST)
    assert report.request_digest(REQUEST).startswith("sha256:")


# ------------------------------------------------------------------------- the invented-value gate


def test_every_vector_answer_passes_the_invented_value_gate() -> None:
    for vector in argcheck_corpus.load_corpus()["vectors"]:
        if "request" in vector:
            answer = check(vector["request"])
            assert report.invented_value_problems(vector["request"], answer) == [], vector["id"]


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        (lambda a: a["arguments"].__setitem__("n", 4), "differ"),
        (lambda a: a["arguments"].__setitem__("extra", 1), "differ"),
        (lambda a: a["diff"][0].__setitem__("rule", "R10"), "not a whitelist rule"),
        (lambda a: a["diff"][0].__setitem__("op", "remove"), "not a whitelist rule"),
        (lambda a: a["diff"][0].__setitem__("rule", "R1"), "not a whitelist rule"),
        (lambda a: a["diff"][0].update(rule="R2", op="remove"), "outside its form"),
        (lambda a: a["diff"].clear(), "empty diff"),
        (lambda a: a["diff"][0].__setitem__("path", "$.nope.deeper"), "does not replay"),
    ],
)
def test_the_gate_catches_an_answer_that_invents_a_value(tamper: Any, problem: str) -> None:
    answer = copy.deepcopy(check(REQUEST))
    assert report.invented_value_problems(REQUEST, answer) == []
    tamper(answer)
    assert any(problem in p for p in report.invented_value_problems(REQUEST, answer))


def test_the_gate_catches_a_valid_answer_that_changed_the_blob() -> None:
    request = {"schema": SCHEMA, "arguments": {"n": 1}}
    answer = check(request)
    assert answer["verdict"] == "VALID"
    answer["arguments"] = {"n": 2}
    assert report.invented_value_problems(request, answer)
