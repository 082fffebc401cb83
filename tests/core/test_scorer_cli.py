"""``toolcall300 score`` end to end in-process: exit codes (2 only for a regression), the
baseline gate, one-line input errors, --json, --spec, --selftest and --show-failures."""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_scorer_data import ADAPTERS, TRUTH, corpus_bytes, tiny_corpus, write_corpus

from toolcall300.cli import dispatch
from toolcall300.scoring.corpus import published_versions
from toolcall300.spec import CORPUS_VERSION, render_spec

SAMPLE = Path(__file__).parents[2] / "layers/toolcall300/toolcall300/data/sample30.jsonl"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    truth = json.dumps({c["text"]: TRUTH[c["id"]] for c in tiny_corpus()})
    (tmp_path / "myadapters.py").write_text(ADAPTERS.format(truth=truth))
    write_corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "myadapters", raising=False)
    return tmp_path


def score(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["score", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_regressing_adapter_exits_2_and_an_equal_one_0(folder: Path) -> None:
    code, out, _ = score(
        "--corpus", "corpus.jsonl", "--adapter", "myadapters:perfect", "--json", "base.json"
    )
    assert code == 0 and "exact match             6 / 6 (100.0%)" in out
    code, out, _ = score(
        "--corpus", "corpus.jsonl", "--adapter", "myadapters:perfect", "--baseline", "base.json"
    )
    assert code == 0 and "baseline: no regression" in out
    code, out, _ = score(
        "--corpus", "corpus.jsonl", "--adapter", "myadapters:worse", "--baseline", "base.json"
    )
    assert code == 2
    assert "REGRESSION" in out and "broken: room-2" in out


def test_the_naive_control_regresses_against_a_perfect_baseline(folder: Path) -> None:
    score("--corpus", "corpus.jsonl", "--adapter", "myadapters:perfect", "--json", "base.json")
    code, _, _ = score("--corpus", "corpus.jsonl", "--adapter", "naive", "--baseline", "base.json")
    assert code == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["--corpus", "corpus.jsonl", "--adapter", "naive", "--basline", "base.json"],  # typo
        ["--corpus", "corpus.jsonl"],  # no adapter
        ["--adapter", "naive"],  # no corpus
        ["--corpus", "missing.jsonl", "--adapter", "naive"],
        ["--corpus", "corpus.jsonl", "--adapter", "naive", "--baseline", "missing.json"],
        ["--corpus", "corpus.jsonl", "--adapter", "naive", "--stream"],
        ["--corpus", "corpus.jsonl", "--adapter", "naive", "--adapter-cmd", "cat", "--json", "x"],
        ["--corpus", "corpus.jsonl", "--adapter", "nosuchmodule:fn"],
        ["--corpus", "corpus.jsonl", "--adapter", "myadapters:nosuchfn"],
        ["--corpus", "corpus.jsonl", "--adapter", "no-colon"],
        ["--corpus", "corpus.jsonl", "--adapter-cmd", ""],
        ["--corpus", "corpus.jsonl", "--adapter-cmd", "/no/such/program"],
        ["--corpus", "corpus.jsonl", "--adapter", "naive", "--timeout", "0"],
    ],
)
def test_usage_and_input_errors_exit_1_with_one_line(folder: Path, argv: list[str]) -> None:
    code, out, err = score(*argv)
    assert code == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err


def test_a_malformed_corpus_line_exits_1_naming_the_line(folder: Path) -> None:
    lines = corpus_bytes(tiny_corpus()).split(b"\n")
    lines[2] = b"{not json"
    Path("bad.jsonl").write_bytes(b"\n".join(lines))
    code, _, err = score("--corpus", "bad.jsonl", "--adapter", "naive")
    assert code == 1 and "bad.jsonl line 3: not valid JSON" in err


def test_a_baseline_over_another_corpus_exits_1(folder: Path) -> None:
    score("--corpus", "corpus.jsonl", "--adapter", "naive", "--json", "base.json")
    Path("other.jsonl").write_bytes(corpus_bytes(tiny_corpus()[:3]))
    code, out, err = score(
        "--corpus", "other.jsonl", "--adapter", "naive", "--baseline", "base.json"
    )
    assert code == 1 and out == ""
    assert "different corpora" in err and len(err.strip().splitlines()) == 1


