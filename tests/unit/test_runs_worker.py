"""The local worker against misbehaving adapters: each one ends scored or failed, never stuck.

Runs real sandboxed subprocesses (``python3 -c`` adapters) with short limits, through the
worker's own ``process`` with in-memory stores.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml
from support import runs as fakes
from support import stores

from toolcall300.canonical import canonical
from toolcall300.client import ci
from toolcall300.jobs import harness, sandbox
from toolcall300.service.domain import runs
from toolcall300.service.domain.runs import Corpus
from toolcall300.service.local import worker

CASES = fakes.small_corpus(8)
CORPUS = Corpus(CASES, "c" * 64)
#: For adapters that answer: the times are hang guards, never what a test measures (on a
#: loaded machine, starting an interpreter in the sandbox alone can take seconds).
LIMITS = harness.Limits(
    per_case_timeout=120, total_timeout=300, max_output_bytes=1 << 20, max_line_bytes=1 << 16
)
#: For an adapter that never answers: a per-case limit it exceeds however fast the machine is.
NEVER_ANSWERS = harness.Limits(
    per_case_timeout=2.0, total_timeout=20.0, max_output_bytes=1 << 20, max_line_bytes=1 << 16
)


def deps(**over: Any) -> worker.WorkerDeps:
    base: dict[str, Any] = {
        "store": stores.MemoryRunStore(),
        "reports": stores.MemoryReports(),
        "corpus": lambda: CORPUS,
        "job_limits": LIMITS,
        "sandbox_limits": sandbox.Limits(memory_bytes=512 * 1024 * 1024, cpu_seconds=30),
        "lease_s": 5,
    }
    base.update(over)
    return worker.WorkerDeps(**base)


def queue(
    d: worker.WorkerDeps, command: list[str], *, ref: str = "main", team: str = "acme"
) -> runs.Run:
    sub = runs.parse_submission(
        {"adapter_cmd": command, "ref": ref, "commit": "abc1234"}, local=True
    )
    run, _ = runs.submit(
        d.store, sub, team=team, licence_id="lic", take_quota=lambda _l: None, now=datetime.now(UTC)
    )
    return run


def run_one(command: list[str], **over: Any) -> tuple[runs.Run, worker.WorkerDeps]:
    d = deps(**over)
    run = queue(d, command)
    done = worker.process(d, run.run_id, "w1")
    assert done is not None
    return done, d


#: An adapter answering every case with ``call`` (a Python expression).
_LOOP_ANSWER_WITH = (
    "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
    "    print(json.dumps({{'id':item['id'],'call':{call}}}),flush=True)\n"
)


def stored(d: worker.WorkerDeps, run: runs.Run) -> dict[str, Any]:
    return json.loads(d.reports.get(run.report_key or ""))


def test_a_good_adapter_is_scored_and_sets_the_baseline() -> None:
    done, d = run_one(fakes.ECHO)
    assert done.status == "scored" and done.verdict == "baseline_set"
    assert done.summary is not None and done.summary["exact"] == len(CASES)
    doc = stored(d, done)
    assert doc["corpus_sha256"] == CORPUS.sha256 and doc["adapter"]["command"] == fakes.ECHO
    assert doc["harness"]["unanswered"] == 0


def test_an_adapter_that_crashes_halfway_is_scored_with_the_rest_refused() -> None:
    done, d = run_one(fakes.CRASH_HALF)
    assert done.status == "scored"
    assert done.summary is not None
    # t-000..t-002 answered; t-004..t-006 never answered (refusals); t-003, t-007 expect refusals
    assert done.summary["false_refusals"] == 3 and done.summary["exact"] == 5
    doc = stored(d, done)
    assert doc["harness"]["exit_code"] == 3 and doc["harness"]["answered"] == 3
    # the five ids the crash left unanswered are adapter errors, as the local scorer counts them
    assert doc["harness"]["unanswered"] == doc["score"]["adapter_errors"] == 5
    assert doc["score"]["errors"]["t-004"] == "never answered (exited)\nboom: adapter crashed"


def test_an_adapter_that_hangs_fails_with_job_timeout() -> None:
    done, _ = run_one(fakes.HANG, job_limits=NEVER_ANSWERS)
    assert done.status == "failed" and done.failure is not None
    assert done.failure["reason"] == "job_timeout"


def test_the_whole_run_limit_fails_the_run_even_with_answers() -> None:
    slow = fakes.py(
        "import json,sys,time\nfor line in sys.stdin:\n    item=json.loads(line)\n    print(json.dumps({'id':item['id'],'call':None}),flush=True)\n    time.sleep(0.6)\n"
    )
    done, _ = run_one(slow, job_limits=harness.Limits(per_case_timeout=5, total_timeout=1.5))
    assert (
        done.status == "failed"
        and done.failure is not None
        and done.failure["reason"] == "job_timeout"
    )


def test_an_adapter_that_floods_stdout_fails_with_output_malformed() -> None:
    done, _ = run_one(fakes.FLOOD)
    assert done.status == "failed" and done.failure is not None
    assert done.failure["reason"] == "output_malformed"
    assert "bytes" in done.failure["detail"]


def test_answers_holding_too_many_json_values_fail_with_output_malformed() -> None:
    # 64 MiB of "{}," is within the byte caps but parses to about 1.5 GiB in the worker:
    # the answers kept are bounded in JSON values too
    wide = fakes.py(
        _LOOP_ANSWER_WITH.format(call="[{}]*600")  # 601 values an answer
    )
    few = harness.Limits(
        per_case_timeout=120, total_timeout=300, max_line_bytes=1 << 16, max_answer_values=1000
    )
    done, _ = run_one(wide, job_limits=few)
    assert done.status == "failed" and done.failure is not None
    assert done.failure["reason"] == "output_malformed"
    assert done.failure["detail"] == "the adapter's answers hold more than 1000 JSON values"
    # within the bound the same answers are scored
    done, _ = run_one(wide, job_limits=replace(few, max_answer_values=601 * len(CASES)))
    assert (done.status, done.failure) == ("scored", None)


def test_answers_to_ids_never_asked_are_ignored_and_recorded() -> None:
    done, d = run_one(fakes.UNKNOWN_IDS)
    assert (
        done.status == "scored" and done.summary is not None and done.summary["exact"] == len(CASES)
    )
    assert stored(d, done)["harness"]["unknown_ids"] == len(CASES)


def test_non_json_lines_between_answers_are_counted_not_fatal() -> None:
    done, d = run_one(fakes.NOISY)
    assert (
        done.status == "scored" and done.summary is not None and done.summary["exact"] == len(CASES)
    )
    assert stored(d, done)["harness"]["malformed_lines"] == len(CASES)


def test_an_answer_holding_a_lone_surrogate_is_malformed_not_a_worker_failure() -> None:
    # "\\ud800" is valid JSON grammar but no character: stored as an answer, the report could
    # not be written and the run ended infra_error, the service blamed for the adapter's line
    lone = fakes.py(
        "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
        "    key=json.dumps(item['id'])\n"
        '    sys.stdout.write(\'{"id":\'+key+\',"call":{"name":"get_weather",\'\n'
        '                     \'"arguments":{"city":"\\\\ud800"}}}\\n\')\n'
        "    print(json.dumps({'id':item['id'],'call':None}),flush=True)\n"
    )
    done, d = run_one(lone)
    assert (done.status, done.failure) == ("scored", None)
    assert stored(d, done)["harness"]["malformed_lines"] == len(CASES)


def test_an_adapter_that_prints_only_non_json_fails_with_output_malformed() -> None:
    done, _ = run_one(fakes.NON_JSON)
    assert (
        done.status == "failed"
        and done.failure is not None
        and done.failure["reason"] == "output_malformed"
    )


def test_an_adapter_that_cannot_start_fails_with_adapter_start_failed() -> None:
    done, _ = run_one(fakes.MISSING)
    assert done.status == "failed" and done.failure is not None
    assert done.failure["reason"] == "adapter_start_failed"


def test_an_adapter_that_runs_out_of_memory_fails_with_out_of_memory() -> None:
    done, _ = run_one(fakes.OOM)
    assert done.status == "failed" and done.failure is not None
    assert done.failure["reason"] == "out_of_memory"
    assert "MemoryError" in done.failure["stderr_tail"]


@pytest.mark.skipif(
    not sandbox.probe().network_isolated, reason="no network namespace on this machine"
)
def test_an_adapter_cannot_open_a_network_connection() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.1)
    accepted: list[Any] = []

    def accept() -> None:
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                accepted.append(listener.accept())
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        done, _ = run_one(fakes.network_probe(listener.getsockname()[1]))
    finally:
        listener.close()
        thread.join(5)
    assert accepted == []
    assert (
        done.status == "scored" and done.summary is not None and done.summary["exact"] == len(CASES)
    )
    assert done.sandbox["network_isolated"] is True


def test_the_sandbox_is_recorded_on_the_run() -> None:
    done, _ = run_one(fakes.ECHO)
    iso = sandbox.probe()
    assert done.sandbox["network_isolated"] is iso.network_isolated
    assert done.sandbox["notes"] == list(iso.notes)


def test_the_whole_process_tree_dies_with_the_run() -> None:
    token = "tc300-orphan-" + os.urandom(4).hex()
    spawner = fakes.py(
        "import subprocess,sys,time\n"
        f"subprocess.Popen(['python3','-c','import time; time.sleep(120)','{token}'])\n"
        "sys.stdin.read(); time.sleep(120)\n"
    )
    done, _ = run_one(spawner)
    assert done.status == "failed"
    deadline = time.monotonic() + 5
    while fakes.pids_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fakes.pids_with(token) == []


@pytest.mark.skipif(not sandbox.probe().network_isolated, reason="no pid namespace on this machine")
def test_a_daemon_left_by_a_scored_run_dies_with_it() -> None:
    # double fork and setsid (a daemon of its own session), then answer and exit 0: the run
    # is scored and nothing of it stays behind
    token = "tc300-daemon-" + os.urandom(4).hex()
    daemon = fakes.py(
        "import json,os,subprocess,sys\n"
        "if os.fork()==0:\n"
        "    os.setsid()\n"
        "    if os.fork()==0:\n"
        f"        os.execvp('python3',['python3','-c','import time; time.sleep(120)','{token}'])\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "for line in sys.stdin:\n"
        "    print(json.dumps({'id':json.loads(line)['id'],'call':None}),flush=True)\n"
    )
    done, _ = run_one(daemon)
    assert (done.status, done.failure) == ("scored", None)
    deadline = time.monotonic() + 5
    while fakes.pids_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = fakes.pids_with(token)
    for pid in left:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_the_adapter_sees_only_id_text_and_tools() -> None:
    keys = fakes.py(
        "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'k','arguments':{'keys':sorted(item)}}}),flush=True)\n"
    )
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(keys, scratch)
        out = harness.run_job(
            prepared.argv,
            harness.job_inputs(CASES),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )
    assert out.failure is None
    assert {json.dumps(c["arguments"]["keys"]) for c in out.answers.values()} == {
        '["id", "text", "tools"]'
    }


#: Answers every case with a call naming the keys its input line had (so the run shows what
#: the job was given): an undeclared tool everywhere, so every case fails.
KEYS_SEEN = fakes.py(
    "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
    "    print(json.dumps({'id':item['id'],'call':{'name':'k','arguments':{'keys':sorted(item)}}}),flush=True)\n"
)


def test_the_stored_report_adds_the_labels_after_the_job_and_ci_junit_shows_them(
    tmp_path: Path,
) -> None:
    done, d = run_one(KEYS_SEEN)
    assert done.status == "scored" and done.summary is not None and done.summary["exact"] == 0
    doc = stored(d, done)
    seen = '{"arguments":{"keys":["id","text","tools"]},"name":"k"}'
    # the job saw id, text and tools only; the trusted side wrote what was expected beside it
    for case in CASES:
        expected = (
            canonical(case["expected"])
            if case["expected_kind"] == "value"
            else "a refusal (no correct call exists)"
        )
        detail = doc["score"]["failure_details"][case["id"]]
        assert (detail["expected"], detail["returned"]) == (expected, seen)
        assert detail["input"] == case["text"][:600] and detail["rule"] and detail["diff"]
    assert all(set(item) == {"id", "text", "tools"} for item in harness.job_inputs(CASES))
    # toolcall300 ci reads that report and writes the same failures score --junit writes
    final = done.public()

    def service(method: str, url: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        if method == "POST":
            return 202, {}, {"run_id": done.run_id, "status": "queued"}
        return 200, {}, doc if url.endswith("/report") else final

    args = ci.parse_args(
        ["--api", "https://api.example.com", "--adapter-cmd", "x", "--commit", "abc1234",
         "--ref", "main", "--wait", "--poll", "0", "--junit", str(tmp_path / "j.xml")]
    )  # fmt: skip
    env = {"TOOLCALL300_LICENCE": "tc300_x"}
    assert ci.run(args, io.StringIO(), io.StringIO(), request=service, env=env) == 0
    (suite,) = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    said = {c.name: r.message for c in suite for r in c.result if isinstance(r, Failure)}
    rows = {row["id"]: row for row in doc["score"]["per_case"]}
    assert said.keys() == doc["score"]["failure_details"].keys()
    for key, detail in doc["score"]["failure_details"].items():
        assert said[key].startswith(
            f"{key} [{rows[key]['category']}] {rows[key]['outcome']}: "
            f"expected {detail['expected']}; returned {seen}; {detail['diff'][0]}"
        )
        assert f"; decided by {detail['rule']}" in said[key]


def test_the_adapter_environment_carries_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    env_dump = fakes.py(
        "import json,os,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'env','arguments':dict(os.environ)}}),flush=True)\n"
    )
    with sandbox.scratch_dir() as scratch:
        prepared = sandbox.prepare(env_dump, scratch)
        out = harness.run_job(
            prepared.argv,
            harness.job_inputs(CASES[:1]),
            limits=LIMITS,
            popen_kwargs=prepared.popen_kwargs,
        )
    env = next(iter(out.answers.values()))["arguments"]
    assert "do-not-leak" not in json.dumps(env)
    assert env["HOME"] == str(prepared.scratch)


def test_ten_runs_on_a_pool_all_finish_with_correct_reports() -> None:
    d = deps()
    ids = [
        queue(d, fakes.ECHO if i % 2 else fakes.WORSE, ref=f"feature-{i}").run_id for i in range(10)
    ]
    pool = worker.WorkerPool(d, size=3, poll_s=0.05, sweep_s=0.5).start()
    try:
        deadline = time.monotonic() + 600  # a hang guard: the loop ends once every run is final
        while time.monotonic() < deadline:
            done = [runs.load(d.store, i) for i in ids]
            if all(r is not None and r.status in runs.FINAL for r in done):
                break
            time.sleep(0.1)
    finally:
        pool.stop()
    for i, run_id in enumerate(ids):
        run = runs.load(d.store, run_id)
        assert run is not None and run.status == "scored", run
        assert run.summary is not None
        assert run.summary["exact"] == (len(CASES) if i % 2 else 4)
        assert json.loads(d.reports.get(run.report_key or ""))["run_id"] == run_id


def test_a_killed_worker_lease_is_taken_over_by_the_pool() -> None:
    """The pool's clock is injected and stands still past the dead worker's lease: that lease
    has lapsed and the live worker's never does, however late its heartbeats run (a wall
    clock and a 1 s lease failed the run on a loaded machine: the sweeper expired the live
    worker's lease too, its second attempt, before a heartbeat thread was scheduled)."""
    claimed_at = datetime.now(UTC)
    d = deps(lease_s=1, clock=lambda: claimed_at + timedelta(seconds=10))
    run = queue(d, fakes.ECHO)
    # Given a worker that claimed the run and then died (it never heartbeats again)
    assert runs.claim(d.store, run.run_id, owner="dead", now=claimed_at, lease_s=1) is not None
    pool = worker.WorkerPool(d, size=1, poll_s=0.05, sweep_s=0.3).start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            current = runs.load(d.store, run.run_id)
            if current is not None and current.status in runs.FINAL:
                break
            time.sleep(0.1)
    finally:
        pool.stop()
    final = runs.load(d.store, run.run_id)
    assert final is not None and final.status == "scored" and final.attempts == 2


