"""Install hints name a line that works: no package index carries toolcall300, so
``pip install 'toolcall300[local]'`` fails; from a checkout the line names the checkout."""

from __future__ import annotations

import importlib
import io
from pathlib import Path

import pytest

from toolcall300 import cliutil
from toolcall300.cli import dispatch

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_extra_names_this_checkouts_own_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def without_service(name: str, *args: object) -> object:
        if name.startswith("toolcall300.service"):
            raise ImportError("No module named 'boto3'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_service)
    err = io.StringIO()
    assert dispatch(["serve"], io.StringIO(), err) == 1
    assert f"pip install '{ROOT}[local]'" in err.getvalue()
    assert "'toolcall300[local]'" not in err.getvalue()


def test_outside_a_checkout_the_hint_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cliutil, "__file__", str(tmp_path / "kit" / "toolcall300" / "cliutil.py"))
    line = cliutil.install_line("verify")
    assert "from a checkout of the toolcall300 repository" in line
    assert "py3-none-any.whl[verify]" in line and "no package index carries" in line
