"""The deltas track (docs/deltas.md): its corpus builds byte-identically and re-derives every
label, a flattering corpus is refused, the scorer grades it with its own metrics and gate, and
toolshim's stream reader is exact, invariant and commits nothing unsafe.

IN-SAMPLE WARNING: toolshim.deltas and this corpus were written from the same decisions
(DS1-DS4); its 640 / 640 measures agreement with them, nothing more.
"""

from __future__ import annotations

import copy
import io
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall300.canonical import sha256_hex
from toolcall300.cli import dispatch
from toolcall300.controls import passes
from toolcall300.generator import deltas as gen
from toolcall300.scoring.corpus import published_versions
from toolcall300.scoring.tracks import deltas as track
from toolcall300.toolshim.deltas import DeltaSession, normalise_events, stream_adapter

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "corpus_private" / "toolcall300.jsonl"
OUT = ROOT / "corpus_private" / "deltas"
_BUILT = gen.build([json.loads(line) for line in MAIN.read_text(encoding="utf-8").splitlines()])


def _fragment(case: dict[str, Any]) -> str:
    """The arguments fragment partitions cut (the whole arguments text; on Vertex, a value)."""
    k = case["fragment_event"]
    value: Any = case["events"][k] if k is not None else ""
    for step in case["fragment_path"] if k is not None else []:
        value = value[step]
    return str(value)


@pytest.fixture(scope="module")
def sources() -> list[dict[str, Any]]:
    return [json.loads(line) for line in MAIN.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def built() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return _BUILT


def test_the_corpus_rebuilds_byte_for_byte_and_is_pinned(sources: list[dict[str, Any]]) -> None:
    files = gen.corpus_files(sources, sha256_hex(MAIN.read_bytes()))
    packaged = ROOT / "layers/toolcall300/toolcall300/data"
    for name, body in files.items():
        where = packaged if name == gen.SAMPLE_FILE else OUT
        assert (where / name).read_bytes() == body, f"{name} is stale: rebuild the deltas corpus"
    assert published_versions()[sha256_hex(files[gen.SAMPLE_FILE])] == gen.DELTAS_VERSION
    assert gen.corpus_files(sources, sha256_hex(MAIN.read_bytes())) == files
    pin = sha256_hex(files["deltas.jsonl"])
    assert published_versions()[pin] == gen.DELTAS_VERSION


def test_every_form_shape_and_partition_kind_is_there(built: Any) -> None:
    cases, _ = built
    assert {c["form"] for c in cases} == set(gen.FORMS)
    assert {c["shape"] for c in cases} == set(gen.SHAPES)
    fragmented = [c for c in cases if c["fragment_event"] is not None and c["form"] != "whole_call"]
    for case in fragmented:
        text = _fragment(case)
        assert case["partitions"][0] == []
        assert [[i] for i in range(1, len(text))] == [p for p in case["partitions"] if len(p) == 1]
    inside_escape = 0
    for case in fragmented:
        text = _fragment(case)
        for offsets in case["partitions"]:
            inside_escape += any(text[o - 1 : o + 1] in ('\\"', "\\u") for o in offsets)
    assert inside_escape
    # the special cuts split an escaped surrogate pair between its halves (the astral_in_string
    # streams carry one: tests/core/test_deltas_forms.py)
    text = '{"q": "\\ud83d\\ude00", "n": 12.5}'
    cuts = gen._special_cuts(text)
    assert text.index("\\ude00") in cuts and text.index("2.5") in cuts


def test_the_checks_pass_and_refuse_a_wrong_label_or_a_flattering_stream(
    built: Any, sources: list[dict[str, Any]]
) -> None:
    cases, rationale = built
    assert list(gen.check(cases, rationale, sources)) == []
    wrong = copy.deepcopy(cases)
    first_value = next(
        c for c in wrong if c["expected_kind"] == "value" and c["form"] == "standard"
    )
    first_value["expected"]["arguments"]["invented"] = 1
    assert any("label differs" in p for p in gen.check(wrong, rationale, sources))
    # a clean call streamed as-is: accumulate-parse-validate passes it, so the corpus flatters
    flattering = copy.deepcopy(cases)
    case = next(c for c in flattering if c["form"] == "standard" and c["shape"] == "anthropic")
    clean = {**case["expected"]}
    source = next(s for s in sources if s["id"] == case["source"])
    source = {**source, "text": json.dumps(clean), "id": "clean"}
    case["source"] = "clean"
    case["events"], *_ = gen.render(
        "anthropic", "standard", clean["name"], json.dumps(clean["arguments"]), 1, cut=False
    )
    case["partitions"] = [[]]
    problems = list(gen.check(flattering, rationale, [*sources, source]))
    assert any("flattering" in p for p in problems)


def test_a_broken_stream_is_labelled_a_refusal_never_a_call(built: Any) -> None:
    cases, _ = built
    broken = [c for c in cases if c["form"] in gen.BROKEN_FORMS]
    assert broken and all(c["expected"] is None for c in broken)
    signals = {c["form"]: gen.reassemble(c, c["events"])[2] for c in cases}
    assert signals["cut"] == "cut" and signals["first_fragment_dropped"] == "complete"


def test_toolshim_is_exact_invariant_and_commits_safely_on_every_stream(built: Any) -> None:
    cases, _ = built
    run = track.DeltasAdapter(stream_adapter, "toolshim").run(
        track.TRACK.adapter_items(cases), timeout=10
    )
    report = track.score(cases, run, adapter="toolshim")
    assert report["exact"] == report["cases"] == len(cases)
    assert report["streams_exact"] == report["streams"] > 40000
    assert report["invariant"] == len(cases)
    assert report["unsafe_commits"] == 0 and report["invented_values"] == 0
    assert report["commits"] > 0 and report["commit_lead"] > 0


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_partitions_never_change_the_answer_or_a_commit(data: st.DataObject) -> None:
    cases = _BUILT[0]
    case = data.draw(st.sampled_from(cases))
    text = _fragment(case)
    if case["fragment_event"] is None or len(text) < 2 or case["form"] == "whole_call":
        offsets: list[int] = []
    else:
        offsets = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), max_size=len(text) - 1)))
    events = track.replay(case, offsets)
    assert passes(case, normalise_events(events, case["tools"]))
    session = DeltaSession(case["tools"])
    committed = [c for e in events for c in session.feed(e)]
    final = session.end()
    for commit in committed:
        assert final is not None and final["arguments"][commit["path"][0]] == commit["value"]


