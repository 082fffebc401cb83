"""GET /corpus and GET /cases/{id}/rationale through the real handler (moto S3 and DynamoDB)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.corpus import RATIONALE, make_corpus
from support.gateway import Call

from toolcall300.service.domain import corpus
from toolcall300.service.domain.licences import issue_manual, revoke
from toolcall300.service.errors import BadRequest, UpstreamUnavailable
from toolcall300.service.sdk.dynamo import LicenceTable
from toolcall300.service.sdk.s3 import CorpusObjects, upload_corpus
from toolcall300.spec import CORPUS_VERSION, SPEC_VERSION


@pytest.fixture
def published(aws: Any, tmp_path: Path) -> dict[str, Any]:
    manifest = make_corpus(tmp_path / "corpus")
    upload_corpus(tmp_path / "corpus", CorpusObjects(aws.names["CorpusBucket"]))
    return manifest


@pytest.fixture
def key(aws: Any) -> str:
    from datetime import UTC, datetime

    k, _ = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="single", team=None, now=datetime.now(UTC)
    )
    return k


def test_corpus_lists_pins_and_sigv4_links_of_at_most_five_minutes(
    call: Call, published: dict[str, Any], key: str
) -> None:
    status, _, data = call("GET", "/corpus", headers={"authorization": f"Bearer {key}"})
    assert status == 200
    assert [(f["name"], f["sha256"]) for f in data["files"]] == [
        (f["name"], f["sha256"]) for f in published["files"]
    ]
    assert 0 < data["expires_in"] <= 300
    for f in data["files"]:
        query = parse_qs(urlsplit(f["url"]).query)
        assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
        assert int(query["X-Amz-Expires"][0]) <= 300


def test_corpus_lists_the_manifest_and_the_generator_inputs_it_pins(
    call: Call, aws: Any, tmp_path: Path, key: str
) -> None:
    """What `generate --check-only` and `--rebuild` need travels with the corpus: the manifest
    (pinned by its own sha256) and the recorded inputs, each with the manifest's pin."""
    import requests
    from support.corpus import PRIVATE

    upload_corpus(PRIVATE, CorpusObjects(aws.names["CorpusBucket"]))
    _, _, data = call("GET", "/corpus", headers={"authorization": f"Bearer {key}"})
    manifest_bytes = (PRIVATE / "manifest.json").read_bytes()
    assert data["manifest"]["sha256"] == hashlib.sha256(manifest_bytes).hexdigest()
    assert requests.get(data["manifest"]["url"], timeout=10).content == manifest_bytes
    manifest = json.loads(manifest_bytes)
    inputs = {f["name"]: f for f in data["inputs"]}
    assert set(inputs) == {"inputs/recipe.json", "inputs/tools.json", "inputs/pools.json"}
    assert inputs["inputs/tools.json"]["sha256"] == manifest["catalog"]["sha256"]
    assert inputs["inputs/pools.json"]["sha256"] == manifest["pools"]["sha256"]
    for name, f in inputs.items():
        assert requests.get(f["url"], timeout=10).content == (PRIVATE / name).read_bytes()


def test_presigned_link_serves_the_pinned_bytes(
    call: Call, published: dict[str, Any], key: str
) -> None:
    import requests

    _, _, data = call("GET", "/corpus", headers={"authorization": f"Bearer {key}"})
    for f in data["files"]:
        assert hashlib.sha256(requests.get(f["url"], timeout=10).content).hexdigest() == f["sha256"]


def test_daily_download_cap_answers_429_with_retry_after(
    call: Call, published: dict[str, Any], key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcall300.service.api import wiring

    monkeypatch.setenv("DOWNLOADS_PER_DAY", "2")
    wiring.renew()
    auth = {"authorization": f"Bearer {key}"}
    assert [call("GET", "/corpus", headers=auth)[0] for _ in range(2)] == [200, 200]
    status, headers, data = call("GET", "/corpus", headers=auth)
    assert status == 429 and data["error"]["code"] == "daily_limit"
    assert 1 <= int(headers["retry-after"]) <= 86400
    monkeypatch.delenv("DOWNLOADS_PER_DAY")
    wiring.renew()


def test_rationale_of_one_case(call: Call, published: dict[str, Any], key: str) -> None:
    status, _, data = call(
        "GET", "/cases/tc300-0002/rationale", headers={"authorization": f"Bearer {key}"}
    )
    assert (status, data) == (200, RATIONALE[1])
    assert (
        call("GET", "/cases/tc300-0999/rationale", headers={"authorization": f"Bearer {key}"})[0]
        == 404
    )


@pytest.mark.parametrize(
    "case_id",
    [
        "..%2F..%2Fmanifest.json",
        "tc300-1",
        "TC300-0001",
        "tc300-0001%0A",
        "%00",
        "tc300-00001",
        "tc300-%D9%A0%D9%A0%D9%A0%D9%A1",  # Arabic-Indic digits: not a case id
    ],
)
def test_path_traversal_and_odd_ids_are_400_or_404(
    call: Call, published: dict[str, Any], key: str, case_id: str
) -> None:
    status, _, data = call(
        "GET", f"/cases/{case_id}/rationale", headers={"authorization": f"Bearer {key}"}
    )
    assert status in (400, 404) and "error" in data


def test_a_malformed_case_id_answers_the_code_docs_api_md_names(
    call: Call, published: dict[str, Any], key: str
) -> None:
    status, _, data = call(
        "GET", "/cases/TC300-0001/rationale", headers={"authorization": f"Bearer {key}"}
    )
    assert status == 400 and data["error"]["code"] == "invalid_request"
    api_md = (Path(__file__).parents[2] / "docs/api.md").read_text()
    row = next(line for line in api_md.splitlines() if "`GET /cases/{id}/rationale`" in line)
    assert "`400 invalid_request`" in row and "invalid_case_id" not in row


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=20))
def test_validate_case_id_accepts_exactly_the_id_grammar(text: str) -> None:
    import re

    try:
        corpus.validate_case_id(text)
        accepted = True
    except BadRequest:
        accepted = False
    assert accepted == bool(re.fullmatch(r"tc300-[0-9]{4}", text))


