"""The parallel track through the one scorer: the list judge and its figures (PARALLEL_SCORING),
the gate (exit 2), JUnit and the summary, and the three adapter protocols answering lists."""

from __future__ import annotations

import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from toolcall300.cli import dispatch
from toolcall300.scoring.corpus import published_versions
from toolcall300.scoring.tracks.parallel import adapter_items, judge_turn, score_turns

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus_private" / "parallel" / "toolcall300-parallel.jsonl"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
        },
    },
    {
        "type": "function",
        "function": {"name": "g", "parameters": {"type": "object", "properties": {}}},
    },
]
F1 = {"name": "f", "arguments": {"n": 1}}
F2 = {"name": "f", "arguments": {"n": 2}}
G = {"name": "g", "arguments": {}}


def turn(expected: list[Any], category: str = "c") -> dict[str, Any]:
    return {
        "id": "t",
        "track": "parallel",
        "category": category,
        "text": "[]",
        "tools": TOOLS,
        "expected": expected,
    }


def score(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["score", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_exact_and_order_free() -> None:
    case = turn([F1, G, None])
    assert judge_turn(case, [F1, G, None])["outcome"] == "exact"
    moved = judge_turn(case, [G, None, F1])
    assert (moved["outcome"], moved["passed"], moved["order_free"]) == ("order_only", False, True)
    assert judge_turn(case, [F1, G, None, F2])["outcome"] == "wrong_list"


def test_call_level_counts() -> None:
    judged = judge_turn(turn([F1, G]), [F1, F2])
    assert (judged["matched_calls"], judged["invented_calls"], judged["dropped_calls"]) == (1, 1, 1)
    assert judge_turn(turn([F1, G]), [])["dropped_calls"] == 2


def test_a_whole_refusal_is_one_null_per_expected_entry() -> None:
    assert judge_turn(turn([F1, None]), None)["outcome"] == "refused_whole"
    assert judge_turn(turn([None, None]), None)["outcome"] == "exact"
    assert judge_turn(turn([F1, None]), None)["dropped_calls"] == 1


def test_false_collapses_count_copies_gone_from_the_list_only() -> None:
    assert judge_turn(turn([F1, F1, F1]), [F1])["false_collapses"] == 2
    assert judge_turn(turn([F1, F1]), [F1, None])["false_collapses"] == 0  # refused, not collapsed


def test_schema_invalid_entries_and_answers() -> None:
    assert judge_turn(turn([F1]), {"name": "f", "arguments": {"n": 1}})["outcome"] == "not_a_list"
    assert (
        judge_turn(turn([F1]), [{"name": "f", "arguments": {"n": "1"}}])["schema_invalid_returns"]
        == 1
    )


def test_the_report_counts_partial_refusals_and_ratios() -> None:
    cases = [turn([F1, None]) | {"id": "a"}, turn([F1, G]) | {"id": "b"}]
    report = score_turns(cases, {"a": [F1, None], "b": [F1]})
    assert (report["partial_refusal_turns"], report["partial_refusals_exact"]) == (1, 1)
    assert (report["call_precision"], report["call_recall"]) == (1.0, round(2 / 3, 6))
    assert report["track"] == "parallel" and report["cases"] == 2


def test_the_adapter_sees_the_repeat_statement_as_mcp_writes_it() -> None:
    tool = {
        "type": "function",
        "x-idempotent": False,
        "function": {"name": "f", "parameters": {"type": "object"}},
    }
    item = adapter_items([turn([]) | {"tools": [tool]}])[0]
    assert item["tools"][0]["function"]["annotations"] == {"idempotentHint": False}
    assert "x-idempotent" not in item["tools"][0]


def test_the_corpus_pin_is_published() -> None:
    manifest = json.loads((CORPUS.parent / "manifest.json").read_text())
    sha = manifest["files"]["toolcall300-parallel.jsonl"]["sha256"]
    assert published_versions().get(sha) == manifest["version"] == "1.0"


def test_toolshim_integrator_and_the_gate_on_the_corpus(tmp_path: Path) -> None:
    base, junit, summary = tmp_path / "base.json", tmp_path / "junit.xml", tmp_path / "summary.md"
    code, out, _ = score("--corpus", str(CORPUS), "--adapter", "toolshim", "--json", str(base))
    assert code == 0
    assert "exact turns               300 / 300" in out and "in-sample" in out
    report = json.loads(base.read_text())
    assert (report["track"], report["corpus_version"]) == ("parallel", "1.0")
    assert (report["invented_calls"], report["false_collapses"], report["dropped_calls"]) == (
        0,
        0,
        0,
    )
    code, out, _ = score(
        "--corpus",
        str(CORPUS),
        "--adapter",
        "integrator",
        "--baseline",
        str(base),
        "--junit",
        str(junit),
        "--summary",
        str(summary),
    )
    assert code == 2
    assert "exact_turns fell 300 -> 0" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "301"  # every turn, and the gate
    assert "**Verdict: REGRESSION**" in summary.read_text()


def test_a_single_track_baseline_is_refused_by_name(tmp_path: Path) -> None:
    single = tmp_path / "single.json"
    sample = ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl"
    assert score("--corpus", str(sample), "--adapter", "naive", "--json", str(single))[0] == 0
    code, _, err = score("--corpus", str(CORPUS), "--adapter", "naive", "--baseline", str(single))
    assert code == 1 and "track 'single'" in err


ADAPTER = """
import json, sys
sys.path.insert(0, {root!r})
from toolcall300.toolshim.parallel import normalise_all
if "--stream" in sys.argv:
    for line in sys.stdin:
        item = json.loads(line)
        print(json.dumps({{"id": item["id"], "call": normalise_all(item["text"], item["tools"])}}), flush=True)
else:
    item = json.load(sys.stdin)
    print(json.dumps(normalise_all(item["text"], item["tools"])))
"""


@pytest.mark.parametrize("stream", [False, True], ids=["process", "stream"])
def test_programs_answer_lists(tmp_path: Path, stream: bool) -> None:
    small = tmp_path / "small.jsonl"
    lines = CORPUS.read_bytes().splitlines(keepends=True)
    small.write_bytes(b"".join(lines[::25]))  # one turn of each category
    program = tmp_path / "adapter.py"
    program.write_text(ADAPTER.format(root=str(ROOT / "layers/toolcall300")))
    cmd = f"{sys.executable} {program}" + (" --stream" if stream else "")
    argv = ["--corpus", str(small), "--adapter-cmd", cmd] + (["--stream"] if stream else [])
    code, out, err = score(*argv)
    assert code == 0, err
    assert "exact turns               12 / 12" in out


def test_the_toolshim_program_answers_lists() -> None:
    from toolcall300.toolshim.cli import parse_args as shim_args
    from toolcall300.toolshim.cli import run as shim_run

    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    text = '[{"name": "f", "arguments": {}}, {"name": "nope"}]'
    out = io.StringIO()
    request = json.dumps({"text": text, "tools": tools})
    assert shim_run(shim_args(["--all"]), out, io.StringIO(), io.StringIO(request)) == 0
    assert json.loads(out.getvalue()) == [{"name": "f", "arguments": {}}, None]
    out = io.StringIO()
    lines = (
        json.dumps({"id": "a", "text": "[]", "tools": tools})
        + "\n"
        + json.dumps({"id": "b", "text": text, "tools": tools})
        + "\n"
    )
    assert shim_run(shim_args(["--all", "--stream"]), out, io.StringIO(), io.StringIO(lines)) == 0
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers == [
        {"id": "a", "call": []},
        {"id": "b", "call": [{"name": "f", "arguments": {}}, None]},
    ]
