"""``toolcall300 ci`` as CI systems use it: commit and ref from their variables, a commit
checked with a message that says what one looks like, JUnit and a Markdown summary from the
run's stored report, a moved baseline said, and no ``verdict None`` on a failed run."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from toolcall300.client import ci as ci_client
from toolcall300.scoring.report import score_cases

KEY = {"TOOLCALL300_LICENCE": "tc300_" + "k" * 32}
IMAGE = "registry.example.com/acme/adapter@sha256:" + "a" * 64
RUN_ID = "run_01ABCDEFGHJKMNPQRSTVWXYZ012"
CASES = [
    {
        "id": "c1",
        "category": "truncated",
        "text": "",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "expected_kind": "value",
        "expected": {"name": "f", "arguments": {}},
    },
    {
        "id": "c2",
        "category": "unrecoverable",
        "text": "",
        "tools": [],
        "expected_kind": "unrecoverable",
        "expected": None,
    },
]


class Api:
    """The service's two answers the client reads: the run, then its stored report."""

    def __init__(self, final: dict[str, Any]) -> None:
        self.final = final
        self.bodies: list[bytes | None] = []
        self.urls: list[str] = []

    def __call__(
        self, method: str, url: str, *, headers: Any = None, body: bytes | None = None
    ) -> tuple[int, dict[str, str], Any]:
        self.urls.append(url)
        if method == "POST":
            self.bodies.append(body)
            return 202, {}, {"run_id": RUN_ID, "status": "queued"}
        if url.endswith("/report"):
            report = score_cases(CASES, {"c1": None, "c2": None}, adapter="img")
            return 200, {}, {"report_version": 1, "score": report}
        return 200, {}, self.final


def scored(**over: Any) -> dict[str, Any]:
    return {
        "run_id": RUN_ID,
        "status": "scored",
        "verdict": "pass",
        "ref": "main",
        "commit": "abc1234",
        "baseline": "main",
        "summary": {"exact": 1, "categories": {}},
        "comparison": None,
        "failure": None,
        "baseline_updated": False,
        "report_url": f"/runs/{RUN_ID}/report",
        **over,
    }


def ci(argv: list[str], api: Api, env: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = ci_client.parse_args(["--api", "https://api.example.com", "--image", IMAGE, *argv])
    code = ci_client.run(args, out, err, request=api, env={**KEY, **env})
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("env", "commit", "ref"),
    [
        ({"GITHUB_SHA": "a" * 40, "GITHUB_REF_NAME": "main"}, "a" * 40, "main"),
        (
            {"GITHUB_SHA": "b" * 40, "GITHUB_REF_NAME": "7/merge", "GITHUB_HEAD_REF": "feature"},
            "b" * 40,
            "feature",
        ),
        ({"CI_COMMIT_SHA": "c" * 40, "CI_COMMIT_REF_NAME": "dev"}, "c" * 40, "dev"),
        ({"BUILDKITE_COMMIT": "d" * 12, "BUILDKITE_BRANCH": "x"}, "d" * 12, "x"),
    ],
)
def test_commit_and_ref_come_from_the_ci_variables(
    env: dict[str, str], commit: str, ref: str
) -> None:
    api = Api(scored())
    code, _, _ = ci([], api, env)
    assert code == 0
    assert b'"commit": "' + commit.encode() + b'"' in (api.bodies[0] or b"")
    assert b'"ref": "' + ref.encode() + b'"' in (api.bodies[0] or b"")


def test_flags_win_over_the_ci_variables() -> None:
    api = Api(scored())
    code, _, _ = ci(["--commit", "1234567", "--ref", "rel"], api, {"GITHUB_SHA": "a" * 40})
    assert code == 0 and b'"commit": "1234567"' in (api.bodies[0] or b"")


@pytest.mark.parametrize("commit", ["HEAD", "abc", "ABCDEF1", "g" * 40, "a" * 41])
def test_a_malformed_commit_says_what_a_commit_looks_like(commit: str) -> None:
    api = Api(scored())
    code, _, err = ci(["--commit", commit, "--ref", "main"], api, {})
    assert code == 1 and api.bodies == []
    assert "7 to 40 lowercase hex digits" in err and "git rev-parse HEAD" in err


def test_no_commit_anywhere_names_the_variables_it_read() -> None:
    code, _, err = ci(["--ref", "main"], Api(scored()), {})
    assert code == 1 and "GITHUB_SHA" in err and "CI_COMMIT_SHA" in err


def test_a_pass_that_moved_the_baseline_says_so() -> None:
    assert "moved to this run" in ci_client.render(scored(baseline_updated=True))
    assert "moved" not in ci_client.render(scored(baseline_updated=False))


def test_a_failed_run_never_prints_verdict_none() -> None:
    text = ci_client.render(
        scored(status="failed", verdict=None, failure={"reason": "job_timeout", "detail": "slow"})
    )
    assert "None" not in text and "job_timeout" in text


def test_junit_and_summary_come_from_the_stored_report(tmp_path: Path) -> None:
    junit, summary = tmp_path / "j.xml", tmp_path / "s.md"
    api = Api(scored())
    argv = ["--commit", "abc1234", "--ref", "main", "--wait", "--poll", "0"]
    code, _, _ = ci([*argv, "--junit", str(junit), "--summary", str(summary)], api, {})
    assert code == 0 and api.urls[-1].endswith(f"/runs/{RUN_ID}/report")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert [c.get("name") for c in suite.findall("testcase")] == ["c1", "c2"]
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("type") == "false_refusal"
    assert "| exact match |  | 1 / 2 |" in summary.read_text()


def test_a_failed_run_still_writes_junit_that_fails(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    api = Api(
        scored(
            status="failed",
            verdict=None,
            report_url=None,
            failure={"reason": "adapter_crashed", "detail": "exit 1"},
        )
    )
    argv = ["--commit", "abc1234", "--ref", "main", "--wait", "--poll", "0"]
    code, _, _ = ci([*argv, "--junit", str(junit)], api, {})
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert code == 1 and failure is not None and failure.get("type") == "adapter_crashed"
