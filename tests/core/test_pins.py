"""Every dependency the project installs is pinned, and what installs uses the pins.

A fresh clone went red with nothing changed here: moto 5.2.6 reached the index and an unpinned
``pip install -e '.[dev]'`` took it. ``infra/pins.py`` names the pin files and checks them.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pins_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tc300_pins", ROOT / "infra" / "pins.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pins = _pins_module()


def test_every_dependency_the_project_names_has_an_exact_pin() -> None:
    assert pins.problems() == []


def test_the_pins_hold_the_versions_ci_last_passed_with() -> None:
    """moto 5.2.6 authorises S3 by operation name (docs/runs-contract.md); the tier passes on
    it too, but the pin stays where CI was green until `make pins` moves it on purpose."""
    dev = pins.pins(pins.CONSTRAINTS)
    assert {"moto", "boto3", "aws-lambda-powertools", "stripe", "pydantic", "ruff", "mypy"} <= set(
        dev
    )
    # what installs needs pinning too: a new pip or setuptools changes how the rest resolves
    assert {"pip", "setuptools"} <= set(dev)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("moto>=5.1\n", "not an exact pin"),
        ("moto==5.2.5\nstripe\n", "not an exact pin"),
    ],
)
def test_a_range_is_not_a_pin(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "c.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=problem):
        pins.pins(path)


def test_a_dependency_added_without_its_pin_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partial = tmp_path / "constraints.txt"
    lines = [ln for ln in pins.CONSTRAINTS.read_text().splitlines() if not ln.startswith("moto==")]
    partial.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(pins, "CONSTRAINTS", partial)
    problems = pins.problems()
    assert any(p.endswith("has no exact pin for moto") for p in problems), problems


def test_names_are_compared_as_pip_compares_them() -> None:
    assert pins.canonical("aws_lambda_powertools") == pins.canonical("AWS-Lambda.Powertools")
    assert pins.requirement_names(["aws-lambda-powertools[tracer]>=3.37,<4  # x", "-e ."]) == {
        "aws-lambda-powertools"
    }


def test_make_and_ci_install_from_the_pins() -> None:
    makefile = (ROOT / "Makefile").read_text()
    installs = [
        ln
        for ln in makefile.splitlines()
        if re.search(r"pip install|npm (ci|install)", ln) and "@echo" not in ln
    ]
    assert installs, "the Makefile installs nothing?"
    for line in installs:
        if "npm" in line:
            assert "npm ci" in line, line
        else:
            assert re.search(
                r"-c (\S*/)?(constraints\.txt|infra/sam-constraints\.txt|peers/constraints\.txt)",
                line,
            ), line
    # CI installs Python packages only through make (apt packages are Debian's release)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install" not in ci and "make test" in ci


def test_the_layer_requirements_are_exact_and_cover_the_layers_imports() -> None:
    layer = pins.pins(pins.LAYER_REQUIREMENTS)
    for name in pins.requirement_names(pins.LAYER_DIRECT):
        assert name in layer
    dev = pins.pins(pins.CONSTRAINTS)
    # the layer and the tests agree on every package both install
    disagree = {n: (v, dev[n]) for n, v in layer.items() if n in dev and dev[n] != v}
    assert disagree == {}


def test_the_node_peers_are_locked() -> None:
    lock = json.loads((ROOT / "peers" / "node" / "package-lock.json").read_text())
    declared = json.loads((ROOT / "peers" / "node" / "package.json").read_text())["dependencies"]
    for name in declared:
        entry = lock["packages"][f"node_modules/{name}"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", entry["version"]), entry
        assert entry.get("integrity", "").startswith("sha512-"), entry


def test_a_held_version_is_the_one_pinned() -> None:
    dev = pins.pins(pins.CONSTRAINTS)
    for name, (version, why) in pins.HELD.items():
        assert dev[name] == version, why
