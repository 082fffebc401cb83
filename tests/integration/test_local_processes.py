"""The one-machine stack served by more than one process on its one database (``serve
--processes``), each promise made per payer or per request checked across two processes over
real HTTP (docs/local-stack.md):

- one check with a pattern in flight per payer (criteria D26), whichever process each reaches;
- a paid check charged once per Idempotency-Key when its retries reach both processes at once;
- the free tier's "5 s apart" between two processes;
- a checkout started on one process is paid on the page the other serves;
- a run queued through a sibling is taken by the first process's worker pool (woken, not polled);
- ``serve --processes 2``: two processes accept on the one port, the ledger adds up after a
  burst of paid checks and their retries, and the stop leaves no sibling behind.

The sibling here gets a listening socket of its own (``stack.start_siblings``), so a test can
send one request to each process; ``serve`` gives every process the one port.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from support import runs as fakes
from support.corpus import make_corpus
from support.dashboard import wait_for_serve_url

from toolcall300.client import dev as devtools

ROOT = Path(__file__).resolve().parents[2]
CHECK = {
    "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "arguments": {"n": "3"},
}
PATTERN = {
    "schema": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[a-z]{3}$"}}},
    "arguments": {"s": "abc"},
}


def auth(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **extra}


def wait_until_serving(url: str) -> None:
    """The sibling imports the handlers before it accepts (a second or so)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/criteria", timeout=10).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture(scope="module")
def sibling(local_stack: Any) -> Iterator[str]:
    """A second process of the test's stack on the same state folder, on a port of its own."""
    from toolcall300.service.local import stack as localstack

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop = localstack.start_siblings(
        1,
        sock,
        local_stack.context.extra["sibling"],
        lambda: local_stack.context.extra["run_workers"].wake(),
    )
    sock.close()  # the sibling holds its own copy
    try:
        wait_until_serving(url)
        yield url
    finally:
        stop()


def _ledger(state_dir: Path, payer: str) -> tuple[int, dict[str, Any]]:
    db = sqlite3.connect(state_dir / "state.db")
    try:
        charged = db.execute(
            "SELECT count(*) FROM ledger WHERE id LIKE 'check#%' AND json_extract(item, '$.payer') = ?",
            (payer,),
        ).fetchone()[0]
        row = db.execute("SELECT item FROM ledger WHERE id = ?", (f"pack#{payer}",)).fetchone()
    finally:
        db.close()
    return int(charged), json.loads(row[0])


def _payer(url: str, key: str) -> str:
    return str(requests.get(f"{url}/licence", headers=auth(key), timeout=30).json()["licence_id"])


class Blocking:
    """The first process's bounded child, held inside until ``release``: the payer's lane is
    taken (in the shared database) for as long as the test needs."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.inside, self.release = threading.Event(), threading.Event()

    def __call__(self, raw: bytes, **kw: Any) -> dict[str, Any]:
        self.inside.set()
        self.release.wait(timeout=60)  # hang guard only: the test releases it
        answer: dict[str, Any] = self.real(raw, **kw)
        return answer


def test_one_pattern_check_in_flight_per_payer_across_processes(
    local_stack: Any, sibling: str, buy_licence: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcall300.service.api import bounded_check

    key, other = buy_licence("checks-500"), buy_licence("checks-500")
    blocking = Blocking(bounded_check.check_body_bounded)
    monkeypatch.setattr(bounded_check, "check_body_bounded", blocking)  # the first process only
    first: dict[str, int] = {}

    def in_first_process() -> None:
        r = requests.post(f"{local_stack.url}/check", json=PATTERN, headers=auth(key), timeout=90)
        first["status"] = r.status_code

    thread = threading.Thread(target=in_first_process)
    thread.start()
    try:
        assert blocking.inside.wait(timeout=60)
        busy = requests.post(f"{sibling}/check", json=PATTERN, headers=auth(key), timeout=60)
        assert (busy.status_code, busy.json()["error"]["code"]) == (429, "check_in_flight")
        assert int(busy.headers["Retry-After"]) >= 1
        # another payer's pattern check and this payer's check without one are answered
        assert requests.post(f"{sibling}/check", json=PATTERN, headers=auth(other)).ok
        assert requests.post(f"{sibling}/check", json=CHECK, headers=auth(key)).ok
        answered_while_held = "status" not in first
    finally:
        blocking.release.set()
        thread.join()
    assert answered_while_held and first["status"] == 200
    again = requests.post(f"{sibling}/check", json=PATTERN, headers=auth(key), timeout=60)
    assert again.status_code == 200  # the lane is free once the first check is answered


def test_retries_reaching_both_processes_at_once_are_charged_once(
    local_stack: Any, sibling: str, buy_licence: Any
) -> None:
    key = buy_licence("checks-500")
    payer = _payer(local_stack.url, key)
    tag = os.urandom(4).hex()
    answers: list[tuple[int, str]] = []
    start = threading.Barrier(16)

    def send(url: str, i: int) -> None:
        headers = auth(key, **{"Idempotency-Key": f"{tag}-{i}"})
        start.wait()
        r = requests.post(f"{url}/check", json=CHECK, headers=headers, timeout=60)
        answers.append((r.status_code, r.json().get("verdict", "")))

    threads = [
        threading.Thread(target=send, args=(url, i))
        for i in range(8)
        for url in (local_stack.url, sibling)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [(200, "REPAIRED")] * 16
    charged, pack = _ledger(local_stack.context.state_dir, payer)
    assert charged == 8 and pack["remaining"] == pack["granted"] - 8


def _free_check(url: str, source: str) -> tuple[int, dict[str, Any]]:
    """An unauthenticated check sent from ``source`` (a loopback address of its own, so the
    free tier sees a client no other test used)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60, source_address=(source, 0))
    try:
        conn.request(
            "POST", "/check", body=json.dumps(CHECK), headers={"Content-Type": "application/json"}
        )
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_free_checks_are_five_seconds_apart_across_processes(
    local_stack: Any, sibling: str
) -> None:
    source = f"127.{os.getpid() % 200 + 20}.{os.urandom(1)[0]}.{os.urandom(1)[0] % 250 + 2}"
    status, _ = _free_check(local_stack.url, source)
    assert status == 200
    status, data = _free_check(sibling, source)
    assert (status, data["error"]["code"]) == (429, "too_soon")