def _score(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return dispatch(["score", *argv], out, err), out.getvalue(), err.getvalue()


def _small_corpus(tmp_path: Path, built: Any) -> Path:
    cases, _ = built
    rng = random.Random(7)
    picked = rng.sample(cases, 40)
    for case in picked:
        case = case
        case["partitions"] = case["partitions"][:6]
    path = tmp_path / "deltas.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in picked))
    return path


def test_score_grades_the_track_with_its_gate_junit_and_summary(tmp_path: Path, built: Any) -> None:
    corpus = _small_corpus(tmp_path, copy.deepcopy(built))
    code, out, _ = _score(
        "--corpus", str(corpus), "--adapter", "toolshim", "--json", str(tmp_path / "base.json")
    )
    assert code == 0 and "exact (every partition, invariant, no unsafe commit)" in out
    report = json.loads((tmp_path / "base.json").read_text())
    assert report["track"] == "deltas" and report["exact"] == 40 and report["unsafe_commits"] == 0
    code, out, _ = _score(
        "--corpus",
        str(corpus),
        "--adapter",
        "integrator",
        "--baseline",
        str(tmp_path / "base.json"),
        "--junit",
        str(tmp_path / "j.xml"),
        "--summary",
        str(tmp_path / "s.md"),
    )
    assert code == 2 and "exact fell 40 ->" in out
    assert "baseline gate" in (tmp_path / "j.xml").read_text()
    assert "Verdict: REGRESSION" in (tmp_path / "s.md").read_text()
    single = ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl"
    _score("--corpus", str(single), "--adapter", "naive", "--json", str(tmp_path / "single.json"))
    code, _, err = _score(
        "--corpus",
        str(corpus),
        "--adapter",
        "toolshim",
        "--baseline",
        str(tmp_path / "single.json"),
    )
    assert code == 1 and "is a report of track 'single', this corpus is track 'deltas'" in err


def test_unsafe_commits_and_invented_values_are_counted() -> None:
    case = {
        "expected_kind": "value",
        "tools": [],
        "expected": {"name": "f", "arguments": {"a": 1, "b": 2}},
    }
    answer = {"name": "f", "arguments": {"a": 1, "b": 2}}

    def result(*commits: tuple[list[Any], Any, int], answer: Any = answer) -> track.StreamResult:
        rows = [{"commit": {"path": p, "value": v}, "after": k} for p, v, k in commits]
        return track.StreamResult(answer, rows, 4)

    good = track.judge_stream(case, result((["a"], 1, 1)))
    assert good["unsafe"] == 0 and good["leads"] == [0.75]
    assert track.judge_stream(case, result((["a"], 1, 1), (["a"], 3, 2)))["unsafe"] == 1  # changed
    assert track.judge_stream(case, result((["a"], 1, 1), answer=None))["unsafe"] == 1  # withdrawn
    assert track.judge_stream(case, result((["c"], 1, 1)))["unsafe"] == 1  # absent from the call
    invented = {"name": "f", "arguments": {"a": 1, "b": 2, "c": 3}}
    assert track.judge_stream(case, result((["c"], 3, 1), answer=invented))["invented"] == 1


def _tiny(tmp_path: Path, count: int, partitions: int) -> Path:
    picked = []
    for case in copy.deepcopy(_BUILT[0][:count]):
        case["partitions"] = case["partitions"][:partitions]
        picked.append(case)
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in picked))
    return path


