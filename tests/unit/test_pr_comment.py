"""``toolcall300 ci --pr-comment`` against a fake GitHub REST API on loopback: one comment per
pull request, posted once and then updated, the token sent only as a header."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from toolcall300.client import ci as ci_client
from toolcall300.client import prcomment

TOKEN = "ghs_" + "t" * 36
RUN_ID = "run_01JD0000000000000000000000"


class FakeGitHub:
    """Issue comments of one repository, as GitHub's REST API pages and edits them."""

    def __init__(self) -> None:
        self.comments: list[dict[str, Any]] = [
            {"id": n, "body": f"a reviewer's note {n}", "user": {"login": "someone"}}
            for n in range(1, 151)  # 150 comments: ours, when it exists, is on page 2
        ]
        self.seen: list[tuple[str, str, str]] = []
        self.url = ""

    def handle(self, method: str, path: str, auth: str, body: bytes) -> tuple[int, Any]:
        self.seen.append((method, path, auth))
        if auth != f"Bearer {TOKEN}":
            return 401, {"message": "Bad credentials"}
        parts = urlsplit(path)
        if method == "GET" and parts.path == "/repos/acme/adapter/issues/7/comments":
            query = parse_qs(parts.query)
            page, per = int(query["page"][0]), int(query["per_page"][0])
            return 200, self.comments[(page - 1) * per : page * per]
        if method == "POST" and parts.path == "/repos/acme/adapter/issues/7/comments":
            made = {"id": 1000 + len(self.comments), "body": json.loads(body)["body"]}
            self.comments.append(made)
            return 201, made
        if method == "PATCH" and parts.path.startswith("/repos/acme/adapter/issues/comments/"):
            wanted = int(parts.path.rsplit("/", 1)[1])
            for comment in self.comments:
                if comment["id"] == wanted:
                    comment["body"] = json.loads(body)["body"]
                    return 200, comment
        return 404, {"message": "Not Found"}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer = fake.handle(
                self.command, self.path, self.headers.get("Authorization", ""), body
            )
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _any

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()
    server.server_close()


def final_run(verdict: str, broken: list[str]) -> dict[str, Any]:
    return {
        "run_id": RUN_ID, "status": "scored", "verdict": verdict, "ref": "feature-x",
        "commit": "abc1234def", "baseline": "main", "failure": None,
        "summary": {"exact": 250, "cases": 300},
        "comparison": {
            "baseline_run_id": "run_base", "regressed": verdict == "regression",
            "reasons": ["exact fell 261 -> 250"] if broken else [],
            "counts": {"exact": {"baseline": 261, "current": 250, "delta": -11}},
            "categories": {}, "flipped": {"fixed": ["tc300-0011"], "broken": broken},
        },
        "report_url": None,
    }  # fmt: skip


def run_ci(final: dict[str, Any], env: dict[str, str]) -> tuple[int, str]:
    def service(method: str, url: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        if method == "POST":
            return 202, {}, {"run_id": RUN_ID, "status": "queued"}
        return 200, {}, final

    args = ci_client.parse_args(
        ["--api", "https://api.example.com", "--image", "r/a@sha256:" + "a" * 64,
         "--commit", "abc1234", "--ref", "feature-x", "--wait", "--poll", "0", "--pr-comment"]
    )  # fmt: skip
    err = io.StringIO()
    code = ci_client.run(args, io.StringIO(), err, request=service, env=env)
    return code, err.getvalue()


def pr_env(tmp_path: Path, github: FakeGitHub) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 7}}))
    return {
        "TOOLCALL300_LICENCE": "tc300_x",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "acme/adapter",
        "GITHUB_API_URL": github.url,
    }


def ours(github: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in github.comments if c["body"].startswith(prcomment.MARKER)]


def test_the_action_leaves_one_comment_posted_then_updated(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = pr_env(tmp_path, github)
    code, err = run_ci(final_run("regression", ["tc300-0254", "tc300-0266"]), env)
    assert code == 2  # the verdict's exit code, comment or not
    assert "pull request #7: comment created" in err
    (comment,) = ours(github)
    assert "TOOLCALL-300: **REGRESSION**" in comment["body"]
    assert "**Broke** (2): `tc300-0254`, `tc300-0266`" in comment["body"]
    assert "**Fixed** (1): `tc300-0011`" in comment["body"]
    assert "| exact | 261 | 250 | -11 |" in comment["body"]
    # the next push: the same comment now says pass, no second one
    code, err = run_ci(final_run("pass", []), env)
    assert code == 0 and "comment updated" in err
    (again,) = ours(github)
    assert again["id"] == comment["id"] and "TOOLCALL-300: **pass**" in again["body"]
    assert "**Broke**: none" in again["body"]
    assert len(github.comments) == 151  # the reviewers' 150 untouched, plus ours
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in github.seen)
    assert all(TOKEN not in path for _, path, _ in github.seen)
    assert TOKEN not in err


def test_a_run_that_is_not_a_pull_request_posts_nothing(tmp_path: Path, github: FakeGitHub) -> None:
    env = pr_env(tmp_path, github)
    env["GITHUB_EVENT_PATH"] = str(tmp_path / "push.json")
    (tmp_path / "push.json").write_text(json.dumps({"ref": "refs/heads/main"}))
    code, err = run_ci(final_run("pass", []), env)
    assert code == 0 and "not a pull request run: no comment posted" in err
    assert github.seen == []


def test_a_comment_github_refuses_is_a_warning_not_a_verdict(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = pr_env(tmp_path, github) | {"GITHUB_TOKEN": "ghs_wrong"}
    code, err = run_ci(final_run("pass", []), env)
    assert code == 0
    assert "warning: no pull-request comment: GitHub answered 401" in err
    assert "ghs_wrong" not in err and ours(github) == []


def test_the_token_never_travels_over_plain_http_to_another_host(tmp_path: Path) -> None:
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "a/b",
        "GITHUB_API_URL": "http://evil.example",
    }
    with pytest.raises(prcomment.CommentError, match="refusing to send GITHUB_TOKEN"):
        prcomment.post_or_update("x", env=env, number=1)


def test_the_action_passes_pr_comment_and_the_token_as_environment() -> None:
    import yaml

    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "action.yml").read_text())
    step = doc["runs"]["steps"][-1]
    assert step["env"]["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert doc["inputs"]["pr-comment"]["default"] == "true"
    assert "args+=(--pr-comment)" in step["run"] and "${{" not in step["run"]