DYING_WORKER = """
import sys
from support import runs as fakes
from toolcall300.jobs import harness
from toolcall300.jobs import sandbox
with sandbox.scratch_dir() as scratch:
    prepared = sandbox.prepare(fakes.py(sys.argv[1]), scratch)
    harness.run_job(prepared.argv, harness.job_inputs(fakes.small_corpus(2)),
                    limits=harness.Limits(per_case_timeout=600, total_timeout=600),
                    popen_kwargs=prepared.popen_kwargs)
"""


def _ignores_sigterm(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (``SigIgn`` in /proc; False once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            mask = next(line.split()[1] for line in fh if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


def test_a_killed_worker_takes_its_adapter_with_it() -> None:
    import subprocess
    import sys
    from pathlib import Path

    token = "tc300-stubborn-" + os.urandom(4).hex()
    # an adapter that ignores the end of its input and its parent's death
    stubborn = f"import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n'{token}'\ntime.sleep(600)\n"
    tests_dir = str(Path(__file__).resolve().parents[1])
    worker_proc = subprocess.Popen(
        [sys.executable, "-c", DYING_WORKER, stubborn], env={**os.environ, "PYTHONPATH": tests_dir}
    )
    # Wait for the adapter itself (the one process that ignores SIGTERM), not merely a process
    # naming the token: the worker's forked child, bubblewrap and the lifeline init all carry
    # it in their command lines, so a kill then came before the sandbox had started, and the
    # rest of its start-up (an interpreter, on a loaded machine) ran inside the 5 s below.
    hang_guard = time.monotonic() + 600  # the loop ends once the adapter runs or the worker exits
    while not [p for p in fakes.pids_with(token) if _ignores_sigterm(p)]:
        if worker_proc.poll() is not None or time.monotonic() > hang_guard:
            worker_proc.kill()
            raise AssertionError("the adapter never started")
        time.sleep(0.05)
    worker_proc.kill()
    worker_proc.wait()
    deadline = time.monotonic() + 5
    while fakes.pids_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = fakes.pids_with(token)
    for pid in left:  # clean up before failing, so a failure leaves nothing running
        os.kill(pid, 9)
    assert left == []


#: Reads its environment and every readable file below its roots (default ``/``; the system
#: image in /usr, /proc, /sys and /dev are skipped, /dev/shm is not) for a line that labels
#: one of its cases; answers what it found (refuses the rest) and says on stderr what it saw.
HOSTILE = (
    "import json,os,sys\n"
    "inputs=[json.loads(l) for l in sys.stdin]\n"
    "want={i['id'] for i in inputs}\n"
    "found={}; scanned=0\n"
    "env=[k for k,v in os.environ.items() if any(w in v for w in want) or 'corpus' in v]\n"
    "roots=sys.argv[1:] or ['/','/dev/shm']\n"
    "for top in roots:\n"
    "  for root,dirs,files in os.walk(top):\n"
    "    if root=='/': dirs[:]=[d for d in dirs if d not in ('proc','sys','usr','dev')]\n"
    "    for f in files:\n"
    "      try:\n        data=open(os.path.join(root,f),'rb').read(64<<20)\n      except OSError:\n        continue\n"
    "      scanned+=1\n"
    "      if b'\"expected\"' not in data: continue\n"
    "      for line in data.splitlines():\n"
    "        try:\n          doc=json.loads(line)\n        except ValueError:\n          continue\n"
    "        if isinstance(doc,dict) and doc.get('id') in want and 'expected' in doc: found[doc['id']]=doc['expected']\n"
    "sys.stderr.write(json.dumps({'scanned':scanned,'found':len(found),'env':env})+'\\n')\n"
    "for i in inputs: print(json.dumps({'id':i['id'],'call':found.get(i['id'])}),flush=True)\n"
)
REFUSE = fakes.py(
    "import json,sys\nfor line in sys.stdin:\n"
    "    print(json.dumps({'id':json.loads(line)['id'],'call':None}),flush=True)\n"
)


def hostile_look(cases: list[dict[str, Any]], *roots: str, iso: Any = None) -> dict[str, Any]:
    from toolcall300.scoring import protocol as streamproto

    with sandbox.session(fakes.py(HOSTILE) + list(roots), isolation=iso) as prepared:
        result = streamproto.run_stream(
            prepared.argv,
            harness.job_inputs(cases),
            per_case_timeout=120,
            total_timeout=300,
            popen_kwargs=prepared.popen_kwargs,
        )
    seen: dict[str, Any] = json.loads(result.stderr_tail.strip().splitlines()[-1])
    return seen


@pytest.mark.skipif(not sandbox.probe().filesystem_private, reason="bubblewrap is not usable")
def test_a_hostile_adapter_finds_no_label_and_scores_what_refusing_scores() -> None:
    import shutil
    import tempfile
    from pathlib import Path

    token = os.urandom(4).hex()
    cases = [dict(c, id=f"{c['id']}-{token}") for c in CASES]
    labels = "".join(json.dumps(c) + "\n" for c in cases)
    # Given the labels on disk where a careless machine keeps them: world-readable folders in
    # /tmp, /var/tmp and /dev/shm (and the checkout's own corpus_private/ is there too)
    spots = [Path(tempfile.mkdtemp(prefix="tc300-labels-", dir=d)) for d in ("/tmp", "/var/tmp")]
    spots.append(Path("/dev/shm") / f"tc300-labels-{token}")
    spots[-1].mkdir()
    try:
        for spot in spots:
            spot.chmod(0o755)
            (spot / "toolcall300.jsonl").write_text(labels, encoding="utf-8")
            (spot / "toolcall300.jsonl").chmod(0o644)
        # the same adapter without a private filesystem finds every label: the probe works
        host = sandbox.Isolation(True, os.geteuid() == 0, (), "unshare")
        assert hostile_look(cases, *map(str, spots), iso=host)["found"] == len(cases)
        # When it runs in the sandbox
        seen = hostile_look(cases)
        slow = harness.Limits(per_case_timeout=120, total_timeout=300)  # a whole-disk walk
        hosted = d = deps(corpus=lambda: Corpus(cases, "c" * 64), job_limits=slow)
        hostile = worker.process(hosted, queue(d, fakes.py(HOSTILE)).run_id, "w1")
        refused = worker.process(hosted, queue(d, REFUSE, ref="other").run_id, "w1")
    finally:
        for spot in spots:
            shutil.rmtree(spot)
    # Then it read a lot and found nothing, in its files or its environment
    assert seen["found"] == 0 and seen["env"] == [] and seen["scanned"] > 50
    assert hostile is not None and refused is not None
    assert (hostile.status, hostile.failure) == (refused.status, None) == ("scored", None)
    assert hostile.summary == refused.summary


def test_one_team_cannot_hold_every_worker() -> None:
    # Given team a's two slow runs queued before team b's one, and two workers
    d = deps(job_limits=harness.Limits(per_case_timeout=1.5, total_timeout=20.0), team_limit=1)
    a1 = queue(d, fakes.HANG, team="a").run_id
    a2 = queue(d, fakes.HANG, team="a", ref="other").run_id
    b1 = queue(d, fakes.HANG, team="b").run_id
    pool = worker.WorkerPool(d, size=2, poll_s=0.05, sweep_s=5).start()
    most_of_a, started = 0, {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = {i: runs.load(d.store, i) for i in (a1, a2, b1)}
            statuses = {i: r.status if r else None for i, r in now.items()}
            most_of_a = max(most_of_a, [statuses[a1], statuses[a2]].count("running"))
            for run_id, status in statuses.items():
                if status != "queued":
                    started.setdefault(run_id, len(started))
            if all(s in runs.FINAL for s in statuses.values()):
                break
            time.sleep(0.02)
    finally:
        pool.stop()
    # Then team b's run took the second worker before team a's second run started
    assert most_of_a == 1
    assert started[b1] < max(started[a1], started[a2])
    assert all(runs.load(d.store, i).status == "failed" for i in (a1, a2, b1))  # type: ignore[union-attr]


def wait_final(d: worker.WorkerDeps, run_id: str) -> runs.Run:
    give_up = time.monotonic() + 120  # a safety stop for a broken pool, not a speed bound
    while time.monotonic() < give_up:
        run = runs.load(d.store, run_id)
        if run is not None and run.status in runs.FINAL:
            return run
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} never finished")


def test_an_idle_pool_without_polling_takes_a_run_when_woken() -> None:
    d = deps()
    pool = worker.WorkerPool(d, size=2, poll_s=None, sweep_s=3600).start()
    try:
        give_up = time.monotonic() + 60
        while pool.waiting < 2 and time.monotonic() < give_up:
            time.sleep(0.01)  # both workers have looked, found nothing, and wait
        assert pool.waiting == 2
        run = queue(d, fakes.ECHO)
        pool.wake()
        assert wait_final(d, run.run_id).status == "scored"
    finally:
        pool.stop()


def test_a_callback_that_never_answers_holds_up_no_other_run() -> None:
    """Before: delivering to an endpoint that never answers held the worker after the run
    was final, and another team's run waited behind it. The only worker here scores team b's
    run while team a's callback still waits on a loopback black hole."""
    from toolcall300.service.domain import callback

    black_hole = socket.socket()  # completes the handshake (backlog), never reads or answers
    black_hole.bind(("127.0.0.1", 0))
    black_hole.listen(16)
    url = f"http://127.0.0.1:{black_hole.getsockname()[1]}/hook"
    post = callback.guarded_post(local=True)
    delivered = threading.Event()

    def notify(run: runs.Run) -> None:
        if run.team == "a":  # no timeout of its own: it waits until the black hole closes
            callback.deliver(
                url, {"run_id": run.run_id}, "s" * 32, attempts=1, timeout=600, post=post
            )
            delivered.set()

    d = deps(notify=notify)
    pool = worker.WorkerPool(d, size=1, sweep_s=3600).start()
    try:
        a = queue(d, fakes.ECHO, team="a")
        pool.wake()
        assert wait_final(d, a.run_id).status == "scored"
        b = queue(d, fakes.ECHO, team="b")
        pool.wake()
        assert wait_final(d, b.run_id).status == "scored"
        assert not delivered.is_set()  # a's callback is still in the black hole
    finally:
        black_hole.close()  # resets the waiting connection: the delivery ends
        pool.stop()
    assert delivered.wait(30)


def test_one_teams_silent_callback_endpoint_never_delays_another_teams_callback() -> None:
    """Before: one delivery thread served every team, so four runs of one team pointing at a
    silent endpoint delayed another team's callback by 103 s. Now a
    team's callbacks go one at a time on any of the delivery threads: team a's four stuck
    ones hold one thread, team b's is delivered meanwhile, and a's still arrive in order."""
    from types import SimpleNamespace

    release, b_delivered = threading.Event(), threading.Event()
    delivered: list[str] = []

    def deliver(run: Any) -> None:
        if run.team == "a":
            release.wait(60)  # a silent endpoint, until the test lets it answer
        delivered.append(run.run_id)
        if run.team == "b":
            b_delivered.set()

    callbacks = worker.CallbackQueue(deliver).start()
    try:
        for i in range(4):
            callbacks(SimpleNamespace(team="a", run_id=f"a{i}"))
        callbacks(SimpleNamespace(team="b", run_id="b"))
        assert b_delivered.wait(30)
        assert delivered == ["b"]
    finally:
        release.set()
        callbacks.stop(timeout=30)
    assert delivered == ["b", "a0", "a1", "a2", "a3"]


def test_one_team_filling_its_callback_share_drops_none_of_another_teams() -> None:
    from types import SimpleNamespace

    release, inside = threading.Event(), threading.Event()
    delivered: list[str] = []

    def deliver(run: Any) -> None:
        inside.set()
        release.wait(60)
        delivered.append(run.run_id)

    callbacks = worker.CallbackQueue(deliver, size=8, per_team=2, threads=1).start()
    try:
        callbacks(SimpleNamespace(team="a", run_id="a0"))
        assert inside.wait(30)  # a0 in flight
        for i in range(1, 6):  # two waiting, three dropped
            callbacks(SimpleNamespace(team="a", run_id=f"a{i}"))
        callbacks(SimpleNamespace(team="b", run_id="b"))
    finally:
        release.set()
        callbacks.stop(timeout=30)
    assert sorted(delivered) == ["a0", "a1", "a2", "b"]


def test_a_run_whose_sandbox_probe_did_not_finish_fails_loudly_and_never_runs_weaker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A busy machine (every probe command past its bounds) gives no isolation answer: the run
    fails as infra_error saying so, its adapter never started (no sandbox recorded), nothing
    weaker was tried; the next run probes again and runs with what the machine has."""
    sandbox.probe.cache_clear()
    sandbox.seccomp_filter.cache_clear()
    try:
        busy = fakes.ProbeCommands(bwrap=["timeout"] * 2, unshare=["timeout"] * 2)
        monkeypatch.setattr(sandbox, "run_probe_command", busy)
        monkeypatch.setattr(sandbox.shutil, "which", lambda name: f"/usr/bin/{name}")
        done, _ = run_one(fakes.ECHO)
        assert done.status == "failed" and done.failure is not None
        assert done.failure["reason"] == "infra_error"
        assert "could not establish its isolation" in done.failure["detail"]
        assert "bubblewrap did not finish" in done.failure["detail"]
        assert worker.ISOLATION_UNKNOWN_DETAIL in done.failure["detail"]
        assert "method" not in done.sandbox  # no sandbox was made: the adapter never ran
        assert [program for program, _bound in busy.asked] == ["bwrap", "bwrap"]
        monkeypatch.undo()  # the machine is idle again: the real probe answers
        again, _ = run_one(fakes.ECHO)
    finally:
        sandbox.probe.cache_clear()
        sandbox.seccomp_filter.cache_clear()
    assert again.status == "scored"
    assert again.sandbox["method"] == sandbox.probe().record()["method"]
