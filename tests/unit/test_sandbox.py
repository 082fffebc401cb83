"""The local sandbox: limits, uid, scratch directory, and honest notes when isolation is missing."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes

from toolcall300.jobs import adapter_files, harness, sandbox

LIMITS = harness.Limits(per_case_timeout=5.0, total_timeout=20.0)
CASE = fakes.small_corpus(1)

REPORT_SELF = fakes.py(
    "import json,os,resource,sys\n"
    "for line in sys.stdin:\n"
    "    item=json.loads(line)\n"
    "    open('written.txt','w').write('x')\n"
    "    info={'uid':os.getuid(),'cwd':os.getcwd(),'uid_map':open('/proc/self/uid_map').read().split(),\n"
    "          'as':resource.getrlimit(resource.RLIMIT_AS)[0],'cpu':resource.getrlimit(resource.RLIMIT_CPU)[0],\n"
    "          'fsize':resource.getrlimit(resource.RLIMIT_FSIZE)[0],'nproc':resource.getrlimit(resource.RLIMIT_NPROC)[0],\n"
    "          'sid':os.getsid(0)==os.getpid() or os.getpgid(0)!=os.getpgid(os.getppid()) if os.getppid()>1 else True}\n"
    "    print(json.dumps({'id':item['id'],'call':{'name':'self','arguments':info}}),flush=True)\n"
)


def run_self(
    limits: sandbox.Limits, isolation: sandbox.Isolation | None = None
) -> tuple[dict[str, Any], Path]:
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(REPORT_SELF, scratch, limits=limits, isolation=isolation)
        out = harness.run_job(
            prepared.argv,
            harness.job_inputs(CASE),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )
    assert out.failure is None, out.failure
    assert not scratch.exists()  # removed afterwards
    info = next(iter(out.answers.values()))["arguments"]
    return info, scratch


def test_limits_apply_inside_the_sandbox() -> None:
    limits = sandbox.Limits(
        memory_bytes=700 * 1024 * 1024, cpu_seconds=17, file_bytes=1234567, processes=99
    )
    info, scratch = run_self(limits)
    assert info["as"] == limits.memory_bytes
    assert info["cpu"] == 17
    assert info["fsize"] == 1234567
    assert info["nproc"] == 99
    assert info["cwd"] == str(scratch)


def uids_outside(token: str) -> set[int]:
    """The real uids (as the host counts them) of every process carrying ``token``."""
    found = set()
    for pid in fakes.pids_with(token):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found |= {int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")}
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the uid needs root")
def test_each_run_has_its_own_uid_and_none_is_root() -> None:
    """Two runs at once: the kernel counts each one's processes under a uid of its own
    (RLIMIT_NPROC is per uid), neither of them root's or the other's."""
    iso = sandbox.probe()
    token = "tc300-uid-" + os.urandom(4).hex()
    waiting = fakes.py(f"'{token}'\nimport sys\nprint('up',flush=True)\nsys.stdin.read()\n")
    with sandbox.session(waiting) as first, sandbox.session(waiting) as second:
        procs = [
            subprocess.Popen(
                p.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, **p.popen_kwargs
            )
            for p in (first, second)
        ]
        try:
            for proc in procs:
                assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
            seen = [uids_outside(token)]
        finally:
            for proc in procs:
                proc.communicate(b"")
    uids = seen[0]
    assert iso.uid_dropped and 0 not in uids
    if iso.network_isolated:
        assert len(uids) == 2, uids
        assert all(
            sandbox.RUN_UID_BASE <= u < sandbox.RUN_UID_BASE + sandbox.RUN_UID_COUNT for u in uids
        )


def test_a_run_uid_is_held_by_one_run_at_a_time_and_its_file_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draws = iter([5, 5, 6, 5])
    monkeypatch.setattr(sandbox.secrets, "randbelow", lambda _n: next(draws))
    first = sandbox.RunIdentity.take(str(tmp_path))
    second = sandbox.RunIdentity.take(str(tmp_path))  # 5 is held: drawn again
    assert (first.uid, second.uid) == (sandbox.RUN_UID_BASE + 5, sandbox.RUN_UID_BASE + 6)
    first.release()
    assert sorted(p.name for p in (tmp_path / "tc300-run-uids").iterdir()) == [str(second.uid)]
    third = sandbox.RunIdentity.take(str(tmp_path))  # 5 is free again
    assert third.uid == sandbox.RUN_UID_BASE + 5
    second.release()
    third.release()
    assert list((tmp_path / "tc300-run-uids").iterdir()) == []


@pytest.mark.parametrize("plant", ["open to all", "a link", "another owner"])
def test_a_run_uid_folder_another_user_made_first_is_refused(tmp_path: Path, plant: str) -> None:
    """Before: ``tc300-run-uids`` in the shared temporary folder was used whoever had made it,
     so links planted there redirected a root write and planted locks made runs share a uid
    . Now only this user's own folder, closed to others, is used."""
    import os

    where = tmp_path / "tc300-run-uids"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if plant == "open to all":
        where.mkdir()
        where.chmod(0o1777)
    elif plant == "a link":
        where.symlink_to(elsewhere)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a folder of another owner needs root")
        where.mkdir(mode=0o700)
        os.chown(where, 65534, 65534)
    with pytest.raises(sandbox.UntrustedFolder, match="tc300-run-uids"):
        sandbox.RunIdentity.take(str(tmp_path))
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    if plant != "a link":
        assert list(where.iterdir()) == []