def test_a_program_speaking_the_process_protocol_scores_as_in_process(tmp_path: Path) -> None:
    corpus = _tiny(tmp_path, 6, 3)
    program = f"{sys.executable} -m toolcall300.toolshim.deltas"
    code, _, _ = _score(
        "--corpus", str(corpus), "--adapter", "toolshim", "--json", str(tmp_path / "a.json")
    )
    assert code == 0
    code, _, _ = _score(
        "--corpus", str(corpus), "--adapter-cmd", program, "--json", str(tmp_path / "b.json")
    )
    assert code == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    for report in (a, b):
        report.pop("adapter"), report.pop("timing")
    assert a == b and a["exact"] == 6 and a["commits"] > 0


def test_a_program_that_breaks_the_protocol_refuses_and_is_restarted(tmp_path: Path) -> None:
    corpus = _tiny(tmp_path, 2, 2)
    script = tmp_path / "flaky.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if 'event' in m:\n"
        "        print(json.dumps({'id': 'someone-else', 'commits': []}), flush=True)\n"
    )
    hang = tmp_path / "hang.py"
    hang.write_text("import sys, time\nfor line in sys.stdin:\n    time.sleep(60)\n")
    argv = ["--corpus", str(corpus), "--json", str(tmp_path / "r.json"), "--timeout", "1"]
    code, _, err = _score(*argv, "--adapter-cmd", f"{sys.executable} {script}")
    assert code == 1 and "expected" in err and "someone-else" in err  # every stream refused
    code, _, err = _score(*argv, "--adapter-cmd", f"{sys.executable} {hang}")
    assert code == 1 and "no answer within the time limit" in err


def test_a_programs_start_is_not_counted_against_its_first_stream(tmp_path: Path) -> None:
    """A copy that takes longer to start than one stream may take (a loaded machine, a heavy
    interpreter) still serves its first stream: that stream has the limit twice, once for the
    start. Its later streams have the limit once (the hang test above)."""
    corpus = _tiny(tmp_path, 1, 2)
    slow = tmp_path / "slow_start.py"
    slow.write_text(
        "import sys, time\n"
        "time.sleep(6)  # longer than --timeout, shorter than twice it\n"
        "from toolcall300.toolshim.deltas import serve\n"
        "serve(sys.stdin, sys.stdout)\n"
    )
    argv = ["--corpus", str(corpus), "--json", str(tmp_path / "r.json"), "--timeout", "5"]
    code, _, err = _score(*argv, "--adapter-cmd", f"{sys.executable} {slow}")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["adapter_errors"] == 0, err
    assert report["streams_exact"] == report["streams"] == 2 and code == 0


def test_vertex_partial_args_are_read_by_json_path_and_rule_11_reads_a_cut() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "days": {"type": "integer"},
                        "spot": {"type": "object", "properties": {"tags": {"type": "array"}}},
                    },
                    "required": ["city"],
                },
            },
        }
    ]

    def chunk(call: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": call}]}}
        return {"candidates": [{**cand, "finishReason": finish} if finish else cand]}

    def arg(path: str, **value: Any) -> dict[str, Any]:
        return chunk({"partialArgs": [{"jsonPath": path, **value}], "willContinue": True})

    start = chunk({"name": "f", "willContinue": True})
    stream = [
        start,
        arg("$.city", stringValue="Bos", willContinue=True),
        arg("$.city", stringValue="ton"),
        arg("$['spot'].tags[0]", stringValue="a"),
        arg("$.days", numberValue=3),
        chunk({"willContinue": False}, "STOP"),
    ]
    expected = {"name": "f", "arguments": {"city": "Boston", "spot": {"tags": ["a"]}, "days": 3}}
    assert normalise_events(stream, tools) == expected
    cut_stream = [start, arg("$.city", stringValue="Bos", willContinue=True)]
    assert normalise_events([*cut_stream, chunk({}, "MAX_TOKENS")], tools) is None  # rule 6
    assert normalise_events([*cut_stream, chunk({}, "STOP")], tools) is None  # DS2
    kept = [start, arg("$.city", stringValue="Oslo"), arg("$.days", numberValue=2)]
    tail = [arg("$['spot'].tags[0]", stringValue="b", willContinue=True), chunk({}, "MAX_TOKENS")]
    assert normalise_events([*kept, *tail], tools) == {
        "name": "f",
        "arguments": {"city": "Oslo", "days": 2},
    }
