"""``toolcall300 download``'s licence key: from the environment, or asked on a terminal; with
neither, one line and exit 1 (never the prompt's EOFError traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolcall300.client.download import read_key


def test_the_environment_wins_and_is_trimmed() -> None:
    assert read_key({"TOOLCALL300_LICENCE": " k \n"}, prompt=pytest.fail) == "k"


def test_without_a_terminal_it_says_which_variable_to_set() -> None:
    with pytest.raises(ValueError, match="set TOOLCALL300_LICENCE"):
        read_key({}, prompt=pytest.fail, interactive=False)


def test_an_end_of_input_at_the_prompt_is_a_message() -> None:
    def eof(_: str) -> str:
        raise EOFError

    with pytest.raises(ValueError, match="set TOOLCALL300_LICENCE"):
        read_key({}, prompt=eof, interactive=True)
    with pytest.raises(ValueError, match="no licence key given"):
        read_key({}, prompt=lambda _: "  ", interactive=True)
    assert read_key({}, prompt=lambda _: " typed ", interactive=True) == "typed"


def test_the_command_with_no_key_and_no_terminal_exits_1_with_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "toolcall300", "download", "--api", "https://x", "--out", "o"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "TOOLCALL300_LICENCE" in result.stderr
    assert "Traceback" not in result.stderr