def test_a_baseline_that_is_not_a_report_exits_1(folder: Path) -> None:
    Path("base.json").write_text('{"exact": 3}')
    code, _, err = score(
        "--corpus", "corpus.jsonl", "--adapter", "naive", "--baseline", "base.json"
    )
    assert code == 1 and "report_version" in err


def test_json_report_is_written_with_the_corpus_sha(folder: Path) -> None:
    code, out, _ = score("--corpus", "corpus.jsonl", "--adapter", "naive", "--json", "r.json")
    report = json.loads(Path("r.json").read_text())
    assert code == 0 and report["adapter"] == "naive"
    assert report["corpus_sha256"] in out
    assert report["exact"] == 1 and report["cases"] == 6


def test_an_adapter_that_raises_on_every_case_exits_1_with_one_line(folder: Path) -> None:
    code, out, err = score(
        "--corpus", "corpus.jsonl", "--adapter", "myadapters:boom", "--show-failures"
    )
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "failed on every case (6/6)" in err
    assert "RuntimeError: no" in err


def test_an_adapter_that_raises_on_some_cases_shows_its_errors(folder: Path) -> None:
    code, out, _ = score(
        "--corpus", "corpus.jsonl", "--adapter", "myadapters:sometimes", "--show-failures"
    )
    assert code == 0
    assert "adapter errors          1" in out and "false refusals          1" in out
    assert "raise RuntimeError" in out and "RuntimeError: no" in out  # the traceback's tail


def test_adapter_file_path_form(folder: Path) -> None:
    code, out, _ = score(
        "--corpus", "corpus.jsonl", "--adapter", str(folder / "myadapters.py") + ":perfect"
    )
    assert code == 0 and "6 / 6" in out


def test_show_failures_lists_only_failed_cases(folder: Path) -> None:
    _, out, _ = score("--corpus", "corpus.jsonl", "--adapter", "naive", "--show-failures")
    failed = [line.split()[1] for line in out.splitlines() if line.startswith("FAIL ")]
    assert failed == ["room-1", "room-2", "room-3", "room-4", "room-6"]


def test_spec_prints_the_grading_contract() -> None:
    code, out, _ = score("--spec")
    assert code == 0 and out == render_spec()


def test_selftest_passes_every_check() -> None:
    code, out, _ = score("--selftest")
    last = out.strip().splitlines()[-1]
    n = last.split()[-1].split("/")
    assert code == 0 and n[0] == n[1] and int(n[0]) >= 22
    assert "FAIL" not in out


def test_selftest_fails_when_grading_is_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcall300.scoring import grading

    monkeypatch.setattr(grading, "call_key", lambda returned: "same")  # everything "matches"
    code, out, _ = score("--selftest")
    assert code == 1 and "FAIL" in out


def test_no_progress_bar_when_stderr_is_not_a_terminal(folder: Path) -> None:
    _, _, err = score("--corpus", "corpus.jsonl", "--adapter", "naive")
    assert err == ""


def test_progress_bar_when_stderr_is_a_terminal(folder: Path) -> None:
    from toolcall300.scoring import cli as score_cli

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Tty()
    args = score_cli.parse_args(["--corpus", "corpus.jsonl", "--adapter", "naive"])
    assert score_cli.run(args, io.StringIO(), err) == 0
    assert "6/6" in err.getvalue() and "\r[" in err.getvalue()


STREAM_PROGRAM = """
import json, sys
TRUTH = json.loads({truth!r})
rows = [json.loads(line) for line in sys.stdin]
print("warming up", flush=True)
for row in reversed(rows):
    print(json.dumps({{"id": row["id"], "call": TRUTH[row["text"]]}}), flush=True)
"""


def test_stream_and_per_case_programs_score_like_the_in_process_adapter(folder: Path) -> None:
    truth = json.dumps({c["text"]: TRUTH[c["id"]] for c in tiny_corpus()})
    Path("prog.py").write_text(STREAM_PROGRAM.format(truth=truth))
    score("--corpus", "corpus.jsonl", "--adapter", "myadapters:perfect", "--json", "base.json")
    cmd = f"{sys.executable} prog.py"
    code, out, err = score(
        "--corpus", "corpus.jsonl", "--adapter-cmd", cmd, "--stream", "--baseline", "base.json"
    )
    assert code == 0, err
    assert f"TOOLCALL-300 adapter: cmd --stream: {sys.executable} prog.py" in out
    assert "1 stdout line(s) not a" in err  # "warming up" is reported, not trusted
    assert "in-sample" not in out


