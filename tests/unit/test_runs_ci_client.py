"""``toolcall300 ci``: flags, the idempotency key, exit codes 0/2/1, the comparison table."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from toolcall300.cli import dispatch
from toolcall300.client import ci as ci_client
from toolcall300.client.http import ApiError

IMAGE = "registry.example.com/acme/adapter@sha256:" + "a" * 64
BASE = [
    "--api",
    "https://api.example.com",
    "--image",
    IMAGE,
    "--ref",
    "refs/heads/main",
    "--commit",
    "abc1234",
]
ENV = {"TOOLCALL300_LICENCE": "tc300_" + "k" * 32}

COMPARISON = {
    "baseline_run_id": "run_00000000000000000000000000",
    "regressed": True,
    "reasons": ["exact fell 10 -> 8"],
    "counts": {"exact": {"baseline": 10, "current": 8, "delta": -2}},
    "categories": {"truncated": {"baseline": 5, "current": 3, "delta": -2}},
    "flipped": {"fixed": [], "broken": ["tc300-0001", "tc300-0002"]},
}


class FakeApi:
    def __init__(self, finals: list[dict[str, Any]], *, post_error: ApiError | None = None) -> None:
        self.finals = finals
        self.post_error = post_error
        self.requests: list[tuple[str, str, dict[str, str], bytes | None]] = []

    def __call__(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        self.requests.append((method, url, headers or {}, body))
        if method == "POST":
            if self.post_error:
                raise self.post_error
            return 202, {}, {"run_id": "run_01ABCDEFGHJKMNPQRSTVWXYZ012", "status": "queued"}
        return 200, {}, self.finals.pop(0) if len(self.finals) > 1 else self.finals[0]


def run(argv: list[str], api: FakeApi, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = ci_client.run(
        ci_client.parse_args(argv), out, err, request=api, env=ENV if env is None else env
    )
    return code, out.getvalue(), err.getvalue()


def final(**over: Any) -> dict[str, Any]:
    return {
        "run_id": "run_01ABCDEFGHJKMNPQRSTVWXYZ012",
        "status": "scored",
        "verdict": "pass",
        "ref": "main",
        "commit": "abc1234",
        "baseline": "main",
        "summary": {"exact": 10, "categories": {}},
        "comparison": None,
        "failure": None,
        **over,
    }


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (final(verdict="pass"), 0),
        (final(verdict="baseline_set"), 0),
        (final(verdict="regression", comparison=COMPARISON), 2),
        (
            final(
                status="failed",
                verdict=None,
                failure={"reason": "job_timeout", "detail": "slow", "stderr_tail": "last words"},
            ),
            1,
        ),
    ],
)
def test_exit_codes_follow_the_verdict(result: dict[str, Any], code: int) -> None:
    api = FakeApi([{"status": "queued"}, {"status": "running"}, result])
    got, out, _ = run([*BASE, "--wait", "--poll", "0"], api)
    assert got == code
    if code == 2:
        assert "REGRESSION: exact fell 10 -> 8" in out and "tc300-0001" in out and "-2" in out
    if result["status"] == "failed":
        assert "job_timeout" in out and "last words" in out


def test_the_submission_carries_the_key_in_a_header_and_the_inputs_in_the_body() -> None:
    api = FakeApi([final()])
    run([*BASE, "--baseline", "release-1.2", "--wait", "--poll", "0"], api)
    method, url, headers, body = api.requests[0]
    assert (method, url) == ("POST", "https://api.example.com/runs")
    assert headers["Authorization"] == "Bearer " + ENV["TOOLCALL300_LICENCE"]
    assert ENV["TOOLCALL300_LICENCE"] not in url
    assert json.loads(body or b"") == {
        "image": IMAGE,
        "ref": "refs/heads/main",
        "commit": "abc1234",
        "baseline": "release-1.2",
    }


def test_an_image_may_name_the_platform_its_job_runs_on() -> None:
    api = FakeApi([final()])
    assert run([*BASE, "--platform", "linux/arm64", "--wait", "--poll", "0"], api)[0] == 0
    assert json.loads(api.requests[0][3] or b"")["platform"] == "linux/arm64"
    local = ["--api", "http://127.0.0.1:8300", "--adapter-cmd", "x", "--ref", "main"]
    assert run([*local, "--commit", "abc1234", "--platform", "linux/arm64"], api)[0] == 1


def test_adapter_cmd_is_split_like_a_shell() -> None:
    api = FakeApi([final()])
    argv = [
        "--api",
        "http://127.0.0.1:8300",
        "--adapter-cmd",
        "toolcall300 toolshim --stream",
        "--ref",
        "main",
        "--commit",
        "abc1234",
    ]
    assert run(argv, api)[0] == 0
    assert json.loads(api.requests[0][3] or b"")["adapter_cmd"] == [
        "toolcall300",
        "toolshim",
        "--stream",
    ]


def test_a_retried_step_reuses_the_idempotency_key_and_a_new_attempt_does_not() -> None:
    body = {"image": IMAGE, "ref": "main", "commit": "abc1234"}
    same = ci_client.idempotency_key(body, {"GITHUB_RUN_ID": "1", "GITHUB_RUN_ATTEMPT": "1"})
    assert same == ci_client.idempotency_key(
        body, {"GITHUB_RUN_ID": "1", "GITHUB_RUN_ATTEMPT": "1"}
    )
    assert same != ci_client.idempotency_key(
        body, {"GITHUB_RUN_ID": "1", "GITHUB_RUN_ATTEMPT": "2"}
    )
    assert same != ci_client.idempotency_key(
        dict(body, commit="def5678"), {"GITHUB_RUN_ID": "1", "GITHUB_RUN_ATTEMPT": "1"}
    )


def test_errors_exit_1() -> None:
    assert run(BASE, FakeApi([final()]), env={})[0] == 1  # no key
    insecure = ["--api", "http://api.example.com", *BASE[2:]]
    assert run(insecure, FakeApi([final()]))[0] == 1  # key over plain http
    refused = FakeApi([final()], post_error=ApiError(429, "daily_limit", "spent"))
    code, _, err = run(BASE, refused)
    assert code == 1 and "daily_limit" in err
    slow = FakeApi([{"status": "running"}])
    code, _, err = run([*BASE, "--wait", "--poll", "0", "--timeout", "0"], slow)
    assert code == 1 and "did not finish" in err


def test_without_wait_it_prints_the_run_id_and_exits_0() -> None:
    code, out, _ = run(BASE, FakeApi([final()]))
    assert code == 0 and out.strip() == "run_01ABCDEFGHJKMNPQRSTVWXYZ012"


def test_bad_flags_are_exit_1_never_2() -> None:
    err = io.StringIO()
    assert (
        dispatch(
            ["ci", "--api", "https://x", "--ref", "main", "--commit", "abc1234"], io.StringIO(), err
        )
        == 1
    )
    both = ["ci", *BASE, "--adapter-cmd", "x"]
    assert dispatch(both, io.StringIO(), io.StringIO()) == 1


def test_the_table_without_a_baseline_says_the_run_set_it() -> None:
    text = ci_client.render(
        final(
            verdict="baseline_set",
            summary={"exact": 3, "cases": 4, "categories": {"truncated": {"n": 2, "pass": 1}}},
        )
    )
    assert "now the baseline" in text and "truncated" in text


def test_adapter_files_are_sent_as_a_tar_the_same_folder_always_gives_the_same_bytes(
    tmp_path: Any,
) -> None:
    import base64
    import os
    import tarfile

    folder = tmp_path / "adapter"
    (folder / "lib").mkdir(parents=True)
    (folder / "adapter.py").write_text("print('hi')\n")
    (folder / "lib" / "helper.py").write_text("X = 1\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "adapter.cpython-311.pyc").write_bytes(b"\0")
    first = ci_client.folder_archive(str(folder))
    os.utime(folder / "adapter.py", (1, 1))  # a fresh checkout: other times, same bytes sent
    assert ci_client.folder_archive(str(folder)) == first
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        assert sorted(tar.getnames()) == ["adapter.py", "lib/helper.py"]
    packed = tmp_path / "adapter.tar"
    packed.write_bytes(b"a tar archive as built elsewhere")
    assert ci_client.folder_archive(str(packed)) == packed.read_bytes()  # sent as is
    api = FakeApi([final()])
    argv = ["--api", "http://127.0.0.1:8300", "--adapter-cmd", "python3 /adapter/adapter.py"]
    argv += ["--adapter-files", str(folder), "--ref", "main", "--commit", "abc1234"]
    assert run(argv, api)[0] == 0
    body = json.loads(api.requests[0][3] or b"")
    assert base64.b64decode(body["adapter_files"]) == first
    assert body["adapter_cmd"] == ["python3", "/adapter/adapter.py"]
    missing = [*argv[:4], "--adapter-files", str(tmp_path / "nowhere"), *argv[6:]]
    assert run(missing, FakeApi([final()]))[0] == 1
