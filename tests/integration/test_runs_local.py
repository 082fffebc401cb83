"""Hosted runs end to end on the shared local stack: HTTP gateway, SQLite state, worker pool, sandbox.

Uses the session ``local_stack`` (tests/integration/conftest.py) and whatever small corpus it
serves: every expected summary is computed here by scoring, in-process with the CLI's scorer,
the answers the test adapter is known to give, so the hosted report is checked number for
number. Each test buys its own team licence, so baselines never cross tests.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes

from toolcall300.client import ci as ci_client
from toolcall300.client.http import ApiError, request_json
from toolcall300.scoring.corpus import parse_corpus
from toolcall300.scoring.report import score_cases
from toolcall300.service.domain import callback
from toolcall300.service.domain.runs import summary_of
from toolcall300.service.local import worker
from toolcall300.service.local.stack import LocalStack

REFERENCE = ["toolcall300", "toolshim", "--stream"]
INVENTED = {"name": "invented_tool", "arguments": {}}
#: Answers the same call for every case: invents calls where none exist.
INVENT = fakes.py(
    "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
    f"    print(json.dumps({{'id':item['id'],'call':{INVENTED!r}}}),flush=True)\n"
)


def echo_answer(case: dict[str, Any]) -> Any:
    """What ``fakes.ECHO`` answers for ``case``."""
    try:
        return json.loads(case["text"])
    except ValueError:
        return None


@pytest.fixture(scope="module")
def stack(local_stack: LocalStack) -> LocalStack:
    return local_stack


@pytest.fixture(scope="module")
def cases(stack: LocalStack) -> list[dict[str, Any]]:
    """The corpus the stack's worker scores against, read from its corpus bucket."""
    bucket = stack.context.state_dir / "objects" / stack.context.names["CorpusBucket"]
    return parse_corpus((bucket / "toolcall300.jsonl").read_bytes())


def expected(
    cases: list[dict[str, Any]], answer: Callable[[dict[str, Any]], Any]
) -> dict[str, Any]:
    return summary_of(score_cases(cases, {c["id"]: answer(c) for c in cases}))


@pytest.fixture(scope="module")
def buy(buy_licence: Callable[..., str]) -> Callable[[str, str | None], str]:
    def purchase(tier: str, team: str | None) -> str:
        return buy_licence(tier, team)

    return purchase


@pytest.fixture(scope="module")
def acme(buy: Callable[[str, str | None], str]) -> str:
    return buy("team", "runs-acme")


def auth(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json", **extra}


def team_of(stack: LocalStack, key: str) -> str:
    """The team identity the service gave this key's purchase (the name typed is only shown)."""
    return str(request_json("GET", f"{stack.url}/licence", headers=auth(key))[2]["team"])


def post_run(
    stack: LocalStack,
    key: str,
    command: list[str],
    *,
    ref: str = "refs/heads/main",
    commit: str = "abc1234",
    idem: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body = {"adapter_cmd": command, "ref": ref, "commit": commit, **extra}
    headers = auth(key, **({"Idempotency-Key": idem} if idem else {}))
    status, _, answer = request_json(
        "POST", f"{stack.url}/runs", headers=headers, body=json.dumps(body).encode()
    )
    assert status == 202
    assert answer["status"] == "queued" or idem  # a repeated key returns the run as it is now
    return dict(answer)


def wait(stack: LocalStack, key: str, run_id: str, timeout: float = 60) -> dict[str, Any]:
    return fakes.wait_for_run(stack.url, key, run_id, timeout_s=timeout)


def test_a_run_is_scored_and_its_report_is_stored(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]]
) -> None:
    team = buy("team", "runs-solo")
    run = wait(stack, team, post_run(stack, team, fakes.ECHO)["run_id"])
    assert run["status"] == "scored" and run["verdict"] == "baseline_set"
    assert run["summary"] == expected(cases, echo_answer) and run["comparison"] is None
    assert isinstance(run["sandbox"]["network_isolated"], bool)
    assert run["started_at"] and run["finished_at"] and run["created_at"]
    _, headers, report = request_json("GET", f"{stack.url}{run['report_url']}", headers=auth(team))
    assert "attachment" in {k.lower(): v for k, v in headers.items()}["content-disposition"]
    assert report["corpus_sha256"] == report["score"]["corpus_sha256"] != ""
    assert report["adapter"] == {"kind": "command", "command": fakes.ECHO}
    assert report["scorer_version"] and report["baseline_run_id"] is None
    assert summary_of(report["score"]) == run["summary"]
    _, _, baselines = request_json(
        "GET", f"{stack.url}/teams/{team_of(stack, team)}/baselines", headers=auth(team)
    )
    assert [b["run_id"] for b in baselines["baselines"]["main"]] == [run["run_id"]]
    assert baselines["next"] is None
    _, _, listing = request_json(
        "GET", f"{stack.url}/teams/{team_of(stack, team)}/runs", headers=auth(team)
    )
    assert [r["run_id"] for r in listing["runs"]] == [run["run_id"]]


