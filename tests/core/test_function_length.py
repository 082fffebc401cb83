"""Every function of the package is at most :data:`MAX_LINES` lines long, so that a new one is
cut into named steps as it is written, not after.

A function's length is counted from its ``def`` line to its last line, docstring included,
decorators not; methods and nested functions count on their own (a nested function's lines
count in its parent too). ruff's C901 (complexity) and PLR0915 (statements) hold the other
two bounds (pyproject.toml); this one holds what they let through, a long run of simple steps.

The functions already past the bound are listed in :data:`LONGER` with their length today:
debts, not precedents. No name joins the list, and a listed function that grows past its figure
fails. One cut to the bound (or renamed, or gone) should leave the list; its stale entry is
named in a warning rather than a failure, so that cutting a function never turns main red.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import toolcall300

PACKAGE = Path(toolcall300.__file__).parent
MAX_LINES = 60

#: ``path/in/package.py::Qualified.name`` -> its length when it was listed (the most it may be).
LONGER = {
    "generator/cli.py::parse_args": 67,
    "generator/deltas/checks.py::check": 72,
    "generator/deltas/wire.py::render": 152,
    "generator/rules/nesting.py::nested_flattened": 75,
    "importers/dialects.py::rewrite": 76,
    "importers/dialects.py::rewrite.walk": 67,
    "scoring/cli.py::parse_args": 99,
    "scoring/render.py::_junit_suite": 66,
    "scoring/report.py::score_cases": 68,
    "scoring/selection.py::parse_expression": 63,
    "scoring/selftest.py::selftest_checks": 127,
    "scoring/tracks/deltas_judge.py::score": 99,
    "scoring/tracks/parallel.py::score_turns": 94,
    "service/domain/runs/lifecycle.py::finish_scored": 82,
    "toolshim/deltas.py::_Reading.feed": 85,
    "toolshim/repair.py::_compile_object": 70,
}


def function_lengths(root: Path) -> dict[str, int]:
    """``path::qualname`` -> lines, for every function and method of the ``.py`` files under
    ``root`` (nested ones named through their parent: ``outer.inner``)."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    name = prefix + child.name
                    found[f"{where}::{name}"] = (
                        (child.end_lineno or child.lineno) - child.lineno + 1
                    )
                    stack.append((child, name + "."))
                elif isinstance(child, ast.ClassDef):
                    stack.append((child, prefix + child.name + "."))
                else:
                    stack.append((child, prefix))
    return found


def length_problems(lengths: dict[str, int], listed: dict[str, int]) -> list[str]:
    """What breaks the rule: a function past the bound that is not listed, and a listed one
    that grew past its figure."""
    problems = []
    for name, lines in sorted(lengths.items()):
        allowed = listed.get(name, MAX_LINES)
        if lines > allowed:
            how = f"grew past its listed {allowed}" if name in listed else f"is past {MAX_LINES}"
            problems.append(f"{name} has {lines} lines and {how}: cut it into named steps")
    return problems


def stale_entries(lengths: dict[str, int], listed: dict[str, int]) -> list[str]:
    """Listed functions now within the bound, renamed or gone: entries to remove."""
    return sorted(name for name in listed if lengths.get(name, 0) <= MAX_LINES)


def test_every_function_of_the_package_is_within_the_bound() -> None:
    lengths = function_lengths(PACKAGE)
    assert length_problems(lengths, LONGER) == []
    stale = stale_entries(lengths, LONGER)
    if stale:
        warnings.warn(f"within {MAX_LINES} lines now, remove from LONGER: {stale}", stacklevel=1)


def test_the_bound_catches_a_new_long_function_and_a_grown_listed_one(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))  # def line + 60: one too many
    (tmp_path / "mod.py").write_text(
        "class A:\n    def short(self) -> None:\n        pass\n\n"
        f"def long() -> None:\n{body}\n"
        f"def listed() -> None:\n{body}"
    )
    lengths = function_lengths(tmp_path)
    assert lengths["mod.py::A.short"] == 2
    assert lengths["mod.py::long"] == MAX_LINES + 1
    problems = length_problems(lengths, {"mod.py::listed": MAX_LINES})
    assert [p.split(" has ")[0] for p in problems] == ["mod.py::listed", "mod.py::long"]
    assert "grew past its listed 60" in problems[0] and "is past 60" in problems[1]


def test_a_listed_function_cut_to_the_bound_is_named_as_stale(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def f() -> None:\n    pass\n")
    lengths = function_lengths(tmp_path)
    listed = {"mod.py::f": 70, "mod.py::gone": 80}
    assert length_problems(lengths, listed) == []
    assert stale_entries(lengths, listed) == ["mod.py::f", "mod.py::gone"]
