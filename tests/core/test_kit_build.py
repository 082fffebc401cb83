"""The free kit as shipped: built by infra/build_kit.py, run with the README's own commands.

The kit folder is run by Debian's ``python3`` in isolated mode (``-I``: no environment, no
user site, no current folder on ``sys.path``), so nothing of the development install leaks in.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python() -> str:
    return (
        "/usr/bin/python3"
        if Path("/usr/bin/python3").exists()
        else (shutil.which("python3") or sys.executable)
    )


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist") / "toolcall300-kit"
    subprocess.run(
        [sys.executable, str(ROOT / "infra" / "build_kit.py"), "--out", str(out), "--zip"],
        check=True,
        capture_output=True,
    )
    return out


def run(kit: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_python(), "-I", *argv], cwd=kit, capture_output=True, text=True, timeout=120
    )


def test_kit_holds_the_free_parts_only(kit: Path) -> None:
    names = {p.relative_to(kit).as_posix() for p in kit.rglob("*") if p.is_file()}
    assert {
        "score.py",
        "generate.py",
        "toolshim.py",
        "sample30.jsonl",
        "README.md",
        "LICENSE",
    } <= names
    assert not any(n.startswith("toolcall300/service") for n in names)
    assert not any("rationale" in n or n.endswith("toolcall300.jsonl") for n in names)
    assert sum(1 for _ in (kit / "sample30.jsonl").open(encoding="utf-8")) == 30
    assert kit.with_suffix(".zip").stat().st_size > 0


def test_the_kit_licence_is_the_cc0_legal_code_of_the_repository(kit: Path) -> None:
    text = (kit / "LICENSE").read_bytes()
    assert text == (ROOT / "LICENSE").read_bytes()  # tests/core/test_licences.py pins its text
    assert b"CC0 1.0 Universal" in text and b"4. Limitations and Disclaimers." in text
    assert not (kit / "LICENSE-COMMERCIAL.txt").exists()


def test_the_kit_is_the_package_minus_the_service(kit: Path) -> None:
    package = ROOT / "layers" / "toolcall300" / "toolcall300"

    def files(root: Path) -> set[str]:
        return {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }

    expected = {n for n in files(package) if not n.startswith("service/")}
    assert files(kit / "toolcall300") == expected
    assert {
        "scoring/grading.py",
        "toolshim/pipeline.py",
        "client/ci.py",
        "jobs/harness.py",
    } <= expected


@pytest.mark.parametrize("adapter", ["toolshim:normalise", "toolshim"])
def test_the_seeds_toolshim_command_works_beside_the_toolshim_entry_script(
    kit: Path, adapter: str
) -> None:
    result = run(kit, "score.py", "--corpus", "sample30.jsonl", "--adapter", adapter)
    assert result.returncode == 0, result.stderr
    assert "exact match             30 / 30" in result.stdout and "in-sample" in result.stdout


def test_the_kit_scores_the_parallel_sample(kit: Path) -> None:
    assert (kit / "parallel-sample24.jsonl").read_bytes() == (
        ROOT / "corpus_private" / "parallel" / "parallel-sample24.jsonl"
    ).read_bytes()
    result = run(kit, "score.py", "--corpus", "parallel-sample24.jsonl", "--adapter", "toolshim")
    assert result.returncode == 0, result.stderr
    assert "exact turns               24 / 24" in result.stdout and "in-sample" in result.stdout
    result = run(kit, "score.py", "--corpus", "parallel-sample24.jsonl", "--adapter", "integrator")
    assert result.returncode == 0 and "exact turns               0 / 24" in result.stdout


def test_the_kit_scores_the_deltas_sample(kit: Path) -> None:
    assert (kit / "deltas-sample.jsonl").read_bytes() == (
        ROOT / "layers/toolcall300/toolcall300/data/deltas-sample.jsonl"
    ).read_bytes()
    result = run(kit, "score.py", "--corpus", "deltas-sample.jsonl", "--adapter", "toolshim")
    assert result.returncode == 0, result.stderr
    assert "34/34 (100.0%)" in result.stdout and "in-sample" in result.stdout
    assert re.search(r"unsafe commits \(goal 0\) +0\n", result.stdout)
    result = run(kit, "score.py", "--corpus", "deltas-sample.jsonl", "--adapter", "integrator")
    assert result.returncode == 0 and "exact (every partition" in result.stdout


def test_selftest_runs_in_isolated_mode(kit: Path) -> None:
    result = run(kit, "score.py", "--selftest")
    assert result.returncode == 0, result.stderr
    assert "selftest" in result.stdout


def test_naive_control_scores_the_public_sample(kit: Path, tmp_path: Path) -> None:
    report = tmp_path / "naive.json"
    result = run(
        kit, "score.py", "--corpus", "sample30.jsonl", "--adapter", "naive", "--json", str(report)
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["cases"] == 30
    value_cases = [
        c for c in data["per_case"] if c["category"] not in ("hallucinated_tool", "unrecoverable")
    ]
    assert not any(c["passed"] for c in value_cases)  # the control passes no repairable case


def test_generator_and_argcheck_run_from_the_kit(kit: Path, tmp_path: Path) -> None:
    result = run(kit, "generate.py", "--out", str(tmp_path / "mine"), "--tools", "demo_tools.json")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mine" / "toolcall300.jsonl").exists()
    assert run(kit, "check.py", "--selftest").returncode == 0


def test_module_entry_point_works_without_isolation(kit: Path) -> None:
    result = subprocess.run(
        [_python(), "-m", "toolcall300", "score", "--spec"],
        cwd=kit,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "grading contract" in result.stdout


def test_every_score_command_of_the_kit_readme_runs(kit: Path) -> None:
    readme = (kit / "README.md").read_text(encoding="utf-8")
    lines = [ln.split("#")[0].split() for ln in readme.splitlines() if "python3 score.py" in ln]
    assert len(lines) >= 5
    mine = kit / "yourmodule.py"
    mine.write_text("def normalise(text, tools):\n    return None\n", encoding="utf-8")
    try:
        for words in lines:
            result = run(kit, *words[1:])
            assert result.returncode == 0, (words, result.stderr)
    finally:
        mine.unlink()
