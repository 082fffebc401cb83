"""A folder resubmitted with the requirements it carried before reuses their install: pip runs
once per team and distinct requirements file (by its canonical digest), whichever folder
carries it; the install is kept once, written once (docs/local-sandbox.md)."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from toolcall300.jobs import adapter_requirements
from toolcall300.service.domain.runs import LocalQueue, requirements_key
from toolcall300.service.domain.runs.submission import Submission
from toolcall300.service.errors import NotFound, StoreConflict

ONE, TWO, THREE = "1" * 64, "2" * 64, "3" * 64
REQUIREMENTS = (
    f"pkg-one==1.0 --hash=sha256:{ONE} --hash=sha256:{TWO}\nother==2.0 --hash=sha256:{THREE}\n"
).encode()
#: The same packages from the same files, written otherwise.
SAME = (
    "# the adapter's dependencies\n"
    f"Other==2.0   --hash=sha256:{THREE}\n"
    f"pkg_one==1.0 --hash=sha256:{TWO} \\\n    --hash=sha256:{ONE}  # both wheels\n"
).encode()


class Objects:
    """A write-once object store, as the stack's reports bucket is (``runs.ReportStore``)."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put_once(self, key: str, body: bytes) -> None:
        if key in self.objects:
            raise StoreConflict(f"{key} exists")
        self.objects[key] = body

    def get(self, key: str) -> bytes:
        if key not in self.objects:
            raise NotFound(f"{key}: not found")
        return self.objects[key]


def folder(requirements: bytes, adapter: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("adapter.py", adapter.encode()), ("requirements.txt", requirements)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def submission(archive: bytes) -> Submission:
    files = {"sha256": hashlib.sha256(archive).hexdigest(), "bytes": len(archive)}
    adapter = {"kind": "command", "command": ["python3", "adapter.py"], "files": files}
    return Submission(adapter=adapter, ref="refs/heads/main", commit="abc1234", files=archive)


@pytest.fixture
def pip_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every pip the stack starts (each installs one module into its --target)."""
    runs: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        if argv[1:3] == ["-m", "pip"]:
            runs.append(argv)
            target = Path(argv[argv.index("--target") + 1])
            (target / "pkg_one").mkdir()
            (target / "pkg_one" / "__init__.py").write_text(f"RUN = {len(runs)}\n")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(adapter_requirements.subprocess, "run", run)
    return runs


def test_a_resubmitted_folder_reuses_the_install_of_the_same_requirements(
    pip_runs: list[list[str]], tmp_path: Path
) -> None:
    queue = LocalQueue(files=Objects(), wake=lambda: None)
    digest = adapter_requirements.digest(REQUIREMENTS)
    kept = requirements_key("team-a", digest)
    # the same folder twice, then another folder carrying the same requirements written otherwise
    for archive in (folder(REQUIREMENTS, "v1"), folder(REQUIREMENTS, "v1"), folder(SAME, "v2")):
        sub = submission(archive)
        queue._install(sub, "team-a")
        queue.keep(sub, team="team-a")
        assert sub.adapter["files"]["requirements"] is True
        assert sub.adapter["files"]["requirements_sha256"] == digest
    assert len(pip_runs) == 1, "pip ran again for requirements the team has installed"
    assert queue.installed == {}  # handed to the store, not held
    installed = adapter_requirements.unpack(queue.files.get(kept), tmp_path / "packages")
    assert (installed / "pkg_one" / "__init__.py").read_text() == "RUN = 1\n"
    # another team's, or other requirements: installs of their own
    other = submission(folder(REQUIREMENTS, "v1"))
    queue._install(other, "team-b")
    queue.keep(other, team="team-b")
    changed = submission(folder(REQUIREMENTS.replace(b"other==2.0", b"other==2.1"), "v1"))
    queue._install(changed, "team-a")
    queue.keep(changed, team="team-a")
    assert len(pip_runs) == 3
    assert {k for k in queue.files.objects if "/requirements-" in k} == (
        {
            kept,
            requirements_key("team-b", digest),
            requirements_key("team-a", changed.adapter["files"]["requirements_sha256"]),
        }
    )


def test_the_digest_is_of_the_packages_and_their_hashes_not_of_how_they_are_written() -> None:
    assert adapter_requirements.digest(SAME) == adapter_requirements.digest(REQUIREMENTS)
    fewer = REQUIREMENTS.replace(f" --hash=sha256:{TWO}".encode(), b"")
    assert adapter_requirements.digest(fewer) != adapter_requirements.digest(REQUIREMENTS)
    with pytest.raises(adapter_requirements.RequirementsRefused):
        adapter_requirements.digest(b"requests\n")
