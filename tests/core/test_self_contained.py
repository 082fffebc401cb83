"""The repository explains itself: no code or test reads a file outside it.

A clone holds everything its tests need (the JSON-Schema-Test-Suite files are vendored in
tests/data with their licence); a path into a folder beside the clone would make a test fail,
or silently skip, anywhere but on the machine it was written on.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("layers", "tests", "bench", "infra", "functions", "peers")
#: Spellings of a place outside the repository.
OUTSIDE = ("../shared", "/work/", "shared/seeds", "shared/data")


def outside_paths(source: str) -> list[str]:
    """Each string or path expression in ``source`` that names a place outside the repository."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(o in node.value for o in OUTSIDE):
                found.append(f"line {node.lineno}: {node.value[:60]!r}")
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == "shared"
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


def _python_files() -> list[Path]:
    return [
        p
        for top in SOURCES
        for p in sorted((ROOT / top).rglob("*.py"))
        if ".venv" not in p.parts
        and "node_modules" not in p.parts
        and p != Path(__file__).resolve()  # this file spells the forbidden places to find them
    ]


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_names_a_place_outside_the_repository(path: Path) -> None:
    assert outside_paths(path.read_text("utf-8")) == []


@pytest.mark.parametrize(
    "source",
    [
        'SUITE = Path(__file__).resolve().parents[2].parent / "shared" / "data"',
        'seeds = Path("../shared/seeds")',
        'open("/work/shared/seeds/004.txt")',
    ],
)
def test_the_rule_catches_a_path_outside(source: str) -> None:
    assert outside_paths(source)


def test_the_vendored_suite_is_in_the_repository() -> None:
    suite = ROOT / "tests" / "data" / "JSON-Schema-Test-Suite"
    assert (suite / "LICENSE").is_file()
    assert sorted(suite.glob("draft2020-12/*.json"))
