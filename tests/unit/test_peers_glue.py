"""The peers' shared glue (peers/glue.py) and the two peers whose libraries the dev extras
already hold (json_repair, jsonschema): they load as ``--adapter path.py:fn`` and answer
every case of the public sample without an adapter error. The other peers need their own
environment (``make peers``) and are not part of the test run."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType

import pytest

from toolcall300.cli import dispatch

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "peers"
SAMPLE = ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl"


@pytest.fixture
def glue(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(PEERS))
    import glue as module

    return module


def test_the_glue_finds_the_first_call_in_the_usual_envelopes(glue: ModuleType) -> None:
    openai = {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert glue.call_parts(openai) == ("f", "{}")
    assert glue.call_parts([{"name": "g", "input": {"a": 1}}]) == ("g", {"a": 1})
    assert glue.call_parts({"name": "h"}) == ("h", {})
    assert glue.call_parts({"text": "no call"}) is None


def test_the_glue_looks_tools_up_by_exact_name(glue: ModuleType) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather"}}]
    assert glue.tool_parameters(tools, "get_weather") == {"type": "object", "properties": {}}
    assert glue.tool_parameters(tools, "Get-Weather") is None


@pytest.mark.parametrize(
    "spec", ["json_repair_peers.py:plain", "json_repair_peers.py:gate", "jsonschema_peer.py:gate"]
)
def test_a_peer_scores_the_public_sample_without_adapter_errors(spec: str, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(
        [
            "score",
            "--corpus",
            str(SAMPLE),
            "--adapter",
            str(PEERS / spec),
            "--json",
            str(tmp_path / "r.json"),
        ],
        out,
        err,
    )
    assert code == 0, err.getvalue()
    assert "adapter errors          0" in out.getvalue()
