"""The demo's last words: a URL only while its stack is still up (it used to print the
dashboard URL of a stack it had already stopped)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_journey", ROOT / "infra/demo_journey.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("demo_journey", module)
    spec.loader.exec_module(module)
    return module


def test_a_stopped_stack_gets_no_url_only_the_way_back() -> None:
    said = demo().closing_words("http://127.0.0.1:40123", keep=False)
    assert "127.0.0.1:40123" not in said and "has stopped" in said
    assert "toolcall300 serve --state .toolcall300/demo" in said
    assert "sign in with the key in .toolcall300/demo/licence-key" in said


def test_a_kept_stack_gets_its_dashboard_url() -> None:
    said = demo().closing_words("http://127.0.0.1:40123", keep=True)
    assert "Dashboard: http://127.0.0.1:40123/dashboard" in said and "keeps running" in said