def test_a_program_named_toolshim_gets_the_in_sample_note_on_this_suites_corpus(
    folder: Path,
) -> None:
    Path("toolshim").mkdir()
    Path("toolshim/__main__.py").write_text("print('null')\n")
    argv = ["--corpus", "corpus.jsonl", "--adapter-cmd", f"{sys.executable} toolshim"]
    code, out, _ = score(*argv, "--timeout", "5")
    assert code == 0 and "false refusals          3" in out
    assert "in-sample" not in out  # a corpus this suite did not build
    pin = {"sha256": hashlib.sha256(Path("corpus.jsonl").read_bytes()).hexdigest()}
    manifest = {"generator_version": "1.0.0", "files": {"corpus.jsonl": pin}}
    Path("manifest.json").write_text(json.dumps(manifest))
    code, out, _ = score(*argv, "--timeout", "5")
    assert code == 0 and "in-sample" in out


def test_the_packaged_sample_is_in_sample_for_toolshim() -> None:
    code, out, _ = score("--corpus", str(SAMPLE), "--adapter", "toolshim")
    assert code == 0 and "in-sample" in out
    code, out, _ = score("--corpus", str(SAMPLE), "--adapter", "naive")
    assert code == 0 and "in-sample" not in out


def test_several_adapters_print_one_table_side_by_side(folder: Path) -> None:
    Path("refuser.py").write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    print(json.dumps({'id': json.loads(line)['id'], 'call': None}), flush=True)\n"
    )
    code, out, _ = score(
        "--corpus",
        "corpus.jsonl",
        "--adapter",
        "naive",
        "--adapter",
        "myadapters:worse",
        "--adapter-stream",
        f"{sys.executable} refuser.py",
    )
    assert code == 0
    lines = out.splitlines()
    assert "naive = naive" in lines and "myadapters:worse = myadapters:worse" in lines
    header = next(line for line in lines if line.startswith("category"))
    assert header.split()[:4] == ["category", "n", "naive", "myadapters:worse"]
    exact = next(line for line in lines if line.startswith("exact match"))
    assert exact.split()[2:] == ["1", "/", "6", "5", "/", "6", "3", "/", "6"]
    errors = next(line for line in lines if line.startswith("adapter errors"))
    assert errors.split()[2:] == ["0", "0", "0"]


