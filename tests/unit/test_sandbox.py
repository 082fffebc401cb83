"""The local sandbox: limits, uid, scratch directory, and honest notes when isolation is missing."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes

from toolcall300.jobs import harness, sandbox

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
        owner = (scratch / "written.txt").stat().st_uid
    assert out.failure is None, out.failure
    assert not scratch.exists()  # removed afterwards
    info = next(iter(out.answers.values()))["arguments"]
    return dict(info, owner_outside=owner), scratch


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


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the uid needs root")
def test_the_adapter_does_not_run_as_root() -> None:
    iso = sandbox.probe()
    info, _ = run_self(sandbox.Limits())
    assert iso.uid_dropped
    # whatever uid the namespaces show inside, what it writes belongs to 65534 outside
    assert info["owner_outside"] == sandbox.NOBODY


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


def test_a_program_folder_is_bound_read_only_and_a_protected_one_refused(tmp_path: Path) -> None:
    own = Path(tempfile.mkdtemp(prefix="tc300-adapter-"))
    try:
        own.chmod(0o755)
        script = own / "adapter.py"
        script.write_text(
            "import json,os,sys\n"
            "for line in sys.stdin:\n"
            "    item=json.loads(line)\n"
            "    try:\n        open(__file__,'a'); wrote=True\n    except OSError:\n        wrote=False\n"
            "    print(json.dumps({'id':item['id'],'call':{'name':'me','arguments':{'wrote':wrote}}}),flush=True)\n",
            encoding="utf-8",
        )
        script.chmod(0o644)
        assert answer_of(run_adapter([sandbox.SYSTEM_PYTHON, str(script)])) == {"wrote": False}
        link = Path(tempfile.mkdtemp(prefix="tc300-link-"))
        try:  # named through a link, it runs as written
            link.chmod(0o755)
            (link / "to").symlink_to(own)
            named = [sandbox.SYSTEM_PYTHON, str(link / "to" / "adapter.py")]
            assert answer_of(run_adapter(named)) == {"wrote": False}
        finally:
            shutil.rmtree(link)
        with pytest.raises(sandbox.CommandRefused, match="private corpus"):
            run_adapter([sandbox.SYSTEM_PYTHON, str(script)], protected=[own / "corpus"])
    finally:
        shutil.rmtree(own)
    repo_script = sandbox.PACKAGE_ROOT.parents[1] / "infra" / "demo_journey.py"
    with pytest.raises(sandbox.CommandRefused):  # its folder holds corpus_private/
        sandbox.program_folders(["/usr/bin/python3", str(repo_script.parents[1] / "Makefile")])
    infra = repo_script.parent.resolve()
    assert sandbox.program_folders(["/usr/bin/python3", str(repo_script)]) == [(infra, infra)]


# ----------------------------------------------------------------------------- commands


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["./adapter.py"], "relative path"),
        (["bin/adapter"], "relative path"),
        (["python3", "adapter.py"], "relative path"),
        (["python3", "../x/adapter.py"], "relative path"),
        (["no-such-program-tc300"], "not on the sandbox's PATH"),
        (["/no/such/program"], "does not exist"),
    ],
)
def test_a_command_the_sandbox_cannot_run_is_refused_with_a_reason(
    command: list[str], says: str
) -> None:
    problem = sandbox.command_problem(command, uid_dropped=False)
    assert problem is not None and says in problem


def test_an_interpreter_under_a_private_folder_is_refused_for_uid_65534(tmp_path: Path) -> None:
    private = tmp_path / "home"
    (private / "bin").mkdir(parents=True)
    python = private / "bin" / "python"
    python.write_text("#!/bin/sh\n", encoding="utf-8")
    python.chmod(0o755)
    private.chmod(0o700)
    problem = sandbox.command_problem([str(python), "-c", "pass"], uid_dropped=True)
    assert problem is not None and "cannot execute" in problem and sandbox.SYSTEM_PYTHON in problem
    assert sandbox.command_problem([str(python)], uid_dropped=False) is None


@pytest.mark.parametrize(
    "command",
    [
        ["toolcall300", "toolshim", "--stream"],
        ["python3", "-c", "import sys; print('a.py')"],
        [sandbox.SYSTEM_PYTHON, "-u", "-c", "pass"],
        ["sh", "-c", "exec cat"],
    ],
)
def test_commands_the_sandbox_runs_pass_the_check(command: list[str]) -> None:
    assert sandbox.command_problem(command, uid_dropped=os.geteuid() == 0) is None


def test_leftovers_of_dead_processes_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    gone = 2**22 + 1  # above pid_max's default: no process has it
    (tmp_path / f"tc300-runs-{gone}-abc" / "tc300-run-x").mkdir(parents=True)
    (tmp_path / f"tc300-kit-{gone}-abc").mkdir()
    (tmp_path / f"tc300-runs-{os.getppid()}-abc").mkdir()  # a live process's
    (tmp_path / "tc300-other-1-x").mkdir()  # not ours
    removed = sandbox.sweep_leftovers(str(tmp_path))
    assert sorted(p.name for p in removed) == [f"tc300-kit-{gone}-abc", f"tc300-runs-{gone}-abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "tc300-other-1-x",
        f"tc300-runs-{os.getppid()}-abc",
    ]
