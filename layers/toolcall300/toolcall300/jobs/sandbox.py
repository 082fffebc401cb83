"""The local stack's sandbox for an untrusted adapter command: what to exec, and how.

:func:`session` (or :func:`prepare` in a :func:`scratch_dir`) turns an adapter's argument
list into the argv and ``Popen`` keyword arguments that ``streamproto.run_stream`` starts it
with. What the adapter gets (docs/local-sandbox.md):

- its own filesystem view when bubblewrap is there: the system (``/usr``, ``/etc`` and the
  ``/bin``, ``/lib*`` links), a read-only copy of the standard-library kit (the package minus
  ``service/``, built once per process into a root-owned 0755 folder outside the checkout,
  so it works wherever the checkout lives and however private its folders are), read-only
  the folder of each absolute file its command names, its own scratch directory, and private
  ``/tmp``, ``/var/tmp`` and ``/dev/shm``. Nothing else of the checkout, no other run's
  scratch, never the labels: a program folder that holds (or lies in) a protected folder is
  refused;
- a clean environment (no credentials, nothing of ours), rlimits, a new session, uid 65534
  when we are root, and new namespaces with only a downed loopback (bubblewrap, else
  ``unshare``, else nothing, and :attr:`Isolation.notes` says so on the run);
- a lifeline: a small init runs the command and holds the read end of a pipe whose only
  write end is in the worker. When the worker dies, however it dies, the pipe reads EOF and
  the init kills the run's process group and exits, which takes the whole pid namespace
  with it. Nothing depends on a death signal armed after a fork, which a parent dying first
  under load escapes (the worker's own child arms one too, then checks its parent is there).

This is containment for a local stack, not a security boundary against a determined attacker
(a kernel exploit); the hosted path runs adapters in Batch containers with no route out.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
#: What of the host the adapter sees under bubblewrap (links stay links, as on merged-/usr).
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Where the kit appears inside bubblewrap (``PYTHONPATH``; ``bin/toolcall300`` on ``PATH``).
KIT_MOUNT = "/opt/toolcall300"
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
#: Kept out of the sandbox's kit: the service (not standard library) and the public sample,
#: whose 30 cases are also in the private corpus: a hosted adapter reads no labels at all.
_NOT_IN_KIT = ("service", "sample30.jsonl")

#: Runs as the command's parent inside the namespaces: starts the command, then waits for
#: either its exit (and exits the same way) or EOF on the lifeline (the worker is gone or
#: stopped the run: kill the process group; leaving pid 1 kills the rest of the namespace).
INIT = r"""
import os, select, signal, sys
life, cmd = int(sys.argv[1]), sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.close(life)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        os.write(2, f"toolcall300 sandbox: cannot execute {cmd[0]}: {exc.strerror}\n".encode())
        os._exit(126 if isinstance(exc, PermissionError) else 127)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
