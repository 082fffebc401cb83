"""The CI files as CI tools read them: ``--junit`` through a real consumer (junitparser) and
``--summary``'s verdict line, for ``toolcall300 score`` and ``toolcall300 ci``.

With a baseline, a case that already failed there is skipped (naming the baseline) and only a
regression fails, so a run that passes the gate shows green; without one, the file says what
its failures mean (docs/report.md).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml, Skipped, TestSuite

from toolcall300.cli import dispatch
from toolcall300.client import ci as ci_client
from toolcall300.scoring.report import score_cases

sys.path.insert(0, str(Path(__file__).parents[1] / "core"))
from test_scorer_data import ADAPTERS, TRUTH, tiny_corpus, write_corpus


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    truth = json.dumps({c["text"]: TRUTH[c["id"]] for c in tiny_corpus()})
    (tmp_path / "junitadapters.py").write_text(ADAPTERS.format(truth=truth))
    write_corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "junitadapters", raising=False)
    return tmp_path


def score(*argv: str) -> int:
    return dispatch(["score", "--corpus", "corpus.jsonl", *argv], io.StringIO(), io.StringIO())


def suite_of(path: str) -> TestSuite:
    suites = list(JUnitXml.fromfile(path))
    assert len(suites) == 1
    return suites[0]


def outcomes(suite: TestSuite) -> dict[str, str]:
    """case name -> "failure", "skipped" or "passed", as the consumer classifies it."""
    out = {}
    for case in suite:
        kinds = {type(r) for r in case.result}
        out[case.name] = (
            "failure" if Failure in kinds else "skipped" if Skipped in kinds else "passed"
        )
    return out


def messages(suite: TestSuite, kind: type) -> dict[str, str]:
    return {c.name: r.message for c in suite for r in c.result if isinstance(r, kind)}


def test_without_a_baseline_every_failure_fails_and_the_file_says_what_that_means(
    folder: Path,
) -> None:
    assert score("--adapter", "naive", "--junit", "out.xml", "--json", "report.json") == 0
    report = json.loads(Path("report.json").read_text())
    suite = suite_of("out.xml")
    failed = {row["id"] for row in report["per_case"] if not row["passed"]}
    assert {n for n, o in outcomes(suite).items() if o == "failure"} == failed
    assert suite.failures == len(failed) and suite.skipped == 0
    said = {p.name: p.value for p in suite.properties()}
    assert "No baseline was given" in said["toolcall300.failures"]
    assert "not a regression" in said["toolcall300.failures"]
    # each failure names the case, its category, what was expected and what came back
    by_id = {c["id"]: c for c in tiny_corpus()}
    for case_id, message in messages(suite, Failure).items():
        assert message.startswith(f"{case_id} [{by_id[case_id]['category']}] ")
        assert "expected " in message and "; returned " in message
    assert '"room":"borealis"' in messages(suite, Failure)["room-2"]
    assert "expected a refusal" in messages(suite, Failure)["room-4"]


def test_a_run_that_passes_the_gate_shows_no_failure(folder: Path) -> None:
    assert score("--adapter", "naive", "--json", "base.json") == 0
    assert score("--adapter", "naive", "--baseline", "base.json", "--junit", "out.xml") == 0
    suite = suite_of("out.xml")
    assert suite.failures == 0 and suite.errors == 0
    skipped = messages(suite, Skipped)
    assert len(skipped) == 5 and all(
        "known failure in baseline base.json" in m for m in skipped.values()
    )
    assert outcomes(suite)["baseline gate"] == "passed"


def test_only_the_regressions_fail_with_the_expected_call_and_what_came_back(
    folder: Path,
) -> None:
    assert score("--adapter", "junitadapters:worse", "--json", "base.json") == 0
    code = score("--adapter", "naive", "--baseline", "base.json", "--junit", "out.xml")
    assert code == 2
    suite = suite_of("out.xml")
    seen = outcomes(suite)
    assert seen["room-2"] == "skipped"  # worse already failed it: known, not a regression
    regressions = {n for n, o in seen.items() if o == "failure"} - {"baseline gate"}
    assert regressions and "room-2" not in regressions
    assert seen["baseline gate"] == "failure"
    assert "regression against baseline base.json" in messages(suite, Failure)["baseline gate"]
    message = messages(suite, Failure)["room-1"]
    assert message.startswith("room-1 [type_coercion] schema_invalid: expected ")
    assert '"hours":2' in message and '"hours":"2"' in message  # expected, then returned


def test_a_refusal_and_a_broken_adapter_are_said_as_such(folder: Path) -> None:
    assert score("--adapter", "junitadapters:worse", "--junit", "out.xml") == 0
    assert "returned a refusal (null)" in messages(suite_of("out.xml"), Failure)["room-2"]
    assert score("--adapter", "junitadapters:breaks_on_borealis", "--junit", "out.xml") == 0
    message = messages(suite_of("out.xml"), Failure)["room-2"]
    assert "returned nothing: the adapter broke (RuntimeError: borealis is out of order)" in message


def summary_top(path: str) -> str:
    lines = Path(path).read_text().splitlines()
    heading = lines.index("## TOOLCALL-300")
    return next(line for line in lines[heading + 1 :] if line.strip())


def test_the_summary_states_the_verdict_first(folder: Path) -> None:
    assert score("--adapter", "naive", "--summary", "none.md") == 0
    assert summary_top("none.md").startswith("**Verdict: pass**: scored; no baseline")
    score("--adapter", "junitadapters:perfect", "--json", "base.json")
    assert score("--adapter", "naive", "--baseline", "base.json", "--summary", "bad.md") == 2
    top = summary_top("bad.md")
    assert top.startswith("**Verdict: REGRESSION**: against baseline base.json: exact fell")
    assert (
        score("--adapter", "junitadapters:perfect", "--baseline", "base.json", "--summary", "ok.md")
        == 0
    )
    assert summary_top("ok.md") == "**Verdict: pass**: no regression against baseline base.json"
    assert score("--adapter", "junitadapters:boom", "--summary", "err.md") == 1
    assert summary_top("err.md").startswith("**Verdict: ERROR**: ")
    assert "failed on every case" in summary_top("err.md")


# --------------------------------------------------------------------------- toolcall300 ci

RUN_ID = "r_" + "0" * 26
CASES = [
    {"id": "c1", "category": "truncated", "expected_kind": "unrecoverable", "expected": None,
     "text": "x", "tools": []},
    {"id": "c2", "category": "truncated", "expected_kind": "value",
     "expected": {"name": "t", "arguments": {}}, "text": "y",
     "tools": [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]},
    {"id": "c3", "category": "truncated", "expected_kind": "value",
     "expected": {"name": "t", "arguments": {}}, "text": "z",
     "tools": [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]},
]  # fmt: skip


class Api:
    def __init__(self, final: dict[str, Any]) -> None:
        self.final = final

    def __call__(
        self, method: str, url: str, *, headers: Any = None, body: bytes | None = None
    ) -> tuple[int, dict[str, str], Any]:
        if method == "POST":
            return 202, {}, {"run_id": RUN_ID, "status": "queued"}
        if url.endswith("/report"):  # c1 refused correctly; c2 and c3 refused wrongly
            return 200, {}, {"report_version": 1, "score": score_cases(CASES, {}, adapter="img")}
        return 200, {}, self.final


def hosted(**over: Any) -> dict[str, Any]:
    return {
        "run_id": RUN_ID, "status": "scored", "verdict": "regression", "ref": "main",
        "commit": "abc1234", "baseline": "main", "summary": {"exact": 1, "categories": {}},
        "comparison": {"baseline_run_id": "r_base", "regressed": True,
                       "reasons": ["exact fell 2 -> 1"], "counts": {}, "categories": {},
                       "flipped": {"fixed": [], "broken": ["c3"]}},
        "failure": None, "report_url": f"/runs/{RUN_ID}/report", **over,
    }  # fmt: skip


def ci(tmp_path: Path, final: dict[str, Any]) -> int:
    args = ci_client.parse_args(
        ["--api", "https://api.example.com", "--image", "r/a@sha256:" + "a" * 64,
         "--commit", "abc1234", "--ref", "main", "--wait", "--poll", "0",
         "--junit", str(tmp_path / "j.xml"), "--summary", str(tmp_path / "s.md")]
    )  # fmt: skip
    env = {"TOOLCALL300_LICENCE": "tc300_x"}
    return ci_client.run(args, io.StringIO(), io.StringIO(), request=Api(final), env=env)


def test_ci_junit_fails_only_the_cases_the_hosted_comparison_broke(tmp_path: Path) -> None:
    assert ci(tmp_path, hosted()) == 2
    suite = suite_of(str(tmp_path / "j.xml"))
    seen = outcomes(suite)
    assert seen == {"c1": "passed", "c2": "skipped", "c3": "failure", "baseline gate": "failure"}
    assert "baseline 'main' (run r_base)" in messages(suite, Skipped)["c2"]
    # the stored report's failure_details: the expected call, what came back, how they
    # differ, the rule and the input, as score says
    view = "returned a refusal; the case has a correct call (see expected); decided by rule 11"
    assert messages(suite, Failure)["c3"] == (
        'c3 [truncated] false_refusal: expected {"arguments":{},"name":"t"}; '
        f"returned a refusal (null); {view} (truncated); input z"
    )
    assert messages(suite, Skipped)["c2"].endswith(
        'c2 [truncated] false_refusal: expected {"arguments":{},"name":"t"}; '
        f"returned a refusal (null); {view} (truncated); input y"
    )
    assert summary_top(str(tmp_path / "s.md")).startswith(
        "**Verdict: REGRESSION**: against baseline 'main': exact fell 2 -> 1"
    )


def test_ci_without_a_baseline_says_what_failures_mean_and_passes(tmp_path: Path) -> None:
    assert ci(tmp_path, hosted(verdict="baseline_set", comparison=None)) == 0
    suite = suite_of(str(tmp_path / "j.xml"))
    assert suite.failures == 2 and suite.skipped == 0
    assert "No baseline" in {p.name: p.value for p in suite.properties()}["toolcall300.failures"]
    assert summary_top(str(tmp_path / "s.md")).startswith("**Verdict: baseline_set**: no earlier")


def test_ci_summary_of_a_failed_run_is_an_error(tmp_path: Path) -> None:
    failed = hosted(status="failed", verdict=None, comparison=None, report_url=None,
                    failure={"reason": "job_timeout", "detail": "slow"})  # fmt: skip
    assert ci(tmp_path, failed) == 1
    top = summary_top(str(tmp_path / "s.md"))
    assert top.startswith("**Verdict: ERROR**: hosted run") and "job_timeout: slow" in top


def test_ci_summary_of_a_run_never_submitted_is_an_error(tmp_path: Path) -> None:
    args = ci_client.parse_args(
        ["--api", "https://api.example.com", "--image", "r/a@sha256:" + "a" * 64,
         "--commit", "abc1234", "--ref", "main", "--wait", "--summary", str(tmp_path / "s.md")]
    )  # fmt: skip
    assert ci_client.run(args, io.StringIO(), io.StringIO(), request=Api(hosted()), env={}) == 1
    top = summary_top(str(tmp_path / "s.md"))
    assert top == "**Verdict: ERROR**: set TOOLCALL300_LICENCE to your team licence key"


class StoredReport(Api):
    """The service, serving ``score`` as the run's stored report."""

    def __init__(self, final: dict[str, Any], score: dict[str, Any]) -> None:
        super().__init__(final)
        self.score = score

    def __call__(
        self, method: str, url: str, *, headers: Any = None, body: bytes | None = None
    ) -> tuple[int, dict[str, str], Any]:
        if method == "GET" and url.endswith("/report"):
            return 200, {}, {"report_version": 1, "score": self.score}
        return super().__call__(method, url, headers=headers, body=body)


