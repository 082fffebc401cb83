"""``toolcall300 toolshim``: one case per process, the --stream protocol, --explain."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolcall300.cli import dispatch
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK
from toolcall300.toolshim.cli import parse_args, run

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
GOOD = json.dumps({"name": "Get-Weather", "arguments": {"city": "Paris", "days": "3"}})
BAD = json.dumps({"name": "nope", "arguments": {}})
SRC = str(Path(__file__).resolve().parents[2] / "layers" / "toolcall300")


def shell(argv: list[str], stdin: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(parse_args(argv), out, err, io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def test_one_case_writes_the_call() -> None:
    code, out, _ = shell([], json.dumps({"text": GOOD, "tools": TOOLS}))
    assert code == EXIT_OK
    assert json.loads(out) == {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}


def test_a_refusal_is_empty_output_and_exit_0() -> None:
    # D12.1: empty output is a refusal, so it needs no error exit.
    assert shell([], json.dumps({"text": BAD, "tools": TOOLS})) == (EXIT_OK, "", "")


@pytest.mark.parametrize(
    "stdin", ["", "not json", "[]", '{"text": 3, "tools": []}', '{"text": "x"}']
)
def test_bad_input_exits_1_with_one_line(stdin: str) -> None:
    code, out, err = shell([], stdin)
    assert (code, out) == (EXIT_ERROR, "")
    assert err.count("\n") == 1


def test_explain_writes_the_repair_log_to_stderr_only() -> None:
    code, out, err = shell(["--explain"], json.dumps({"text": GOOD, "tools": TOOLS}))
    assert code == EXIT_OK
    assert json.loads(out)["arguments"]["days"] == 3
    log = json.loads(err)
    assert log["refusal"] is None
    assert {r["change"] for r in log["repairs"]} == {"resolve_tool_name", "coerce"}
    _, out, err = shell(["--explain"], json.dumps({"text": BAD, "tools": TOOLS}))
    assert out == "" and json.loads(err)["refusal"] == "unknown_tool"


def test_stream_answers_every_line_in_order() -> None:
    lines = [
        {"id": "a", "text": GOOD, "tools": TOOLS},
        {"id": "b", "text": BAD, "tools": TOOLS},
        {"id": 7, "text": GOOD[:20], "tools": TOOLS},
    ]
    stdin = (
        "".join(json.dumps(x) + "\n" for x in lines)
        + "\n"
        + '{"id": "c", "text": 3}\n'
        + "garbage\n"
    )
    code, out, err = shell(["--stream"], stdin)
    assert code == EXIT_OK
    answers = [json.loads(line) for line in out.splitlines()]
    assert answers == [
        {"id": "a", "call": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}},
        {"id": "b", "call": None},
        {"id": 7, "call": None},
        {"id": "c", "call": None},
    ]
    assert err.count("\n") == 2  # the two bad lines, reported, never fatal


def test_output_is_ascii_even_for_lone_surrogates() -> None:
    text = json.dumps({"name": "get_weather", "arguments": {"city": "\ud800é"}})
    _, out, _ = shell([], json.dumps({"text": text, "tools": TOOLS}))
    assert out.isascii() and json.loads(out)["arguments"]["city"] == "\ud800é"


def test_the_dispatcher_routes_to_toolshim() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert dispatch(["toolshim", "--bogus"], out, err) == EXIT_ERROR


def _process(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "toolcall300", "toolshim", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_as_a_process() -> None:
    done = _process([], json.dumps({"text": GOOD, "tools": TOOLS}))
    assert done.returncode == 0
    assert json.loads(done.stdout)["name"] == "get_weather"


def test_stream_as_a_long_lived_process_answers_line_by_line() -> None:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolcall300", "toolshim", "--stream"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for i in range(3):
            # Each answer must arrive before the next request is sent: flushed per line.
            proc.stdin.write(json.dumps({"id": i, "text": GOOD, "tools": TOOLS}) + "\n")
            proc.stdin.flush()
            answer: dict[str, Any] = json.loads(proc.stdout.readline())
            assert answer["id"] == i and answer["call"]["arguments"]["days"] == 3
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_stream_survives_bytes_that_are_not_utf8() -> None:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "LANG": "C"}
    good = json.dumps({"id": "ok", "text": GOOD, "tools": TOOLS}).encode()
    bad = b'{"id": "bad", "text": "\xff\xfe", "tools": []}'
    done = subprocess.run(
        [sys.executable, "-m", "toolcall300", "toolshim", "--stream"],
        input=bad + b"\n" + good + b"\n",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [a["id"] for a in answers] == ["bad", "ok"]
    assert answers[0]["call"] is None and answers[1]["call"]["name"] == "get_weather"
