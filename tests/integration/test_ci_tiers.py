"""A tier that cannot run fails CI instead of skipping quietly (support.tiers).

The container tier once skipped in every CI run (``.ci/run`` did not install
python3-seccomp) and the build passed. Here the tier is run in a child pytest whose PATH has
no bubblewrap: on a developer's machine it skips saying why, with ``CI=true`` it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _container_tier(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(tmp_path)  # no bwrap: the tier cannot run
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/integration/test_harness_container.py", "-k", "image_archive"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_a_tier_that_cannot_run_skips_here_and_fails_in_ci(tmp_path: Path) -> None:
    here = _container_tier(tmp_path, None)
    assert here.returncode == 0 and "1 skipped" in here.stdout, here.stdout + here.stderr
    ci = _container_tier(tmp_path, "true")
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert "CI is set and this tier cannot run" in ci.stdout, ci.stdout
    assert "1 failed" in ci.stdout or "1 error" in ci.stdout, ci.stdout


def test_ci_installs_what_the_container_tier_needs() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    for package in ("bubblewrap", "debootstrap", "umoci", "python3-seccomp"):
        assert f"need+=({package})" in script, package
    assert "export CI=" in script  # the tiers fail instead of skipping
