"""The packages a folder adapter needs: its requirements file, installed once at submission.

A folder handed over with ``adapter_files`` may carry ``requirements.txt`` at its top. Every
line names one package pinned with ``==`` and the sha256 of each file it may be installed from
(pip's ``--require-hashes`` mode, so every dependency is listed too); no options, URLs, VCS
references or local paths (:func:`check`, refused with the line and the reason). The stack
installs it at submission (:func:`install`): Debian's ``python3 -m pip`` (the interpreter
the sandbox runs) as uid 65534 when the stack runs as root, wheels only (``--only-binary
:all:``: no source build runs code), from the package index the operator configures the way
pip is configured (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_NO_INDEX``, ``/etc/pip.conf``),
into a folder of its own, which is then made root's and read-only and packed
(:func:`pack`) for the worker, which shows a fresh copy at :data:`PACKAGES_MOUNT` on the
adapter's ``PYTHONPATH`` (docs/local-sandbox.md, "The adapter's dependencies").
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

#: The file, at the top of the adapter's folder.
REQUIREMENTS = "requirements.txt"
#: Where the installed packages appear in the sandbox (read-only, on ``PYTHONPATH``).
PACKAGES_MOUNT = "/adapter-packages"
MAX_REQUIREMENTS_BYTES = 64 * 1024
MAX_PACKAGES = 200
#: What an install may come to: entries and bytes.
MAX_INSTALLED_FILES = 20_000
MAX_INSTALLED_BYTES = 512 * 1024 * 1024
INSTALL_TIMEOUT_S = 300
SYSTEM_PYTHON = "/usr/bin/python3"
NOBODY = 65534
#: Of the stack's environment, what pip may read: its own settings and the proxies.
PIP_VARIABLES = re.compile(r"^(PIP_[A-Z_]+|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)$")

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_LINE = re.compile(
    rf"^(?P<name>{_NAME})==(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)"
    r"(?P<hashes>(\s+--hash=sha256:[0-9a-f]{64})+)\s*$"
)


class RequirementsRefused(ValueError):
    """The requirements cannot be installed; the message says why and what to write."""


def _lines(text: str) -> list[tuple[int, str]]:
    """The logical lines (continuations joined, comments and blanks dropped), numbered."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            out.append((start, whole))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def _why(line: str) -> str:
    if line.startswith("-"):
        return "options are not allowed (the index is the stack operator's pip configuration)"
    if "://" in line or line.startswith(("git+", "hg+", "svn+", "bzr+")) or " @ " in line:
        return "URLs and VCS references are not allowed: name a package from the index"
    if line.startswith((".", "/", "~")) or line.endswith((".whl", ".tar.gz", ".zip")):
        return "local paths are not allowed: name a package from the index"
    if "==" not in line:
        return "pin it with == (name==version)"
    if "--hash=" not in line:
        return "give the sha256 of each file it may come from (--hash=sha256:...)"
    return "write it as name==version --hash=sha256:<64 hex> (pip's --require-hashes form)"