def test_without_isolation_the_command_runs_as_given_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox.probe.cache_clear()
    monkeypatch.setattr(sandbox.shutil, "which", lambda _name: None)
    try:
        iso = sandbox.probe()
    finally:
        sandbox.probe.cache_clear()
    assert iso.network_isolated is False
    assert any("network" in note for note in iso.notes)
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(["toolcall300", "toolshim", "--stream"], scratch, isolation=iso)
        prepared.close()
        # no namespaces: only the lifeline init stands before the command
        assert prepared.argv[-3:] == ["toolcall300", "toolshim", "--stream"]
        assert sandbox.INIT in prepared.argv and "unshare" not in prepared.argv
        assert prepared.isolation.record()["notes"] == list(iso.notes)


def test_a_promised_seccomp_filter_that_cannot_be_built_is_recorded_as_absent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An isolation handed to prepare() may say seccomp where this machine builds no filter:
    the run then records no filter and says why, never a filter it runs without."""
    monkeypatch.setattr(sandbox, "seccomp_filter", lambda: None)
    iso = sandbox.Isolation(network_isolated=True, uid_dropped=False, method="bwrap", seccomp=True)
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(["adapter"], scratch, isolation=iso)
        prepared.close()
    record = prepared.isolation.record()
    assert record["seccomp"] is False and record["filesystem"] == "private"
    assert sandbox.NO_SECCOMP_NOTE in record["notes"]
    assert "--seccomp" not in prepared.argv


def test_isolated_commands_run_in_new_namespaces() -> None:
    iso = sandbox.Isolation(network_isolated=True, uid_dropped=False)
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(["adapter"], scratch, isolation=iso)
        prepared.close()
    assert prepared.argv[: len(sandbox.UNSHARE)] == list(sandbox.UNSHARE)
    assert "--net" in prepared.argv and "--kill-child" in prepared.argv
    assert prepared.argv[-1] == "adapter"


def test_the_toolcall300_command_is_on_the_adapters_path() -> None:
    which = fakes.py(
        "import json,shutil,subprocess,sys\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    out=subprocess.run(['toolcall300','--version'],capture_output=True,text=True).stdout.strip()\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'v','arguments':{'v':out}}}),flush=True)\n"
    )
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(which, scratch)
        out = harness.run_job(
            prepared.argv,
            harness.job_inputs(CASE),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )
    assert out.failure is None
    assert json.dumps(out.answers).count("toolcall300 ") == 1


@pytest.mark.skipif(sandbox.shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_bubblewrap_fallback_isolates_and_limits_too() -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    probe_net = fakes.py(
        "import json,socket,sys\n"
        f"s=socket.socket(); s.settimeout(2); reached=s.connect_ex(('127.0.0.1',{port}))==0\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    try:\n        open('/etc/tc300-escape','w'); wrote=True\n    except OSError:\n        wrote=False\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'n','arguments':{'reached':reached,'wrote':wrote}}}),flush=True)\n"
    )
    iso = sandbox.Isolation(True, os.geteuid() == 0, (), "bwrap")
    try:
        with sandbox.scratch_dir() as scratch:
            prepared = sandbox.prepare(probe_net, scratch, isolation=iso)
            assert prepared.argv[0] == "bwrap"
            out = harness.run_job(
                prepared.argv,
                harness.job_inputs(CASE),
                limits=LIMITS,
                popen_kwargs=prepared.popen_kwargs,
            )
    finally:
        listener.close()
    assert out.failure is None, out.failure
    assert next(iter(out.answers.values()))["arguments"] == {"reached": False, "wrote": False}
    assert iso.record()["method"] == "bwrap"
    info, _ = run_self(sandbox.Limits(cpu_seconds=23), iso)
    assert info["cpu"] == 23


@pytest.mark.skipif(sandbox.shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_under_bubblewrap_the_run_has_only_its_own_loopback_up() -> None:
    """docs/local-sandbox.md said the loopback was down; under bubblewrap it is up (bwrap
    brings it up) and the run's alone: the one interface, one the adapter can listen and
    connect on, while the host's listeners stay out of reach (the test above)."""
    probe = fakes.py(
        "import json,os,socket,sys\n"
        "rows=open('/proc/net/dev').read().splitlines()[2:]\n"
        "names=sorted(r.split(':')[0].strip() for r in rows)\n"
        "srv=socket.socket(); srv.bind(('127.0.0.1',0)); srv.listen(1)\n"
        "c=socket.socket(); c.settimeout(2); own=c.connect_ex(srv.getsockname())==0\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'n','arguments':{'names':names,'own':own}}}),flush=True)\n"
    )
    iso = sandbox.Isolation(True, os.geteuid() == 0, (), "bwrap")
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(probe, scratch, isolation=iso)
        out = harness.run_job(
            prepared.argv,
            harness.job_inputs(CASE),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )
    assert answer_of(out) == {"names": ["lo"], "own": True}


