"""The node peers' drivers speak the scorer's protocols (peers/node, docs/adapter-protocols.md).

The node peers are programs: ``parallel_vercel.mjs`` (the Vercel AI SDK) and
``parallel_langchain.mjs`` (LangChain.js) answer the parallel track's list over the JSON Lines
stream protocol, ``deltas_vercel.mjs`` (the Vercel AI SDK) and ``deltas_langchain.mjs``
(LangChain.js's chunk merging, @langchain/core) the deltas process protocol. They
need node and the locked npm packages (``make peers``, or ``npm ci --prefix peers/node``): here
they skip saying so, under ``CI=true`` they fail (support.tiers; ``.ci/run`` installs them).
"""

from __future__ import annotations

import io
import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.tiers import unavailable

from toolcall300.cli import dispatch
from toolcall300.generator.deltas import render
from toolcall300.scoring.tracks.deltas import replay

ROOT = Path(__file__).resolve().parents[2]
NODE_PEERS = ROOT / "peers" / "node"
PARALLEL_SAMPLE = ROOT / "layers/toolcall300/toolcall300/data/parallel-sample24.jsonl"
DELTAS_SAMPLE = ROOT / "layers/toolcall300/toolcall300/data/deltas-sample.jsonl"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        unavailable(
            "node is not installed: the node peers' drivers need it (apt-get install nodejs)"
        )
    if not all((NODE_PEERS / "node_modules" / p).is_dir() for p in ("ai", "@langchain/core")):
        unavailable("the node peers are not installed: make peers (npm ci --prefix peers/node)")
    return found


def _run(node: str, script: str, lines: list[dict[str, Any]], *args: str) -> list[dict[str, Any]]:
    """Every stdout line the driver wrote, each of which must be a JSON object."""
    done = subprocess.run(
        [node, str(NODE_PEERS / script), *args],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, check=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    return [json.loads(line) for line in done.stdout.splitlines()]


def _openai_turn(*calls: tuple[str, str]) -> str:
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(calls)
    ]
    return json.dumps({"role": "assistant", "content": None, "tool_calls": tool_calls})


def test_the_vercel_parallel_peer_answers_one_slot_per_call(node: str) -> None:
    anthropic = [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": 7}},
    ]
    rows = [
        # a declared call, an undeclared one, arguments that are not JSON: the SDK marks the
        # last two invalid, so their slots are null and the first stands
        {"id": "a", "text": _openai_turn(("get_weather", '{"city": "Oslo"}'), ("nope", "{}"),
                                         ("get_weather", '{"city": "Ber')), "tools": [WEATHER]},
        {"id": "b", "text": json.dumps(anthropic), "tools": [WEATHER]},
        {"id": "c", "text": '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]', "tools": [WEATHER]},
        {"id": "d", "text": '{"role": "assistant", "tool_calls": [', "tools": [WEATHER]},
    ]  # fmt: skip
    oslo = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert _run(node, "parallel_vercel.mjs", rows) == [
        {"id": "a", "call": [oslo, None, None]},
        # jsonSchema(parameters) validates nothing: the SDK hands on {"city": 7}
        {"id": "b", "call": [oslo, {"name": "get_weather", "arguments": {"city": 7}}]},
        {"id": "c", "call": None},  # a bare array is neither provider's wire form
        {"id": "d", "call": None},  # text that does not parse
    ]
    # with an Ajv validator as the docs' `validate` option, the SDK marks {"city": 7} invalid
    assert _run(node, "parallel_vercel.mjs", rows[1:2], "--ajv") == [
        {"id": "b", "call": [oslo, None]}
    ]


def test_the_langchain_parallel_peer_answers_one_slot_per_call(node: str) -> None:
    rows = [
        # parseToolCall on each: blank arguments are not JSON to JavaScript (Python's
        # parse_tool_call reads them as {}), an undeclared name or arguments that are not an
        # object do not stand: null in their slots
        {"id": "a", "text": _openai_turn(("get_weather", '{"city": "Oslo"}'), ("get_weather", ""),
                                         ("nope", "{}"), ("get_weather", '"{}"')), "tools": [WEATHER]},
        {"id": "b", "text": '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]', "tools": [WEATHER]},
        {"id": "c", "text": "not json", "tools": [WEATHER]},
    ]  # fmt: skip
    oslo = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert _run(node, "parallel_langchain.mjs", rows) == [
        {"id": "a", "call": [oslo, None, None, None]},
        {"id": "b", "call": [oslo]},  # the glue reads a bare array, as the Python peer's does
        {"id": "c", "call": None},
    ]


@pytest.mark.parametrize(
    "script", ["parallel_vercel.mjs", "parallel_vercel.mjs --ajv", "parallel_langchain.mjs"]
)
def test_a_node_parallel_peer_scores_the_parallel_sample(
    node: str, script: str, tmp_path: Path
) -> None:
    out, err = io.StringIO(), io.StringIO()
    name, *args = script.split()
    # absolute paths: the scorer starts it in whatever folder pytest runs in
    command = shlex.join([node, str(NODE_PEERS / name), *args])
    report = tmp_path / "r.json"
    argv = ["score", "--corpus", str(PARALLEL_SAMPLE), "--adapter-stream", command]
    assert dispatch([*argv, "--json", str(report)], out, err) == 0, err.getvalue()
    assert err.getvalue() == ""  # every turn answered once, no stray line on its stdout
    figures = json.loads(report.read_text())
    assert figures["track"] == "parallel"
    assert figures["adapter_errors"] == 0
    assert figures["returned_calls"] > 0  # it read the envelopes, not refused every turn