def test_a_checkout_started_on_one_process_is_paid_on_the_other(
    local_stack: Any, sibling: str
) -> None:
    """``POST /checkout`` reaches the sibling; the session's page is the first process's
    (``TOOLCALL300_PUBLIC_URL``): the session is in the shared database, not one's memory."""
    bought = devtools.purchase(sibling, tier="checks-500", team=None)
    assert bought["key"]
    r = requests.post(f"{sibling}/check", json=CHECK, headers=auth(bought["key"]), timeout=60)
    assert r.status_code == 200 and r.json()["signature"]


def test_a_run_queued_through_a_sibling_is_taken_by_the_worker_pool(
    local_stack: Any, sibling: str, buy_licence: Any
) -> None:
    """The pool waits to be woken (it never polls): the sibling wakes it through its pipe."""
    key = buy_licence("team", f"siblings-{os.urandom(3).hex()}")
    body = {"adapter_cmd": fakes.ECHO, "ref": "main", "commit": "abc1234"}
    r = requests.post(f"{sibling}/runs", json=body, headers=auth(key), timeout=60)
    assert r.status_code == 202, r.text
    run = fakes.wait_for_run(sibling, key, r.json()["run_id"], timeout_s=120)
    assert run["status"] == "scored", run


def test_serve_with_two_processes_shares_one_port_and_one_ledger(tmp_path: Path) -> None:
    corpus, state = tmp_path / "corpus", tmp_path / "state"
    make_corpus(corpus)
    command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0", "--processes", "2"]
    proc = subprocess.Popen(
        [*command, "--corpus", str(corpus), "--state", str(state)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = wait_for_serve_url(proc, timeout_s=120)
        port = int(url.rsplit(":", 1)[1])
        siblings = fakes.pids_with("serve_sibling")
        ours = [pid for pid in siblings if _parent(pid) == proc.pid]
        assert len(ours) == 1
        deadline = time.monotonic() + 120
        while port not in fakes.listening_ports(
            ours[0]
        ):  # it inherits the socket before it imports
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert port in fakes.listening_ports(proc.pid)
        key = devtools.purchase(url, tier="checks-500", team=None)["key"]
        payer = _payer(url, key)
        statuses: list[int] = []

        def client(i: int) -> None:
            with requests.Session() as session:  # one connection each: both processes accept
                for _attempt in range(2):  # the check and its retry
                    headers = auth(key, **{"Idempotency-Key": f"burst-{i}"})
                    r = session.post(f"{url}/check", json=CHECK, headers=headers, timeout=60)
                    statuses.append(r.status_code)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [200] * 24
        charged, pack = _ledger(state, payer)
        assert charged == 12 and pack["remaining"] == pack["granted"] - 12
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert not [pid for pid in fakes.pids_with("serve_sibling") if pid in ours]


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


#: A stack of its own (one per process): a new edition for the process while it serves (as
#: the unit tier installs its own), then a checkout and a look at the worker pool's store.
_RESET_THEN_BUY = """
from toolcall300.client import dev as devtools
from toolcall300.service.api import wiring
from toolcall300.service.local.stack import start_local_stack
stack = start_local_stack()
try:
    wiring.renew()
    with wiring.installed():
        assert devtools.purchase(stack.url, tier="checks-500", team=None)["key"]
    pool = stack.context.extra["run_workers"]
    assert pool.deps.store.by_status("queued") == []  # its database is open
finally:
    stack.stop()
"""


def test_a_checkout_works_after_the_ports_are_reset() -> None:
    """The stack's routes, its dev checkout and its worker pool share one edition, the stack's,
    closed only at its stop: a new edition for the process (``wiring.renew``,
    ``wiring.installed``, which tests use) leaves it open. Resetting the ports used to close
    the database the pool and the stored checkout sessions were held in (every later checkout
    answered 503, every later run stayed queued)."""
    done = subprocess.run(
        [sys.executable, "-c", _RESET_THEN_BUY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
