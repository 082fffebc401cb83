"""Adapters: the naive control, loading ``module:callable``, in-process time limits, and
D12.1 (what a program's exit, output and silence mean) for --adapter-cmd and --stream."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples
from test_scorer_data import TRUTH, tiny_corpus

from toolcall300.scoring import adapters
from toolcall300.scoring.adapters import (
    AdapterError,
    CallableAdapter,
    CommandAdapter,
    StreamAdapter,
)
from toolcall300.scoring.grading import SCHEMA_INVALID, grade_case
from toolcall300.scoring.protocol import OnceResult
from toolcall300.scoring.report import score_cases
from toolcall300.toolshim import normalise

# ------------------------------------------------------------------ the naive control


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "f", "arguments": {"a": "1"}}', {"name": "f", "arguments": {"a": "1"}}),
        ("[1, 2]", [1, 2]),
        ('"just a string"', "just a string"),
        ('{"name": "f", "argu', None),
        ("Sure! Here is the call:", None),
        ("[" * 100_000, None),
    ],
)
def test_naive_parses_and_passes_on_or_refuses(text: str, expected: Any) -> None:
    assert adapters.naive(text, []) == expected


def test_naive_scores_zero_on_repairable_cases_and_invents_on_parseable_refusals() -> None:
    cases = tiny_corpus()
    run = CallableAdapter(adapters.naive, "naive").run(cases, timeout=5)
    report = score_cases(cases, run.answers)
    value_cases = [
        r for r, c in zip(report["per_case"], cases, strict=True) if c["expected_kind"] == "value"
    ]
    assert not any(r["passed"] for r in value_cases)
    assert report["invented_calls"] == 2  # the two refusal cases whose text parses


def test_a_non_call_value_from_naive_is_schema_invalid() -> None:
    case = tiny_corpus()[0]
    assert grade_case(case, adapters.naive("[1]", case["tools"])) == SCHEMA_INVALID


# ------------------------------------------------------------------ loading --adapter


def test_load_naive_and_toolshim_by_name() -> None:
    assert adapters.load_callable("naive").fn is adapters.naive
    shim = adapters.load_callable("toolshim")
    assert shim.description == "toolshim:normalise"
    assert adapters.is_reference_normaliser(shim.description)
    assert not adapters.is_reference_normaliser("naive")


def test_load_dotted_attribute() -> None:
    adapter = adapters.load_callable("json:decoder.JSONDecoder")
    assert adapter.description == "json:decoder.JSONDecoder"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "module:callable"),
        (":fn", "module:callable"),
        ("json:", "module:callable"),
        ("no_such_module_xyz:fn", "cannot import"),
        ("json:nothing_here", "no attribute"),
        ("json:__doc__", "not callable"),
        ("/no/such/file.py:fn", "cannot import"),
    ],
)
def test_bad_adapter_specs_are_adapter_errors(spec: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        adapters.load_callable(spec)


# ------------------------------------------------------------------ in-process adapters

ITEMS = [{"id": "a", "text": "1", "tools": [{"x": [1]}]}, {"id": "b", "text": "2", "tools": []}]


def test_an_exception_is_a_refusal_with_a_note() -> None:
    def boom(text: str, tools: list[Any]) -> Any:
        raise KeyError(text)

    run = CallableAdapter(boom, "boom").run(ITEMS, timeout=5)
    assert run.answers == {"a": None, "b": None}
    assert run.notes["a"].startswith("raised KeyError")


def test_system_exit_in_an_adapter_is_a_refusal_not_an_exit() -> None:
    run = CallableAdapter(lambda t, tools: sys.exit(3), "exit").run(ITEMS, timeout=5)
    assert run.answers == {"a": None, "b": None}


def test_a_hung_callable_is_refused_at_the_time_limit_and_the_next_case_still_runs() -> None:
    def slow(text: str, tools: list[Any]) -> Any:
        if text == "1":
            time.sleep(3)
        return {"name": text, "arguments": {}}

    run = CallableAdapter(slow, "slow").run(ITEMS, timeout=0.3)  # speed: bench/bench_limits.py
    assert run.answers == {"a": None, "b": {"name": "2", "arguments": {}}}
    assert "no answer within 0.3s" in run.notes["a"]


def test_an_adapter_mutating_its_tools_cannot_change_the_corpus() -> None:
    def vandal(text: str, tools: list[Any]) -> Any:
        tools.clear()
        return None

    items = [dict(item) for item in ITEMS]
    CallableAdapter(vandal, "v").run(items, timeout=5)
    assert items[0]["tools"] == [{"x": [1]}]


def test_progress_and_timing_are_reported() -> None:
    seen: list[tuple[int, int]] = []
    run = CallableAdapter(adapters.naive, "naive").run(
        ITEMS, timeout=5, progress=lambda d, t: seen.append((d, t))
    )
    assert seen == [(1, 2), (2, 2)]
    assert len(run.case_seconds) == 2 and run.timing()["median_case_seconds"] is not None


# ------------------------------------------------------------------ D12.1 for programs


def once(
    code: int | None, out: bytes, *, timed_out: bool = False, capped: bool = False
) -> OnceResult:
    return OnceResult(code, out, "boom\n", timed_out, capped, 0.0)


@pytest.mark.parametrize(
    ("result", "value"),
    [
        (once(0, b'{"name": "f", "arguments": {}}\n'), {"name": "f", "arguments": {}}),
        (once(1, b'{"name": "f", "arguments": {}}'), None),  # non-zero exit: refusal
        (once(0, b""), None),  # empty stdout: refusal
        (once(0, b"  \n"), None),
        (once(0, b"null\n"), None),  # JSON null: refusal
        (once(-9, b"", timed_out=True), None),  # no answer in time: refusal
        (
            once(0, b"I think you meant book_room"),
            "I think you meant book_room",
        ),  # not JSON: failed
        (once(0, b"[1]"), [1]),
    ],
)
def test_d121_program_outcomes(result: OnceResult, value: Any) -> None:
    assert adapters.interpret_output(result, 10)[0] == value


def test_d121_non_json_output_grades_as_schema_invalid_not_refusal() -> None:
    value, note = adapters.interpret_output(once(0, b"sure!"), 10)
    assert note == "stdout is not JSON"
    assert grade_case(tiny_corpus()[0], value) == SCHEMA_INVALID


def test_output_holding_a_lone_surrogate_is_not_json_and_the_report_can_be_written() -> None:
    # '"\\ud800"' is JSON grammar but no character: kept as a value, writing the report with
    # it crashed (UnicodeEncodeError); read as the raw text it is, it grades as not JSON
    out = b'{"name": "\\ud800", "arguments": {}}'
    value, note = adapters.interpret_output(once(0, out), 10)
    assert (value, note) == (out.decode(), "stdout is not JSON")
    assert json.dumps(value, ensure_ascii=False).encode("utf-8")
    assert (adapters.program_error(once(0, out), 10) or "").startswith("stdout is not JSON")


def test_d121_output_over_the_cap_is_a_failed_return() -> None:
    value, note = adapters.interpret_output(once(-9, b"x" * 10, capped=True), 10)
    assert value == "x" * 10 and note == "stdout over the output limit"


def _truth_program(tmp_path: Path, stream: bool) -> list[str]:
    truth = {c["text"]: TRUTH[c["id"]] for c in tiny_corpus()}
    body = (
        """
        for line in sys.stdin:
            row = json.loads(line)
            print(json.dumps({"id": row["id"], "call": TRUTH[row["text"]]}), flush=True)
        """
        if stream
        else """
        req = json.load(sys.stdin)
        value = TRUTH[req["text"]]
        if value is None:
            sys.exit(1)
        print(json.dumps(value))
        """
    )
    path = tmp_path / "prog.py"
    path.write_text(
        f"import json, sys\nTRUTH = json.loads({json.dumps(truth)!r})\n" + textwrap.dedent(body)
    )
    return [sys.executable, str(path)]


def test_command_adapter_one_process_per_case(tmp_path: Path) -> None:
    cases = tiny_corpus()
    run = CommandAdapter(_truth_program(tmp_path, False), "cmd").run(cases, timeout=10)
    assert score_cases(cases, run.answers)["exact"] == 6
    assert run.notes["room-4"].startswith("exit 1")
    assert len(run.case_seconds) == 6


def test_stream_adapter_scores_the_same(tmp_path: Path) -> None:
    cases = tiny_corpus()
    run = StreamAdapter(_truth_program(tmp_path, True), "s").run(cases, timeout=10)
    assert score_cases(cases, run.answers)["exact"] == 6
    assert run.warnings == [] and run.notes == {}
    assert len(run.case_seconds) == 6
    assert all(0 <= latency <= run.total_seconds for latency in run.case_seconds)


def test_a_stream_answering_at_end_of_input_shows_its_real_latency(tmp_path: Path) -> None:
    # the protocol allows reading everything first: its latency is the wait, never 0.00 ms
    path = tmp_path / "batch.py"
    path.write_text(
        "import json, sys, time\n"
        "rows = [json.loads(line) for line in sys.stdin]\n"
        "time.sleep(0.2)\n"
        "for row in rows:\n"
        "    print(json.dumps({'id': row['id'], 'call': None}))\n"
    )
    run = StreamAdapter([sys.executable, str(path)], "s").run(tiny_corpus(), timeout=10)
    timing = run.timing()
    assert timing["median_case_seconds"] >= 0.2
    assert timing["wall_seconds_per_case"] == pytest.approx(run.total_seconds / 6)


def test_a_crashing_stream_is_an_error_on_every_unanswered_case(tmp_path: Path) -> None:
    path = tmp_path / "crash.py"
    path.write_text("import sys\nsys.stdin.readline()\nraise SystemExit('no such model')\n")
    run = StreamAdapter([sys.executable, str(path)], "s").run(tiny_corpus(), timeout=10)
    assert set(run.errors) == {c["id"] for c in tiny_corpus()}
    assert all("no such model" in text for text in run.errors.values())


def test_program_errors_are_told_from_refusals(tmp_path: Path) -> None:
    def once(code: int, out: bytes, err: str = "", timed_out: bool = False) -> str | None:
        return adapters.program_error(OnceResult(code, out, err, timed_out, False, 0.0), 5)

    assert once(0, b"") is None and once(0, b"null\n") is None  # refusals
    assert once(0, b'{"name": "f", "arguments": {}}') is None
    assert (
        once(1, b"", "Traceback ...\nImportError: x\n") == "exit 1\nTraceback ...\nImportError: x"
    )
    assert once(0, b"not json").startswith("stdout is not JSON")  # type: ignore[union-attr]
    assert once(None, b"", timed_out=True) == "no answer within 5s"  # type: ignore[arg-type]


def test_an_exception_keeps_its_traceback_tail() -> None:
    def boom(text: str, tools: list[dict[str, Any]]) -> Any:
        raise KeyError("the key")

    run = CallableAdapter(boom, "boom").run(tiny_corpus()[:1], timeout=5)
    assert run.errors["room-1"].endswith("KeyError: 'the key'")
    assert "Traceback" in run.errors["room-1"] and run.answers["room-1"] is None


def test_error_tail_keeps_the_last_lines_that_fit() -> None:
    assert adapters.error_tail("a\nb\nc\n", 4) == "b\nc"
    assert adapters.error_tail("", 10) == ""
    assert adapters.error_tail("x" * 50, 10) == "x" * 10


def test_a_file_adapter_imports_its_sibling_modules(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "helper_for_sibling_test.py").write_text("def answer():\n    return None\n")
    (folder / "entry.py").write_text(
        "from helper_for_sibling_test import answer\n"
        "def normalise(text, tools):\n    return answer()\n"
    )
    adapter = adapters.load_callable(f"{folder / 'entry.py'}:normalise")
    assert adapter.run(tiny_corpus()[:1], timeout=5).errors == {}


@pytest.mark.parametrize(
    "spec", ["toolshim", "toolshim:normalise", "toolcall300.toolshim:normalise"]
)
def test_the_published_toolshim_names_load_the_reference_normaliser(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a toolshim.py on the path (the kit's entry script) must not shadow it
    (tmp_path / "toolshim.py").write_text("raise SystemExit('the entry script')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toolshim", raising=False)
    adapter = adapters.load_callable(spec)
    assert adapter.description == "toolshim:normalise"
    run = adapter.run(tiny_corpus(), timeout=5)
    assert run.errors == {}
    assert run.answers == {c["id"]: normalise(c["text"], c["tools"]) for c in tiny_corpus()}


def test_stream_adapter_reports_protocol_problems_as_warnings(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text("import sys\nprint('hello')\nsys.stdin.readline()\nsys.exit(2)\n")
    run = StreamAdapter([sys.executable, str(path)], "s").run(tiny_corpus(), timeout=5)
    assert all(v is None for v in run.answers.values())
    assert any("stopped early: exited (exit 2)" in w for w in run.warnings)
    assert any("not a" in w for w in run.warnings)
    assert run.notes["room-1"] == "never answered (exited)"


def test_missing_program_is_an_adapter_error(tmp_path: Path) -> None:
    for adapter in (CommandAdapter(["/no/such/prog"], "c"), StreamAdapter(["/no/such/prog"], "s")):
        with pytest.raises(AdapterError, match="cannot run"):
            adapter.run(tiny_corpus(), timeout=1)


def test_command_description_says_which_protocol() -> None:
    assert adapters.command_description(["python3", "a.py"], True) == "cmd --stream: python3 a.py"
    assert adapters.command_description(["x"], False) == "cmd: x"
    assert adapters.command_description(["a b"], False) == "cmd: 'a b'"  # reads back to one argv


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(st.none(), st.integers(min_value=-15, max_value=255)),
    st.binary(max_size=40) | st.sampled_from([b"", b"null", b'{"name":"f","arguments":{}}']),
    st.text(max_size=60),
    st.booleans(),
    st.booleans(),
)
def test_any_program_run_is_told_apart_without_crashing(
    code: int | None, out: bytes, err: str, timed_out: bool, capped: bool
) -> None:
    result = OnceResult(code, out, err, timed_out, capped, 0.0)
    adapters.interpret_output(result, 5)
    error = adapters.program_error(result, 5)
    if timed_out or capped or code != 0:
        assert error is not None  # broke: never mistaken for a refusal
    elif out.strip() in (b"", b"null"):
        assert error is None  # a deliberate refusal is not an error
    if error is not None and err.strip():
        assert err.strip().splitlines()[-1][-100:] in error  # the tail is kept