child = os.pidfd_open(pid)
while True:
    ready = select.select([life, child], [], [])[0]
    if life in ready:
        os.killpg(0, signal.SIGKILL)
        os._exit(137)  # a namespace's first process outlives its own SIGKILL: leave
    if child in ready:
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        os._exit(code if code >= 0 else 128 - code)
"""


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
    method: str = "unshare"  # how the namespaces are made: "bwrap", "unshare" or "none"

    @property
    def filesystem_private(self) -> bool:
        """Only bubblewrap gives the adapter its own filesystem view."""
        return self.network_isolated and self.method == "bwrap"

    def record(self) -> dict[str, Any]:
        return {
            "network_isolated": self.network_isolated,
            "uid_dropped": self.uid_dropped,
            "method": self.method if self.network_isolated else "none",
            "filesystem": "private" if self.filesystem_private else "host",
            "notes": list(self.notes),
        }


class CommandRefused(ValueError):
    """The command cannot be run in this sandbox; the message says why and what works."""


@dataclass
class Prepared:
    """The argv and ``Popen`` kwargs for one sandboxed adapter, and what isolation it gets.

    ``kill()`` closes the lifeline: the adapter's whole process tree dies at once (a stop).
    """

    argv: list[str]
    popen_kwargs: dict[str, Any]
    scratch: Path
    isolation: Isolation = field(default_factory=lambda: Isolation(False, False))
    lifeline: tuple[int, int] | None = None  # (read end passed to the init, our write end)
    killed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def kill(self) -> None:
        with self._lock:
            if self.lifeline is None:
                return
            for fd in self.lifeline:
                with suppress(OSError):
                    os.close(fd)
            self.lifeline = None
            self.killed = True

    def close(self) -> None:
        """Release the lifeline once the run is over (the same act as a kill)."""
        killed = self.killed
        self.kill()
        self.killed = killed


# ----------------------------------------------------------------------------- probing


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
    """Find out once per process what isolation this machine allows: bubblewrap (its own
    filesystem view), else unshare(1) (namespaces only), else none; the notes say what is
    missing and are recorded on every run."""
    notes: list[str] = []
    root = os.geteuid() == 0
    if not root:
        notes.append(
            "not running as root: the adapter keeps the worker's uid; RLIMIT_NPROC not enforced"
        )
    drop = _drop_to_nobody if root else None
    if shutil.which("bwrap") and _works([*_bwrap_system(), "--", "/bin/true"], drop):
        return Isolation(True, root, tuple(notes), "bwrap")
    notes.append(
        "no bubblewrap: the adapter sees the host's filesystem (what its uid may read) and /tmp"
    )
    if shutil.which("unshare") and _works([*UNSHARE, "/bin/true"], drop):
        return Isolation(True, root, tuple(notes), "unshare")
    notes.append("no network namespace available here: the adapter has the host's network")
    return Isolation(False, root, tuple(notes), "none")


# ----------------------------------------------------------------------------- the kit


def _copy_filter(package: Path) -> Callable[[str, list[str]], set[str]]:
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == package
        data = Path(folder) == package / "data"
        return {
            n
            for n in names
            if n == "__pycache__"
            or n.endswith(".pyc")
            or (top and n == "service")
            or (data and n in _NOT_IN_KIT)
        }

    return ignore


def build_kit(into: Path, package: Path = PACKAGE_ROOT / "toolcall300") -> Path:
    """Copy the kit into ``into`` (which must not exist): the package minus ``service/`` and
    the public sample, plus ``bin/toolcall300``; everything world-readable, nothing writable
    but by its owner, so uid 65534 reads it wherever the checkout lives."""
    shutil.copytree(package, into / "toolcall300", ignore=_copy_filter(package))
    (into / "bin").mkdir()
    shim = into / "bin" / "toolcall300"
    python = SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else sys.executable
    shim.write_text(f'#!/bin/sh\nexec {python} -m toolcall300 "$@"\n', encoding="utf-8")
    for folder, _dirs, files in os.walk(into):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    shim.chmod(0o755)
    return into


@cache
def kit() -> Path:
    """The per-process kit copy (``tempfile``'s folder, mode 0755, removed at exit)."""
    holder = Path(tempfile.mkdtemp(prefix=f"tc300-kit-{os.getpid()}-"))
    holder.chmod(0o755)
    atexit.register(shutil.rmtree, holder, True)
    return build_kit(holder / "kit")


@cache
def _scratch_root() -> Path:
    """Where this process's scratch directories live: a 0711 folder, so an adapter that sees
    the host's /tmp (no bubblewrap) cannot list the other runs' directories."""
    root = Path(tempfile.mkdtemp(prefix=f"tc300-runs-{os.getpid()}-"))
    root.chmod(0o711)
    atexit.register(shutil.rmtree, root, True)
    return root


def sweep_leftovers(folder: str | None = None) -> list[Path]:
    """Remove the kit copies and scratch roots of processes that died without cleaning up
    (``kill -9``): their names carry the pid, and a live pid's folders are left alone."""
    removed = []
    for path in Path(folder or tempfile.gettempdir()).glob("tc300-*-*-*"):
        kind, _, rest = path.name[len("tc300-") :].partition("-")
        pid = rest.partition("-")[0]
        if kind not in ("kit", "runs") or not pid.isdigit() or int(pid) == os.getpid():
            continue
        if Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


# ----------------------------------------------------------------------------- commands


def default_protected() -> tuple[Path, ...]:
    """The checkout's labels and the local stack's state: never bound into a sandbox."""
    repo = PACKAGE_ROOT.parents[1]
    return (repo / "corpus_private", repo / ".toolcall300")


def _is_system(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in SYSTEM_PATHS)


def _overlaps(folder: Path, protected: Sequence[Path]) -> Path | None:
    for p in protected:
        p = Path(os.path.realpath(p))
        if folder == p or folder in p.parents or p in folder.parents:
            return p
    return None


def program_folders(
    command: Sequence[str], protected: Sequence[Path] = ()
) -> list[tuple[Path, Path]]:
    """The read-only binds, as (source, mount point): the folder of each absolute path in
    ``command`` naming a file outside the system, where the command names it, and where it
    really is when a link leads elsewhere (so ``/home/me/link/adapter.py`` runs as written).
    Raises :class:`CommandRefused` for a folder that is or holds (or lies inside) a protected
    one: the labels never become readable that way."""
    binds: list[tuple[Path, Path]] = []
    for arg in command:
        if not arg.startswith("/") or not os.path.isfile(arg):
            continue
        named = Path(os.path.abspath(arg)).parent
        real = Path(os.path.realpath(arg)).parent
        for source, mount in ((Path(os.path.realpath(named)), named), (real, real)):
            if _is_system(str(mount)) or (source, mount) in binds:
                continue
            hit = _overlaps(source, [*default_protected(), *protected])
            if hit is not None:
                raise CommandRefused(
                    f"{arg}: its folder {source} overlaps {hit}, which holds the private corpus "
                    "or the local stack's state; move the adapter into a folder of its own"
                )
            binds.append((source, mount))
    return binds


def _nobody_may(path: str, bit: int) -> bool:
    """Whether uid 65534 (not the owner, not in the group) may ``bit`` ``path``."""
    try:
        for parent in Path(path).parents:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid == NOBODY or bool(st.st_mode & bit)


_SCRIPTS = (".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".rb", ".pl", ".php")


def command_problem(
    command: Sequence[str], *, uid_dropped: bool | None = None, protected: Sequence[Path] = ()
) -> str | None:
    """Why ``command`` cannot run in the sandbox, said so the submitter can fix it; None if it
    can. Checked at submission (``POST /runs`` on a local stack) so a run never fails late
    for a reason known early (docs/local-sandbox.md, "Commands")."""
    dropped = os.geteuid() == 0 if uid_dropped is None else uid_dropped
    program = command[0]
    hint = f"use an absolute path or a name on the sandbox's PATH ({SAFE_PATH}, toolcall300)"
    if "/" in program and not program.startswith("/"):
        return f"adapter_cmd[0] {program!r} is a relative path: the adapter runs in its own scratch folder; {hint}"
    for i, arg in enumerate(command[1:], 1):
        looks_like_file = arg.startswith(("./", "../")) or (
            arg.endswith(_SCRIPTS)
            and not arg.startswith(("-", "/"))
            and not any(c.isspace() or c in "=;'\"()" for c in arg)
        )
        if looks_like_file:
            return (
                f"adapter_cmd[{i}] {arg!r} looks like a relative path: the adapter runs in its "
                "own scratch folder, so name files by absolute path"
            )
    if "/" not in program:
        if program == "toolcall300":
            return None
        found = shutil.which(program, path=SAFE_PATH)
        if found is None:
            return f"adapter_cmd[0] {program!r} is not on the sandbox's PATH ({SAFE_PATH}); {hint}"
        program = found
    if not os.path.isfile(program):
        return f"adapter_cmd[0] {program!r} does not exist or is not a file"
    try:
        program_folders(command, protected)
    except CommandRefused as exc:
        return str(exc)
    if not dropped:
        return None
    why = (
        "the adapter runs as uid 65534, and a folder above it is private (mode 700, as root's "
        f"home is): use {SYSTEM_PYTHON} or install the program outside private folders"
    )
    if not _nobody_may(program, stat.S_IXOTH):
        return f"uid 65534 cannot execute {program}: {why}"
    for i, arg in enumerate(command[1:], 1):
        if arg.startswith("/") and os.path.isfile(arg) and not _nobody_may(arg, stat.S_IROTH):
            return f"uid 65534 cannot read adapter_cmd[{i}] {arg}: {why}"
    return None


# ----------------------------------------------------------------------------- argv


def _bwrap_system() -> list[str]:
    """bubblewrap's new namespaces (network included) with only the system mounted."""
    # --as-pid-1: the lifeline init is the namespace's first process, so its exit ends every
    # process in it (bubblewrap's own reaper there would outlive a worker killed mid-setup)
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--as-pid-1", "--cap-drop", "ALL"]
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args + ["--proc", "/proc", "--dev", "/dev"]


def bwrap_prefix(
    scratch: Path, kit_dir: Path, folders: Sequence[tuple[Path, Path]] = ()
) -> list[str]:
    """The adapter's whole filesystem: system, kit, program folders, scratch, private temp.

    The tmpfs for ``/tmp`` comes before the binds beneath it (scratch lives in ``/tmp``).
    """
    args = _bwrap_system()
    args += ["--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm"]
    args += ["--ro-bind", str(kit_dir), KIT_MOUNT]
    for source, mount in folders:
        args += ["--ro-bind", str(source), str(mount)]
    return [*args, "--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--"]


def _init_argv(life_fd: int) -> list[str]:
    python = SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else sys.executable
    return [python, "-I", "-S", "-c", INIT, str(life_fd)]


def wrap(
    command: list[str],
    scratch: Path,
    iso: Isolation,
    *,
    life_fd: int | None = None,
    kit_dir: Path | None = None,
    folders: Sequence[tuple[Path, Path]] = (),
) -> list[str]:
    """``command`` (under the lifeline init when ``life_fd`` is given) inside the namespaces
    ``iso`` says this machine allows."""
    inner = [*_init_argv(life_fd), *command] if life_fd is not None else list(command)
    if not iso.network_isolated:
        return inner
    if iso.method == "bwrap":
        return [*bwrap_prefix(scratch, kit_dir or kit(), folders), *inner]
    return [*UNSHARE, *inner]


def _preexec(limits: Limits, drop_uid: bool, parent: int) -> Callable[[], None]:
    """Runs in the child between fork and exec (after setsid: ``start_new_session``)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if drop_uid:
            _drop_to_nobody()  # RLIMIT_NPROC is ignored for root, so drop last
        _die_with_parent(parent)  # after the uid change, which would clear it

    return apply


_PR_SET_PDEATHSIG = 1
_LIBC: Any = None


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process if the worker dies, then check that the worker
    had not already died before it was armed (the lifeline covers the rest of the tree)."""
    with suppress(AttributeError, OSError):
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


def _load_libc() -> Any:
    """libc, loaded before any fork (a child between fork and exec should not load libraries)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()


def adapter_env(scratch: Path, kit_path: str) -> dict[str, str]:
    """A clean environment: nothing of the worker's (no credentials) reaches the adapter."""
    return {
        "PATH": f"{kit_path}/bin:{SAFE_PATH}",
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": kit_path,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def prepare(
    command: list[str],
    scratch: Path,
    *,
    limits: Limits = Limits(),
    isolation: Isolation | None = None,
    protected: Sequence[Path] = (),
) -> Prepared:
    """The sandboxed form of ``command`` running in ``scratch`` (which must exist).

    Raises :class:`CommandRefused` when a program folder would expose a protected one. The
    caller must ``close()`` the result (``session`` does).
    """
    iso = isolation or probe()
    kit_dir = kit()
    folders = program_folders(command, protected) if iso.filesystem_private else []
    if iso.uid_dropped:
        os.chown(scratch, NOBODY, NOBODY)
    read, write = os.pipe()
    argv = wrap(command, scratch, iso, life_fd=read, kit_dir=kit_dir, folders=folders)
    kwargs: dict[str, Any] = {
        "cwd": str(scratch),
        "env": adapter_env(scratch, KIT_MOUNT if iso.filesystem_private else str(kit_dir)),
        "start_new_session": True,
        "preexec_fn": _preexec(limits, iso.uid_dropped, os.getpid()),
        "close_fds": True,
        "pass_fds": (read,),
    }
    return Prepared(argv, kwargs, scratch, iso, (read, write))


@contextmanager
def scratch_dir(root: str | None = None) -> Iterator[Path]:
    """A private scratch directory, removed afterwards whatever the adapter left in it."""
    path = Path(tempfile.mkdtemp(prefix="tc300-run-", dir=root or _scratch_root()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def session(
    command: list[str],
    *,
    limits: Limits = Limits(),
    isolation: Isolation | None = None,
    protected: Sequence[Path] = (),
) -> Iterator[Prepared]:
    """A scratch directory and the sandboxed command in it; afterwards the lifeline is closed
    (anything the adapter left running dies) and the scratch directory removed."""
    with scratch_dir() as scratch:
        prepared = prepare(
            command, scratch, limits=limits, isolation=isolation, protected=protected
        )
        try:
            yield prepared
        finally:
            prepared.close()
