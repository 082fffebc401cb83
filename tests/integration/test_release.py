"""The release path (docs/release.md): ``python -m build`` makes a wheel and an sdist from the
repository's tracked files; both pass ``twine check --strict``, install in a fresh venv outside
the repository, and ``toolcall300 score --selftest`` passes from each."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(argv: list[str | Path], cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The artifacts, built from a copy of the tracked files (what a clean checkout holds), so
    nothing untracked leaks in and the build writes nothing into the repository."""
    work = tmp_path_factory.mktemp("release")
    source = work / "src"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        path = ROOT / name.decode()
        if path.is_file():
            (source / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name.decode())
    # the project's own pinned setuptools builds it (no build isolation: no index needed)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", work / "dist", "."], source)
    yield work / "dist"


def artifacts(dist: Path) -> list[Path]:
    found = sorted(dist.iterdir())
    assert [p.name for p in found] == [
        "toolcall300-1.0.0-py3-none-any.whl",
        "toolcall300-1.0.0.tar.gz",
    ]
    return found


def test_the_wheel_and_the_sdist_pass_twine_check(dist: Path) -> None:
    out = run([BIN / "twine", "check", "--strict", *artifacts(dist)], dist)
    assert out.count("PASSED") == 2


def test_they_hold_the_kit_and_its_data_and_no_private_corpus(dist: Path) -> None:
    wheel, sdist = artifacts(dist)
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert "toolcall300/data/sample30.jsonl" in in_wheel
    assert "toolcall300/service/static/dashboard.js" in in_wheel
    with tarfile.open(sdist) as tar:
        in_sdist = tar.getnames()
    assert "toolcall300-1.0.0/layers/toolcall300/toolcall300/data/sample30.jsonl" in in_sdist
    everything = list(in_wheel) + in_sdist
    assert not [n for n in everything if "corpus_private" in n or "/tests/" in n]


@pytest.mark.parametrize("kind", ["whl", "tar.gz"])
def test_each_installs_in_a_fresh_venv_and_self_tests_outside_the_repository(
    dist: Path, tmp_path: Path, kind: str
) -> None:
    (artifact,) = [p for p in artifacts(dist) if p.name.endswith(kind)]
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], tmp_path)
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if kind == "tar.gz":  # an sdist builds with the pinned setuptools, as make venv installs it
        run([*pip, "-c", ROOT / "constraints.txt", "setuptools"], tmp_path)
        run([*pip, "--no-deps", "--no-build-isolation", artifact], tmp_path)
    else:
        run([*pip, "--no-deps", "--no-index", artifact], tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run([venv / "bin" / "toolcall300", "score", "--selftest"], elsewhere)
    last = out.strip().splitlines()[-1]
    assert (
        last.startswith("selftest ")
        and last.split()[1].split("/")[0] == last.split()[1].split("/")[1]
    )
    location = run(
        [venv / "bin" / "python", "-c", "import toolcall300; print(toolcall300.__file__)"],
        elsewhere,
    )
    assert str(venv) in location and str(ROOT) not in location
    # and it scores its packaged sample with no repository around it
    sample = run(
        [venv / "bin" / "python", "-c",
         "from importlib import resources; print(resources.files('toolcall300') / 'data' / 'sample30.jsonl')"],
        elsewhere,
    ).strip()  # fmt: skip
    scored = run(
        [venv / "bin" / "toolcall300", "score", "--corpus", sample, "--adapter", "naive"], elsewhere
    )
    assert (
        scored.startswith("TOOLCALL-300 adapter: naive")
        and "exact match             0 / 30" in scored
    )
