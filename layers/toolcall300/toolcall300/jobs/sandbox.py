"""The local stack's sandbox for an untrusted adapter command: what to exec, and how.

:func:`session` (or :func:`prepare` in a :func:`scratch_dir`) turns an adapter's argument
list into the argv and ``Popen`` keyword arguments that ``streamproto.run_stream`` starts it
with. What the adapter gets (docs/local-sandbox.md):

- its own filesystem view when bubblewrap is there, built from nothing: the system read-only
  (``/usr`` without its source folders, the ``/bin``, ``/lib*`` links, and of ``/etc`` only
  what programs read to start), a read-only copy of the standard-library kit (the package
  minus ``service/``, built once per process into a root-owned 0755 folder outside the
  checkout), the adapter's own files when the team handed them over (unpacked by the worker
  into a folder of the run's, at :data:`ADAPTER_MOUNT`), private ``/tmp``, ``/var/tmp`` and
  ``/dev/shm``. No host path named in the command is mounted: arguments are just strings,
  so the labels stay out by construction, wherever a copy of them lies on the host;
- a clean environment (no credentials, nothing of ours), rlimits, a new session, uid 65534
  when we are root, and new namespaces with only a downed loopback (bubblewrap, else
  ``unshare``, else nothing, and :attr:`Isolation.notes` says so on the run; a probe that
  did not finish is no answer, :class:`IsolationUnknown`, never a fallback to less);
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
import errno
import fcntl
import hashlib
import os
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from toolcall300.jobs import adapter_files, adapter_image, adapter_requirements

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
#: What of the host the adapter sees under bubblewrap (links stay links, as on merged-/usr).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Hidden under ``/usr``: where people keep source checkouts, not programs.
USR_HIDDEN = ("/usr/src", "/usr/local/src")
#: Of ``/etc``, only what programs read to start: the loader's cache, users and groups, the
#: ``alternatives`` links many ``/usr/bin`` names go through, Python's own configuration.
ETC_NEEDED = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd",
    "group", "nsswitch.conf", "host.conf", "hosts", "protocols", "services", "mime.types",
    "ssl", "ca-certificates", "python3", "python3.11", "python3.12", "python3.13",
)  # fmt: skip
#: Where the adapter's own files (handed over with the run, unpacked per run) appear.
ADAPTER_MOUNT = "/adapter"
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
import ctypes, os, select, signal, sys
life, cmd = int(sys.argv[1]), sys.argv[2:]
# not dumpable (PR_SET_DUMPABLE 0), before the fork: the command runs as our uid, and would
# otherwise ptrace us or open /proc/1/fd/<lifeline> for writing (a writer of its own that
# keeps the lifeline from ever reading EOF); its exec makes the command dumpable again
if ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:
    os.write(2, b"toolcall300 sandbox: cannot protect the run's init (prctl)\n")
    os._exit(126)
pid = os.fork()
if pid == 0:
    os.close(life)
    # no capability survives the exec (PR_CAPBSET_DROP each, then PR_SET_NO_NEW_PRIVS):
    # unshare's mapped root holds them all in its namespaces, CAP_SYS_PTRACE over us included
    libc = ctypes.CDLL(None)
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # EPERM under bubblewrap, which dropped them already
    libc.prctl(38, 1, 0, 0, 0)
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
    processes: int = 256  # RLIMIT_NPROC: per uid, and each run has its own (RunIdentity)
    #: The private tmpfs under bubblewrap, in host memory: ``/tmp`` (which holds the scratch
    #: folder, so this is also the scratch total), ``/var/tmp`` and ``/dev/shm``.
    tmp_bytes: int = 256 * 1024 * 1024
    var_tmp_bytes: int = 16 * 1024 * 1024
    shm_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class Isolation:
    """What the machine let the sandbox do; recorded on the run as ``sandbox``."""

    network_isolated: bool
    uid_dropped: bool
    notes: tuple[str, ...] = ()
    method: str = "unshare"  # how the namespaces are made: "bwrap", "unshare" or "none"
    #: Under bubblewrap, the seccomp filter (:data:`SECCOMP_SCRIPT`) that refuses namespaces.
    seccomp: bool = False

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
            "seccomp": self.filesystem_private and self.seccomp,
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
    #: The run's own uid (None when the uid is not dropped or there are no namespaces).
    identity: RunIdentity | None = None
    seccomp_fd: int | None = None  # the filter, read by bubblewrap at start
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def kill(self) -> None:
        with self._lock:
            if self.lifeline is None:
                return
            # Marked before the act: the adapter dies as the lifeline closes, and the thread
            # reading its end may look at ``killed`` before this one runs again (a stop then
            # read as the adapter's own crash, "exited with -9").
            self.killed = True
            for fd in self.lifeline:
                with suppress(OSError):
                    os.close(fd)
            self.lifeline = None

    def close(self) -> None:
        """Release the lifeline once the run is over (the same act as a kill), then the
        run's uid and the filter's descriptor."""
        killed = self.killed
        self.kill()
        self.killed = killed
        if self.identity is not None:
            self.identity.release()
        if self.seccomp_fd is not None:
            with suppress(OSError):
                os.close(self.seccomp_fd)
            self.seccomp_fd = None


# ----------------------------------------------------------------------------- probing


#: How long one probe command may take: a first try, then one longer try when the first did
#: not finish. A probe that finishes neither time is no answer (:class:`IsolationUnknown`),
#: never taken for "not here": a busy machine must not give an adapter weaker isolation.
PROBE_BOUNDS_S = (10.0, 60.0)
#: Runs one probe command (``subprocess.run``'s signature); tests put a stand-in here.
run_probe_command: Callable[..., subprocess.CompletedProcess[bytes]] = subprocess.run
#: A probe that could not even be started for want of resources says nothing about the machine.
_BUSY_ERRNOS = (errno.EAGAIN, errno.ENOMEM)


#: The note a run records when bubblewrap is there but its seccomp filter could not be built.
NO_SECCOMP_NOTE = (
    "no seccomp filter (python3-seccomp is missing): the adapter may make namespaces of its own"
)


class IsolationUnknown(RuntimeError):
    """A probe did not finish in time (or could not start for want of resources): what
    isolation this machine allows is unknown. Not cached, so the next run probes again; the
    run at hand is refused rather than run with less than the machine may have."""


def _works(what: str, argv: list[str], preexec: Callable[[], None] | None = None) -> bool:
    """Whether ``argv`` ran and exited 0 (False: it ran and failed, or is not there).

    Raises :class:`IsolationUnknown` when it did not finish within any of
    :data:`PROBE_BOUNDS_S` (``what`` names it in the message).
    """
    for bound in PROBE_BOUNDS_S:
        try:
            done = run_probe_command(
                argv, capture_output=True, timeout=bound, preexec_fn=preexec, cwd="/", check=False
            )
        except subprocess.TimeoutExpired:
            continue
        except OSError as exc:
            if exc.errno in _BUSY_ERRNOS:
                raise IsolationUnknown(
                    f"the sandbox could not establish its isolation: {what} could not be "
                    f"started ({exc.strerror})"
                ) from exc
            return False
        except subprocess.SubprocessError:
            return False
        return done.returncode == 0
    bounds = " s, then ".join(f"{b:g}" for b in PROBE_BOUNDS_S)
    raise IsolationUnknown(
        f"the sandbox could not establish its isolation: {what} did not finish within "
        f"{bounds} s (the machine is busy)"
    )


def _drop_to(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _drop_to_nobody() -> None:
    _drop_to(NOBODY)


@cache
def probe() -> Isolation:
    """Find out once per process what isolation this machine allows: bubblewrap (its own
    filesystem view), else unshare(1) (namespaces only), else none; the notes say what is
    missing and are recorded on every run.

    Only an answer is cached: a probe that did not finish raises :class:`IsolationUnknown`
    (``functools.cache`` keeps no exception), and the next call probes again.
    """
    notes: list[str] = []
    root = os.geteuid() == 0
    if not root:
        notes.append(
            "not running as root: the adapter keeps the worker's uid; RLIMIT_NPROC not enforced"
        )
    drop = _drop_to_nobody if root else None
    if shutil.which("bwrap") and _works("bubblewrap", [*_bwrap_system(), "--", "/bin/true"], drop):
        filtered = seccomp_filter() is not None
        if not filtered:
            notes.append(NO_SECCOMP_NOTE)
        return Isolation(True, root, tuple(notes), "bwrap", seccomp=filtered)
    notes.append(
        "no bubblewrap: the adapter sees the host's filesystem (what its uid may read) and /tmp"
    )
    if shutil.which("unshare") and _works("unshare", [*UNSHARE, "/bin/true"], drop):
        return Isolation(True, root, tuple(notes), "unshare")
    notes.append("no network namespace available here: the adapter has the host's network")
    return Isolation(False, root, tuple(notes), "none")


# ----------------------------------------------------------------------------- seccomp

#: The seccomp filter, written as BPF to ``argv[1]`` by Debian's ``python3`` with
#: ``python3-seccomp``: every syscall allowed except making or entering namespaces,
#: mounting, the kernel keyrings and io_uring. The same filter the container tier gives the harness (what Fargate allows), and
#: what the local sandbox hands bubblewrap (``--seccomp``): no nested user namespace.
SECCOMP_SCRIPT = """
import errno, sys, seccomp
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
deny = seccomp.ERRNO(errno.EPERM)
for name in ("unshare", "setns", "mount", "umount2", "pivot_root"):
    f.add_rule(deny, name)
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: any one of them refuses
for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
    f.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # glibc falls back to clone