def ci_with(tmp_path: Path, final: dict[str, Any], score: dict[str, Any]) -> int:
    args = ci_client.parse_args(
        ["--api", "https://api.example.com", "--image", "r/a@sha256:" + "a" * 64,
         "--commit", "abc1234", "--ref", "main", "--wait", "--poll", "0",
         "--junit", str(tmp_path / "ci.xml")]
    )  # fmt: skip
    env = {"TOOLCALL300_LICENCE": "tc300_x"}
    return ci_client.run(
        args, io.StringIO(), io.StringIO(), request=StoredReport(final, score), env=env
    )


def test_ci_and_score_write_the_same_failure_messages_for_the_same_report(folder: Path) -> None:
    code = score("--adapter", "junitadapters:breaks_on_borealis", "--junit", "score.xml",
                 "--json", "report.json")  # fmt: skip
    assert code == 0
    report = json.loads(Path("report.json").read_text())
    first_run = hosted(verdict="baseline_set", comparison=None)
    assert ci_with(folder, first_run, report) == 0
    from_ci, from_score = suite_of(str(folder / "ci.xml")), suite_of("score.xml")
    assert messages(from_ci, Failure) == messages(from_score, Failure) != {}
    assert (
        "returned nothing: the adapter broke (RuntimeError: borealis is out of order)"
        in (messages(from_ci, Failure)["room-2"])
    )