def test_the_reference_normaliser_runs_in_the_sandbox(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]]
) -> None:
    team = buy("team", "runs-ref")
    run = wait(stack, team, post_run(stack, team, REFERENCE)["run_id"])
    assert run["status"] == "scored", run["failure"]
    assert run["summary"]["cases"] == len(cases)


def test_ci_client_gates_on_the_team_baseline(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]]
) -> None:
    good, bad = expected(cases, echo_answer), expected(cases, lambda _c: INVENTED)
    assert bad["invented_calls"] > good["invented_calls"], "the corpus needs a refusal case"
    env = {"TOOLCALL300_LICENCE": buy("team", "runs-gate")}

    def ci(cmd: list[str], ref: str, commit: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        argv = ["--api", stack.url, "--adapter-cmd", shlex.join(cmd), "--ref", ref]
        argv += ["--commit", commit, "--wait", "--poll", "0.1", "--timeout", "60"]
        return ci_client.run(ci_client.parse_args(argv), out, err, env=env), out.getvalue()

    code, text = ci(fakes.ECHO, "refs/heads/main", "aaaaaaa")
    assert code == 0 and "baseline_set" in text
    code, text = ci(INVENT, "refs/heads/feature-x", "bbbbbbb")
    assert code == 2 and "REGRESSION: invented_calls rose" in text
    code, text = ci(fakes.ECHO, "refs/heads/feature-y", "ccccccc")
    assert code == 0 and "verdict  pass" in text
    code, _ = ci(fakes.MISSING, "refs/heads/feature-z", "ddddddd")
    assert code == 1


#: Answers every case with a call naming the keys of the line it was given (an undeclared
#: tool, so every case fails): what it returns shows what the job could see.
KEYS_SEEN = fakes.py(
    "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
    "    print(json.dumps({'id':item['id'],'call':{'name':'k','arguments':{'keys':sorted(item)}}}),flush=True)\n"
)


def test_ci_junit_says_what_was_expected_and_what_came_back_while_the_job_saw_no_label(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]], tmp_path: Path
) -> None:
    from junitparser import Failure, JUnitXml

    from toolcall300.canonical import canonical

    env = {"TOOLCALL300_LICENCE": buy("team", "runs-junit")}
    argv = ["--api", stack.url, "--adapter-cmd", shlex.join(KEYS_SEEN), "--ref", "main"]
    argv += ["--commit", "abc1234", "--wait", "--poll", "0.1", "--timeout", "60"]
    argv += ["--junit", str(tmp_path / "ci.xml")]
    out, err = io.StringIO(), io.StringIO()
    assert ci_client.run(ci_client.parse_args(argv), out, err, env=env) == 0, err.getvalue()
    (suite,) = JUnitXml.fromfile(str(tmp_path / "ci.xml"))
    said = {c.name: r.message for c in suite for r in c.result if isinstance(r, Failure)}
    returned = '{"arguments":{"keys":["id","text","tools"]},"name":"k"}'  # no label in the job
    assert set(said) == {c["id"] for c in cases}  # every case failed, as the adapter must
    for case in cases:  # ... and each failure names the label the trusted side added after
        label = (
            canonical(case["expected"])
            if case["expected_kind"] == "value"
            else "a refusal (no correct call exists)"
        )
        message = said[case["id"]]
        assert message.startswith(f"{case['id']} [{case['category']}] ")
        assert f": expected {label[:157]}" in message  # cut at 160 characters when longer
        # then the case view: the first difference, the rule and the input (docs/report.md)
        assert f"; returned {returned}; " in message and "; decided by rule " in message
        assert "; input " in message


def test_idempotency_key_returns_the_same_run(stack: LocalStack, acme: str) -> None:
    first = post_run(stack, acme, fakes.ECHO, ref="refs/heads/idem", idem="ci-run-77")
    again = post_run(stack, acme, fakes.ECHO, ref="refs/heads/idem", idem="ci-run-77")
    assert first["run_id"] == again["run_id"]
    with pytest.raises(ApiError) as err:
        post_run(stack, acme, fakes.ECHO, ref="refs/heads/other", idem="ci-run-77")
    assert err.value.status == 409


def test_access_rules(stack: LocalStack, acme: str, buy: Any) -> None:
    run_id = post_run(stack, acme, fakes.ECHO, ref="refs/heads/access")["run_id"]
    rival, single = buy("team", "runs-rival"), buy("single", None)

    def status_of(method: str, path: str, key: str | None, body: bytes | None = None) -> int:
        try:
            return request_json(
                method, f"{stack.url}{path}", headers=auth(key) if key else {}, body=body
            )[0]
        except ApiError as exc:
            return exc.status

    assert status_of("GET", f"/runs/{run_id}", rival) == 404  # not 403: ids do not leak
    assert status_of("GET", f"/runs/{run_id}/report", rival) == 404
    assert status_of("GET", f"/teams/{team_of(stack, acme)}/baselines", rival) == 403
    assert status_of("GET", f"/teams/{team_of(stack, acme)}/runs", rival) == 403
    assert status_of("GET", f"/runs/{run_id}", None) == 401
    command = json.dumps({"adapter_cmd": fakes.ECHO, "ref": "main", "commit": "abc1234"}).encode()
    assert status_of("POST", "/runs", single, command) == 403
    image = {"image": "r/a@sha256:" + "a" * 64, "ref": "main", "commit": "abc1234"}
    assert status_of("POST", "/runs", acme, json.dumps(image).encode()) == 400
    assert status_of("POST", "/runs", acme, b"{not json") == 400
    assert status_of("GET", "/runs/run_nope", acme) == 404


