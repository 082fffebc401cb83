"""No module of the package has a maintainability index under :data:`MIN_INDEX`.

The index is radon's (``radon mi -s layers/toolcall300/toolcall300``: Halstead volume,
cyclomatic complexity, lines and comments on a 0-100 scale). A module under 10 (radon's grade
C) is one that has grown past what one reader holds: split it by what its parts guard, as
``generator/checks/`` and ``generator/oracles/`` are. radon is a dev dependency, so this
lives in ``tests/unit`` (``tests/core`` imports nothing third-party); the function-length
bound beside it is ``tests/core/test_function_length.py``.
"""

from __future__ import annotations

from pathlib import Path

from radon.metrics import mi_visit

import toolcall300

PACKAGE = Path(toolcall300.__file__).parent
MIN_INDEX = 10.0


def maintainability(path: Path) -> float:
    """The module's index as ``radon mi -s`` prints it (multi-line strings count as comments)."""
    return float(mi_visit(path.read_text(encoding="utf-8"), multi=True))


def test_no_module_of_the_package_is_under_the_bound() -> None:
    low = {
        path.relative_to(PACKAGE).as_posix(): round(index, 2)
        for path in sorted(PACKAGE.rglob("*.py"))
        if (index := maintainability(path)) < MIN_INDEX
    }
    assert low == {}, f"split these by what their parts guard: {low}"


def test_the_bound_catches_a_module_grown_past_reading(tmp_path: Path) -> None:
    """A module of many long branching functions scores under the bound, one of them above."""
    branches = "".join(f"    if x == {i}:\n        y = x * {i} + {i}\n" for i in range(40))
    func = "def f{n}(x):\n    y = 0\n" + branches + "    return y\n\n\n"
    big, small = tmp_path / "big.py", tmp_path / "small.py"
    big.write_text("".join(func.format(n=n) for n in range(40)))
    small.write_text(func.format(n=0))
    assert maintainability(big) < MIN_INDEX <= maintainability(small)
