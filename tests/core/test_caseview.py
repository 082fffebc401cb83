"""The case view: from a failing case id to its input, expected and returned call, the
difference and the rule, in the terminal, in JUnit and in the Markdown summary (docs/report.md, "The case view")."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from toolcall300.cli import dispatch
from toolcall300.scoring.caseview import case_diff, case_view, value_diff
from toolcall300.scoring.corpus import parse_corpus, rationale_beside
from toolcall300.spec import CATEGORIES, CATEGORY_RULES

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl"
PRIVATE = ROOT / "corpus_private"

TOOL = {
    "type": "function",
    "function": {
        "name": "book_room",
        "parameters": {
            "type": "object",
            "properties": {"room": {"type": "string"}, "hours": {"type": "integer"}},
            "required": ["room"],
            "additionalProperties": False,
        },
    },
}
CASE = {
    "id": "c1",
    "category": "type_coercion",
    "text": '{"name": "book_room", "arguments": {"room": "atlas", "hours": "2"}}',
    "tools": [TOOL],
    "expected_kind": "value",
    "expected": {"name": "book_room", "arguments": {"room": "atlas", "hours": 2}},
}


def score(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["score", *argv], out, err)
    return code, out.getvalue()


def test_the_diff_names_each_path_that_differs() -> None:
    returned = {"name": "book_room", "arguments": {"room": "atlas", "hours": "2", "x": 1}}
    assert case_diff(CASE, returned, "schema_invalid") == [
        '$.arguments.hours: expected 2, returned "2"',
        "$.arguments.x: not expected (returned 1)",
        "schema: $.arguments.x: property is not declared",
        "schema: $.arguments.hours: expected integer, got string",
    ]
    # D1.2: canonical spelling, so 2 and 2.0 differ and the view says where
    assert list(value_diff({"h": 2}, {"h": 2.0})) == ["$.h: expected 2, returned 2.0"]
    assert list(value_diff([1, 2], [1])) == ["$[1]: missing (expected 2)"]


def test_the_diff_of_refusals_and_non_calls_says_what_came_back() -> None:
    assert case_diff(CASE, None, "false_refusal") == [
        "returned a refusal; the case has a correct call (see expected)"
    ]
    refusal = {**CASE, "expected_kind": "unrecoverable", "expected": None}
    assert case_diff(refusal, {"name": "x", "arguments": {}}, "invented_call")[0].startswith(
        "returned a value; the case expects a refusal"
    )
    assert case_diff(CASE, [1], "schema_invalid") == ["returned an array, not a call"]
    assert case_diff(CASE, {"name": "zzz", "arguments": {}}, "schema_invalid")[-1] == (
        'schema: no declared tool is named "zzz"'
    )


def test_the_diff_is_bounded() -> None:
    many = {f"k{i}": i for i in range(50)}
    case = {**CASE, "expected": {"name": "book_room", "arguments": many}}
    lines = case_diff(case, {"name": "book_room", "arguments": {}}, "wrong_call")
    assert len(lines) == 9 and lines[-1] == "... and 42 more differences"


def test_the_rule_is_the_rationale_rows_else_the_categorys() -> None:
    view = case_view(CASE, None, "false_refusal")
    assert view["rule"] == "rule 5 (type_coercion)" and "rationale" not in view
    assert view["graded"].startswith("rule 12")
    view = case_view(CASE, None, "false_refusal", {"rule": "rule 5 / D5.1", "rationale": "why"})
    assert (view["rule"], view["rationale"]) == ("rule 5 / D5.1", "why")


def test_every_category_names_the_rule_its_published_rationale_cites() -> None:
    cases = {c["id"]: c for c in parse_corpus((PRIVATE / "toolcall300.jsonl").read_bytes())}
    assert set(CATEGORY_RULES) == set(CATEGORIES)
    for line in (PRIVATE / "rationale.jsonl").read_text().splitlines():
        row = json.loads(line)
        category = cases[row["id"]]["category"]
        if category != "unrecoverable":  # its cases each rest on the rule that cannot recover
            assert row["rule"].startswith(CATEGORY_RULES[category] + " "), row


def test_show_failures_prints_input_expected_returned_diff_and_rule() -> None:
    code, out = score("--corpus", str(SAMPLE), "--adapter", "naive", "--show-failures")
    assert code == 0
    blocks = out.split("\nFAIL ")[1:]
    assert len(blocks) == 30  # naive passes none of the 30 (corpus 4.0's sample)
    for block in blocks:
        for label in ("input", "expected", "returned", "diff", "rule", "graded"):
            assert f"\n  {label} " in block, (label, block)
    first = blocks[0]
    text = json.loads(SAMPLE.read_text().splitlines()[0])["text"]
    assert first.startswith(json.loads(SAMPLE.read_text().splitlines()[0])["id"])
    assert text.splitlines()[0] in first and "rule     rule 2 (hallucinated_tool)" in first


def test_the_corpus_rationale_is_shown_when_its_manifest_pins_it(tmp_path: Path) -> None:
    code, out = score(
        "--corpus", str(PRIVATE / "sample30.jsonl"), "--adapter", "naive", "--show-failures"
    )
    assert code == 0
    rows = rationale_beside(PRIVATE / "sample30.jsonl", sha(PRIVATE / "sample30.jsonl"))
    first = out.split("\nFAIL ")[1]
    row = rows[first.split()[0]]
    assert f"  rule     {row['rule']}\n" in first and f"  why      {row['rationale'][:80]}" in first
    # a rationale its manifest does not pin (edited, or another corpus's) is never shown
    for name in ("sample30.jsonl", "manifest.json", "rationale.jsonl"):
        shutil.copy(PRIVATE / name, tmp_path / name)
    with (tmp_path / "rationale.jsonl").open("a") as fh:
        fh.write("\n")
    _, out = score("--corpus", str(tmp_path / "sample30.jsonl"), "--adapter", "naive",
                   "--show-failures")  # fmt: skip
    assert "  why " not in out and "(hallucinated_tool)" in out


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_junit_failures_carry_the_case_view(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    score("--corpus", str(SAMPLE), "--adapter", "naive", "--junit", str(junit))
    failures = ET.parse(junit).getroot().findall(".//failure")
    assert len(failures) == 30
    for failure in failures:
        assert "; decided by rule" in failure.get("message", "")
        assert "; input " in failure.get("message", "")
        body = failure.text or ""
        for label in ("input", "expected", "returned", "diff", "rule"):
            assert f"\n  {label} " in body


def test_the_markdown_summary_folds_each_failed_case_view(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    score("--corpus", str(SAMPLE), "--adapter", "naive", "--summary", str(summary))
    text = summary.read_text()
    assert "### Failed cases: 30" in text
    folded = [line for line in text.splitlines() if line.startswith("<details>")]
    assert len(folded) == 25 and "... and 5 more" in text
    assert all("  input    " in line and "  rule     " in line for line in folded)


@pytest.mark.parametrize("text", ["a\n\nb </pre></details> # heading", "<script>x</script>"])
def test_no_input_text_breaks_out_of_its_fold(tmp_path: Path, text: str) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({**CASE, "text": text}) + "\n")
    summary = tmp_path / "s.md"
    score("--corpus", str(corpus), "--adapter", "naive", "--summary", str(summary))
    (line,) = [x for x in summary.read_text().splitlines() if x.startswith("<details>")]
    assert line.endswith("</pre></details>") and line.count("</pre>") == 1
    assert "<script>" not in line


def test_every_track_takes_the_scorers_call_with_the_rationale() -> None:
    """The one scorer hands every track the corpus's rationale (tracks.Track.score)."""
    parallel = PRIVATE / "parallel/toolcall300-parallel.jsonl"
    code, out = score("--corpus", str(parallel), "--adapter", "naive")
    assert code == 0 and out.startswith("TOOLCALL-300 parallel track, adapter: naive")