def test_ten_runs_at_once_all_finish_with_correct_reports(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]]
) -> None:
    key = buy("team", "runs-busy")
    want = {True: expected(cases, echo_answer), False: expected(cases, lambda _c: INVENTED)}
    submitted: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        answer = post_run(
            stack, key, fakes.ECHO if i % 2 else INVENT, ref=f"refs/heads/f{i}", commit=f"{i:07x}"
        )
        with lock:
            submitted.append((answer["run_id"], bool(i % 2)))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({run_id for run_id, _ in submitted}) == 10
    for run_id, echoes in submitted:
        run = wait(stack, key, run_id, timeout=120)
        assert run["status"] == "scored", run["failure"]
        assert run["summary"] == want[echoes]
        _, _, report = request_json("GET", f"{stack.url}/runs/{run_id}/report", headers=auth(key))
        assert report["run_id"] == run_id and summary_of(report["score"]) == want[echoes]


def test_callback_is_signed_with_the_key_derived_secret(stack: LocalStack, buy: Any) -> None:
    key = buy("team", "runs-hook")
    with fakes.callback_receiver() as (url, received):
        run_id = post_run(stack, key, fakes.ECHO, callback_url=url)["run_id"]
        wait(stack, key, run_id)
        for _ in range(200):
            if received:
                break
            time.sleep(0.05)
    body, headers = received[0]
    header = headers.get(callback.HEADER)
    callback.verify_callback(body, header, callback.callback_secret(key))
    doc = json.loads(body)
    assert (doc["run_id"], doc["verdict"], doc["status"]) == (run_id, "baseline_set", "scored")


DOOMED_WORKER = """
import sys
from toolcall300.service.api import wiring

from toolcall300.service.local import worker
edition = wiring.edition()  # the stack's state folder, from the environment it inherited
deps = worker.WorkerDeps(store=edition.runs, reports=edition.report_store,
    corpus=worker.cached_corpus(edition.corpus_objects.read), lease_s=2)
worker.process(deps, sys.argv[1], "doomed")
"""
SLOW_TOKEN = "tc300-slow-echo-" + os.urandom(4).hex()
SLOW_ECHO = fakes.py(
    f"'{SLOW_TOKEN}'\n"
    "import json,sys,time\nfor line in sys.stdin:\n    item=json.loads(line)\n    time.sleep(0.5)\n"
    "    try:\n        call=json.loads(item['text'])\n    except ValueError:\n        call=None\n"
    "    print(json.dumps({'id':item['id'],'call':call}),flush=True)\n"
)


def test_a_worker_killed_mid_run_leaves_no_stuck_run_and_counts_once(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]]
) -> None:
    key = buy("team", "runs-kill")
    pool: worker.WorkerPool = stack.context.extra["run_workers"]
    pool.stop()  # Given the stack's own workers paused, so the doomed worker takes the run
    try:
        run_id = post_run(stack, key, SLOW_ECHO)["run_id"]
        doomed = subprocess.Popen([sys.executable, "-c", DOOMED_WORKER, run_id])
        for _ in range(600):
            _, _, run = request_json("GET", f"{stack.url}/runs/{run_id}", headers=auth(key))
            if run["status"] == "running":
                break
            time.sleep(0.05)
        for _ in range(600):  # mid-run: the worker has started the adapter
            if fakes.pids_with(SLOW_TOKEN):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the doomed worker never started the adapter")
        doomed.kill()  # When the worker dies without a word
        doomed.wait()
        for _ in range(600):  # its adapter and the adapter's sandbox die with it
            if not fakes.pids_with(SLOW_TOKEN):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"left running: {fakes.pids_with(SLOW_TOKEN)}")
        _, _, run = request_json("GET", f"{stack.url}/runs/{run_id}", headers=auth(key))
        assert run["status"] == "running" and run["attempts"] == 1
    finally:
        fresh = worker.WorkerPool(pool.deps, size=pool.size, poll_s=0.1, sweep_s=0.5).start()
        stack.context.extra["run_workers"] = fresh  # the stack stops it at the end
    # Then the sweeper re-queues it once the lease expires and a live worker finishes it once
    run = wait(stack, key, run_id, timeout=60)
    assert run["status"] == "scored" and run["attempts"] == 2
    assert run["summary"] == expected(cases, echo_answer)
    _, _, baselines = request_json(
        "GET", f"{stack.url}/teams/{team_of(stack, key)}/baselines", headers=auth(key)
    )
    assert [b["run_id"] for b in baselines["baselines"]["main"]] == [run_id]