# as a container runtime's default profile does: the kernel keyrings (shared per uid, not
# namespaced) and io_uring (its operations bypass this filter; callers fall back to syscalls)
for name in ("keyctl", "add_key", "request_key"):
    f.add_rule(deny, name)
for name in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), name)
f.export_bpf(open(sys.argv[1], "wb"))
"""


@cache
def seccomp_filter() -> Path | None:
    """The filter's BPF, built once per process into a 0600 file (removed at exit); None when
    ``python3-seccomp`` is not installed (the probe's notes say so on every run). Raises
    :class:`IsolationUnknown`, caching nothing, when building it did not finish in time."""
    holder = Path(tempfile.mkdtemp(prefix=f"tc300-seccomp-{os.getpid()}-"))
    bpf = holder / "filter.bpf"
    try:
        built = _works("the seccomp filter", [SYSTEM_PYTHON, "-I", "-c", SECCOMP_SCRIPT, str(bpf)])
    except IsolationUnknown:
        shutil.rmtree(holder, True)
        raise
    if not built:
        shutil.rmtree(holder, True)
        return None
    atexit.register(shutil.rmtree, holder, True)
    return bpf


# ----------------------------------------------------------------------------- identities

#: Each run's own uid and gid outside the sandbox, drawn from this range: the kernel counts
#: processes (RLIMIT_NPROC) and user namespaces per uid, so one run's fork bomb spends only
#: its own allowance. Inside bubblewrap the run's uid shows as 65534.
RUN_UID_BASE, RUN_UID_COUNT = 2_100_000_000, 1 << 16


class UntrustedFolder(OSError):
    """The run-uid registry's folder is not this user's own private folder."""


@dataclass
class RunIdentity:
    """A uid held for one run: a lock on a file named after it (``flock``, released by the
    kernel when the holder exits however it exits), so no two runs on this machine, in this
    process or another, hold the same one at once. The file is removed on release; a lock
    taken on a file another holder had just removed is dropped and the draw made again."""

    uid: int
    path: Path | None = None
    _fd: int | None = None

    @classmethod
    def take(cls, folder: str | None = None) -> RunIdentity:
        """Hold a free uid. The registry is ``tc300-run-uids`` in ``folder`` (the shared
        temporary folder by default), trusted only when it is a real folder (not a link)
        owned by this user and closed to everyone else: one another user made first could
        hold planted links (a root write redirected) or locks (runs sharing a uid), so it is
        refused with the reason instead."""
        where = Path(folder or tempfile.gettempdir()) / "tc300-run-uids"
        with suppress(FileExistsError):
            os.mkdir(where, 0o700)
        try:
            dfd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise UntrustedFolder(f"{where} is not a folder of its own ({exc.strerror})") from exc
        try:
            held = os.fstat(dfd)
            if held.st_uid != os.geteuid() or held.st_mode & 0o077:
                raise UntrustedFolder(
                    f"{where} is owned by uid {held.st_uid} with mode "
                    f"{stat.S_IMODE(held.st_mode):o}; the run uids need a folder of uid "
                    f"{os.geteuid()} closed to others (0700): remove it"
                )
            for _ in range(64):
                uid = RUN_UID_BASE + secrets.randbelow(RUN_UID_COUNT)
                flags = os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
                fd = os.open(str(uid), flags, 0o600, dir_fd=dfd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    now = os.stat(str(uid), dir_fd=dfd, follow_symlinks=False)
                    if now.st_ino != os.fstat(fd).st_ino:
                        raise OSError("released meanwhile")
                except OSError:
                    os.close(fd)
                    continue
                return cls(uid, where / str(uid), fd)
        finally:
            os.close(dfd)
        raise OSError("no free run uid")

    def release(self) -> None:
        if self._fd is not None:
            with suppress(OSError):
                os.unlink(str(self.path))  # while still locked: the next holder makes a new one
            os.close(self._fd)
            self._fd = None


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
    """Remove the kit copies, seccomp filters and scratch roots of processes that died without cleaning up
    (``kill -9``): their names carry the pid, and a live pid's folders are left alone."""
    removed = []
    for path in Path(folder or tempfile.gettempdir()).glob("tc300-*-*-*"):
        kind, _, rest = path.name[len("tc300-") :].partition("-")
        pid = rest.partition("-")[0]
        if kind not in ("kit", "runs", "seccomp") or not pid.isdigit() or int(pid) == os.getpid():
            continue
        if Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


# ----------------------------------------------------------------------------- commands


def _is_system(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in SYSTEM_PATHS) and not any(
        path == h or path.startswith(h + "/") for h in USR_HIDDEN
    )


def shows(path: Path) -> bool:
    """Whether ``path`` (resolved) lies in what the sandbox shows of the host: a corpus or a
    state folder there would be readable, so the local stack refuses to start with one."""
    real = os.path.realpath(path)
    etc = [os.path.realpath(os.path.join("/etc", name)) for name in ETC_NEEDED]
    return _is_system(real) or any(real == e or real.startswith(e + "/") for e in etc)


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
    command: Sequence[str],
    *,
    uid_dropped: bool | None = None,
    files: Collection[str] | None = None,
) -> str | None:
    """Why ``command`` cannot run in the sandbox, said so the submitter can fix it; None if it
    can. ``files`` are the relative names of the adapter's own files when the team handed
    them over (they appear under :data:`ADAPTER_MOUNT`). Checked at submission (``POST
    /runs`` on a local stack) so a run never fails late for a reason known early
    (docs/local-sandbox.md, "Commands"). Arguments are never looked up on the host: no host
    path is mounted, whatever the command names."""
    dropped = os.geteuid() == 0 if uid_dropped is None else uid_dropped
    program = command[0]
    hint = (
        f"use a name on the sandbox's PATH ({SAFE_PATH}, toolcall300), a system program "
        f"(/usr/...), or hand over the adapter's folder and name it as {ADAPTER_MOUNT}/..."
    )
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
                f"own scratch folder; name its own files as {ADAPTER_MOUNT}/..."
            )
    if program.startswith(ADAPTER_MOUNT + "/"):
        name = program[len(ADAPTER_MOUNT) + 1 :]
        if files is None:
            return f"adapter_cmd[0] {program!r} names the adapter's own files, but none were handed over"
        if name not in files:
            return f"adapter_cmd[0] {program!r} is not among the adapter's files"
        return None
    if "/" not in program:
        if program == "toolcall300":
            return None
        found = shutil.which(program, path=SAFE_PATH)
        if found is None or not _is_system(os.path.realpath(found)):
            return f"adapter_cmd[0] {program!r} is not on the sandbox's PATH ({SAFE_PATH}); {hint}"
        program = found
    if not _is_system(os.path.realpath(program)):
        return (
            f"adapter_cmd[0] {program!r} is not in the sandbox: it holds the system "
            f"(/usr) and the adapter's own files, and no host path is mounted; {hint}"
        )
    if not os.path.isfile(program):
        return f"adapter_cmd[0] {program!r} does not exist or is not a file"
    if dropped and not _nobody_may(program, stat.S_IXOTH):
        return (
            f"uid 65534 cannot execute {program}: the adapter runs as an unprivileged uid, and "
            f"a folder above it is private; use {SYSTEM_PYTHON}"
        )
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
    for path in USR_HIDDEN:
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--tmpfs", path]
    for name in ETC_NEEDED:
        path = os.path.join("/etc", name)
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args + ["--proc", "/proc", "--dev", "/dev"]