# ----------------------------------------------------------------------------- the filesystem

needs_bwrap = pytest.mark.skipif(
    not sandbox.probe().filesystem_private, reason="bubblewrap is not usable here"
)


def run_adapter(command: list[str], cases: list[dict[str, Any]] = CASE, **kw: Any) -> Any:
    with sandbox.session(command, **kw) as prepared:
        return harness.run_job(
            prepared.argv,
            harness.job_inputs(cases),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )


def answer_of(out: harness.JobOutput) -> Any:
    assert out.failure is None, out.failure
    return next(iter(out.answers.values()))["arguments"]


LOOK_AROUND = fakes.py(
    "import json,os,sys\n"
    "def ls(p):\n"
    "    try:\n        return sorted(os.listdir(p))\n    except OSError as e:\n        return e.strerror\n"
    "for line in sys.stdin:\n"
    "    item=json.loads(line)\n"
    "    for d in ('/tmp','/var/tmp','/dev/shm'):\n"
    "        open(os.path.join(d,'tc300-left-behind'),'w').write('x')\n"
    "    seen={p:ls(p) for p in sys.argv[1:]}\n"
    "    seen['/']=ls('/'); seen['cwd']=os.getcwd(); seen['kit']=ls(os.environ['PYTHONPATH'])\n"
    "    seen['/etc']=ls('/etc'); seen['cmdline']=open('/proc/1/cmdline').read().replace(chr(0),' ')\n"
    "    print(json.dumps({'id':item['id'],'call':{'name':'ls','arguments':seen}}),flush=True)\n"
)