def check(data: bytes) -> list[str]:
    """The pinned packages (``name==version``) of a requirements file, or
    :class:`RequirementsRefused` naming the first line that is not one."""
    if len(data) > MAX_REQUIREMENTS_BYTES:
        raise RequirementsRefused(f"{REQUIREMENTS} is over {MAX_REQUIREMENTS_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequirementsRefused(f"{REQUIREMENTS} is not UTF-8") from exc
    pins = []
    for number, line in _lines(text):
        found = _LINE.match(line)
        if found is None:
            raise RequirementsRefused(f"{REQUIREMENTS} line {number} ({line[:80]!r}): {_why(line)}")
        pins.append(f"{found['name']}=={found['version']}")
    if len(pins) > MAX_PACKAGES:
        raise RequirementsRefused(f"{REQUIREMENTS} names over {MAX_PACKAGES} packages")
    return pins


def digest(data: bytes) -> str:
    """The canonical sha256 of a checked requirements file: its pins, each package's name
    normalised (PEP 503) with its hashes sorted, in sorted order. The same packages from the
    same files, written in another order, case, spacing or with other comments, are one
    install: a folder resubmitted with them reuses it instead of running pip again."""
    check(data)
    pins = []
    lines = (_LINE.match(line) for _number, line in _lines(data.decode("utf-8")))
    for found in filter(None, lines):  # every line, once check() has passed
        name = re.sub(r"[-_.]+", "-", found["name"]).lower()
        hashes = sorted(re.findall(r"sha256:([0-9a-f]{64})", found["hashes"]))
        pins.append(" ".join([f"{name}=={found['version']}", *hashes]))
    return hashlib.sha256("\n".join(sorted(pins)).encode("utf-8")).hexdigest()


def pip_env(environ: Mapping[str, str], home: Path) -> dict[str, str]:
    """pip's environment: the operator's pip settings and proxies, nothing else of ours."""
    kept = {k: v for k, v in environ.items() if PIP_VARIABLES.match(k)}
    return {
        **kept,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }


def _unprivileged() -> Callable[[], None] | None:
    if os.geteuid() != 0:
        return None

    def drop() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    return drop


def install(data: bytes, *, environ: Mapping[str, str] | None = None) -> bytes:
    """Install a checked requirements file and return the result packed (:func:`pack`);
    pip's refusal (a hash that does not match, a package with no wheel, an unlisted
    dependency) is :class:`RequirementsRefused` with the end of what pip said."""
    check(data)
    with tempfile.TemporaryDirectory(prefix="tc300-requirements-") as holder:
        work = Path(holder)
        work.chmod(0o755)
        (work / REQUIREMENTS).write_bytes(data)
        target = work / "packages"
        target.mkdir()
        if os.geteuid() == 0:
            os.chown(work, NOBODY, NOBODY)
            os.chown(target, NOBODY, NOBODY)
        argv = [
            SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else "python3",
            "-m", "pip", "install", "--require-hashes", "--only-binary=:all:", "--no-compile",
            "--no-warn-script-location", "--target", str(target), "-r", str(work / REQUIREMENTS),
        ]  # fmt: skip
        try:
            done = subprocess.run(
                argv,
                cwd=work,
                env=pip_env(os.environ if environ is None else environ, work),
                preexec_fn=_unprivileged(),
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise RequirementsRefused(
                f"installing {REQUIREMENTS} took over {INSTALL_TIMEOUT_S} s"
            ) from exc
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip()[-600:]
            raise RequirementsRefused(f"pip could not install {REQUIREMENTS}: {said}")
        return pack(target)


def pack(folder: Path) -> bytes:
    """The installed folder as a gzip tar (sorted, root's, no times), bounded."""
    out = io.BytesIO()
    entries = total = 0
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            entries += 1
            total += path.lstat().st_size
            if entries > MAX_INSTALLED_FILES or total > MAX_INSTALLED_BYTES:
                raise RequirementsRefused(
                    f"the packages install to over {MAX_INSTALLED_FILES} files or "
                    f"{MAX_INSTALLED_BYTES} bytes"
                )
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(folder)))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isreg():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return out.getvalue()


def unpack(packed: bytes, into: Path) -> Path:
    """A fresh read-only copy of packed packages (this module's own archive, still through
    the ``data`` filter): folders 0755, files 0644 or 0755, owned by this process's user."""
    into.mkdir(mode=0o755)
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        tar.extractall(into, filter="data")
    for folder, _dirs, files in os.walk(into):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.stat(path).st_mode & 0o100 else 0o644)
    return into


def requirements_of(archive: bytes) -> bytes | None:
    """The requirements file at the top of a checked folder archive, or None."""
    from toolcall300.jobs import adapter_files

    return adapter_files.read_file(archive, REQUIREMENTS, MAX_REQUIREMENTS_BYTES + 1)