def _bwrap_image(root: Path) -> list[str]:
    """bubblewrap's new namespaces with an adapter image's root filesystem as ``/``
    (read-only; ``jobs.adapter_image`` unpacked it): nothing of the host's system."""
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--as-pid-1", "--cap-drop", "ALL"]
    return [*args, "--ro-bind", str(root), "/", "--proc", "/proc", "--dev", "/dev"]


def bwrap_prefix(
    scratch: Path,
    kit_dir: Path,
    adapter_dir: Path | None = None,
    *,
    limits: Limits = Limits(),
    seccomp_fd: int | None = None,
    image_root: Path | None = None,
    packages_dir: Path | None = None,
) -> list[str]:
    """The adapter's whole filesystem: system, kit, its own files (or, for an adapter image,
    the image's root instead of all three), private temp folders of bounded size, and its
    scratch folder inside the ``/tmp`` one (so the scratch total is that tmpfs's size and
    nothing of it lands on the host's disk); it runs as uid 65534 of a user namespace, under
    the seccomp filter when there is one."""
    system = _bwrap_system() if image_root is None else _bwrap_image(image_root)
    args = [*system, "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    for size, path in (
        (limits.tmp_bytes, "/tmp"),
        (limits.var_tmp_bytes, "/var/tmp"),
        (limits.shm_bytes, "/dev/shm"),
    ):
        args += ["--size", str(size), "--tmpfs", path]
    if image_root is None:  # an image carries its own kit (built FROM the harness image)
        args += ["--ro-bind", str(kit_dir), KIT_MOUNT]
    if adapter_dir is not None:
        args += ["--ro-bind", str(adapter_dir), ADAPTER_MOUNT]
    if packages_dir is not None:
        args += ["--ro-bind", str(packages_dir), adapter_requirements.PACKAGES_MOUNT]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--perms", "0700", "--dir", str(scratch)]
    # the root bubblewrap builds (a tmpfs holding /etc's few entries and the mount points) is
    # made read-only last: only the sized temp folders are writable
    return [*args, "--remount-ro", "/", "--chdir", str(scratch), "--"]


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
    adapter_dir: Path | None = None,
    limits: Limits = Limits(),
    seccomp_fd: int | None = None,
    image_root: Path | None = None,
    packages_dir: Path | None = None,
) -> list[str]:
    """``command`` (under the lifeline init when ``life_fd`` is given) inside the namespaces
    ``iso`` says this machine allows."""
    inner = [*_init_argv(life_fd), *command] if life_fd is not None else list(command)
    if not iso.network_isolated:
        return inner
    if iso.method == "bwrap":
        prefix = bwrap_prefix(
            scratch,
            kit_dir or kit(),
            adapter_dir,
            limits=limits,
            seccomp_fd=seccomp_fd,
            image_root=image_root,
            packages_dir=packages_dir,
        )
        return [*prefix, *inner]
    return [*UNSHARE, *inner]


