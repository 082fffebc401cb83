"""The free kit runs from a bare folder with nothing installed: the core modules and data/
are copied alone (no service/) into a temp dir and run by the system ``python3`` in
isolated mode with no site-packages (``-I -S``), so nothing installed can leak in.

``python3 -I -m toolcall300`` itself cannot be used: since Python 3.11, ``-I`` implies
``-P``, which keeps the current folder off ``sys.path``, so ``-m`` would not find the kit.
The runner below puts the kit folder (and only it) on ``sys.path`` and then runs the
package's ``__main__`` exactly as ``-m`` does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_scorer_data import corpus_bytes, tiny_corpus

import toolcall300

PACKAGE = Path(toolcall300.__file__).parent
REPO = Path(__file__).resolve().parents[2]
RUNNER = (
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
    "runpy.run_module('toolcall300', run_name='__main__', alter_sys=True)"
)


def system_python() -> str:
    """Debian's python3 when present (nothing of ours is installed there), else the one on PATH."""
    for candidate in ("/usr/bin/python3", shutil.which("python3"), sys.executable):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip("no python3 interpreter found")


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kit") / "toolcall300-kit"
    subprocess.run(
        [sys.executable, str(REPO / "infra" / "build_kit.py"), "--out", str(root)],
        check=True,
        capture_output=True,
    )
    (root / "corpus.jsonl").write_bytes(corpus_bytes(tiny_corpus()))
    return root


def kit_run(kit: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [system_python(), "-I", "-S", "-c", RUNNER, str(kit), *argv],
        cwd=kit,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_kit_has_no_service_code(kit: Path) -> None:
    assert not (kit / "toolcall300" / "service").exists()
    assert (kit / "toolcall300" / "scoring" / "grading.py").exists()


def test_the_kit_imports_from_the_bare_folder_only(kit: Path) -> None:
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import toolcall300.scoring.grading, toolcall300; "
        "print(toolcall300.__file__); print(any('site-packages' in p or 'dist-packages' in p "
        "for p in sys.path))"
    )
    result = subprocess.run(
        [system_python(), "-I", "-S", "-c", probe, str(kit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    where, leaks = result.stdout.split()
    assert Path(where).is_relative_to(kit) and leaks == "False"


def test_selftest_passes_in_a_bare_folder(kit: Path) -> None:
    result = kit_run(kit, "score", "--selftest")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("selftest ")
    assert "FAIL" not in result.stdout


def test_naive_scores_a_corpus_in_a_bare_folder(kit: Path) -> None:
    result = kit_run(
        kit, "score", "--corpus", "corpus.jsonl", "--adapter", "naive", "--json", "r.json"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("TOOLCALL-300 adapter: naive")
    assert json.loads((kit / "r.json").read_text())["exact"] == 1


def test_the_baseline_gate_works_in_a_bare_folder(kit: Path) -> None:
    kit_run(kit, "score", "--corpus", "corpus.jsonl", "--adapter", "naive", "--json", "base.json")
    same = kit_run(
        kit, "score", "--corpus", "corpus.jsonl", "--adapter", "naive", "--baseline", "base.json"
    )
    typo = kit_run(kit, "score", "--corpus", "corpus.jsonl", "--adapter", "naive", "--baselin", "x")
    assert (same.returncode, typo.returncode) == (0, 1)


def test_the_reference_normaliser_runs_in_a_bare_folder(kit: Path) -> None:
    result = kit_run(kit, "score", "--corpus", "corpus.jsonl", "--adapter", "toolshim")
    assert result.returncode == 0, result.stderr
    assert "in-sample" not in result.stdout  # a corpus this suite's generator did not build


def public_sample() -> Path | None:
    """The shipped sample (data/sample30.jsonl), else the generated one in corpus_private/."""
    repo = Path(__file__).resolve().parents[2]
    for path in (PACKAGE / "data" / "sample30.jsonl", repo / "corpus_private" / "sample30.jsonl"):
        if path.exists():
            return path
    return None


def test_the_public_sample_scores_in_a_bare_folder(kit: Path) -> None:
    sample = public_sample()
    if sample is None:
        pytest.skip("sample30.jsonl is not generated yet (the tiny corpus above still runs)")
    shutil.copy2(sample, kit / "sample30.jsonl")
    result = kit_run(kit, "score", "--corpus", "sample30.jsonl", "--adapter", "naive")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("TOOLCALL-300 adapter: naive")
    assert "hallucinated_tool" in result.stdout


def test_the_callback_verifier_runs_in_a_bare_folder(kit: Path) -> None:
    """docs/hosted-scoring.md's verifier needs only the standard library: the kit has it."""
    from toolcall300.client.callback import callback_secret, sign_header

    body = b'{"run_id":"run_1","verdict":"pass"}'
    header = sign_header(body, callback_secret("tc300_" + "k" * 32), 1_700_000_000)
    script = (
        "import sys; sys.path.insert(0, '.')\n"
        "from toolcall300.client.callback import callback_secret, verify_callback, SignatureError\n"
        f"secret = callback_secret('tc300_' + 'k' * 32)\n"
        f"print(verify_callback({body!r}, {header!r}, secret, now=1_700_000_010))\n"
        "try:\n"
        f"    verify_callback({body!r} + b' ', {header!r}, secret, now=1_700_000_010)\n"
        "except SignatureError as exc:\n"
        "    print('refused:', exc)\n"
    )
    done = subprocess.run(
        [system_python(), "-I", "-S", "-c", script],
        cwd=kit,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1700000000", "refused: signature mismatch"]
    assert (kit / "toolcall300" / "client" / "callback.py").is_file()
