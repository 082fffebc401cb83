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

    start = time.monotonic()
    run = CallableAdapter(slow, "slow").run(ITEMS, timeout=0.3)
    assert time.monotonic() - start < 2
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
    assert len(run.case_seconds) == 6 and all(g >= 0 for g in run.case_seconds)
    assert sum(run.case_seconds) <= run.total_seconds


def test_answer_gaps_are_per_case_costs_not_queueing_time() -> None:
    assert adapters.answer_gaps([]) == []
    assert adapters.answer_gaps([1.0, 1.5, 3.0]) == [1.0, 0.5, 1.5]


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
