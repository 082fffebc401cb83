"""The local stack's shell: CLI flags, orderly stop."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from toolcall300.cliutil import UsageError
from toolcall300.service.local import stack as localstack
from toolcall300.service.local.stack import LocalStack, LocalStackContext


def test_serve_flags() -> None:
    args = localstack.parse_args([])
    assert (args.host, args.port, args.corpus) == ("127.0.0.1", 8300, None)
    assert localstack.parse_args(["--port", "0", "--corpus", "c"]).corpus == Path("c")
    with pytest.raises(UsageError):
        localstack.parse_args(["--port", "eighty"])


def test_stop_runs_every_stop_in_reverse_even_if_one_fails() -> None:
    calls: list[str] = []

    def failing() -> None:
        calls.append("b")
        raise RuntimeError("boom")

    context = LocalStackContext(Path("."), "http://x", Path("."), {}, {}, {})
    stops = contextlib.ExitStack()
    for stop in (lambda: calls.append("a"), failing, lambda: calls.append("c")):
        stops.callback(stop)
    stack = LocalStack("http://x", context, stops)
    stack.stop()
    stack.stop()  # a second stop is a no-op
    assert calls == ["c", "b", "a"]


def test_repo_root_has_the_template() -> None:
    assert (localstack.repo_root() / "template.yaml").exists()


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_outside_0_to_65535_is_a_usage_error(port: str) -> None:
    """Before: ``--port 99999`` served on a port the socket layer made of it, ``-1`` was a
    traceback."""
    with pytest.raises(UsageError):
        localstack.parse_args(["--port", port])
    assert localstack.parse_args(["--port", "65535"]).port == 65535


def test_only_a_loopback_host_is_loopback() -> None:
    assert all(map(localstack.is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(localstack.is_loopback, ["0.0.0.0", "192.0.2.1", "::", "example.com"]))


def test_serve_refusing_a_folder_the_sandbox_shows_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before: ``serve --state`` under /usr exited 1 with no message (the worker's refusal,
    a SystemExit with its reason, was swallowed by the CLI)."""
    import io

    from toolcall300.cli import dispatch
    from toolcall300.jobs import sandbox
    from toolcall300.service.local import worker

    monkeypatch.setattr(sandbox, "shows", lambda folder: True)  # as for a folder under /usr
    with pytest.raises(SystemExit) as refused:
        worker.refuse_exposed((tmp_path,))
    reason = str(refused.value.code)
    assert "lies in what every adapter's sandbox shows" in reason

    def start(*_a: Any, **_kw: Any) -> Any:
        raise SystemExit(reason)

    monkeypatch.setattr(localstack, "start_local_stack", start)
    out, err = io.StringIO(), io.StringIO()
    assert dispatch(["serve", "--state", str(tmp_path), "--port", "0"], out, err) == 1
    assert reason in err.getvalue()


def test_processes_default_to_the_cores_and_outside_1_to_64_is_a_usage_error() -> None:
    import os

    assert localstack.parse_args([]).processes == (os.cpu_count() or 1)
    assert localstack.parse_args(["--processes", "3"]).processes == 3
    for bad in ("0", "65", "two"):
        with pytest.raises(UsageError):
            localstack.parse_args(["--processes", bad])


def test_the_editions_own_settings_are_defaults_the_operators_variable_wins_over(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The one-machine edition's own configuration (no X-Ray daemon, no EMF lines) is layered
    under the operator's environment as template.yaml's is, and reported with its source;
    what makes the edition (adapter_cmd accepted, the closed AWS endpoint) is not theirs."""
    import os

    from support.corpus import make_corpus

    make_corpus(tmp_path / "corpus")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_TRACE_DISABLED", raising=False)  # the suite's own may be set
    monkeypatch.setenv("TOOLCALL300_LOCAL_STACK", "false")
    stack = localstack.start_local_stack(port=0, background=False, corpus_dir=tmp_path / "corpus")
    try:
        used = stack.context.settings
        assert used["POWERTOOLS_METRICS_DISABLED"] == ("false", "yours")
        assert used["POWERTOOLS_TRACE_DISABLED"] == ("true", "one machine")
        assert os.environ["POWERTOOLS_METRICS_DISABLED"] == "false"
        assert os.environ["TOOLCALL300_LOCAL_STACK"] == "true"
        assert "TOOLCALL300_LOCAL_STACK" not in used
        assert stack.context.edition.runs_settings.toolcall300_local_stack
    finally:
        stack.stop()
    assert os.environ["TOOLCALL300_LOCAL_STACK"] == "false"  # the operator's, back