@needs_bwrap
def test_the_adapter_sees_the_system_the_kit_and_its_scratch_and_nothing_else(
    tmp_path: Path,
) -> None:
    repo = sandbox.PACKAGE_ROOT.parents[1]
    other = Path(tempfile.mkdtemp(prefix="tc300-run-other-"))  # as another run's scratch
    try:
        other.chmod(0o777)
        probe = [*LOOK_AROUND, str(repo), str(repo / "corpus_private"), str(other), "/root"]
        seen = answer_of(run_adapter(probe))
    finally:
        shutil.rmtree(other)
    for hidden in (str(repo), str(repo / "corpus_private"), str(other), "/root"):
        assert seen[hidden] == "No such file or directory", hidden
    assert set(seen["/"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt"} | {
        "proc", "sbin", "tmp", "usr", "var"
    }  # fmt: skip
    assert seen["kit"] == ["bin", "toolcall300"] and seen["cwd"].startswith("/tmp/")
    # private temp folders: what the adapter wrote there is gone with it
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not (Path(folder) / "tc300-left-behind").exists()


def test_the_kit_holds_the_package_without_the_service_or_any_case(tmp_path: Path) -> None:
    kit = sandbox.build_kit(tmp_path / "kit")
    names = {
        p.relative_to(kit / "toolcall300").as_posix() for p in (kit / "toolcall300").rglob("*")
    }
    assert "cli.py" in names and "toolshim/pipeline.py" in names
    assert not any(n.startswith("service") or n.endswith(".pyc") for n in names)
    assert "data/sample30.jsonl" not in names  # its 30 cases are in the private corpus too
    modes = {oct(p.stat().st_mode & 0o777) for p in kit.rglob("*") if p.is_file()}
    assert modes == {"0o644", "0o755"}  # readable by uid 65534, writable only by its owner


def folder_archive(files: dict[str, tuple[str, int]]) -> bytes:
    """A tar archive of a folder (what ``toolcall300 ci --adapter-dir`` sends)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, (text, mode) in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


OWN_ADAPTER = (
    "import json,os,sys\n"
    "here=os.path.dirname(__file__)\n"
    "for line in sys.stdin:\n"
    "    item=json.loads(line)\n"
    "    try:\n        open(__file__,'a'); wrote=True\n    except OSError:\n        wrote=False\n"
    "    word=open(os.path.join(here,'data','word.txt')).read()\n"
    "    print(json.dumps({'id':item['id'],'call':{'name':'me','arguments':{'wrote':wrote,'word':word,'here':here}}}),flush=True)\n"
)


@needs_bwrap
def test_the_adapter_runs_from_its_own_copy_of_the_files_it_handed_over() -> None:
    archive = folder_archive(
        {"adapter.py": (OWN_ADAPTER, 0o600), "data/word.txt": ("hello", 0o600)}
    )
    command = [sandbox.SYSTEM_PYTHON, f"{sandbox.ADAPTER_MOUNT}/adapter.py"]
    assert sandbox.command_problem(command, files=adapter_files.listing(archive)) is None
    with sandbox.adapter_copy(archive) as copy:
        assert copy is not None
        out = run_adapter(command, adapter_dir=copy)
    assert not copy.exists()  # removed with the run
    assert answer_of(out) == {"wrote": False, "word": "hello", "here": sandbox.ADAPTER_MOUNT}


@needs_bwrap
def test_no_host_path_the_command_names_is_mounted(tmp_path: Path) -> None:
    own = Path(tempfile.mkdtemp(prefix="tc300-adapter-"))
    try:  # a folder uid 65534 could read, named in the command: the old sandbox mounted it
        own.chmod(0o755)
        (own / "labels.jsonl").write_text('{"id": "t-000", "expected": null}\n')
        (own / "labels.jsonl").chmod(0o644)
        probe = [*LOOK_AROUND, str(own), "/proc/1", "/work", "/home"]
        seen = answer_of(run_adapter([*probe, str(own / "labels.jsonl"), "/proc/1/cmdline"]))
    finally:
        shutil.rmtree(own)
    assert seen[str(own)] == "No such file or directory"
    assert seen["/work"] == seen["/home"] == "No such file or directory"
    # /proc is the sandbox's own: its first process is the lifeline init, not the host's init
    assert seen["cmdline"].startswith(sandbox.SYSTEM_PYTHON + " -I -S -c")
    assert set(seen["/etc"]) <= set(sandbox.ETC_NEEDED)


def test_a_state_or_corpus_folder_in_what_the_sandbox_shows_is_refused() -> None:
    assert sandbox.shows(Path("/usr/local/share/tc300-corpus"))
    assert sandbox.shows(Path("/etc/python3/corpus"))
    assert not sandbox.shows(Path("/usr/local/src/checkout/corpus_private"))
    assert not sandbox.shows(Path("/etc/toolcall300"))
    assert not sandbox.shows(sandbox.PACKAGE_ROOT.parents[1] / "corpus_private")


# ----------------------------------------------------------------------------- commands


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["./adapter.py"], "relative path"),
        (["bin/adapter"], "relative path"),
        (["python3", "adapter.py"], "relative path"),
        (["python3", "../x/adapter.py"], "relative path"),
        (["no-such-program-tc300"], "not on the sandbox's PATH"),
        (["/usr/bin/no-such-program-tc300"], "does not exist"),
        (["/tmp/adapter"], "no host path is mounted"),
        (["/root/.pyenv/shims/python3", "-c", "pass"], "no host path is mounted"),
        (["/adapter/run.py"], "none were handed over"),
    ],
)
def test_a_command_the_sandbox_cannot_run_is_refused_with_a_reason(
    command: list[str], says: str
) -> None:
    problem = sandbox.command_problem(command, uid_dropped=False)
    assert problem is not None and says in problem


def test_the_adapters_own_program_must_be_among_its_files() -> None:
    files = {"bin/run": 0o755, "bin": 0o755}
    assert sandbox.command_problem(["/adapter/bin/run"], files=files) is None
    problem = sandbox.command_problem(["/adapter/bin/other"], files=files)
    assert problem is not None and "not among the adapter's files" in problem


@pytest.mark.parametrize(
    "command",
    [
        ["toolcall300", "toolshim", "--stream"],
        ["python3", "-c", "import sys; print('a.py')"],
        [sandbox.SYSTEM_PYTHON, "-u", "-c", "pass"],
        ["sh", "-c", "exec cat"],
        # arguments are strings: a host path there is not looked up, and not mounted
        [sandbox.SYSTEM_PYTHON, "/home/me/adapter.py", "/proc/1/cmdline"],
    ],
)
def test_commands_the_sandbox_runs_pass_the_check(command: list[str]) -> None:
    assert sandbox.command_problem(command, uid_dropped=os.geteuid() == 0) is None


def test_leftovers_of_dead_processes_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    gone = 2**22 + 1  # above pid_max's default: no process has it
    (tmp_path / f"tc300-runs-{gone}-abc" / "tc300-run-x").mkdir(parents=True)
    (tmp_path / f"tc300-kit-{gone}-abc").mkdir()
    (tmp_path / f"tc300-seccomp-{gone}-abc").mkdir()
    (tmp_path / f"tc300-runs-{os.getppid()}-abc").mkdir()  # a live process's
    (tmp_path / "tc300-other-1-x").mkdir()  # not ours
    removed = sandbox.sweep_leftovers(str(tmp_path))
    assert sorted(p.name for p in removed) == [
        f"tc300-kit-{gone}-abc",
        f"tc300-runs-{gone}-abc",
        f"tc300-seccomp-{gone}-abc",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "tc300-other-1-x",
        f"tc300-runs-{os.getppid()}-abc",
    ]


# ----------------------------------------------------------------------------- one run, one share


@needs_bwrap
def test_the_seccomp_filter_refuses_new_namespaces_inside_the_sandbox() -> None:
    probe = fakes.py(
        "import ctypes,json,os,subprocess,sys\n"
        "status=dict(l.split(':',1) for l in open('/proc/self/status').read().splitlines())\n"
        "libc=ctypes.CDLL(None,use_errno=True)\n"
        "rc=libc.unshare(0x10000000); err=ctypes.get_errno()\n"  # CLONE_NEWUSER
        "tool=subprocess.run(['unshare','--user','--map-root-user','/bin/true'],capture_output=True,text=True)\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    info={'seccomp':status['Seccomp'].strip(),'rc':rc,'errno':err,\n"
        "          'tool':tool.returncode,'said':tool.stderr}\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'s','arguments':info}}),flush=True)\n"
    )
    out = run_adapter(probe)
    seen = answer_of(out)
    assert seen["seccomp"] == "2"  # a filter is in force
    assert (seen["rc"], seen["errno"]) == (-1, errno.EPERM)
    assert seen["tool"] != 0 and "Operation not permitted" in seen["said"]
    assert sandbox.probe().record()["seccomp"] is True


@needs_bwrap
def test_the_seccomp_filter_refuses_io_uring_and_the_kernel_keyrings() -> None:
    """Before: both were allowed inside the sandbox. io_uring's operations bypass a syscall
    filter, and the keyrings are shared per uid across namespaces; a container runtime's
    default profile refuses both."""
    probe = fakes.py(
        "import ctypes,json,sys\n"
        "libc=ctypes.CDLL(None,use_errno=True)\n"
        "def call(nr,*a):\n"
        "    rc=libc.syscall(nr,*a); return [rc, ctypes.get_errno()]\n"
        "import platform\n"
        "arm=platform.machine()=='aarch64'\n"
        "params=ctypes.create_string_buffer(120)\n"
        "got={'io_uring_setup':call(425,8,params),\n"
        "     'keyctl':call(219 if arm else 250,0,-3,0),\n"  # KEYCTL_GET_KEYRING_ID, user keyring
        "     'add_key':call(217 if arm else 248,b'user',b'k',b'v',1,-3)}\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'s','arguments':got}}),flush=True)\n"
    )
    seen = answer_of(run_adapter(probe))
    assert seen["io_uring_setup"] == [-1, errno.ENOSYS]
    assert seen["keyctl"] == [-1, errno.EPERM]
    assert seen["add_key"] == [-1, errno.EPERM]


@pytest.mark.parametrize("method", ["bwrap", "unshare"])
def test_the_adapter_cannot_ptrace_or_look_into_the_runs_init(method: str) -> None:
    # The init (pid 1) runs as the adapter's uid and holds the lifeline: attached with ptrace,
    # the adapter could clear its death signal and keep it stopped, leaving itself running
    # (and its tmpfs in host memory) after the run ends. Under unshare(1) the adapter is the
    # mapped root of its namespaces, with every capability there unless the init drops them.
    if shutil.which(method) is None:
        pytest.skip(f"{method} is not installed")
    if method == "bwrap" and not sandbox.probe().filesystem_private:
        pytest.skip("bubblewrap is not usable here")
    iso = sandbox.Isolation(True, os.geteuid() == 0, (), method)
    attack = fakes.py(
        "import ctypes,json,os,sys\n"
        "libc=ctypes.CDLL(None,use_errno=True)\n"
        "rc=libc.ptrace(16,1,0,0); err=ctypes.get_errno()\n"  # PTRACE_ATTACH
        "def look(fd):\n    return os.readlink(f'/proc/1/fd/{fd}')\n"
        "try:\n    fds=[look(fd) for fd in os.listdir('/proc/1/fd')]\nexcept OSError as e:\n    fds=e.errno\n"
        "caps=[l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0]\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    info={'rc':rc,'errno':err,'fds':fds,'caps':caps}\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'p','arguments':info}}),flush=True)\n"
    )
    seen = answer_of(run_adapter(attack, isolation=iso))
    assert (seen["rc"], seen["errno"]) == (-1, errno.EPERM)
    assert seen["fds"] == errno.EACCES or seen["fds"] == []  # unreadable, or nothing to read
    assert seen["caps"] == "0000000000000000"


@needs_bwrap
def test_the_adapter_inherits_only_its_pipes_and_reaches_no_host_socket() -> None:
    # Given a service of the host's on an abstract unix socket (no file: no mount keeps it
    # out, only the network namespace)
    import socket

    name = "\0tc300-" + os.urandom(4).hex()
    host = socket.socket(socket.AF_UNIX)
    host.bind(name)
    host.listen(1)
    attack = fakes.py(
        "import json,os,socket,sys\n"
        "fds=sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
        "fds=[f for f in fds if os.path.exists(f'/proc/self/fd/{f}')]\n"
        "s=socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1].replace('@',chr(0))); got=0\nexcept OSError as e:\n    got=e.errno\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'f','arguments':{'fds':fds,'connect':got}}}),flush=True)\n"
    )
    try:
        seen = answer_of(run_adapter([*attack, name.replace("\0", "@")]))
    finally:
        host.close()
    assert seen == {"fds": [0, 1, 2], "connect": errno.ECONNREFUSED}


@needs_bwrap
def test_the_private_temp_folders_and_the_scratch_total_are_capped() -> None:
    fill = fakes.py(
        "import errno,json,os,sys\n"
        "def fill(folder):\n"
        "    total,chunk=0,b'x'*262144\n"
        "    for i in range(4096):\n"
        "        try:\n"
        "            with open(os.path.join(folder,f'f{i}'),'wb') as fh:\n"
        "                for _ in range(8):\n"
        "                    fh.write(chunk); fh.flush(); total+=len(chunk)\n"
        "        except OSError as e:\n"
        "            return total,errno.errorcode[e.errno]\n"
        "    return total,None\n"
        "seen={d:fill(d) for d in (os.getcwd(),'/var/tmp','/dev/shm','/etc')}\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'f','arguments':seen}}),flush=True)\n"
    )
    mib = 1024 * 1024
    limits = sandbox.Limits(tmp_bytes=4 * mib, var_tmp_bytes=1 * mib, shm_bytes=2 * mib)
    with sandbox.session(fill, limits=limits) as prepared:
        out = harness.run_job(
            prepared.argv,
            harness.job_inputs(CASE),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )
        scratch = str(prepared.scratch)
    seen = answer_of(out)
    # the scratch folder lives in /tmp: its total is /tmp's size, across any number of files
    for folder, cap in ((scratch, 4 * mib), ("/var/tmp", 1 * mib), ("/dev/shm", 2 * mib)):
        total, error = seen[folder]
        assert error == "ENOSPC" and total <= cap, (folder, seen[folder])
    assert seen["/etc"] == [0, "EROFS"]  # the root bubblewrap builds is read-only


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own per run needs root")
def test_a_fork_bomb_in_one_run_does_not_stop_another_run_from_starting() -> None:
    limits = sandbox.Limits(processes=24)
    bomb = fakes.py(
        "import os,sys,time\n"
        "n=0\n"
        "while True:\n"
        "    try:\n        pid=os.fork()\n    except OSError:\n        break\n"
        "    if pid==0:\n        time.sleep(600); os._exit(0)\n"
        "    n+=1\n"
        "print(f'bombed {n}',flush=True)\n"
        "sys.stdin.read()\n"
    )
    with sandbox.session(bomb, limits=limits) as bombing:
        proc = subprocess.Popen(
            bombing.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, **bombing.popen_kwargs
        )
        try:
            assert proc.stdout is not None
            said = proc.stdout.readline().decode()
            assert said.startswith("bombed "), said  # it spent its whole allowance, and holds it
            out = run_adapter(fakes.ECHO, limits=limits)  # another team's run, meanwhile
        finally:
            bombing.kill()
            proc.communicate(b"")
    assert out.failure is None, out.failure
    assert out.answers == {CASE[0]["id"]: json.loads(CASE[0]["text"])}


# ----------------------------------------------------------------------------- probing


@pytest.fixture
def fresh_probe(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The probe and the seccomp filter forgotten before and after (the next test probes the
    real machine again), every program found on PATH, and probe commands answered by a
    ``ProbeCommands`` the test installs with ``use``."""
    sandbox.probe.cache_clear()
    sandbox.seccomp_filter.cache_clear()
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: f"/usr/bin/{name}")

    def use(fake: fakes.ProbeCommands) -> fakes.ProbeCommands:
        monkeypatch.setattr(sandbox, "run_probe_command", fake)
        return fake

    yield use
    sandbox.probe.cache_clear()
    sandbox.seccomp_filter.cache_clear()