def test_corpus_needs_a_live_licence(
    call: Call, published: dict[str, Any], key: str, aws: Any
) -> None:
    from datetime import UTC, datetime

    assert call("GET", "/corpus")[0] == 401
    assert call("GET", "/corpus", headers={"authorization": "Bearer tc300_" + "A" * 32})[0] == 401
    store = LicenceTable(aws.names["LicencesTable"])
    revoke(store, store.scan()[0]["licence_id"], now=datetime.now(UTC))
    status, _, data = call("GET", "/corpus", headers={"authorization": f"Bearer {key}"})
    assert status == 401 and data["error"]["code"] == "licence_revoked"


def test_key_in_the_url_is_not_accepted(call: Call, published: dict[str, Any], key: str) -> None:
    assert call("GET", f"/corpus?key={key}")[0] == 401


@pytest.mark.parametrize(
    "raw",
    [
        b"{}",
        b'{"files": []}',
        b'{"files": [{"name": "../x", "sha256": "' + b"0" * 64 + b'"}]}',
        b"not json",
    ],
)
def test_a_malformed_manifest_is_a_503_not_a_500(raw: bytes) -> None:
    with pytest.raises(UpstreamUnavailable):
        corpus.parse_manifest(raw)


def test_upload_refuses_a_file_that_does_not_match_its_pin(aws: Any, tmp_path: Path) -> None:
    make_corpus(tmp_path)
    (tmp_path / "rationale.jsonl").write_text("tampered\n")
    with pytest.raises(ValueError, match="sha256"):
        upload_corpus(tmp_path, CorpusObjects(aws.names["CorpusBucket"]))


def test_manifest_as_a_map_of_names_is_read_too() -> None:
    pin = "a" * 64
    raw = json.dumps(
        {"corpus_version": "1.0", "files": {"toolcall300.jsonl": {"count": 300, "sha256": pin}}}
    ).encode()
    manifest = corpus.parse_manifest(raw)
    assert manifest.version == "1.0"
    assert manifest.files == (
        {"name": "toolcall300.jsonl", "sha256": pin, "bytes": None, "count": 300},
    )


def test_the_real_corpus_uploads_with_its_pins(aws: Any, call: Call, key: str) -> None:
    real = Path(__file__).resolve().parents[2] / "corpus_private"
    if not (real / "manifest.json").exists():
        pytest.skip("corpus_private/ not generated in this checkout")
    upload_corpus(real, CorpusObjects(aws.names["CorpusBucket"]))
    status, _, data = call("GET", "/corpus", headers={"authorization": f"Bearer {key}"})
    manifest = json.loads((real / "manifest.json").read_bytes())
    assert (data["version"], data["spec_version"]) == (CORPUS_VERSION, SPEC_VERSION)
    assert data["version"] == manifest["version"]  # the version it was deployed with
    assert status == 200 and {f["name"] for f in data["files"]} >= {
        "toolcall300.jsonl",
        "rationale.jsonl",
        "LICENSE-COMMERCIAL.txt",
    }
    import requests

    (licence,) = [f for f in data["files"] if f["name"] == "LICENSE-COMMERCIAL.txt"]
    delivered = requests.get(licence["url"], timeout=10).content
    assert delivered == (real / "LICENSE-COMMERCIAL.txt").read_bytes()  # the licence travels
    status, _, rationale = call(
        "GET", "/cases/tc300-0001/rationale", headers={"authorization": f"Bearer {key}"}
    )
    assert status == 200 and rationale["id"] == "tc300-0001"


def test_corpus_lists_the_track_corpora_with_their_rationale_and_links_serving_the_pins(
    call: Call, aws: Any, tmp_path: Path, key: str
) -> None:
    make_corpus(tmp_path / "corpus", tracks=True)
    upload_corpus(tmp_path / "corpus", CorpusObjects(aws.names["CorpusBucket"]))
    status, _, data = call("GET", "/corpus", headers={"authorization": f"Bearer {key}"})
    assert status == 200
    (parallel,) = data["tracks"]  # the deltas folder was not uploaded: not listed
    local = tmp_path / "corpus" / "parallel"
    pinned = json.loads((local / "manifest.json").read_bytes())["files"]
    assert parallel["track"] == "parallel" and parallel["version"] == "1.0"
    assert parallel["manifest"]["name"] == "parallel/manifest.json"
    assert (
        parallel["manifest"]["sha256"]
        == hashlib.sha256((local / "manifest.json").read_bytes()).hexdigest()
    )
    assert {f["name"]: f["sha256"] for f in parallel["files"]} == {
        f"parallel/{name}": meta["sha256"] for name, meta in pinned.items()
    }
    assert "parallel/rationale.jsonl" in {f["name"] for f in parallel["files"]}
    import requests

    for f in parallel["files"]:  # moto serves the presigned links
        assert hashlib.sha256(requests.get(f["url"], timeout=10).content).hexdigest() == f["sha256"]