def test_baseline_pages_refuse_hostile_limits_and_cursors_over_http(
    stack: LocalStack, buy: Any
) -> None:
    """GET /teams/{team}/baselines on the SQLite stack: a page with ``next`` (null: nothing
    older), and a bad ``limit`` or cursor is a named 400 through the real server, not a 500."""
    key = buy("team", "runs-pages")
    team = team_of(stack, key)
    _, _, page = request_json(
        "GET", f"{stack.url}/teams/{team}/baselines?limit=200", headers=auth(key)
    )
    assert page == {"team": team, "baselines": {}, "next": None}
    for query, code in (
        ("limit=0", "invalid_request"),
        ("limit=201", "invalid_request"),
        ("cursor=%27%3B--", "bad_cursor"),
        ("cursor=" + "A" * 300, "bad_cursor"),
        ("cursor=WyJ0ZWFtLXgiLCIyMDI2LTEyLTAxVDAwOjAwOjAwWiIsInJ1bl8xIl0", "bad_cursor"),
    ):
        with pytest.raises(ApiError) as refused:
            request_json("GET", f"{stack.url}/teams/{team}/baselines?{query}", headers=auth(key))
        assert (refused.value.status, refused.value.code) == (400, code), query


def test_a_submitted_run_wakes_the_idle_pool_which_never_polls(stack: LocalStack, buy: Any) -> None:
    """Before: two idle workers polled the runs table every 0.2 s and nothing called
    ``wake()``. Now ``POST /runs`` wakes the pool: with polling off, a run submitted once every
    worker has looked and found nothing is still taken."""
    key = buy("team", "runs-woken")
    pool: worker.WorkerPool = stack.context.extra["run_workers"]
    pool.stop()
    fresh = worker.WorkerPool(pool.deps, size=pool.size, poll_s=None, sweep_s=3600).start()
    stack.context.extra["run_workers"] = fresh  # the stack stops it at the end
    for _ in range(6000):  # every worker has read the table and waits
        if fresh.waiting == fresh.size:
            break
        time.sleep(0.01)
    assert fresh.waiting == fresh.size
    run_id = post_run(stack, key, fakes.ECHO)["run_id"]
    assert wait(stack, key, run_id, timeout=60)["status"] == "scored"


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["./adapter.py"], "relative path"),
        (["python3", "adapter.py"], "relative path"),
        (["no-such-program-tc300"], "not on the sandbox's PATH"),
        (["/home/me/adapter"], "no host path is mounted"),
    ],
)
def test_a_command_the_sandbox_cannot_run_is_refused_at_submission(
    stack: LocalStack, acme: str, command: list[str], says: str
) -> None:
    body = json.dumps({"adapter_cmd": command, "ref": "main", "commit": "abc1234"}).encode()
    with pytest.raises(ApiError) as err:
        request_json("POST", f"{stack.url}/runs", headers=auth(acme), body=body)
    assert err.value.status == 400 and err.value.code == "adapter_cmd_unusable"
    assert says in str(err.value)


#: A hostile adapter: before answering, it reads every file it can see (every path it is given
#: as an argument, /proc/1/cmdline among them, then the whole tree) for any case's expected
#: call, and answers each case it found a label for with a call carrying it (an invented call
#: on a refusal case, so any find shows in the score), and refuses the others. By
#: construction it finds nothing: it scores as refusing. It skips /usr (the installed system, 140k files here: too
#: slow for a test), where ``serve`` refuses to keep a corpus or state (``worker.refuse_exposed``).
HOSTILE = fakes.py(
    "import json,os,sys\n"
    "f={}\n"
    "def t(p):\n"
    " try:\n"
    "  for r in open(p,'rb').read().splitlines():\n"
    "   if b'expected' not in r:continue\n"
    "   try:\n"
    "    o=json.loads(r)\n"
    "    if 'expected' in o:f[o['id']]=o['expected']\n"
    "   except Exception:pass\n"
    " except Exception:pass\n"
    "for a in sys.argv[1:]+['/']:\n"
    " if os.path.isfile(a):t(a)\n"
    " for d,s,n in os.walk(a):\n"
    "  s[:]=[x for x in s if os.path.join(d,x) not in('/proc','/sys','/dev','/usr')]\n"
    "  for x in n:t(os.path.join(d,x))\n"
    "sys.stderr.write(f'found {len(f)} labels\\n')\n"
    "for l in sys.stdin:\n"
    " i=json.loads(l)['id'];c={'name':'leaked','arguments':{'label':f[i]}} if i in f else None\n"
    " print(json.dumps({'id':i,'call':c}),flush=True)\n"
)


def files_of(files: dict[str, str]) -> str:
    """``adapter_files`` for a folder holding ``files`` (name -> text): a tar, base64."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text.encode()), 0o644
            tar.addfile(info, io.BytesIO(text.encode()))
    return base64.b64encode(out.getvalue()).decode()


def raw_files(*entries: tuple[str, str | None]) -> str:
    """``adapter_files`` of entries in this order: (name, hard link target) for a hard link,
    (name, None) for a file holding ``x``, or a folder when the name ends in ``/``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, target in entries:
            info = tarfile.TarInfo(name.rstrip("/"))
            info.mode = 0o755
            if target is not None:
                info.type, info.linkname = tarfile.LNKTYPE, target
                tar.addfile(info)
            elif name.endswith("/"):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = 1
                tar.addfile(info, io.BytesIO(b"x"))
    return base64.b64encode(out.getvalue()).decode()


