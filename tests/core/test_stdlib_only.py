"""stdlib-only is checked, not promised: every import of every suite-core module (directly
under ``toolcall300/``, not ``service/``) names the standard library or toolcall300 itself."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import toolcall300

PACKAGE = Path(toolcall300.__file__).parent
CORE_MODULES = sorted(PACKAGE.glob("*.py"))
ALLOWED = set(sys.stdlib_module_names) | {"toolcall300", "__future__"}


def imported_roots(source: str) -> set[str]:
    """The top-level package of every import statement, wherever it appears (functions too).

    Relative imports (``from . import x``) stay inside the package and count as toolcall300.
    """
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add("toolcall300" if node.level else (node.module or "").split(".")[0])
    return roots


def dynamic_imports(source: str) -> list[str]:
    """Literal names passed to ``importlib.import_module`` or ``__import__`` (a side door)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "__import__")
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append(node.args[0].value.split(".")[0])
    return out


def test_the_core_has_the_modules_this_check_is_about() -> None:
    names = {p.stem for p in CORE_MODULES}
    assert {"canonical", "schema", "scorer", "adapters", "streamproto", "cli"} <= names


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda p: p.name)
def test_core_module_imports_only_the_standard_library(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    foreign = (imported_roots(source) | set(dynamic_imports(source))) - ALLOWED
    assert not foreign, f"{path.name} imports {sorted(foreign)} (suite core must be stdlib only)"


def test_core_never_imports_the_service_package() -> None:
    for path in CORE_MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "toolcall300.service"
            ):
                pytest.fail(f"{path.name} imports {node.module}")
            if isinstance(node, ast.Import) and any(
                a.name.startswith("toolcall300.service") for a in node.names
            ):
                pytest.fail(f"{path.name} imports toolcall300.service")


def test_the_check_catches_a_third_party_import() -> None:
    source = "import json\ndef f():\n    import requests\nfrom boto3.session import Session\n"
    assert imported_roots(source) - ALLOWED == {"requests", "boto3"}
    assert dynamic_imports("import importlib\nimportlib.import_module('yaml.x')") == ["yaml"]
    assert imported_roots("from . import schema") == {"toolcall300"}
