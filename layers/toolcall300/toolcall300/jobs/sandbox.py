"""The local stack's sandbox for an untrusted adapter command: what to exec, and how.

:func:`prepare` turns an adapter's argument list into the argv and ``Popen`` keyword arguments
that ``streamproto.run_stream`` starts it with: a fresh scratch directory as its cwd, HOME and
TMPDIR; a clean environment (no AWS credentials, nothing of ours); rlimits on address space,
CPU time, file size and processes; a new session, so the whole process group is killed on a
stop; and, when the machine allows it, uid 65534 and a new network namespace in which only a
downed loopback exists (``unshare --map-root-user --net --pid --fork --kill-child``: the
pid namespace also takes every descendant down with the adapter; bubblewrap, read-only root
and only the scratch directory writable, where unshare is not allowed). What could not be applied
is listed in :attr:`Isolation.notes` and recorded on the run. This is containment for a
single-tenant local stack, not a security boundary against a determined attacker: the
hosted path runs adapters in Batch containers in subnets with no route out.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
UNSHARE = (
    "unshare",
    "--map-root-user",
    "--net",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
    "--",
)
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory that holds ``toolcall300/``


@dataclass(frozen=True)
class Limits:
    """Resource limits for one adapter process tree."""

    memory_bytes: int = 1024 * 1024 * 1024  # RLIMIT_AS: address space, the closest to "memory"
    cpu_seconds: int = 300  # RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one
    file_bytes: int = 64 * 1024 * 1024  # RLIMIT_FSIZE: largest file it may write
    processes: int = 256  # RLIMIT_NPROC: per uid (only enforced once the uid is dropped)


@dataclass(frozen=True)
class Isolation:
    """What the machine let the sandbox do; recorded on the run as ``sandbox``."""

    network_isolated: bool
    uid_dropped: bool
    notes: tuple[str, ...] = ()
    method: str = "unshare"  # how the namespaces are made: "unshare", "bwrap" or "none"

    def record(self) -> dict[str, Any]:
        return {
            "network_isolated": self.network_isolated,
            "uid_dropped": self.uid_dropped,
            "method": self.method if self.network_isolated else "none",
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Prepared:
    """The argv and ``Popen`` kwargs for one sandboxed adapter, and what isolation it gets."""

    argv: list[str]
    popen_kwargs: dict[str, Any]
    scratch: Path
    isolation: Isolation = field(default_factory=lambda: Isolation(False, False))


def _works(argv: list[str], preexec: Callable[[], None] | None = None) -> bool:
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=10, preexec_fn=preexec, cwd="/", check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@cache
def probe() -> Isolation:
    """Find out once per process what isolation this machine allows: unshare(1), else
    bubblewrap, else none (and say so in the notes recorded on every run)."""
    notes: list[str] = []
    root = os.geteuid() == 0
    if not root:
        notes.append(
            "not running as root: the adapter keeps the worker's uid; RLIMIT_NPROC not enforced"
        )
    drop = _drop_to_nobody if root else None
    if shutil.which("unshare") and _works([*UNSHARE, "/bin/true"], drop):
        return Isolation(True, root, tuple(notes), "unshare")
    if shutil.which("bwrap") and _works(bwrap_prefix(Path("/tmp")) + ["/bin/true"], drop):
        return Isolation(True, root, tuple(notes), "bwrap")
    notes.append("no network namespace available here: the adapter has the host's network")
    return Isolation(False, root, tuple(notes), "none")


def bwrap_prefix(scratch: Path) -> list[str]:
    """bubblewrap: new namespaces (network included), read-only root, only ``scratch`` writable."""
    return [
        "bwrap", "--unshare-all", "--die-with-parent",
        "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", str(scratch), str(scratch),
        "--proc", "/proc", "--dev", "/dev", "--chdir", str(scratch), "--",
    ]  # fmt: skip


def wrap(command: list[str], scratch: Path, iso: Isolation) -> list[str]:
    """``command`` inside the namespaces ``iso`` says this machine allows."""
    if not iso.network_isolated:
        return list(command)
    if iso.method == "bwrap":
        return [*bwrap_prefix(scratch), *command]
    return [*UNSHARE, *command]


def _preexec(limits: Limits, drop_uid: bool) -> Callable[[], None]:
    """Runs in the child between fork and exec (after setsid: ``start_new_session``)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if drop_uid:
            _drop_to_nobody()  # RLIMIT_NPROC is ignored for root, so drop last
        _die_with_parent()  # after the uid change, which would clear it

    return apply


_PR_SET_PDEATHSIG = 1
_LIBC: Any = None


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL the adapter if the worker dies (a killed worker leaves no
    adapter behind; with ``--kill-child`` its whole pid namespace follows). Best effort."""
    with suppress(AttributeError, OSError):
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _load_libc() -> Any:
    """libc, loaded before any fork (a child between fork and exec should not load libraries)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()


def _toolcall300_shim(bin_dir: Path, python: str) -> None:
    """Put ``toolcall300`` on the adapter's PATH, run by an interpreter uid 65534 can execute.

    The reference normaliser (``toolcall300 toolshim --stream``) is standard library only, so
    the system Python runs it from this package's directory.
    """
    shim = bin_dir / "toolcall300"
    shim.write_text(f'#!/bin/sh\nexec {python} -m toolcall300 "$@"\n', encoding="utf-8")
    shim.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def adapter_env(scratch: Path, bin_dir: Path) -> dict[str, str]:
    """A clean environment: nothing of the worker's (no credentials) reaches the adapter."""
    return {
        "PATH": f"{bin_dir}:{SAFE_PATH}",
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PACKAGE_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def prepare(
    command: list[str],
    scratch: Path,
    *,
    limits: Limits = Limits(),
    isolation: Isolation | None = None,
) -> Prepared:
    """The sandboxed form of ``command`` running in ``scratch`` (which must exist)."""
    iso = isolation or probe()
    bin_dir = scratch / ".bin"
    bin_dir.mkdir(exist_ok=True)
    python = SYSTEM_PYTHON if iso.uid_dropped and os.path.exists(SYSTEM_PYTHON) else sys.executable
    _toolcall300_shim(bin_dir, python)
    if iso.uid_dropped:
        for path in (scratch, bin_dir, bin_dir / "toolcall300"):
            os.chown(path, NOBODY, NOBODY)
    argv = wrap(command, scratch, iso)
    kwargs: dict[str, Any] = {
        "cwd": str(scratch),
        "env": adapter_env(scratch, bin_dir),
        "start_new_session": True,
        "preexec_fn": _preexec(limits, iso.uid_dropped),
        "close_fds": True,
    }
    return Prepared(argv=argv, popen_kwargs=kwargs, scratch=scratch, isolation=iso)


@contextmanager
def scratch_dir(root: str | None = None) -> Iterator[Path]:
    """A private scratch directory, removed afterwards whatever the adapter left in it."""
    path = Path(tempfile.mkdtemp(prefix="tc300-run-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