def test_the_vercel_deltas_peer_keeps_the_sdks_warnings_off_its_stdout(node: str) -> None:
    """The SDK's first warning of a process (Anthropic's maxOutputTokens for an unknown model)
    went to stdout through console.info: that stream's answer was a line that is not the
    protocol's, an adapter error, and the process was restarted."""
    events, *_ = render("anthropic", "standard", "get_weather", '{"city": "Oslo"}', 1, cut=False)
    lines: list[dict[str, Any]] = [{"id": "s/0", "tools": [WEATHER]}]
    lines += [{"id": "s/0", "event": event} for event in events]
    lines.append({"id": "s/0", "end": True})
    answers = _run(node, "deltas_vercel.mjs", lines)
    assert answers == [{"id": "s/0", "commits": []}] * len(events) + [
        {"id": "s/0", "call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    ]


def test_ci_installs_the_node_peers() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "need+=(nodejs)" in script
    assert "make peers/node/node_modules/.installed" in script


def _stream(sid: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The protocol's lines for one stream: its tools, its events, its end."""
    lines: list[dict[str, Any]] = [{"id": sid, "tools": [WEATHER]}]
    lines += [{"id": sid, "event": event} for event in events]
    return [*lines, {"id": sid, "end": True}]


def _rendered(shape: str, text: str, offsets: list[int] | None = None) -> list[dict[str, Any]]:
    """One stream of ``shape`` carrying get_weather with the arguments ``text``, its
    arguments fragment cut at ``offsets`` (tracks.deltas.replay)."""
    events, at, path, continuation = render(shape, "standard", "get_weather", text, 1, cut=False)
    case = {"events": events, "fragment_event": at, "fragment_path": path}
    return replay({**case, "continuation": continuation}, offsets or [])


def _calls(answers: list[dict[str, Any]]) -> dict[str, Any]:
    return {a["id"]: a["call"] for a in answers if "call" in a}


def test_the_langchain_deltas_peer_merges_each_shapes_chunks_as_langchain_does(node: str) -> None:
    oslo = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    whole = '{"city": "Oslo"}'
    lines = []
    for shape in ("openai_chat", "openai_responses", "anthropic", "gemini"):
        lines += _stream(shape, _rendered(shape, whole, [3, 9]))
    # the last fragment lost: LangChain's partial-JSON parser closes it into a call with a
    # cut value (an invented one); the first lost: not JSON at all, invalid_tool_calls
    lines += _stream("cut", _rendered("anthropic", '{"city": "Os'))
    lines += _stream("headless", _rendered("openai_chat", 'ty": "Oslo"}'))
    # blank arguments are "{}" to collapseToolCallChunks: a call with no arguments
    lines += _stream("blank", _rendered("openai_responses", ""))
    # Vertex's partialArgs: no LangChain.js integration reads them, refused
    lines += _stream("vertex", _rendered("vertex", whole))
    answers = _run(node, "deltas_langchain.mjs", lines)
    assert all(a["commits"] == [] for a in answers if "commits" in a)  # it commits nothing
    assert _calls(answers) == {
        "openai_chat": oslo,
        "openai_responses": oslo,
        "anthropic": oslo,
        "gemini": oslo,
        "cut": {"name": "get_weather", "arguments": {"city": "Os"}},
        "headless": None,
        "blank": {"name": "get_weather", "arguments": {}},
        "vertex": None,
    }


def test_the_progressive_langchain_deltas_peer_commits_the_partial_args(node: str) -> None:
    events = _rendered("openai_chat", '{"city": "Oslo"}', [12, 14])
    answers = _run(node, "deltas_langchain.mjs", _stream("s/0", events), "--progressive")
    commits = [c for a in answers for c in a.get("commits", [])]
    # "Os" shown first, then changed to "Oslo": the unsafe commit a UI showing the call makes
    assert commits == [{"path": ["city"], "value": "Os"}, {"path": ["city"], "value": "Oslo"}]
    assert _calls(answers) == {"s/0": {"name": "get_weather", "arguments": {"city": "Oslo"}}}


@pytest.mark.parametrize("args", [[], ["--progressive"]], ids=["plain", "progressive"])
def test_the_langchain_deltas_peer_scores_the_deltas_sample(
    node: str, args: list[str], tmp_path: Path
) -> None:
    out, err = io.StringIO(), io.StringIO()
    command = shlex.join([node, str(NODE_PEERS / "deltas_langchain.mjs"), *args])
    report = tmp_path / "r.json"
    argv = ["score", "--corpus", str(DELTAS_SAMPLE), "--adapter-cmd", command]
    assert dispatch([*argv, "--json", str(report)], out, err) == 0, err.getvalue()
    assert err.getvalue() == ""  # every stream answered, nothing but the protocol on stdout
    figures = json.loads(report.read_text())
    assert figures["track"] == "deltas" and figures["adapter_errors"] == 0
    assert figures["streams"] == 1092 and figures["invariant"] == 34
    assert 0 < figures["exact"] < 34  # it reads the shapes it has integrations for
    assert (figures["unsafe_commits"] > 0) == bool(args)