def test_junit_has_a_testcase_per_case_and_failures_carry_the_outcome(folder: Path) -> None:
    argv = ["--corpus", "corpus.jsonl", "--adapter", "naive", "--junit", "out.xml"]
    code, _, _ = score(*argv, "--json", "report.json")
    assert code == 0
    report = json.loads(Path("report.json").read_text())
    suite = ET.parse("out.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "6" and suite.get("failures") == "5"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c["id"] for c in tiny_corpus()]
    assert all(c.get("classname", "").startswith("toolcall300.") for c in cases)
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert {name: f.get("type") for name, f in failed.items() if f is not None} == {
        row["id"]: row["outcome"] for row in report["per_case"] if not row["passed"]
    }


def test_summary_is_markdown_and_accumulates(folder: Path) -> None:
    Path("summary.md").write_text("earlier step\n")
    code, _, _ = score("--corpus", "corpus.jsonl", "--adapter", "naive", "--summary", "summary.md")
    text = Path("summary.md").read_text()
    assert code == 0 and text.startswith("earlier step\n## TOOLCALL-300")
    assert "| exact match |  | 1 / 6 |" in text and "| truncated | 1 | 0 |" in text


def test_a_corpus_x_field_never_reaches_the_adapter(folder: Path) -> None:
    case = dict(tiny_corpus()[0])
    tool = json.loads(json.dumps(case["tools"][0]))
    tool["x-mutates"] = True
    tool["function"]["x-owner"] = "billing"
    case["tools"] = [tool]
    Path("x.jsonl").write_text(json.dumps(case) + "\n")
    Path("seen.py").write_text(
        "import json\ndef f(text, tools):\n    raise RuntimeError(json.dumps(tools))\n"
    )
    _, _, err = score("--corpus", "x.jsonl", "--adapter", "seen:f")
    assert "failed on every case" in err and "x-" not in err.split("last error")[1]


def test_an_adapter_module_exiting_2_on_import_is_a_usage_error_not_a_regression(
    folder: Path,
) -> None:
    Path("exits.py").write_text("import sys\nsys.exit(2)\n")
    code, _, err = score("--corpus", "corpus.jsonl", "--adapter", "exits:fn")
    assert code == 1 and "SystemExit(2)" in err


def _as_version_1(report: dict[str, object]) -> dict[str, object]:
    """A report as the scorer wrote them before corpus version 2: no corpus_version field."""
    old = {k: v for k, v in report.items() if k != "corpus_version"}
    return {**old, "spec_version": "toolcall300-grading/1.0"}


def test_a_baseline_saved_on_corpus_version_1_is_refused_naming_both(tmp_path: Path) -> None:
    saved = tmp_path / "base.json"
    code, _, _ = score("--corpus", str(SAMPLE), "--adapter", "integrator", "--json", str(saved))
    report = json.loads(saved.read_text())
    assert code == 0 and report["corpus_version"] == CORPUS_VERSION
    saved.write_text(json.dumps(_as_version_1(report)))
    code, out, err = score(
        "--corpus", str(SAMPLE), "--adapter", "integrator", "--baseline", str(saved)
    )
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    assert "corpus version 1.0" in err and f"version {CORPUS_VERSION}" in err


@pytest.mark.parametrize(
    ("version", "spec"),
    [
        ("2.0", "toolcall300-grading/2.0"),
        ("3.0", "toolcall300-grading/3.0"),
        ("3.1", "toolcall300-grading/3.0"),
    ],
)
def test_a_baseline_saved_on_an_earlier_corpus_version_is_refused_naming_both(
    tmp_path: Path, version: str, spec: str
) -> None:
    """Corpus v3 rebuilt args_as_string and multiple_calls (D9.2, D10.3), v3.1 added the
    cases on D5.4, D7.5, D7.6 and D10.4 and a tool, and v4.0 the cases on D5.6, D8.4, D9.3,
    D9.4, E5 and D7.9 and a tool (every case moved): a score on an earlier version is not
    comparable, so its baseline is refused in one line, as v1's was, with the command that
    makes a new one."""
    saved = tmp_path / "base.json"
    score("--corpus", str(SAMPLE), "--adapter", "integrator", "--json", str(saved))
    report = json.loads(saved.read_text())
    report.update(corpus_version=version, spec_version=spec)
    saved.write_text(json.dumps(report))
    code, out, err = score(
        "--corpus", str(SAMPLE), "--adapter", "integrator", "--baseline", str(saved)
    )
    assert (code, out, err.count("\n")) == (1, "", 1)
    assert f"corpus version {version}" in err and f"version {CORPUS_VERSION}" in err
    remake = f"toolcall300 score --corpus {SAMPLE} --adapter integrator --json {saved}"
    assert err.rstrip("\n").endswith(f"with: {remake}"), err


def test_a_baseline_on_the_same_version_is_compared(tmp_path: Path) -> None:
    saved = tmp_path / "base.json"
    score("--corpus", str(SAMPLE), "--adapter", "integrator", "--json", str(saved))
    code, out, _ = score(
        "--corpus", str(SAMPLE), "--adapter", "integrator", "--baseline", str(saved)
    )
    assert code == 0 and "baseline: no regression" in out


def test_the_version_comes_from_the_manifest_that_pins_the_corpus(tmp_path: Path) -> None:
    from toolcall300.scoring.corpus import corpus_version

    private = Path(__file__).parents[2] / "corpus_private"
    data = (private / "toolcall300.jsonl").read_bytes()
    (tmp_path / "toolcall300.jsonl").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    # a published corpus is known by its pin even with no manifest beside it (a download)
    assert corpus_version(tmp_path / "toolcall300.jsonl", sha) == CORPUS_VERSION
    built = data + b"\n"  # bytes this suite never published: only a manifest can say
    (tmp_path / "toolcall300.jsonl").write_bytes(built)
    built_sha = hashlib.sha256(built).hexdigest()
    assert corpus_version(tmp_path / "toolcall300.jsonl", built_sha) is None
    manifest = json.loads((private / "manifest.json").read_bytes())
    manifest["files"]["toolcall300.jsonl"]["sha256"] = built_sha
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert corpus_version(tmp_path / "toolcall300.jsonl", built_sha) == CORPUS_VERSION
    assert corpus_version(tmp_path / "toolcall300.jsonl", "0" * 64) is None  # pins other bytes


def test_compare_reports_refuses_another_version() -> None:
    from toolcall300.scoring.report import VersionMismatch, compare_reports, score_cases

    cases = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    now = score_cases(cases, {}, corpus_sha256="x", corpus_version=CORPUS_VERSION)
    with pytest.raises(
        VersionMismatch, match=rf"version 1\.0, this run on version {re.escape(CORPUS_VERSION)}"
    ):
        compare_reports(_as_version_1(now), now)
    assert compare_reports(now, now)["regressed"] is False


def test_every_corpus_published_here_is_in_the_packaged_pins() -> None:
    # a new corpus version must add its pins to data/published_corpora.json, or a buyer's
    # downloaded copy (no manifest beside it) would lose toolshim's in-sample note
    manifest = SAMPLE.parents[4] / "corpus_private" / "manifest.json"
    if not manifest.is_file():
        pytest.skip("no corpus_private/ here")
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    published = published_versions()
    for name in ("toolcall300.jsonl", "sample30.jsonl"):
        assert published.get(doc["files"][name]["sha256"]) == doc["version"], name


def test_a_copied_private_corpus_keeps_the_in_sample_note(tmp_path: Path) -> None:
    private = SAMPLE.parents[4] / "corpus_private" / "toolcall300.jsonl"
    if not private.is_file():
        pytest.skip("no corpus_private/ here")
    copy = tmp_path / "downloaded.jsonl"
    copy.write_bytes(private.read_bytes())
    code, out, _ = score("--corpus", str(copy), "--adapter", "toolshim")
    assert code == 0 and "in-sample" in out


NO_PARAMS_CASES = [
    {
        "id": f"np-{i}",
        "category": "extra_undeclared_arg",
        "text": text,
        "tools": [
            {"type": "function", "function": {"name": "ping", "description": "no arguments"}}
        ],
        "expected_kind": "value",
        "expected": {"name": "ping", "arguments": {}},
    }
    for i, text in enumerate(
        ['{"name": "ping", "arguments": {"host": "a"}}', '{"name": "ping", "arguments": {}}']
    )
]


def test_a_tool_declared_without_parameters_takes_no_arguments_through_the_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D6.3, one reading everywhere: the adapter is handed the tool as taking no arguments, so a
    normaliser following the contract returns {} and passes; one keeping what was written fails."""
    from toolcall300.scoring.corpus import adapter_items

    (tool,) = adapter_items(NO_PARAMS_CASES)[0]["tools"]
    assert tool["function"]["parameters"] == {"type": "object", "properties": {}}
    corpus = tmp_path / "np.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in NO_PARAMS_CASES))
    (tmp_path / "keeps.py").write_text(
        "import json\ndef keep(text, tools):\n    return json.loads(text)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for adapter, exact in (("toolcall300.toolshim:normalise", 2), ("keeps:keep", 1)):
        saved = tmp_path / f"{exact}.json"
        code, _, _ = score("--corpus", str(corpus), "--adapter", adapter, "--json", str(saved))
        assert code == 0 and json.loads(saved.read_text())["exact"] == exact, adapter


def test_the_report_says_what_a_corpus_of_this_suite_is_and_is_not(tmp_path: Path) -> None:
    """A discriminating test of each rule, not a sample of traffic: said under the table of a
    corpus this suite built, and not under a third party's (it describes none of theirs)."""
    from toolcall300.scoring.render import CORPUS_NOTE

    code, out, _ = score("--corpus", str(SAMPLE), "--adapter", "integrator")
    assert code == 0 and CORPUS_NOTE in out and "not a sample of traffic" in CORPUS_NOTE
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_text(SAMPLE.read_text().splitlines()[0] + "\n")
    code, out, _ = score("--corpus", str(theirs), "--adapter", "integrator")
    assert code == 0 and CORPUS_NOTE not in out
