"""Hosted runs end to end on a real local stack: HTTP gateway, moto server, worker pool, sandbox.

One stack for the module, started on a small corpus (8 cases) so every run takes well under a
second of adapter time. Licences are bought the way a customer would (signed test Stripe
events through ``dev purchase``).
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import runs_fakes as fakes

from toolcall300.service import callback, ci_client, devtools, worker
from toolcall300.service.httpclient import ApiError, request_json
from toolcall300.service.localstack import DEV_WEBHOOK_SECRET, LocalStack, start_local_stack

CASES = fakes.small_corpus(8)
REFERENCE = ["toolcall300", "toolshim", "--stream"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    corpus_dir: Path = tmp_path_factory.mktemp("corpus")
    data = fakes.corpus_bytes(CASES)
    (corpus_dir / "toolcall300.jsonl").write_bytes(data)
    manifest = {
        "version": "test",
        "files": [
            {
                "name": "toolcall300.jsonl",
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
        ],
    }
    (corpus_dir / "manifest.json").write_text(json.dumps(manifest))
    saved = {k: os.environ.get(k) for k in ("TOOLCALL300_LEASE_S", "TOOLCALL300_WORKERS")}
    os.environ.update({"TOOLCALL300_LEASE_S": "3", "TOOLCALL300_WORKERS": "3"})
    started = start_local_stack(corpus_dir=corpus_dir)
    try:
        yield started
    finally:
        started.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def buy(stack: LocalStack, tier: str, team: str | None) -> str:
    return str(devtools.purchase(stack.url, tier=tier, team=team, secret=DEV_WEBHOOK_SECRET)["key"])


@pytest.fixture(scope="module")
def acme(stack: LocalStack) -> str:
    return buy(stack, "team", "acme")


def auth(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json", **extra}


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
    assert status == 202 and answer["status"] == "queued"
    return dict(answer)


def wait(stack: LocalStack, key: str, run_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, _, run = request_json("GET", f"{stack.url}/runs/{run_id}", headers=auth(key))
        if run["status"] in ("scored", "failed"):
            return dict(run)
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish")


def test_a_run_is_scored_and_its_report_is_stored(stack: LocalStack, acme: str) -> None:
    team = buy(stack, "team", "solo-team")
    run = wait(stack, team, post_run(stack, team, fakes.ECHO)["run_id"])
    assert run["status"] == "scored" and run["verdict"] == "baseline_set"
    assert run["summary"]["exact"] == len(CASES) and run["comparison"] is None
    assert run["sandbox"]["network_isolated"] in (True, False)
    assert run["started_at"] and run["finished_at"] and run["created_at"]
    _, headers, report = request_json("GET", f"{stack.url}{run['report_url']}", headers=auth(team))
    assert "attachment" in {k.lower(): v for k, v in headers.items()}["content-disposition"]
    assert report["corpus_sha256"] == hashlib.sha256(fakes.corpus_bytes(CASES)).hexdigest()
    assert report["adapter"] == {"kind": "command", "command": fakes.ECHO}
    assert report["score"]["exact"] == len(CASES) and report["scorer_version"]
    _, _, baselines = request_json(
        "GET", f"{stack.url}/teams/solo-team/baselines", headers=auth(team)
    )
    assert [b["run_id"] for b in baselines["baselines"]["main"]] == [run["run_id"]]
    _, _, listing = request_json("GET", f"{stack.url}/teams/solo-team/runs", headers=auth(team))
    assert [r["run_id"] for r in listing["runs"]] == [run["run_id"]]


def test_the_reference_normaliser_runs_in_the_sandbox(stack: LocalStack, acme: str) -> None:
    team = buy(stack, "team", "ref-team")
    run = wait(stack, team, post_run(stack, team, REFERENCE)["run_id"])
    assert run["status"] == "scored", run["failure"]
    assert run["summary"]["exact"] == len(CASES)  # every text is already the exact call


def test_ci_client_gates_on_the_team_baseline(stack: LocalStack) -> None:
    key = buy(stack, "team", "gate-team")
    env = {"TOOLCALL300_LICENCE": key}

    def ci(cmd: list[str], ref: str, commit: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        args = ci_client.parse_args(
            [
                "--api",
                stack.url,
                "--adapter-cmd",
                " ".join(map(_quote, cmd)),
                "--ref",
                ref,
                "--commit",
                commit,
                "--wait",
                "--poll",
                "0.1",
                "--timeout",
                "60",
            ]
        )
        return ci_client.run(args, out, err, env=env), out.getvalue()

    code, text = ci(fakes.ECHO, "refs/heads/main", "aaaaaaa")
    assert code == 0 and "baseline_set" in text
    code, text = ci(fakes.WORSE, "refs/heads/feature-x", "bbbbbbb")
    assert code == 2 and "REGRESSION" in text and "broken:" in text
    code, text = ci(fakes.ECHO, "refs/heads/feature-y", "ccccccc")
    assert code == 0 and "pass" in text
    code, _ = ci(fakes.MISSING, "refs/heads/feature-z", "ddddddd")
    assert code == 1


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def test_idempotency_key_returns_the_same_run(stack: LocalStack, acme: str) -> None:
    first = post_run(stack, acme, fakes.ECHO, ref="refs/heads/idem", idem="ci-run-77")
    again = post_run(stack, acme, fakes.ECHO, ref="refs/heads/idem", idem="ci-run-77")
    assert first["run_id"] == again["run_id"]
    with pytest.raises(ApiError) as err:
        post_run(stack, acme, fakes.ECHO, ref="refs/heads/other", idem="ci-run-77")
    assert err.value.status == 409


def test_access_rules(stack: LocalStack, acme: str) -> None:
    run_id = post_run(stack, acme, fakes.ECHO, ref="refs/heads/access")["run_id"]
    rival = buy(stack, "team", "rival")
    single = buy(stack, "single", None)
    with pytest.raises(ApiError) as err:
        request_json("GET", f"{stack.url}/runs/{run_id}", headers=auth(rival))
    assert err.value.status == 404
    with pytest.raises(ApiError) as err:
        request_json("GET", f"{stack.url}/teams/acme/baselines", headers=auth(rival))
    assert err.value.status == 403
    with pytest.raises(ApiError) as err:
        post_run(stack, single, fakes.ECHO)
    assert err.value.status == 403
    with pytest.raises(ApiError) as err:
        request_json("GET", f"{stack.url}/runs/{run_id}")
    assert err.value.status == 401
    image = {"image": "r/a@sha256:" + "a" * 64, "ref": "main", "commit": "abc1234"}
    with pytest.raises(ApiError) as err:
        request_json(
            "POST", f"{stack.url}/runs", headers=auth(acme), body=json.dumps(image).encode()
        )
    assert err.value.status == 400
    with pytest.raises(ApiError) as err:
        request_json("POST", f"{stack.url}/runs", headers=auth(acme), body=b"{not json")
    assert err.value.status == 400


def test_ten_runs_at_once_all_finish_with_correct_reports(stack: LocalStack) -> None:
    key = buy(stack, "team", "busy-team")
    submitted: list[tuple[str, int]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        command = fakes.ECHO if i % 2 else fakes.WORSE
        answer = post_run(stack, key, command, ref=f"refs/heads/f{i}", commit=f"{i:07x}")
        with lock:
            submitted.append((answer["run_id"], len(CASES) if i % 2 else 4))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({run_id for run_id, _ in submitted}) == 10
    for run_id, exact in submitted:
        run = wait(stack, key, run_id, timeout=120)
        assert run["status"] == "scored", run["failure"]
        assert run["summary"]["exact"] == exact
        _, _, report = request_json("GET", f"{stack.url}/runs/{run_id}/report", headers=auth(key))
        assert report["run_id"] == run_id and report["score"]["exact"] == exact


def test_callback_is_signed_with_the_key_derived_secret(stack: LocalStack) -> None:
    key = buy(stack, "team", "hook-team")
    received: list[tuple[bytes, str | None]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(
                (
                    self.rfile.read(int(self.headers["Content-Length"])),
                    self.headers.get(callback.HEADER),
                )
            )
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        run_id = post_run(stack, key, fakes.ECHO, callback_url=url)["run_id"]
        wait(stack, key, run_id)
        deadline = time.monotonic() + 10
        while not received and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.shutdown()
        server.server_close()
    body, header = received[0]
    callback.verify_callback(body, header, callback.callback_secret(key))
    doc = json.loads(body)
    assert (
        doc["run_id"] == run_id and doc["verdict"] == "baseline_set" and doc["status"] == "scored"
    )


DOOMED_WORKER = """
import sys
from toolcall300.service import runs_config, worker
from toolcall300.service.adapters.s3 import CorpusObjects
runs_config.clear()
conf = runs_config.settings()
deps = worker.WorkerDeps(store=runs_config.run_store(), reports=runs_config.report_store(),
    corpus=worker.cached_corpus(CorpusObjects(conf.corpus_bucket).read), lease_s=2)
