"""infra/compile_layer.py: the layer ships bytecode for the runtime's Python, never another's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compile_layer", ROOT / "infra" / "compile_layer.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_it_reads_the_runtime_from_the_template() -> None:
    assert load().runtime_version() == (3, 12)  # Globals.Function.Runtime: python3.12


def test_it_refuses_an_interpreter_that_is_not_the_runtimes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load()
    monkeypatch.setattr(
        module, "runtime_version", lambda: (sys.version_info[0], sys.version_info[1] + 1)
    )
    (tmp_path / "m.py").write_text("x = 1\n")
    assert module.main([str(tmp_path)]) == 2
    assert not (tmp_path / "__pycache__").exists()


def test_it_writes_unchecked_hash_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = load()
    monkeypatch.setattr(module, "runtime_version", lambda: sys.version_info[:2])
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    assert module.main([str(tmp_path)]) == 0
    tag = sys.implementation.cache_tag
    pyc = tmp_path / "pkg" / "__pycache__" / f"m.{tag}.pyc"
    flags = int.from_bytes(pyc.read_bytes()[4:8], "little")
    assert flags == 0b01  # hash-based, not checked against the source (PEP 552)
