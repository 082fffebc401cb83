"""A folder adapter's requirements file: what the stack agrees to install, line by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcall300.jobs.adapter_requirements import RequirementsRefused, check, pip_env

EXAMPLE = Path(__file__).resolve().parents[2] / "docs/examples/jsonschema-adapter/requirements.txt"
HASH = "--hash=sha256:" + "a" * 64


def test_the_example_is_pinned_with_hashes_across_continued_lines() -> None:
    pins = check(EXAMPLE.read_bytes())
    assert "jsonschema==4.26.0" in pins and "rpds-py==2026.9.1" in pins
    assert len(pins) == 6


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("jsonschema", "pin it with =="),
        ("jsonschema>=4", "pin it with =="),
        ("jsonschema==4.26.0", "give the sha256"),
        ("jsonschema @ https://example.com/j.whl", "URLs and VCS"),
        ("git+https://example.com/j.git", "URLs and VCS"),
        ("/tmp/j-4-py3-none-any.whl", "local paths"),
        ("-r other.txt", "options are not allowed"),
        ("--extra-index-url https://example.com", "options are not allowed"),
        (f"-e . {HASH}", "options are not allowed"),
        (f"jsonschema==4.26.0 --hash=md5:{'a' * 32}", "pip's --require-hashes form"),
    ],
)
def test_anything_but_a_pinned_hashed_package_is_refused_naming_the_line(
    line: str, says: str
) -> None:
    with pytest.raises(RequirementsRefused) as refused:
        check(f"# ours\n{line}\n".encode())
    assert "line 2" in str(refused.value) and says in str(refused.value)


def test_pip_sees_the_operators_pip_settings_and_nothing_else_of_the_stack() -> None:
    env = pip_env(
        {"PIP_INDEX_URL": "https://mirror/simple", "AWS_SECRET_ACCESS_KEY": "x", "HOME": "/root"},
        Path("/tmp/work"),
    )
    assert env["PIP_INDEX_URL"] == "https://mirror/simple" and env["HOME"] == "/tmp/work"
    assert "AWS_SECRET_ACCESS_KEY" not in env
