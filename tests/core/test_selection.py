"""Running part of a corpus: --category, --case and -k, and what the report and the gate do
with a partial run (docs/report.md, "Running part of a corpus")."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from toolcall300.cli import dispatch
from toolcall300.scoring.selection import Selection, SelectionError, parse_expression, select

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl"
PARALLEL = ROOT / "corpus_private/parallel/toolcall300-parallel.jsonl"
CASES = [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def score(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["score", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def ids(report_path: Path) -> list[str]:
    return [row["id"] for row in json.loads(report_path.read_text())["per_case"]]


@pytest.mark.parametrize(
    ("expression", "keeps"),
    [
        ("truncated", lambda c: "truncated" in c["category"]),
        ("ENUM", lambda c: "enum" in c["category"]),
        ("not arg", lambda c: "arg" not in c["id"] + c["category"]),
        ("enum or (truncated and not 0007)",
         lambda c: "enum" in c["category"] or ("truncated" in c["category"] and "0007" not in c["id"])),
        ("not not 0013", lambda c: "0013" in c["id"]),
        ("arg and not (string or scalar)",
         lambda c: "arg" in c["category"] and not ({"string", "scalar"} & set(c["category"].split("_")))),
    ],
)  # fmt: skip
def test_k_reads_words_and_or_not_and_parentheses(expression: str, keeps: object) -> None:
    keep = parse_expression(expression)
    assert [c["id"] for c in CASES if keep(c)] == [c["id"] for c in CASES if keeps(c)]  # type: ignore[operator]


@pytest.mark.parametrize("expression", ["", "and", "(enum", "enum)", "enum or", "not", "a b"])
def test_a_bad_expression_is_refused(expression: str) -> None:
    with pytest.raises(SelectionError):
        parse_expression(expression)


def test_flags_combine_and_keep_corpus_order(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, text, _ = score("--corpus", str(SAMPLE), "--adapter", "naive", "--category",
                          "truncated", "--category", "enum_violation", "--case", "tc300-0*",
                          "-k", "not 0018", "--json", str(out))  # fmt: skip
    assert code == 0
    want = [
        c["id"]
        for c in CASES
        if c["category"] in ("truncated", "enum_violation") and c["id"] != "tc300-0018"
    ]
    assert ids(out) == want and 0 < len(want) < 30
    report = json.loads(out.read_text())
    assert report["cases"] == len(want)
    assert report["selection"] == {
        "partial": True,
        "selected": len(want),
        "total": 30,
        "flags": "--category truncated --category enum_violation --case 'tc300-0*' -k 'not 0018'",
    }
    assert text.startswith(f"PARTIAL run: {len(want)} of 30 cases (--category truncated")


def test_a_partial_run_is_never_gated_against_a_baseline(tmp_path: Path) -> None:
    full = tmp_path / "full.json"
    assert score("--corpus", str(SAMPLE), "--adapter", "naive", "--json", str(full))[0] == 0
    code, _, err = score("--corpus", str(SAMPLE), "--adapter", "naive", "--category",
                         "truncated", "--baseline", str(full))  # fmt: skip
    assert code == 1 and "a partial run is never gated against a baseline" in err
    # nor is a partial report ever a baseline, even for a full run
    part = tmp_path / "part.json"
    score("--corpus", str(SAMPLE), "--adapter", "naive", "-k", "enum", "--json", str(part))
    code, _, err = score("--corpus", str(SAMPLE), "--adapter", "naive", "--baseline", str(part))
    assert code == 1 and "is a partial run (-k enum)" in err
    # a selection that keeps every case is the whole corpus, and gates as one
    code, text, _ = score("--corpus", str(SAMPLE), "--adapter", "naive", "--case", "*",
                          "--baseline", str(full))  # fmt: skip
    assert code == 0 and "PARTIAL" not in text and "no regression" in text


def test_a_partial_summary_and_junit_say_partial(tmp_path: Path) -> None:
    summary, junit = tmp_path / "s.md", tmp_path / "j.xml"
    score("--corpus", str(SAMPLE), "--adapter", "naive", "--category", "truncated",
          "--summary", str(summary), "--junit", str(junit))  # fmt: skip
    top = summary.read_text().splitlines()[2]
    assert top.startswith("**Verdict: pass**: PARTIAL run: 3 of 30 cases (--category truncated)")
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["toolcall300.selection"].startswith("PARTIAL run: 3 of 30 cases")
    assert len(ET.parse(junit).getroot().findall(".//testcase")) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--category", "cooking"], "--category 'cooking' is not a category of this corpus"),
        (["--case", "nope-*"], "--case 'nope-*' selects no case of the corpus's 30"),
        (["-k", "enum and ("], "-k 'enum and (': ends too early"),
    ],
)
def test_a_selection_that_cannot_apply_is_one_line_exit_1(argv: list[str], message: str) -> None:
    code, _, err = score("--corpus", str(SAMPLE), "--adapter", "naive", *argv)
    assert code == 1 and err == f"toolcall300 score: {message}" + err[len(message) + 19 :]
    assert err.count("\n") == 1


def test_every_track_selects_the_same_way(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    code, text, _ = score("--corpus", str(PARALLEL), "--adapter", "naive", "--category",
                          "distinct_calls", "--case", "tcp-000*", "--json", str(out))  # fmt: skip
    assert code == 0 and text.startswith("PARTIAL run: ")
    cases = [json.loads(line) for line in PARALLEL.read_text().splitlines()]
    want = [c["id"] for c in cases if c["category"] == "distinct_calls" and c["id"] < "tcp-0010"]
    assert ids(out) == want and want


def test_select_is_pure_and_reads_only_id_and_category() -> None:
    cases = [{"id": "a-1", "category": "x"}, {"id": "b-2", "category": "y"}]
    assert select(cases, Selection(cases=("b-*",))) == [cases[1]]
    assert select(cases, Selection(expression="x or b")) == cases
