"""The strict JSON text reader and the text repairs R1/R2 (tool-argument/v1), and the CLI shell."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples

from toolcall300.argcheck import text as tr
from toolcall300.cli import dispatch

JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=5)),
    lambda c: st.one_of(
        st.lists(c, max_size=3), st.dictionaries(st.text(max_size=3), c, max_size=3)
    ),
    max_leaves=12,
)
CONTAINERS = st.one_of(
    st.lists(JSON, min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=3), JSON, min_size=1, max_size=3),
)


@pytest.mark.parametrize(
    ("text", "value", "rules"),
    [
        ('{"a": [1, 2', None, None),  # D2: a number at the very end
        ('{"a": [1, 2 ', {"a": [1, 2]}, ["R1"]),
        ('{"a": [1, 2],', {"a": [1, 2]}, ["R2", "R1"]),
        ('{"a": "x",\n}', {"a": "x"}, ["R2"]),
        ('{"a": null', {"a": None}, ["R1"]),
        ('{"a": "b', None, None),  # inside a string
        ('{"a": "b\\', None, None),  # inside an escape
        ('{"a": nul', None, None),  # mid-literal
        ('{"a": -', None, None),
        ('{"a": 1.', None, None),
        ('{"a"', None, None),  # no value invented
        ('{"a":', None, None),
        ('{"a": 1,,}', None, None),  # only the comma before the closer is trailing
        ("[1]]", None, None),
        ('{"a": 1}', None, None),  # parses as sent: nothing to repair here
        ('{"a": NaN', None, None),
        ('{"a": [1}', None, None),
        ("{", {}, ["R1"]),
        ("[[[", [[[]]], ["R1"]),
        ('{"a": 1}  ,', {"a": 1}, ["R2"]),
    ],
)
def test_repair_text(text: str, value: Any, rules: list[str] | None) -> None:
    result = tr.repair_text(text, 64)
    if value is None:
        assert result is None
    else:
        assert result is not None
        assert result[0] == value
        assert [e["rule"] for e in result[1]] == rules


def test_r1_appends_the_closers_innermost_first() -> None:
    result = tr.repair_text('{"a": [{"b": [true', 64)
    assert result is not None
    assert result[1] == [
        {"path": "$arguments_text", "rule": "R1", "op": "append", "before": None, "after": "]}]}"}
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        "[1e999]",
        '["\\ud800"]',
        "\ufeff{}",
        "{'a': 1}",
        "[01]",
        '"\x01"',
        "[1,]",
    ],
)
def test_loads_is_strict(text: str) -> None:
    with pytest.raises(tr.TextError):
        tr.loads(text, 64)


def test_loads_depth_limit() -> None:
    assert tr.loads("[" * 5 + "]" * 5, 5) == [[[[[]]]]]
    with pytest.raises(tr.TooDeep):
        tr.loads("[" * 6 + "]" * 6, 5)
    with pytest.raises(tr.TooDeep):
        tr.loads("[" * 100000 + "]" * 100000, 64)


@settings(max_examples=examples(200), deadline=None)
@given(CONTAINERS, st.integers(1, 10))
def test_r1_restores_any_truncation_that_ends_at_a_boundary(value: Any, cut: int) -> None:
    text = json.dumps(value)
    stripped = text
    for _ in range(cut):
        if stripped and stripped[-1] in "]}":
            stripped = stripped[:-1]
    result = tr.repair_text(stripped, 64) if stripped != text else None
    if stripped == text:
        return
    if stripped[-1].isdigit():
        assert result is None  # D2
    else:
        assert result is not None and result[0] == value
        assert tr.apply_text_diff(stripped, result[1]) == text


@settings(max_examples=examples(200), deadline=None)
@given(CONTAINERS, st.data())
def test_r2_removes_exactly_the_trailing_commas_added(value: Any, data: st.DataObject) -> None:
    # Insert a comma (and maybe spaces) before some closing delimiters outside strings.
    text = json.dumps(value)
    tokens = tr.lex(text)
    closers = [t.start for t in tokens if t.kind in "]}"]
    chosen = sorted(data.draw(st.sets(st.sampled_from(closers), min_size=1)))
    out, prev = [], 0
    for off in chosen:
        out.append(text[prev:off] + "," + data.draw(st.sampled_from(["", " ", "\n"])))
        prev = off
    damaged = "".join(out) + text[prev:]
    result = tr.repair_text(damaged, 64)
    assert result is not None
    assert result[0] == value
    assert [e["rule"] for e in result[1]] == ["R2"] * len(chosen)
    assert tr.loads(tr.apply_text_diff(damaged, result[1]), 64) == value


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet='{}[]:,"01.-etruefalsn \\', max_size=25))
def test_repair_text_never_raises_and_only_removes_commas_or_appends(text: str) -> None:
    result = tr.repair_text(text, 64)
    if result is not None:
        repaired = tr.apply_text_diff(text, result[1])
        assert tr.loads(repaired, 64) == result[0]
        kept = [c for c in text if c != ","]
        assert [c for c in repaired if c != ","][: len(kept)] == kept


# ------------------------------------------------------------------------- CLI


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def test_cli_check_file(tmp_path: Path) -> None:
    request = {
        "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "arguments": {"n": "2"},
    }
    path = tmp_path / "req.json"
    path.write_text(json.dumps(request))
    code, out, _ = _run(["check", str(path)])
    assert code == 0 and json.loads(out)["verdict"] == "REPAIRED"
    path.write_text("{")
    code, out, _ = _run(["check", str(path)])
    assert code == 0 and json.loads(out)["refusal"]["code"] == "invalid_request_body"
    code, _, err = _run(["check", str(tmp_path / "missing.json")])
    assert code == 1 and "cannot read" in err


def test_cli_check_stdin_and_selftest_and_criteria() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    request = json.dumps({"schema": {"type": "object"}, "arguments_text": "{"})
    done = subprocess.run(
        [sys.executable, "-m", "toolcall300", "check"],
        input=request,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["diff"][0]["rule"] == "R1"
    code, out, _ = _run(["check", "--selftest"])
    assert code == 0 and "vectors pass" in out
    code, out, _ = _run(["criteria"])
    assert code == 0 and json.loads(out)["criteria_id"] == "tool-argument/v1"
    code, _, err = _run(["check", "--bogus"])
    assert code == 1 and err
