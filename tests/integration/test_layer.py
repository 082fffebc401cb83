"""The shared Lambda layer, built as ``sam build`` builds it, holds everything the handlers import.

``layers/toolcall300/requirements.txt`` once lacked ``cryptography``: every test passed (the
venv has it) while on AWS the report-signing module could not be imported. Here the layer is
resolved for the template's platform (arm64, the runtime's CPython, binary wheels only) and
built for this machine's platform, and every handler and every module Lambda may import are
imported from it by an interpreter that sees nothing else (infra/build_layer.py). The first
run downloads the wheels; later runs reuse the layer while the requirements are unchanged.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "layer"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_layer", ROOT / "infra" / "build_layer.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_layer"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


build_layer = _load()


def _requirement_names() -> set[str]:
    lines = build_layer.REQUIREMENTS.read_text().splitlines()
    found = (re.match(r"\s*([A-Za-z0-9_.-]+)", line.split("#")[0]) for line in lines)
    return {re.sub(r"[-_.]+", "-", m.group(1)).lower() for m in found if m}


@pytest.fixture(scope="module")
def layer() -> dict[str, Any]:
    wanted = build_layer.template_target()
    python = build_layer.interpreter(wanted.python) or sys.executable
    version = tuple(sys.version_info[:2]) if python == sys.executable else wanted.python
    here = build_layer.Target(build_layer.machine_architecture(), version)
    return {"path": build_layer.build(here, OUT), "python": python}


def test_the_layer_resolves_from_wheels_for_the_templates_platform() -> None:
    target = build_layer.template_target()
    assert target == build_layer.Target("arm64", (3, 12))  # BuildArchitecture, Runtime
    assert "manylinux2014_aarch64" in target.pip_args
    resolved = {re.sub(r"[-_.]+", "-", n) for n in build_layer.resolve(target, out=ROOT / "build")}
    assert _requirement_names() <= resolved, _requirement_names() - resolved
    assert "cryptography" in resolved  # the report signer's


def test_every_handler_and_module_imports_from_the_layer_alone(layer: dict[str, Any]) -> None:
    handlers = build_layer.handler_files()
    assert {p.parent.name for p in handlers} >= {"argcheck", "runs", "batch_events", "sweeper"}
    modules = build_layer.layer_modules(layer["path"])
    assert "toolcall300.service.sdk.signing" in modules  # imported lazily by the checker
    assert not [m for m in modules if m.startswith("toolcall300.service.local")]
    assert build_layer.import_check(layer["path"], handlers, modules, python=layer["python"]) == []


def test_the_check_sees_only_the_layer(layer: dict[str, Any]) -> None:
    """The local edition reads YAML, which this venv has and the layer does not: imported the
    way the handlers are, it fails, so a dependency only the venv holds cannot pass."""
    failures = build_layer.import_check(
        layer["path"], [], ["toolcall300.service.local.cfn"], python=layer["python"]
    )
    assert len(failures) == 1 and "No module named 'yaml'" in failures[0], failures
