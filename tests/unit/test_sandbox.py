"""The local sandbox: limits, uid, scratch directory, and honest notes when isolation is missing."""

from __future__ import annotations

import json
import os
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
        assert (scratch / "written.txt").exists()
    assert out.failure is None, out.failure
    assert not scratch.exists()  # removed afterwards
    return next(iter(out.answers.values()))["arguments"], scratch


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
    if iso.network_isolated:  # inside the user namespace uid 0 is mapped onto 65534 outside
        assert info["uid_map"][:2] == [str(info["uid"]), str(sandbox.NOBODY)]
    else:
        assert info["uid"] == sandbox.NOBODY


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
        assert prepared.argv == ["toolcall300", "toolshim", "--stream"]
        assert prepared.isolation.record()["notes"] == list(iso.notes)


def test_isolated_commands_run_in_new_namespaces() -> None:
    iso = sandbox.Isolation(network_isolated=True, uid_dropped=False)
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(["adapter"], scratch, isolation=iso)
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