FIRST, SECOND = sandbox.PROBE_BOUNDS_S


def test_a_bubblewrap_probe_that_did_not_finish_is_no_answer_and_is_asked_again(
    fresh_probe: Any,
) -> None:
    """A slow bubblewrap start on a busy machine is not "no bubblewrap": nothing weaker is
    tried or cached, and the next probe that finishes gives bubblewrap."""
    fake = fresh_probe(fakes.ProbeCommands(bwrap=["timeout", "timeout", 0], seccomp=[0]))
    with pytest.raises(sandbox.IsolationUnknown) as unknown:
        sandbox.probe()
    assert "bubblewrap did not finish within" in str(unknown.value)
    assert fake.asked == [("bwrap", FIRST), ("bwrap", SECOND)]  # unshare never tried
    iso = sandbox.probe()
    assert (iso.method, iso.filesystem_private, iso.seccomp) == ("bwrap", True, True)
    assert not any("no bubblewrap" in note for note in iso.notes)
    assert sandbox.probe() is iso  # an answer is cached
    assert fake.asked[2:] == [("bwrap", FIRST), ("seccomp", FIRST)]


def test_a_probe_that_finishes_on_its_longer_try_is_an_answer(fresh_probe: Any) -> None:
    fake = fresh_probe(fakes.ProbeCommands(bwrap=["timeout", 0], seccomp=[0]))
    assert sandbox.probe().method == "bwrap"
    assert fake.asked == [("bwrap", FIRST), ("bwrap", SECOND), ("seccomp", FIRST)]
    assert FIRST < SECOND