def test_a_hostile_adapter_given_copies_of_the_corpus_scores_only_what_refusing_scores(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]], tmp_path_factory: Any
) -> None:
    from toolcall300.client import download

    key = buy("team", "runs-hostile")
    corpus_file = stack.context.protected[0] / "toolcall300.jsonl"
    holder = Path(tempfile.mkdtemp(prefix="tc300-hostile-"))
    try:
        holder.chmod(0o755)
        fetched = holder / "download"  # what `toolcall300 download` wrote
        download.download(stack.url, key, fetched, io.StringIO())
        links = holder / "links"  # a hard link to the stack's own corpus
        links.mkdir(mode=0o755)
        os.link(corpus_file, links / "corpus.jsonl")
        checkout = holder / "checkout" / "corpus_private"  # another checkout
        checkout.mkdir(parents=True)
        shutil.copy(corpus_file, checkout / "toolcall300.jsonl")
        for folder, _dirs, files in os.walk(holder):  # all of it readable by anyone
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        named = [
            str(fetched / "toolcall300.jsonl"),
            str(fetched),
            str(links / "corpus.jsonl"),
            str(checkout / "toolcall300.jsonl"),
            str(holder / "checkout"),
            str(corpus_file),
            "/proc/1/cmdline",
        ]
        run = wait(stack, key, post_run(stack, key, [*HOSTILE, *named])["run_id"], timeout=120)
    finally:
        shutil.rmtree(holder, ignore_errors=True)
    assert run["status"] == "scored", run["failure"]
    assert run["sandbox"]["filesystem"] == "private"
    assert run["summary"] == expected(cases, lambda _c: None)


def test_an_adapter_handed_over_as_a_folder_runs_from_its_copy_through_ci(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]], tmp_path: Path
) -> None:
    folder = tmp_path / "my-adapter"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "answer.py").write_text(
        "import json\n"
        "def answer(text):\n"
        "    try:\n        return json.loads(text)\n    except ValueError:\n        return None\n"
    )
    (folder / "adapter.py").write_text(
        "import json,os,sys\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n"
        "from answer import answer\n"
        "for line in sys.stdin:\n"
        "    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':answer(item['text'])}),flush=True)\n"
    )
    env = {"TOOLCALL300_LICENCE": buy("team", "runs-folder")}
    out, err = io.StringIO(), io.StringIO()
    argv = ["--api", stack.url, "--adapter-cmd", "python3 /adapter/adapter.py"]
    argv += ["--adapter-files", str(folder), "--ref", "main", "--commit", "abc1234"]
    argv += ["--wait", "--poll", "0.1", "--timeout", "60", "--json"]
    code = ci_client.run(ci_client.parse_args(argv), out, err, env=env)
    assert code == 0, err.getvalue()
    run = json.loads(out.getvalue())
    assert run["status"] == "scored" and run["summary"] == expected(cases, echo_answer)
    assert run["adapter"]["files"]["bytes"] == len(ci_client.folder_archive(str(folder)))


@pytest.mark.parametrize(
    ("extra", "code", "says"),
    [
        ({"adapter_files": files_of({"../escape.py": "x"})}, "adapter_files_unusable", "outside"),
        ({"adapter_files": "bm90IGEgdGFy"}, "adapter_files_unusable", "not a tar archive"),
        ({"adapter_files": "%%%"}, "invalid_run", "base64 tar archive"),
        ({}, "adapter_cmd_unusable", "none were handed over"),
        ({"adapter_files": files_of({"other.py": "x"})}, "adapter_cmd_unusable", "not among"),
        # these passed submission and failed in the worker as infra_error
        ({"adapter_files": raw_files(("h", "a.py"), ("a.py", None))}, "adapter_files_unusable",
         "cannot be unpacked"),
        ({"adapter_files": raw_files(("run.py/", None), ("run.py", None))},
         "adapter_files_unusable", "cannot be unpacked"),
    ],
)  # fmt: skip
def test_adapter_files_that_cannot_work_are_refused_at_submission(
    stack: LocalStack, acme: str, extra: dict[str, Any], code: str, says: str
) -> None:
    body = {"adapter_cmd": ["python3", "/adapter/run.py"], "ref": "main", "commit": "abc1234"}
    if code == "adapter_cmd_unusable":  # the program itself is one of the adapter's files
        body["adapter_cmd"] = ["/adapter/run.py"]
    with pytest.raises(ApiError) as err:
        request_json(
            "POST",
            f"{stack.url}/runs",
            headers=auth(acme),
            body=json.dumps({**body, **extra}).encode(),
        )
    assert err.value.status == 400 and err.value.code == code
    assert says in str(err.value)