def _preexec(
    limits: Limits, uid: int | None, parent: int, rewind: int | None = None
) -> Callable[[], None]:
    """Runs in the child between fork and exec (after setsid: ``start_new_session``).
    ``rewind``: the seccomp filter's descriptor, which bubblewrap reads to its end and which
    every start shares with the worker, set back to its start so that a command started again
    from the same :class:`Prepared` (the deltas harness restarts a program that broke the
    protocol) runs under the filter too, not refused by bubblewrap for an empty one."""

    def apply() -> None:
        if rewind is not None:
            os.lseek(rewind, 0, os.SEEK_SET)
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:
            _drop_to(uid)  # RLIMIT_NPROC is ignored for root, so drop last
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


def adapter_env(scratch: Path, kit_path: str, *, packages: bool = False) -> dict[str, str]:
    """A clean environment: nothing of the worker's (no credentials) reaches the adapter;
    its installed requirements (``packages``) on ``PYTHONPATH`` after the kit."""
    path = f"{kit_path}:{adapter_requirements.PACKAGES_MOUNT}" if packages else kit_path
    return {
        "PATH": f"{kit_path}/bin:{SAFE_PATH}",
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": path,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


@dataclass(frozen=True)
class ImageRoot:
    """An adapter image unpacked for the sandbox: its root filesystem (read-only as ``/``)
    and its own environment (``ENV``), which the adapter starts with as in the Batch job."""

    root: Path
    env: dict[str, str]
    #: The image's CMD: the adapter's command (its ENTRYPOINT is the harness, run in process).
    command: list[str] = field(default_factory=list)


#: What the job's harness removes from the image's environment (infra/harness/entrypoint.py).
SCRUBBED_PREFIXES = ("TC300_", "AWS_", "ECS_CONTAINER_METADATA")


def image_env(image: ImageRoot, scratch: Path) -> dict[str, str]:
    """The environment the Batch job gives an image's adapter: the image's own, minus links
    and credentials, with ``HOME`` and ``TMPDIR`` its scratch folder."""
    kept = {k: v for k, v in image.env.items() if not k.startswith(SCRUBBED_PREFIXES)}
    return {**kept, "HOME": str(scratch), "TMPDIR": str(scratch)}


def prepare(
    command: list[str],
    scratch: Path,
    *,
    limits: Limits = Limits(),
    isolation: Isolation | None = None,
    adapter_dir: Path | None = None,
    image: ImageRoot | None = None,
    packages_dir: Path | None = None,
) -> Prepared:
    """The sandboxed form of ``command`` running in ``scratch`` (which must exist), with the
    adapter's own files (``adapter_dir``, a folder of the run's) at :data:`ADAPTER_MOUNT`, or
    in an adapter image's root filesystem (``image``) instead of the host's system.

    Raises :class:`CommandRefused` when files or an image were handed over but this machine
    cannot give the adapter its own filesystem. The caller must ``close()`` the result
    (``session`` does).
    """
    iso = isolation or probe()
    kit_dir = kit()
    if (adapter_dir is not None or image is not None) and not iso.filesystem_private:
        raise CommandRefused(
            f"the adapter's own files or image need bubblewrap to appear at {ADAPTER_MOUNT} "
            "or as /; this machine has none (apt-get install bubblewrap)"
        )
    # its own uid where namespaces hide it (inside a container, one run per container: 65534)
    identity = RunIdentity.take() if iso.uid_dropped and iso.network_isolated else None
    uid = identity.uid if identity else NOBODY if iso.uid_dropped else None
    if uid is not None:
        os.chown(scratch, uid, uid)
    bpf = seccomp_filter() if iso.filesystem_private and iso.seccomp else None
    if bpf is None and iso.filesystem_private and iso.seccomp:
        # the isolation handed in promised a filter this machine cannot build: the run records
        # what it gets, never a filter it runs without
        iso = replace(iso, seccomp=False, notes=(*iso.notes, NO_SECCOMP_NOTE))
    seccomp_fd = os.open(bpf, os.O_RDONLY) if bpf is not None else None
    read, write = os.pipe()
    argv = wrap(
        command,
        scratch,
        iso,
        life_fd=read,
        kit_dir=kit_dir,
        adapter_dir=adapter_dir,
        limits=limits,
        seccomp_fd=seccomp_fd,
        image_root=image.root if image is not None else None,
        packages_dir=packages_dir,
    )
    kit_path = KIT_MOUNT if iso.filesystem_private else str(kit_dir)
    env = adapter_env(scratch, kit_path, packages=packages_dir is not None)
    kwargs: dict[str, Any] = {
        "cwd": str(scratch),
        "env": image_env(image, scratch) if image is not None else env,
        "start_new_session": True,
        "preexec_fn": _preexec(limits, uid, os.getpid(), seccomp_fd),
        "close_fds": True,
        "pass_fds": (read,) if seccomp_fd is None else (read, seccomp_fd),
    }
    return Prepared(argv, kwargs, scratch, iso, (read, write), False, identity, seccomp_fd)


@contextmanager
def scratch_dir(root: str | None = None) -> Iterator[Path]:
    """A private scratch directory, removed afterwards whatever the adapter left in it."""
    path = Path(tempfile.mkdtemp(prefix="tc300-run-", dir=root or _scratch_root()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def adapter_copy(archive: bytes | None) -> Iterator[Path | None]:
    """A fresh copy of the adapter's own files for one run (None when none were handed over),
    unpacked into a folder of this process's scratch root and removed afterwards; an archive
    that cannot be unpacked raises :class:`CommandRefused`."""
    if archive is None:
        yield None
        return
    holder = Path(tempfile.mkdtemp(prefix="tc300-files-", dir=_scratch_root()))
    try:
        holder.chmod(0o755)
        try:
            yield adapter_files.unpack(archive, holder / "adapter")
        except adapter_files.FilesRefused as exc:
            raise CommandRefused(f"the adapter's files: {exc}") from exc
    finally:
        shutil.rmtree(holder, ignore_errors=True)


_IMAGES_KEPT = 4
_images: dict[str, ImageRoot] = {}
_image_uses: dict[str, int] = {}  # runs using each kept image now
_images_lock = threading.Lock()


@contextmanager
def image_in_use(archive: bytes, held: adapter_image.Blobs | None = None) -> Iterator[ImageRoot]:
    """The adapter image in ``archive`` unpacked for a run (``jobs.adapter_image``, every
    check before a byte is written), read-only to it, kept for this process by the archive's
    digest; raises ``adapter_image.ImageRefused``. Past :data:`_IMAGES_KEPT` kept images the
    least recently used go, but never one a run is using: it goes once that run ends."""
    key = hashlib.sha256(archive).hexdigest()
    with _images_lock:
        image = _images.pop(key, None) or _unpacked_image(archive, held)
        _images[key] = image  # the most recently used last
        _image_uses[key] = _image_uses.get(key, 0) + 1
        _forget_images()
    try:
        yield image
    finally:
        with _images_lock:
            _image_uses[key] -= 1
            _forget_images()


def _unpacked_image(archive: bytes, held: adapter_image.Blobs | None) -> ImageRoot:
    image = adapter_image.read_image(archive, held)
    command = adapter_image.adapter_command(image)
    holder = Path(tempfile.mkdtemp(prefix="tc300-image-", dir=_scratch_root()))
    holder.chmod(0o755)
    try:
        root = adapter_image.unpack(image, holder / "root")
    except BaseException:
        shutil.rmtree(holder, ignore_errors=True)
        raise
    return ImageRoot(root, image.env, command)


def _forget_images() -> None:
    """Remove the least recently used images no run is using while more than
    :data:`_IMAGES_KEPT` are kept (the caller holds ``_images_lock``)."""
    for key in [k for k in _images if not _image_uses.get(k)]:
        if len(_images) <= _IMAGES_KEPT:
            return
        _image_uses.pop(key, None)
        shutil.rmtree(_images.pop(key).root.parent, ignore_errors=True)


@cache
def held_layers(path: str) -> adapter_image.Blobs | None:
    """The layers of the image archive at ``path`` (the stack's harness image, read once),
    which an adapter image may leave out; None for no path. Raises ``ImageRefused`` (or
    OSError) when it cannot be read: the operator named it."""
    if not path:
        return None
    try:
        return adapter_image.held_blobs(Path(path).read_bytes())
    except OSError as exc:
        raise adapter_image.ImageRefused(
            f"the stack's harness image {path} cannot be read ({exc.strerror or exc}): its "
            "operator sets TOOLCALL300_HARNESS_IMAGE"
        ) from exc


@contextmanager
def packages_copy(packed: bytes | None) -> Iterator[Path | None]:
    """A fresh read-only copy of the adapter's installed requirements for one run (None when
    it has none), in a folder of this process's scratch root, removed afterwards."""
    if packed is None:
        yield None
        return
    holder = Path(tempfile.mkdtemp(prefix="tc300-packages-", dir=_scratch_root()))
    try:
        holder.chmod(0o755)
        yield adapter_requirements.unpack(packed, holder / "packages")
    finally:
        shutil.rmtree(holder, ignore_errors=True)


@contextmanager
def session(
    command: list[str],
    *,
    limits: Limits = Limits(),
    isolation: Isolation | None = None,
    adapter_dir: Path | None = None,
    image: ImageRoot | None = None,
    packages_dir: Path | None = None,
) -> Iterator[Prepared]:
    """A scratch directory and the sandboxed command in it; afterwards the lifeline is closed
    (anything the adapter left running dies) and the scratch directory removed."""
    with scratch_dir() as scratch:
        prepared = prepare(
            command,
            scratch,
            limits=limits,
            isolation=isolation,
            adapter_dir=adapter_dir,
            image=image,
            packages_dir=packages_dir,
        )
        try:
            yield prepared
        finally:
            prepared.close()
