"""The one-machine edition's store, attacked as an operator and a tenant would (docs/local-stack.md).

- a restart (here a ``kill -9``) changes nothing a customer can see: keys, licences, runs,
  packs, the JWKS and its ``kid``, and a report signed before it verifies after it;
- the stack listens on one port, and a callback can never be sent to it;
- 16 paid checks racing refunds leave the ledger balanced (answers = charges), 20 trials of 20;
- the state folder's secrets are files only the operator reads, and a dump of the database
  holds no callback secret in clear;
- backup and restore give a folder a restarted stack serves as it was.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from support import runs as fakes
from support.corpus import make_corpus
from support.dashboard import wait_for_serve_url

from toolcall300.cli import dispatch
from toolcall300.client import dev as devtools

ROOT = Path(__file__).resolve().parents[2]
CHECK = {
    "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "arguments": {"n": "3"},
}


class Serve:
    """One ``toolcall300 serve`` process on a state folder."""

    def __init__(self, corpus: Path, state_dir: Path) -> None:
        command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0"]
        command += ["--corpus", str(corpus), "--state", str(state_dir)]
        self.proc = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.url = wait_for_serve_url(self.proc, timeout_s=120)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def buy(url: str, tier: str, team: str | None = None) -> str:
    out, err = io.StringIO(), io.StringIO()
    argv = ["purchase", "--api", url, "--tier", tier, *(["--team", team] if team else [])]
    assert devtools.run(devtools.parse_args(argv), out, err) == 0, err.getvalue()
    return out.getvalue().splitlines()[-1]


def auth(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **extra}


def test_a_restart_changes_nothing_a_customer_can_see(tmp_path: Path) -> None:
    make_corpus(tmp_path / "corpus")
    state_dir = tmp_path / "state"
    first = Serve(tmp_path / "corpus", state_dir)
    try:
        assert fakes.listening_ports(first.proc.pid) == {int(first.url.rsplit(":", 1)[1])}
        team_key, pack_key = buy(first.url, "team", "Restart"), buy(first.url, "checks-500")
        signed = requests.post(f"{first.url}/check", json=CHECK, headers=auth(pack_key), timeout=30)
        assert signed.status_code == 200, signed.text
        jwks = requests.get(f"{first.url}/.well-known/jwks.json", timeout=30).json()
        run = requests.post(
            f"{first.url}/runs",
            json={"adapter_cmd": fakes.ECHO, "ref": "main", "commit": "abc1234"},
            headers=auth(team_key),
            timeout=30,
        ).json()
        scored = fakes.wait_for_run(first.url, team_key, run["run_id"])
        assert scored["status"] == "scored", scored
        team = requests.get(f"{first.url}/licence", headers=auth(team_key), timeout=30).json()[
            "team"
        ]
        listing = requests.get(f"{first.url}/teams/{team}/runs", headers=auth(team_key), timeout=30)
        report = requests.get(
            f"{first.url}/runs/{run['run_id']}/report", headers=auth(team_key), timeout=30
        )
    finally:
        first.kill()  # no word to anyone: SIGKILL
    second = Serve(tmp_path / "corpus", state_dir)
    try:
        assert requests.get(f"{second.url}/.well-known/jwks.json", timeout=30).json() == jwks
        (tmp_path / "report.json").write_bytes(signed.content)
        (tmp_path / "jwks.json").write_text(
            requests.get(f"{second.url}/.well-known/jwks.json", timeout=30).text
        )
        out, err = io.StringIO(), io.StringIO()
        verify = [
            "check",
            "verify",
            str(tmp_path / "report.json"),
            "--jwks",
            str(tmp_path / "jwks.json"),
        ]
        assert dispatch(verify, out, err) == 0, err.getvalue()
        for key in (team_key, pack_key):
            assert (
                requests.get(f"{second.url}/licence", headers=auth(key), timeout=30).status_code
                == 200
            )
        again = requests.get(f"{second.url}/teams/{team}/runs", headers=auth(team_key), timeout=30)
        assert again.json() == listing.json()
        kept = requests.get(
            f"{second.url}/runs/{run['run_id']}/report", headers=auth(team_key), timeout=30
        )
        assert kept.content == report.content
        # the pack kept its count: 500 bought, one spent before the restart, one now
        later = requests.post(f"{second.url}/check", json=CHECK, headers=auth(pack_key), timeout=30)
        assert later.status_code == 200, later.text
        header = json.loads(later.content)["signature"].split(".", 1)[0]
        assert header == json.loads(signed.content)["signature"].split(".", 1)[0]  # same kid
        db = sqlite3.connect(state_dir / "state.db")
        packs = [
            json.loads(r[0]) for r in db.execute("SELECT item FROM ledger WHERE id LIKE 'pack#%'")
        ]
        db.close()
        assert [(p["granted"], p["remaining"]) for p in packs] == [(500, 498)]
    finally:
        second.kill()
    for name in ("state.db", "secrets", "keys"):
        assert (state_dir / name).exists()
    for secret in [*(state_dir / "secrets").iterdir(), *(state_dir / "keys").iterdir()]:
        assert oct(secret.stat().st_mode & 0o777) == "0o600", secret


def test_a_callback_can_never_be_sent_to_the_stack_itself(
    local_stack: Any, buy_licence: Any
) -> None:
    """A callback is a POST the service makes on a tenant's behalf; aimed at the stack's own
    port (its webhook, its dev checkout page, its runs) it is refused at submission."""
    key = buy_licence("team", "callback-self")
    port = local_stack.url.rsplit(":", 1)[1]
    for target in (
        f"{local_stack.url}/webhooks/stripe",
        f"http://localhost:{port}/dev/checkout/cs_test_{'0' * 48}",
        f"http://[::1]:{port}/runs",
        f"http://127.0.0.2:{port}/objects/x",
    ):
        r = requests.post(
            f"{local_stack.url}/runs",
            json={
                "adapter_cmd": fakes.ECHO,
                "ref": "main",
                "commit": "abc1234",
                "callback_url": target,
            },
            headers=auth(key),
            timeout=30,
        )
        assert r.status_code == 400, (target, r.text)
        assert r.json()["error"]["code"] == "callback_not_allowed"


def send(method: str, url: str, **kwargs: Any) -> requests.Response:
    """One request, retried when the connection is dropped before an answer (the gateway's
    listen backlog under 17 clients at once); every request here is safe to repeat."""
    for _ in range(50):
        try:
            return requests.request(method, url, timeout=60, **kwargs)
        except requests.ConnectionError:
            continue
    raise AssertionError(f"{method} {url}: every connection was dropped")


def _ledger_rows(state_dir: Path, payer: str) -> tuple[int, dict[str, Any]]:
    db = sqlite3.connect(state_dir / "state.db")
    try:
        checks = db.execute(
            "SELECT count(*) FROM ledger WHERE id LIKE 'check#%' AND json_extract(item, '$.payer') = ?",
            (payer,),
        ).fetchone()[0]
        pack = json.loads(
            db.execute("SELECT item FROM ledger WHERE id = ?", (f"pack#{payer}",)).fetchone()[0]
        )
    finally:
        db.close()
    return int(checks), pack


@pytest.mark.parametrize("trial", range(20))
def test_paid_checks_racing_refunds_leave_the_ledger_balanced(local_stack: Any, trial: int) -> None:
    """16 paid checks at once while refunds of the same pack land: every 200 is one charge
    record and the pack adds up (granted = remaining + charged + withdrawn)."""
    from support.stripe import paid_session, refunded_charge, signed, stripe_event

    url, tag = local_stack.url, f"race{trial}_{os.urandom(3).hex()}"

    def post(event: dict[str, Any]) -> int:
        body, headers = signed(event, local_stack.context.webhook_secret)
        return send("POST", f"{url}/webhooks/stripe", data=body, headers=headers).status_code

    session = paid_session(session_id=f"cs_{tag}", payment_intent=f"pi_{tag}", tier="checks-500")
    assert post(stripe_event("checkout.session.completed", session, event_id=f"evt_{tag}")) == 200
    claimed = send("GET", f"{url}/licence/claim", params={"session_id": f"cs_{tag}"}).json()
    key, payer = claimed["key"], claimed["licence_id"]
    answers: list[int] = []
    start = threading.Barrier(17)

    def check(i: int) -> None:
        start.wait()
        headers = auth(key, **{"Idempotency-Key": f"{tag}-{i}"})  # a retry is charged once
        answers.append(send("POST", f"{url}/check", json=CHECK, headers=headers).status_code)

    def refunds() -> None:
        start.wait()
        for n, amount in enumerate((200, 400, 600)):
            charge = refunded_charge(
                payment_intent=f"pi_{tag}", full=False, amount=1000, amount_refunded=amount
            )
            while post(stripe_event("charge.refunded", charge, event_id=f"evt_{tag}_r{n}")) == 409:
                pass  # busy: Stripe retries a 409 the same way

    threads = [threading.Thread(target=check, args=(i,)) for i in range(16)]
    threads.append(threading.Thread(target=refunds))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(answers) <= {200, 402}, answers
    charged, pack = _ledger_rows(local_stack.context.state_dir, payer)
    assert answers.count(200) == charged
    assert pack["granted"] == pack["remaining"] + charged + pack.get("withdrawn", 0)
    assert pack["refunded_amount"] == 600


def test_a_paid_check_is_one_commit_and_its_retry_is_charged_once(
    local_stack: Any, buy_licence: Any
) -> None:
    """The charge, its day's count and the metrics commit as one transaction (they were
    three); the guarantees are unchanged: a retry with the same Idempotency-Key is answered
    again, signed, and not charged again, and the pack loses one check."""
    edition = local_stack.context.edition.adapters  # the stack's own: its routes' and its pool's
    key = buy_licence("checks-500")
    payer = requests.get(f"{local_stack.url}/licence", headers=auth(key), timeout=30).json()[
        "licence_id"
    ]
    headers = auth(key, **{"Idempotency-Key": f"one-commit-{os.urandom(3).hex()}"})
    before = edition.db.commits
    first = send("POST", f"{local_stack.url}/check", json=CHECK, headers=headers)
    commits = edition.db.commits - before
    again = send("POST", f"{local_stack.url}/check", json=CHECK, headers=headers)
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert commits == 1
    assert first.json()["signature"] and again.json()["signature"]
    charged, pack = _ledger_rows(local_stack.context.state_dir, payer)
    assert charged == 1 and pack["remaining"] == pack["granted"] - 1


def test_the_database_holds_no_callback_secret_in_clear(local_stack: Any, buy_licence: Any) -> None:
    from toolcall300.service.domain.callback import callback_secret

    key = buy_licence("team", "sealed")
    with fakes.callback_receiver() as (hook, _received):
        r = requests.post(
            f"{local_stack.url}/runs",
            json={
                "adapter_cmd": fakes.ECHO,
                "ref": "main",
                "commit": "abc1234",
                "callback_url": hook,
            },
            headers=auth(key),
            timeout=30,
        )
        assert r.status_code in (200, 201, 202), r.text
        fakes.wait_for_run(local_stack.url, key, r.json()["run_id"])
    dump = "\n".join(sqlite3.connect(local_stack.context.state_dir / "state.db").iterdump())
    assert r.json()["run_id"] in dump and "sealed:v1:" in dump
    assert callback_secret(key) not in dump


def test_a_backup_taken_while_serving_restores_into_a_folder_a_stack_serves(
    local_stack: Any, buy_licence: Any, tmp_path: Path
) -> None:
    key = buy_licence("single")
    out, err = io.StringIO(), io.StringIO()
    state = str(local_stack.context.state_dir)
    assert (
        dispatch(["admin", "--state", state, "backup", "--out", str(tmp_path / "b")], out, err) == 0
    ), err.getvalue()
    assert oct((tmp_path / "b").stat().st_mode & 0o777) == "0o700"
    # a running stack's folder is refused, whatever it holds
    assert (
        dispatch(["admin", "--state", state, "restore", "--from", str(tmp_path / "b")], out, err)
        == 1
    )
    assert "in use" in err.getvalue()
    assert (
        dispatch(
            ["admin", "--state", str(tmp_path / "new"), "restore", "--from", str(tmp_path / "b")],
            out,
            err,
        )
        == 0
    )
    make_corpus(tmp_path / "corpus")
    restored = Serve(tmp_path / "corpus", tmp_path / "new")
    try:
        assert (
            requests.get(f"{restored.url}/licence", headers=auth(key), timeout=30).status_code
            == 200
        )
        assert (
            requests.get(f"{restored.url}/.well-known/jwks.json", timeout=30).json()
            == requests.get(f"{local_stack.url}/.well-known/jwks.json", timeout=30).json()
        )
    finally:
        restored.kill()