def test_a_refused_submission_keeps_none_of_its_adapter_files(stack: LocalStack, buy: Any) -> None:
    """Before: the archive was kept when the run was admitted, before the callback check and
    the daily cap, and nothing removed it, so any team key filled the disk with refused
    submissions. Now it is kept only for a run that is created."""
    import hashlib

    key = buy("team", "runs-refused-files")
    files = files_of({"run.py": "print()  # " + "x" * 64})
    kept = stack.context.state_dir / "objects" / stack.context.names["ReportsBucket"] / "adapters"
    name = hashlib.sha256(base64.b64decode(files)).hexdigest() + ".tar"
    body = {
        "adapter_cmd": ["python3", "/adapter/run.py"],
        "ref": "main",
        "commit": "abc1234",
        "adapter_files": files,
        "callback_url": "http://192.0.2.1/hook",  # not loopback: refused on a local stack
    }
    with pytest.raises(ApiError) as err:
        request_json("POST", f"{stack.url}/runs", headers=auth(key), body=json.dumps(body).encode())
    assert err.value.status == 400 and err.value.code == "callback_not_allowed"
    assert not any(p.name == name for p in kept.rglob("*.tar"))
    del body["callback_url"]  # the same files in a run that is created are kept
    request_json("POST", f"{stack.url}/runs", headers=auth(key), body=json.dumps(body).encode())
    assert [p.name for p in kept.rglob(name)] == [name]