worker.process(deps, sys.argv[1], "doomed")
"""
SLOW_ECHO = fakes.py(
    "import json,sys,time\nfor line in sys.stdin:\n    item=json.loads(line)\n    time.sleep(0.5)\n"
    "    try:\n        call=json.loads(item['text'])\n    except ValueError:\n        call=None\n"
    "    print(json.dumps({'id':item['id'],'call':call}),flush=True)\n"
)


def test_a_worker_killed_mid_run_leaves_no_stuck_run_and_counts_once(stack: LocalStack) -> None:
    key = buy(stack, "team", "kill-team")
    pool: worker.WorkerPool = stack.context.extra["run_workers"]
    pool.stop()  # Given the stack's own workers paused, so the doomed worker takes the run
    try:
        run_id = post_run(stack, key, SLOW_ECHO)["run_id"]
        doomed = subprocess.Popen([sys.executable, "-c", DOOMED_WORKER, run_id])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            _, _, run = request_json("GET", f"{stack.url}/runs/{run_id}", headers=auth(key))
            if run["status"] == "running":
                break
            time.sleep(0.05)
        time.sleep(1.0)  # mid-run: a few of the 8 slow answers are in
        doomed.kill()  # When the worker dies without a word
        doomed.wait()
        _, _, run = request_json("GET", f"{stack.url}/runs/{run_id}", headers=auth(key))
        assert run["status"] == "running" and run["attempts"] == 1
    finally:
        fresh = worker.WorkerPool(pool.deps, size=2, poll_s=0.1, sweep_s=0.5).start()
        stack.context.extra["run_workers"] = fresh
        stack._stops.append(fresh.stop)
    # Then the sweeper re-queues it once the lease expires and a live worker finishes it once
    run = wait(stack, key, run_id, timeout=60)
    assert run["status"] == "scored" and run["attempts"] == 2
    assert run["summary"]["exact"] == len(CASES)
    _, _, baselines = request_json(
        "GET", f"{stack.url}/teams/kill-team/baselines", headers=auth(key)
    )
    assert [b["run_id"] for b in baselines["baselines"]["main"]] == [run_id]
