"""The tree is the architecture: each import rule of README's layout is checked, not promised.

- Outside ``service/`` only the standard library and ``toolcall300`` (that part is the free kit),
  except :data:`OPTIONAL`: ``cryptography`` for offline report verification, guarded.
- ``generator``, ``scoring``, ``toolshim`` and ``argcheck`` import only the foundation, never
  each other (scoring names ``toolshim`` by string, as an adapter spec, not by import).
- The foundation (``schema`` and ``importers`` as whole packages) imports only the foundation.
- ``client`` and ``jobs`` import no service code.
- Only ``service/sdk`` imports boto3, botocore and stripe; ``service/domain`` imports neither
  ``service/sdk`` nor Powertools.
- Nothing outside ``service/local`` imports it.
- ``service/hosted`` never imports ``service/api`` (its collaborators come in a deps object
  the composition root builds, so the two cannot form a circle).
- ``service/sdk`` imports only ``service/domain``, ``service/errors`` and the core (an adapter
  translates an SDK for the domain; it orchestrates nothing); so does ``service/statefolder``,
  the one-machine edition's adapters (and neither imports the other).
- Only the composition roots reach ``service/api/wiring``: ``service/api`` itself and the local
  stack's start (``service/local/stack``), as each function's ``app.py`` does. Nothing below
  them (domain, sdk, hosted, the worker, tripwires, settings) does: their collaborators come
  in as arguments. The routes (``service/api/routes``) do not either: they receive their ports
  through Powertools' ``Depends`` from ``service/api/deps``.

Each rule is a function over (module name, imported names), so the tests at the bottom can
show it catching a deliberate break.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolcall300

PACKAGE = Path(toolcall300.__file__).parent
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
FOUNDATION = {
    "toolcall300",
    "toolcall300.cli",
    "toolcall300.cliutil",
    "toolcall300.canonical",
    "toolcall300.spec",
    "toolcall300.rules",
    "toolcall300.catalog",
    "toolcall300.controls",
    "toolcall300.schema",
    "toolcall300.importers",
}
#: Foundation packages: every module inside them is foundation (the schema engine, the catalog
#: importers that every suite's CLI may read a catalog with).
FOUNDATION_PACKAGES = ("toolcall300.schema", "toolcall300.importers")
SUITES = ("generator", "scoring", "toolshim", "argcheck")
SDK_ONLY = {"boto3", "botocore", "stripe"}
WIRING = "toolcall300.service.api.wiring"
#: The two adapter sets: AWS's (``sdk``) and the one-machine edition's (``statefolder``).
ADAPTER_ROOMS = ("sdk", "statefolder")
#: Besides ``service/api``, the one module that builds the edition's collaborators.
WIRING_ROOTS = {"toolcall300.service.local.stack"}
#: The kit's one optional dependency: offline report verification needs Ed25519 arithmetic from
#: ``cryptography`` (the ``verify`` extra), imported only where a missing package becomes a message.
OPTIONAL = {"toolcall300.argcheck.report": {"cryptography"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(source: str, module: str) -> set[str]:
    """Every module named by an import statement anywhere in ``source`` (functions too),
    and every literal name passed to ``importlib.import_module`` or ``__import__``."""
    found: set[str] = set()
    package = module.split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.add(base)
            # ``from toolcall300 import scoring`` names the submodule itself
            found |= {
                f"{base}.{alias.name}" for alias in node.names if base.startswith("toolcall300")
            }
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "__import__")
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _own(names: set[str]) -> set[str]:
    """The toolcall300 modules among ``names``, folded to the real module (``from x import f``
    adds ``x.f``; keep only names that are modules or packages of the tree)."""
    return {n for n in names if _within(n, "toolcall300") and _exists(n)}


def _exists(name: str) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (PACKAGE / rel).is_dir() or (PACKAGE / rel).with_suffix(".py").is_file()


def _in_foundation(name: str) -> bool:
    return name in FOUNDATION or any(_within(name, p) for p in FOUNDATION_PACKAGES)


def violations(module: str, names: set[str]) -> list[str]:  # noqa: C901
    """The rules ``module`` breaks by importing ``names`` (empty when it keeps them all)."""
    out: list[str] = []
    own = _own(names)
    roots = {n.split(".")[0] for n in names}
    in_service = _within(module, "toolcall300.service")
    if not in_service:
        foreign = roots - STDLIB - {"toolcall300"} - OPTIONAL.get(module, set())
        if foreign:
            out.append(f"outside service/ imports {sorted(foreign)} (must be stdlib only)")
        service = sorted(n for n in own if _within(n, "toolcall300.service"))
        if service:
            out.append(f"outside service/ imports service code {service}")
    suite = next((s for s in SUITES if _within(module, f"toolcall300.{s}")), None)
    if suite:
        crossing = sorted(
            n for n in own if not _in_foundation(n) and not _within(n, f"toolcall300.{suite}")
        )
        if crossing:
            out.append(f"{suite} imports {crossing} (only the foundation and itself)")
    if _in_foundation(module):
        beyond = sorted(n for n in own if not _in_foundation(n))
        if beyond:
            out.append(f"the foundation imports {beyond} (only the foundation)")
    if roots & SDK_ONLY and not _within(module, "toolcall300.service.sdk"):
        out.append(f"imports {sorted(roots & SDK_ONLY)} outside service/sdk")
    if _within(module, "toolcall300.service.domain"):
        if any(_within(n, "toolcall300.service.sdk") for n in own):
            out.append("service/domain imports service/sdk")
        if "aws_lambda_powertools" in roots or any(
            _within(n, "toolcall300.service.observability") for n in own
        ):
            out.append("service/domain imports Powertools")
    if _within(module, "toolcall300.service.hosted") and any(
        _within(n, "toolcall300.service.api") for n in own
    ):
        out.append("service/hosted imports service/api")
    adapters = next((r for r in ADAPTER_ROOMS if _within(module, f"toolcall300.service.{r}")), None)
    if adapters:
        beyond = sorted(
            n
            for n in own
            if _within(n, "toolcall300.service")
            and n != "toolcall300.service"
            and not any(
                _within(n, f"toolcall300.service.{room}") for room in ("domain", "errors", adapters)
            )
        )
        if beyond:
            out.append(f"service/{adapters} imports {beyond} (only domain, errors and the core)")
    if (
        any(_within(n, WIRING) for n in own)
        and not _within(module, "toolcall300.service.api")
        and module not in WIRING_ROOTS
    ):
        out.append("reaches service/api/wiring from below (only composition roots may)")
    if _within(module, "toolcall300.service.api.routes") and any(_within(n, WIRING) for n in own):
        out.append("a route reaches service/api/wiring (routes take ports from api.deps)")
    if not _within(module, "toolcall300.service.local") and any(
        _within(n, "toolcall300.service.local") for n in own
    ):
        out.append("imports service/local from outside it")
    return out


def all_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path


MODULES = list(all_modules())


def test_the_tree_has_the_rooms_these_rules_are_about() -> None:
    names = {name for name, _ in MODULES}
    rooms = (
        "client",
        "jobs",
        "service.domain",
        "service.sdk",
        "service.statefolder",
        "service.api",
    )
    for room in (*SUITES, *rooms):
        assert f"toolcall300.{room}" in names, room
    assert {"toolcall300.service.local", "toolcall300.service.hosted"} <= names


@pytest.mark.parametrize("path", [p for _, p in MODULES], ids=lambda p: module_name(p))
def test_module_keeps_the_import_rules(path: Path) -> None:
    module = module_name(path)
    broken = violations(module, imports(path.read_text(encoding="utf-8"), module))
    assert not broken, f"{module}: " + "; ".join(broken)


@pytest.mark.parametrize(
    ("module", "source", "rule"),
    [
        ("toolcall300.scoring.grading", "import requests", "stdlib only"),
        ("toolcall300.toolshim.pipeline", "from toolcall300.service import errors", "service code"),
        (
            "toolcall300.scoring.grading",
            "from toolcall300.toolshim import normalise",
            "scoring imports",
        ),
        (
            "toolcall300.argcheck.check",
            "from toolcall300.generator import values",
            "argcheck imports",
        ),
        (
            "toolcall300.generator.build",
            "import importlib\nimportlib.import_module('toolcall300.scoring.adapters')",
            "generator imports",
        ),
        ("toolcall300.client.ci", "from toolcall300.service.api import wiring", "service code"),
        ("toolcall300.jobs.harness", "from toolcall300.service.domain import runs", "service code"),
        (
            "toolcall300.service.domain.licences",
            "from toolcall300.service.sdk import dynamo",
            "service/sdk",
        ),
        (
            "toolcall300.service.domain.webhook",
            "from aws_lambda_powertools import Logger",
            "Powertools",
        ),
        ("toolcall300.service.api.routes.runs", "import boto3", "outside service/sdk"),
        (
            "toolcall300.service.hosted.flow",
            "from toolcall300.service.local import worker",
            "service/local",
        ),
        (
            "toolcall300.service.hosted.flow",
            "from toolcall300.service.api.wiring import run_store",
            "service/hosted imports service/api",
        ),
        (
            "toolcall300.service.hosted.flow",
            "def f():\n    from toolcall300.service.api import wiring",
            "service/hosted imports service/api",
        ),
        (
            "toolcall300.service.sdk.ecr",
            "from toolcall300.service.hosted.submit import ImageFacts",
            "service/sdk imports",
        ),
        (
            "toolcall300.service.sdk.runs",
            "from toolcall300.service.observability import logger",
            "service/sdk imports",
        ),
        ("toolcall300.service.sdk.ecr", "from toolcall300.service.domain import images", ""),
        (
            "toolcall300.service.sdk.s3",
            "from toolcall300.service.statefolder.files import FileCorpus",
            "service/sdk imports",
        ),
        (
            "toolcall300.service.statefolder.files",
            "from toolcall300.service.sdk import s3",
            "service/statefolder imports",
        ),
        (
            "toolcall300.service.tripwires",
            "from toolcall300.service.api.wiring import check_ledger",
            "reaches service/api/wiring",
        ),
        (
            "toolcall300.service.local.worker",
            "def f():\n    from toolcall300.service.api import wiring",
            "reaches service/api/wiring",
        ),
        (
            "toolcall300.service.settings",
            "import toolcall300.service.api.wiring",
            "reaches service/api/wiring",
        ),
        ("toolcall300.service.local.stack", "from toolcall300.service.api import wiring", ""),
        (
            "toolcall300.service.api.routes.runs",
            "from toolcall300.service.api import wiring",
            "a route reaches service/api/wiring",
        ),
        (
            "toolcall300.service.api.routes.badges",
            "def f():\n    from toolcall300.service.api.wiring import edition",
            "a route reaches service/api/wiring",
        ),
        ("toolcall300.service.api.routes.runs", "from toolcall300.service.api import deps", ""),
        ("toolcall300.service.api.deps", "from toolcall300.service.api import wiring", ""),
        ("toolcall300.rules", "from toolcall300.scoring import grading", "the foundation imports"),
        (
            "toolcall300.importers.forms",
            "from toolcall300.generator import build",
            "the foundation imports",
        ),
        ("toolcall300.schema", "from . import x", ""),
    ],
)
def test_each_rule_catches_a_deliberate_break(module: str, source: str, rule: str) -> None:
    broken = violations(module, imports(source, module))
    if rule:
        assert any(rule in b for b in broken), broken
    else:
        assert broken == []


def test_relative_imports_resolve_inside_the_package() -> None:
    assert "toolcall300.scoring.adapters" in imports(
        "from . import adapters", "toolcall300.scoring.grading"
    )


def test_the_optional_dependency_is_imported_only_under_an_import_error_guard() -> None:
    """A kit without ``cryptography`` still imports every module; only verifying says it is
    missing (tests/unit/test_argcheck_report.py runs that case)."""
    for module, optional in OPTIONAL.items():
        path = PACKAGE.parent / Path(*module.split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in node.handlers
            ):
                guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                if any(n.split(".")[0] in optional for n in names):
                    assert id(node) in guarded, f"{module}: unguarded import of {names}"
                    assert node.col_offset > 0, f"{module}: {names} imported at module level"