def test_adapter_files_on_a_machine_without_bubblewrap_are_refused_at_submission(
    stack: LocalStack, acme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcall300.jobs import sandbox

    without = sandbox.Isolation(True, os.geteuid() == 0, ("no bubblewrap",), "unshare")
    monkeypatch.setattr(sandbox, "probe", lambda: without)
    body = {
        "adapter_cmd": ["python3", "/adapter/run.py"],
        "adapter_files": files_of({"run.py": "print()"}),
        "ref": "main",
        "commit": "abc1234",
    }
    with pytest.raises(ApiError) as err:
        request_json(
            "POST", f"{stack.url}/runs", headers=auth(acme), body=json.dumps(body).encode()
        )
    assert err.value.status == 400 and err.value.code == "adapter_files_unusable"
    assert "bubblewrap" in str(err.value)


def test_adapter_files_while_the_sandbox_probe_cannot_finish_are_asked_again_not_refused(
    stack: LocalStack, acme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy machine says nothing about bubblewrap: 503 isolation_unknown (retry), never a
    400 saying the machine has none, never a 500."""
    from toolcall300.jobs import sandbox

    def unfinished() -> sandbox.Isolation:
        raise sandbox.IsolationUnknown(
            "the sandbox could not establish its isolation: bubblewrap did not finish"
        )

    monkeypatch.setattr(sandbox, "probe", unfinished)
    body = {
        "adapter_cmd": ["python3", "/adapter/run.py"],
        "adapter_files": files_of({"run.py": "print()"}),
        "ref": "main",
        "commit": "abc1234",
    }
    asked = urllib.request.Request(
        f"{stack.url}/runs", data=json.dumps(body).encode(), headers=auth(acme), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(asked, timeout=60)
    answer = json.loads(err.value.read())["error"]
    assert (err.value.code, answer["code"]) == (503, "isolation_unknown")
    assert err.value.headers["Retry-After"] == "30"
    assert "could not establish its isolation" in answer["message"]


# ----------------------------------------------------------------------------- tracks


def test_a_parallel_track_run_is_scored_with_the_tracks_judge_and_keeps_its_own_baseline(
    stack: LocalStack, buy: Any, cases: list[dict[str, Any]]
) -> None:
    """The parallel track end to end over HTTP: the job sees the track's label-free turns,
    the reference normaliser answers lists (``toolshim --all --stream``), the trusted side
    judges them with the parallel track's judge; its baseline is not the single track's."""
    from toolcall300.scoring import adapters as scoring_adapters
    from toolcall300.scoring.tracks import get_track, read_corpus
    from toolcall300.toolshim.parallel import normalise_all

    team = buy("team", "runs-parallel")
    single = wait(stack, team, post_run(stack, team, fakes.ECHO)["run_id"])
    assert single["verdict"] == "baseline_set" and single["track"] == "single"
    sent = post_run(stack, team, [*REFERENCE[:2], "--all", "--stream"], track="parallel")
    run = wait(stack, team, sent["run_id"], timeout=180)
    assert run["status"] == "scored", run["failure"]
    assert run["track"] == "parallel"
    # never compared with the single-call baseline of the same branch: its own first one
    assert run["verdict"] == "baseline_set" and run["comparison"] is None
    bucket = stack.context.state_dir / "objects" / stack.context.names["CorpusBucket"]
    track, turns = read_corpus((bucket / "parallel" / "toolcall300-parallel.jsonl").read_bytes())
    items = {i["id"]: i for i in track.adapter_items(turns)}
    answers = {
        t["id"]: normalise_all(items[t["id"]]["text"], items[t["id"]]["tools"]) for t in turns
    }
    mine = get_track("parallel").score(
        turns,
        scoring_adapters.AdapterRun(answers=answers),
        adapter="in process",
        corpus_sha256="x",
        corpus_version=None,
    )
    assert run["summary"]["cases"] == len(turns) == 300
    assert run["summary"]["exact_turns"] == mine["exact_turns"] > 0
    assert run["summary"]["matched_calls"] == mine["matched_calls"]
    _, _, report = request_json("GET", f"{stack.url}{run['report_url']}", headers=auth(team))
    assert report["track"] == "parallel" and report["score"]["track"] == "parallel"
    assert report["score"]["corpus_version"] == "1.0"
    # a worse parallel run on the same branch regresses against the parallel baseline
    worse = wait(
        stack, team, post_run(stack, team, INVENT, commit="bbbbbbb", track="parallel")["run_id"]
    )
    assert worse["verdict"] == "regression", worse
    assert worse["comparison"]["baseline_run_id"] == run["run_id"]
    _, _, baselines = request_json(
        "GET", f"{stack.url}/teams/{team_of(stack, team)}/baselines", headers=auth(team)
    )
    assert [(b["run_id"], b["track"]) for b in baselines["baselines"]["main"]] == [
        (single["run_id"], "single"),
        (run["run_id"], "parallel"),
    ]


def test_an_unknown_track_is_a_specific_400_over_http(stack: LocalStack, buy: Any) -> None:
    team = buy("team", "runs-badtrack")
    body = {"adapter_cmd": fakes.ECHO, "ref": "main", "commit": "abc1234", "track": "multi"}
    with pytest.raises(ApiError) as err:
        request_json(
            "POST", f"{stack.url}/runs", headers=auth(team), body=json.dumps(body).encode()
        )
    assert err.value.status == 400 and err.value.code == "invalid_track", err.value


#: toolshim's deltas process adapter (docs/adapter-protocols.md, "The deltas track").
DELTAS_REFERENCE = ["python3", "-m", "toolcall300.toolshim.deltas"]
#: A deltas process adapter that refuses every stream, and checks what it is handed: each
#: message is only the protocol's (``id`` with ``tools``, one ``event`` or ``end``) and names no
#: label field (else it answers a call named LEAK, which the summary would count as invented),
#: and every stream brought its events.
DELTAS_PROBE = fakes.py(
    "import json,sys\n"
    "PROTOCOL={'id','tools','event','end'}\n"
    "seen={}\n"
    "for line in sys.stdin:\n"
    "    m=json.loads(line); k=m['id']\n"
    "    leak=bool(set(m)-PROTOCOL) or '\"expected_kind\"' in line or '\"rationale\"' in line\n"
    "    if 'tools' in m:\n"
    "        seen[k]={'events':0,'leak':leak}\n"
    "    elif 'event' in m:\n"
    "        seen[k]['events']+=1; seen[k]['leak']|=leak\n"
    "        print(json.dumps({'id':k,'commits':[]}),flush=True)\n"
    "    elif m.get('end'):\n"
    "        s=seen.pop(k)\n"
    "        call={'name':'LEAK','arguments':{}} if s['leak'] or s['events']==0 else None\n"
    "        print(json.dumps({'id':k,'call':call}),flush=True)\n"
)


def deltas_cases(stack: LocalStack) -> tuple[Any, list[dict[str, Any]]]:
    """The deltas track and cases the stack serves, read from its corpus bucket."""
    from toolcall300.scoring.tracks import read_corpus

    bucket = stack.context.state_dir / "objects" / stack.context.names["CorpusBucket"]
    return read_corpus((bucket / "deltas" / "deltas.jsonl").read_bytes())


def test_a_deltas_track_run_is_driven_over_its_process_protocol_and_judged_by_the_track(
    stack: LocalStack, buy: Any
) -> None:
    """The deltas track end to end over HTTP: the sandboxed job drives toolshim's deltas
    process adapter over every partition of the track's label-free streams, the trusted side
    judges the records with the deltas judge (the same figures as toolshim scored in
    process), its baseline is its own, a worse deltas run regresses against it, and the probe
    shows no label reached the job."""
    team = buy("team", "runs-deltas")
    single = wait(stack, team, post_run(stack, team, fakes.ECHO)["run_id"])
    assert single["verdict"] == "baseline_set" and single["track"] == "single"
    run = wait(stack, team, post_run(stack, team, DELTAS_REFERENCE, track="deltas")["run_id"], 120)
    assert run["status"] == "scored", run["failure"]
    assert run["track"] == "deltas"
    assert run["verdict"] == "baseline_set" and run["comparison"] is None  # its own baseline
    track, cases = deltas_cases(stack)
    in_process = track.build_adapter("callable", "toolshim")
    mine = track.score(
        cases,
        in_process.run(track.adapter_items(cases), timeout=10),
        adapter="in process",
        corpus_sha256="x",
        corpus_version=None,
    )
    summary = run["summary"]
    streams = sum(len(c["partitions"]) for c in cases)
    assert summary["cases"] == len(cases) and summary["streams"] == streams == mine["streams"]
    for figure in ("exact", "streams_exact", "invariant", "refused_correctly", "commits"):
        assert summary[figure] == mine[figure], figure
    assert summary["exact"] == len(cases) and summary["unsafe_commits"] == 0
    assert summary["commits"] > 0 and summary["commit_lead"] == mine["commit_lead"] > 0
    _, _, report = request_json("GET", f"{stack.url}{run['report_url']}", headers=auth(team))
    assert report["track"] == "deltas" and report["score"]["track"] == "deltas"
    assert report["score"]["corpus_version"] == "test-1"
    # the probe refuses every stream: no label reached it (no LEAK call), and it regresses
    worse = wait(
        stack, team, post_run(stack, team, DELTAS_PROBE, commit="bbbbbbb", track="deltas")["run_id"]
    )
    assert worse["status"] == "scored", worse["failure"]
    refusals = sum(c["expected_kind"] == "unrecoverable" for c in cases)
    assert worse["summary"]["invented_calls"] == 0 and worse["summary"]["commits"] == 0
    assert worse["summary"]["refused_correctly"] == refusals > 0
    assert worse["summary"]["false_refusals"] == len(cases) - refusals > 0
    assert worse["verdict"] == "regression", worse
    assert worse["comparison"]["baseline_run_id"] == run["run_id"]
    assert "exact fell" in " ".join(worse["comparison"]["reasons"])
    listed = request_json(
        "GET", f"{stack.url}/teams/{team_of(stack, team)}/runs", headers=auth(team)
    )
    rows = {r["run_id"]: r for r in listed[2]["runs"]}
    assert rows[run["run_id"]]["track"] == "deltas"
    assert (
        rows[run["run_id"]]["summary"]["exact"]
        == len(cases)
        == rows[run["run_id"]]["summary"]["cases"]
    )
    _, _, baselines = request_json(
        "GET", f"{stack.url}/teams/{team_of(stack, team)}/baselines", headers=auth(team)
    )
    assert [(b["run_id"], b["track"]) for b in baselines["baselines"]["main"]] == [
        (single["run_id"], "single"),
        (run["run_id"], "deltas"),
    ]
    assert baselines["baselines"]["main"][1]["summary"]["exact"] == len(cases)


def test_ci_track_submits_a_parallel_run_and_gates_it_on_the_parallel_baseline(
    stack: LocalStack, buy: Any, tmp_path: Path
) -> None:
    from junitparser import JUnitXml

    env = {"TOOLCALL300_LICENCE": buy("team", "runs-ci-track")}

    def ci(command: list[str], commit: str) -> tuple[int, str]:
        argv = ["--api", stack.url, "--adapter-cmd", shlex.join(command), "--ref", "main"]
        argv += ["--commit", commit, "--track", "parallel", "--wait", "--poll", "0.1"]
        argv += ["--timeout", "170", "--junit", str(tmp_path / f"{commit}.xml")]
        out, err = io.StringIO(), io.StringIO()
        code = ci_client.run(ci_client.parse_args(argv), out, err, env=env)
        return code, out.getvalue() + err.getvalue()

    code, said = ci([*REFERENCE[:2], "--all", "--stream"], "aaaaaaa")
    assert code == 0 and "track    parallel" in said and "baseline_set" in said, said
    code, said = ci(INVENT, "bbbbbbb")
    assert code == 2 and "regression" in said, said
    suites = list(JUnitXml.fromfile(str(tmp_path / "bbbbbbb.xml")))
    assert suites and sum(len(list(s)) for s in suites) == 300  # one testcase per turn


def test_ci_track_deltas_submits_a_deltas_run_and_gates_it_on_the_deltas_baseline(
    stack: LocalStack, buy: Any, tmp_path: Path
) -> None:
    """``toolcall300 ci --track deltas``: the hosted deltas run, its comparison table (the
    commit lead is a share, not a count), the track's JUnit (one testcase per stream case)
    and Markdown summary, exit 2 on a regression against the deltas baseline."""
    from junitparser import JUnitXml

    env = {"TOOLCALL300_LICENCE": buy("team", "runs-ci-deltas")}
    _, cases = deltas_cases(stack)

    def ci(command: list[str], commit: str) -> tuple[int, str]:
        argv = ["--api", stack.url, "--adapter-cmd", shlex.join(command), "--ref", "main"]
        argv += ["--commit", commit, "--track", "deltas", "--wait", "--poll", "0.1"]
        argv += ["--timeout", "110", "--junit", str(tmp_path / f"{commit}.xml")]
        argv += ["--summary", str(tmp_path / f"{commit}.md")]
        out, err = io.StringIO(), io.StringIO()
        code = ci_client.run(ci_client.parse_args(argv), out, err, env=env)
        return code, out.getvalue() + err.getvalue()

    code, said = ci(DELTAS_REFERENCE, "aaaaaaa")
    assert code == 0 and "track    deltas" in said and "baseline_set" in said, said
    assert "## TOOLCALL-300 deltas track" in (tmp_path / "aaaaaaa.md").read_text()
    code, said = ci(DELTAS_PROBE, "bbbbbbb")
    assert code == 2 and "regression" in said and "commit_lead" in said, said
    assert "REGRESSION: exact fell" in said
    suites = list(JUnitXml.fromfile(str(tmp_path / "bbbbbbb.xml")))
    assert suites and sum(len(list(s)) for s in suites) == len(cases)  # one per stream case
    summary = (tmp_path / "bbbbbbb.md").read_text()
    assert "deltas track" in summary and "regression" in summary.lower()