def test_a_probe_that_could_not_start_for_want_of_resources_is_no_answer(
    fresh_probe: Any,
) -> None:
    fake = fresh_probe(fakes.ProbeCommands(bwrap=["busy"]))
    with pytest.raises(sandbox.IsolationUnknown, match="bubblewrap could not be started"):
        sandbox.probe()
    assert fake.asked == [("bwrap", FIRST)]


def test_an_unshare_probe_that_did_not_finish_is_no_answer_either(fresh_probe: Any) -> None:
    """bubblewrap ran and failed (a real absence), unshare did not finish: not "no namespaces"."""
    fresh_probe(fakes.ProbeCommands(bwrap=[1, 1], unshare=["timeout", "timeout", 0]))
    with pytest.raises(sandbox.IsolationUnknown, match="unshare did not finish"):
        sandbox.probe()
    assert sandbox.probe().method == "unshare"


def test_a_probe_that_ran_and_failed_is_a_real_absence_cached_with_its_note(
    fresh_probe: Any,
) -> None:
    fake = fresh_probe(fakes.ProbeCommands(bwrap=[1], unshare=[0]))
    iso = sandbox.probe()
    assert (iso.method, iso.filesystem_private) == ("unshare", False)
    assert any(note.startswith("no bubblewrap") for note in iso.notes)
    assert sandbox.probe() is iso
    assert fake.asked == [("bwrap", FIRST), ("unshare", FIRST)]  # once, each on its first try