def test_ci_on_a_report_stored_before_failure_details_names_case_category_and_outcome(
    tmp_path: Path,
) -> None:
    old = score_cases(CASES, {}, adapter="img")
    del old["failure_details"]
    assert ci_with(tmp_path, hosted(verdict="baseline_set", comparison=None), old) == 0
    message = messages(suite_of(str(tmp_path / "ci.xml")), Failure)["c3"]
    assert message.startswith("c3 [truncated] false_refusal: wanted the expected call")
    assert "--show-failures" in message


def test_ci_junit_of_a_failed_run_parses_whatever_its_detail_holds(tmp_path: Path) -> None:
    failed = hosted(status="failed", verdict=None, comparison=None, report_url=None,
                    failure={"reason": "adapter_start_failed", "detail": "exec\x00 <failed>"})  # fmt: skip
    assert ci(tmp_path, failed) == 1
    suite = suite_of(str(tmp_path / "j.xml"))
    assert suite.failures == 1
    assert messages(suite, Failure) == {"hosted run": "exec? <failed>"}


def test_the_summary_of_a_run_that_set_the_baseline_says_so_as_ci_does(tmp_path: Path) -> None:
    out = io.StringIO()
    final = hosted(verdict="baseline_set", comparison=None)
    args = ci_client.parse_args(
        ["--api", "https://api.example.com", "--image", "r/a@sha256:" + "a" * 64,
         "--commit", "abc1234", "--ref", "main", "--wait", "--poll", "0",
         "--summary", str(tmp_path / "s.md")]
    )  # fmt: skip
    code = ci_client.run(
        args, out, io.StringIO(), request=Api(final), env={"TOOLCALL300_LICENCE": "k"}
    )
    assert code == 0
    said = "no earlier baseline 'main': this run is now the baseline"
    assert said in out.getvalue()  # the CLI's words
    assert summary_top(str(tmp_path / "s.md")) == f"**Verdict: baseline_set**: {said}"
    assert "no baseline given" not in (tmp_path / "s.md").read_text()


def test_the_summary_of_a_pass_that_moved_the_baseline_says_so(tmp_path: Path) -> None:
    final = hosted(verdict="pass", baseline_updated=True)
    final["comparison"] = {**final["comparison"], "regressed": False, "reasons": []}
    assert ci(tmp_path, final) == 0
    text = (tmp_path / "s.md").read_text()
    assert summary_top(str(tmp_path / "s.md")).startswith("**Verdict: pass**: no regression")
    assert "Baseline 'main' moved to this run." in text
