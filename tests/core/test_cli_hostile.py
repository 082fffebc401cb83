"""The CLIs a CI user and a buyer run, attacked with hostile input (TOOLCALL-300 CLI promise).

Each CLI refuses malformed, oversized or hostile input with one line and exit 1 (never a
traceback, never 2, which only a regression gives), keeps memory bounded, never lets text it
did not write steer the user's terminal, and grades what an adapter returned as the JSON it
is, whatever the object claims. Attacks already stopped elsewhere are tested there
(test_scorer_cli, test_adapters, test_streamproto, test_kit_*, test_toolshim_cli).
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import pytest
from test_scorer_data import TRUTH, tiny_corpus, write_corpus

from toolcall300 import cliutil
from toolcall300.argcheck.check import MAX_BODY_BYTES
from toolcall300.cli import dispatch
from toolcall300.client import ci as ci_client
from toolcall300.client import download
from toolcall300.jobs import adapter_files
from toolcall300.scoring.adapters import CommandAdapter
from toolcall300.toolshim import cli as toolshim_cli

#: What no line printed to a terminal may hold: ESC (CSI, OSC), BEL, CR, 8-bit CSI.
CONTROLS = ("\x1b", "\x07", "\r", "\x9b")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _one_line_error(code: int, err: str) -> None:
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err


# --------------------------------------------------------------------------- score: input files


def test_a_baseline_nested_past_the_stack_is_one_line_exit_1(folder: Path) -> None:
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    code, out, err = run_cli(
        "score", "--corpus", "corpus.jsonl", "--adapter", "naive", "--baseline", "deep.json"
    )
    _one_line_error(code, err)
    assert "baseline deep.json is not JSON" in err and out == ""


def test_a_corpus_or_baseline_over_the_input_limit_is_refused_without_reading_it_all(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = (folder / "corpus.jsonl").stat().st_size
    monkeypatch.setattr(cliutil, "MAX_INPUT_BYTES", size - 1)
    code, _, err = run_cli("score", "--corpus", "corpus.jsonl", "--adapter", "naive")
    _one_line_error(code, err)
    assert f"cannot read corpus corpus.jsonl: larger than the {size - 1}-byte limit" in err
    monkeypatch.setattr(cliutil, "MAX_INPUT_BYTES", size)
    (folder / "base.json").write_bytes(b" " * (size + 1))
    code, _, err = run_cli(
        "score", "--corpus", "corpus.jsonl", "--adapter", "naive", "--baseline", "base.json"
    )
    _one_line_error(code, err)
    assert "cannot read baseline base.json: larger than" in err


# --------------------------------------------------------------------------- score: adapters

HOSTILE = """
import json
TRUTH = json.loads({truth!r})

def huge_int(text, tools):
    return {{"name": "book_room", "arguments": {{"room": "atlas", "hours": 10 ** 5000}}}}

def deep(text, tools):
    value = []
    for _ in range(100_000):
        value = [value]
    return {{"name": "book_room", "arguments": {{"room": value}}}}

class LyingGet(dict):
    # what the schema check reads (get) is a valid call; what the call is (its items) is not
    def get(self, key, default=None):
        return {{"name": "book_room", "arguments": {{"room": "atlas", "hours": 2}}}}.get(key)

def lying_get(text, tools):
    return LyingGet(name="book_room", arguments="not an object")

class BadRepr:
    def __repr__(self):
        raise RuntimeError("repr")

def bad_repr(text, tools):
    return BadRepr()

def escapes(text, tools):
    if text == {refusal_text!r}:
        return None
    raise ValueError("\\x1b]0;PWNED\\x07\\x1b[2J\\rPASS \\x9b31m")
