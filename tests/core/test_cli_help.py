"""``--help`` shows every form of a command a user can type."""

from __future__ import annotations

import io

import pytest

from toolcall300.cli import dispatch


def test_check_help_shows_verify(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch(["check", "--help"], io.StringIO(), io.StringIO()) == 0  # argparse prints it
    shown = capsys.readouterr().out
    assert "toolcall300 check verify REPORT --jwks KEYS" in shown.splitlines()[1]