def seccomp_holders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob(f"tc300-seccomp-{os.getpid()}-*"))


def test_a_seccomp_filter_that_did_not_build_in_time_is_no_answer_and_is_built_again(
    fresh_probe: Any,
) -> None:
    """Not "no seccomp filter" (bubblewrap without it): the probe has no answer, leaves no
    folder behind, and the next one that finishes gives the filter."""
    before = seccomp_holders()
    fake = fresh_probe(fakes.ProbeCommands(bwrap=[0, 0], seccomp=["timeout", "timeout", 0]))
    with pytest.raises(sandbox.IsolationUnknown, match="the seccomp filter did not finish"):
        sandbox.probe()
    assert seccomp_holders() == before
    iso = sandbox.probe()
    assert (iso.method, iso.seccomp) == ("bwrap", True)
    assert not any("seccomp" in note for note in iso.notes)
    bpf = sandbox.seccomp_filter()
    assert bpf is not None and bpf.exists()
    assert [seen for seen in fake.asked if seen[0] == "seccomp"] == [
        ("seccomp", FIRST),
        ("seccomp", SECOND),
        ("seccomp", FIRST),
    ]


def test_a_seccomp_filter_that_failed_to_build_is_a_real_absence_cached_with_its_note(
    fresh_probe: Any,
) -> None:
    fake = fresh_probe(fakes.ProbeCommands(bwrap=[0], seccomp=[1]))
    iso = sandbox.probe()
    assert (iso.method, iso.seccomp) == ("bwrap", False)
    assert any(note.startswith("no seccomp filter") for note in iso.notes)
    assert sandbox.seccomp_filter() is None
    assert fake.asked == [("bwrap", FIRST), ("seccomp", FIRST)]  # the filter is not built again


def test_a_kill_is_marked_before_the_lifeline_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapter dies as the lifeline closes and the worker thread then reads ``killed``
    to tell a stop from a crash: it must already be set. Set after the close, a Ctrl-C on a
    loaded machine was recorded as the adapter's own failure ("exited with -9")."""
    read_end, write_end = os.pipe()
    prepared = sandbox.Prepared([], {}, tmp_path, lifeline=(read_end, write_end))
    seen: list[bool] = []
    real_close = os.close

    def close(fd: int) -> None:
        seen.append(prepared.killed)
        real_close(fd)

    monkeypatch.setattr(sandbox.os, "close", close)
    prepared.kill()
    assert seen == [True, True] and prepared.killed and prepared.lifeline is None