"""


@pytest.fixture
def hostile(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    truth = json.dumps({c["text"]: TRUTH[c["id"]] for c in tiny_corpus()})
    refusal_text = tiny_corpus()[3]["text"]
    (folder / "hostile.py").write_text(HOSTILE.format(truth=truth, refusal_text=refusal_text))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "hostile", raising=False)
    return folder


@pytest.mark.parametrize("name", ["huge_int", "deep", "bad_repr"])
def test_a_returned_value_that_is_not_json_is_graded_never_a_traceback(
    hostile: Path, name: str
) -> None:
    code, out, err = run_cli(
        "score",
        "--corpus",
        "corpus.jsonl",
        "--adapter",
        f"hostile:{name}",
        "--show-failures",
        "--json",
        "r.json",
    )
    assert code == 0 and "Traceback" not in err, err
    report = json.loads((hostile / "r.json").read_text())
    assert report["schema_invalid_returns"] == 6 and report["exact"] == 0
    shown = {"huge_int": "a dict (ValueError)", "deep": "a dict (RecursionError)"}
    assert f'returned "not JSON: {shown.get(name, "a BadRepr (TypeError)")}"' in out


def test_a_dict_whose_get_lies_cannot_hide_a_schema_invalid_return(hostile: Path) -> None:
    code, _, _ = run_cli(
        "score", "--corpus", "corpus.jsonl", "--adapter", "hostile:lying_get", "--json", "r.json"
    )
    report = json.loads((hostile / "r.json").read_text())
    assert code == 0
    # every case got {"name": "book_room", "arguments": "not an object"}: never a valid call
    assert report["schema_invalid_returns"] == 6
    assert {row["outcome"] for row in report["per_case"]} == {"schema_invalid", "invented_call"}


def test_escape_sequences_in_case_ids_and_adapter_errors_never_reach_the_terminal(
    hostile: Path,
) -> None:
    cases = tiny_corpus()
    cases[0]["id"] = "room-1\x1b]0;PWNED\x07\x1b[2J\r\x9b"
    write_corpus(hostile, cases)
    code, out, err = run_cli(
        "score", "--corpus", "corpus.jsonl", "--adapter", "hostile:escapes", "--show-failures"
    )
    assert code == 0
    assert "room-1?]0;PWNED??[2J??" in out and "ValueError: ?]0;PWNED??[2J?PASS ?31m" in out
    assert not any(c in out + err for c in CONTROLS)
    # every case raising: the one line naming the last error is cleaned too
    write_corpus(hostile, [c for c in cases if c["id"] != "room-4"])
    code, _, err = run_cli("score", "--corpus", "corpus.jsonl", "--adapter", "hostile:escapes")
    _one_line_error(code, err)
    assert err.endswith("last error: PASS ?31m\n")  # a CR ends a line: the last one is shown
    assert not any(c in err for c in CONTROLS)


def test_per_case_programs_share_one_output_budget_like_a_stream(tmp_path: Path) -> None:
    answer = json.dumps({"name": "book_room", "arguments": {"room": "x" * 600, "hours": 2}})
    script = tmp_path / "big.py"
    script.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    items = [{"id": c["id"], "text": c["text"], "tools": c["tools"]} for c in tiny_corpus()]
    adapter = CommandAdapter([sys.executable, str(script)], "big", max_output_bytes=1500)
    result = adapter.run(items[:3], timeout=60)
    assert [result.answers[i["id"]] for i in items[:2]] == [json.loads(answer)] * 2
    assert result.notes[items[2]["id"]] == "stdout over the output limit"
    assert result.errors[items[2]["id"]].startswith("stdout over the output limit")


# --------------------------------------------------------------------------- generate --check-only


@pytest.mark.parametrize(
    "manifest",
    [b"[" * 100_000 + b"]" * 100_000, b"not json", b"\xff\xfe"],
    ids=["deep", "not-json", "not-utf8"],
)
def test_check_only_on_a_hostile_manifest_is_one_line_exit_1(
    tmp_path: Path, manifest: bytes
) -> None:
    for name in ("toolcall300.jsonl", "rationale.jsonl", "sample30.jsonl"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "manifest.json").write_bytes(manifest)
    code, _, err = run_cli("generate", "--check-only", "--out", str(tmp_path))
    _one_line_error(code, err)
    assert "manifest.json: not JSON" in err


# --------------------------------------------------------------------------- ci and download keys

BAD_KEYS = ["tc300_k\r\nX-Evil: 1", "tc300_secret\x1b[2J", "tc300_a b", "tc300_é"]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_ci_refuses_a_key_no_header_can_carry_without_echoing_it(key: str) -> None:
    args = ci_client.parse_args(
        ["--api", "http://127.0.0.1:9", "--adapter-cmd", "x", "--commit", "abcdef0"]
    )
    err = io.StringIO()

    def never(*_: object, **__: object) -> object:
        raise AssertionError("nothing is sent with a bad key")

    code = ci_client.run(
        args, io.StringIO(), err, request=never, env={"TOOLCALL300_LICENCE": key, "X": "y"}
    )
    _one_line_error(code, err.getvalue())
    assert "TOOLCALL300_LICENCE holds a character" in err.getvalue()
    assert key.strip() not in err.getvalue()


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_download_refuses_a_key_no_header_can_carry_without_echoing_it(key: str) -> None:
    with pytest.raises(ValueError, match="TOOLCALL300_LICENCE holds a character") as caught:
        download.read_key({"TOOLCALL300_LICENCE": key})
    assert key.strip() not in str(caught.value)
    with pytest.raises(ValueError, match="holds a character"):
        download.read_key({}, prompt=lambda _: key, interactive=True)


# --------------------------------------------------------------------------- toolshim


def _toolshim(argv: list[str], stdin: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = toolshim_cli.run(toolshim_cli.parse_args(argv), out, err, io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


DEEP_REQUEST = '{"id": "deep", "text": "x", "tools": ' + "[" * 100_000 + "]" * 100_000 + "}\n"


def test_toolshim_refuses_a_request_nested_past_the_stack_with_one_line() -> None:
    code, out, err = _toolshim([], DEEP_REQUEST)
    _one_line_error(code, err)
    assert out == "" and "nested deeper than the reader's stack" in err
    small = json.dumps({"id": "ok", "text": "nope", "tools": []}) + "\n"
    code, out, err = _toolshim(["--stream"], DEEP_REQUEST + small)
    assert code == 0 and err.count("\n") == 1 and "Traceback" not in err
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["ok"]


def test_toolshim_drops_a_request_over_its_size_limit_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(toolshim_cli, "MAX_REQUEST_CHARS", 100)
    big = json.dumps({"id": "big", "text": "x" * 300, "tools": []}) + "\n"
    small = json.dumps({"id": "ok", "text": "nope", "tools": []}) + "\n"
    code, out, err = _toolshim(["--stream"], big + small)
    assert code == 0 and [json.loads(line)["id"] for line in out.splitlines()] == ["ok"]
    assert err == "toolcall300 toolshim: skipped a request line over 100 characters\n"
    code, out, err = _toolshim([], big)
    _one_line_error(code, err)
    assert "a request over 100 characters" in err and out == ""


# --------------------------------------------------------------------------- the other CLIs' inputs


def test_every_cli_refuses_a_file_over_the_input_limit_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cliutil, "MAX_INPUT_BYTES", 10)
    big = tmp_path / "big.json"
    big.write_bytes(b'{"tools": []}' + b" " * 100)
    commands = [
        ["generate", "--tools", str(big), "--out", str(tmp_path / "a")],
        ["generate", "--pools", str(big), "--out", str(tmp_path / "b")],
        ["tools", "import", str(big)],
        ["check", "verify", str(big), "--jwks", str(big)],
    ]
    for argv in commands:
        code, _, err = run_cli(*argv)
        _one_line_error(code, err)
        assert "larger than the 10-byte limit" in err, argv


def test_check_reads_stdin_no_further_than_one_byte_past_its_body_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int | None] = []

    class Endless:
        def read(self, size: int | None = None) -> bytes:
            asked.append(size)
            return b" " * (size if size is not None else 1 << 20)

    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": Endless()})())
    code, out, _ = run_cli("check")
    assert code == 0 and json.loads(out)["refusal"]["code"] == "CAP-EXCEEDED:body_bytes"
    assert asked == [MAX_BODY_BYTES + 1]


def test_generate_refuses_pools_nested_past_the_stack_in_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "pools.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run_cli("generate", "--pools", str(deep), "--out", str(tmp_path / "out"))
    _one_line_error(code, err)
    assert "nests deeper than the JSON reader allows" in err


# --------------------------------------------------------------------------- ci --adapter-files


def _ci_with_files(path: Path) -> tuple[int, str]:
    args = ci_client.parse_args(
        ["--api", "https://x.invalid", "--adapter-cmd", "python3 a.py", "--commit", "abcdef0"]
        + ["--adapter-files", str(path)]
    )
    err = io.StringIO()

    def never(*_: object, **__: object) -> object:
        raise AssertionError("nothing is sent when the files cannot be packed")

    env = {"TOOLCALL300_LICENCE": "tc300_" + "a" * 32, "GITHUB_REF_NAME": "main"}
    return ci_client.run(args, io.StringIO(), err, request=never, env=env), err.getvalue()


def test_ci_packs_no_further_than_the_service_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in "abc":
        (tmp_path / name).write_bytes(b"x" * 50)
    monkeypatch.setattr(ci_client, "MAX_FILES", 2)
    code, err = _ci_with_files(tmp_path)
    _one_line_error(code, err)
    assert "over the service's 2 files" in err
    monkeypatch.setattr(ci_client, "MAX_FILES", 10)
    monkeypatch.setattr(ci_client, "MAX_ARCHIVE_BYTES", 20)
    code, err = _ci_with_files(tmp_path)
    _one_line_error(code, err)
    assert "over the service's 20-byte archive limit" in err
    code, err = _ci_with_files(tmp_path / "a")  # an archive sent as is: read no further
    _one_line_error(code, err)
    assert "larger than the 20-byte limit" in err


def test_ci_reports_a_file_it_cannot_pack_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text("print()")

    def unreadable(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / "a.py"))

    monkeypatch.setattr(tarfile.TarFile, "add", unreadable)
    code, err = _ci_with_files(tmp_path)
    _one_line_error(code, err)
    assert "Permission denied" in err and "a.py" in err


def test_ci_limits_are_the_jobs_limits() -> None:
    assert (ci_client.MAX_ARCHIVE_BYTES, ci_client.MAX_FILES, ci_client.MAX_UNPACKED_BYTES) == (
        adapter_files.MAX_ARCHIVE_BYTES,
        adapter_files.MAX_FILES,
        adapter_files.MAX_UNPACKED_BYTES,
    )
