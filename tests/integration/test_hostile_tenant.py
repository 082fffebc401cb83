"""A hostile tenant over real HTTP on the shared local stack: bodies at JSON's limits on the
validated routes, a forged ``Host``, and the attacks already stopped that had no test.

Each test names the promise it holds (docs/api.md, "Errors"; docs/tenancy.md): a specific
status and message, never a 500, nothing of another team's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

pytestmark = pytest.mark.slow

#: Bodies Python's ``json`` reads wrongly (or crashes on) and the strict reader refuses.
NOT_STRICT_JSON = {
    "nested past the stack": b"[" * 100_000 + b"]" * 100_000,
    "integer past 4,300 digits": b'{"product": "single", "x": ' + b"9" * 5000 + b"}",
    "number past a double": b'{"product": "single", "x": 1e400}',
    "NaN": b'{"product": "single", "x": NaN}',
    "duplicate key": b'{"product": "single", "product": "team", "team_name": "x"}',
}
#: ``POST /runs`` answered 500 for these two; the others it refused for their missing fields.
CASES = [("/checkout", name) for name in NOT_STRICT_JSON] + [
    ("/runs", "nested past the stack"),
    ("/runs", "integer past 4,300 digits"),
]


@pytest.mark.parametrize(("path", "name"), CASES)
def test_a_validated_route_refuses_json_the_strict_reader_refuses_with_a_400(
    local_stack: Any, buy_licence: Callable[..., str], path: str, name: str
) -> None:
    """Before: 500 on deep nesting and long integers; 1e400, NaN and duplicate keys accepted
    (a checkout for ``team`` from a body that also said ``single``)."""
    headers = {"content-type": "application/json"}
    if path == "/runs":
        headers["authorization"] = f"Bearer {buy_licence('team', 'Hostile')}"
    r = requests.post(
        local_stack.url + path, data=NOT_STRICT_JSON[name], headers=headers, timeout=30
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert "9999" not in error["message"] and "1e400" not in error["message"]


@pytest.mark.parametrize("path", ["/checkout", "/runs"])
def test_a_body_that_is_not_utf8_is_a_400_not_a_500(
    local_stack: Any, buy_licence: Callable[..., str], path: str
) -> None:
    headers = {"content-type": "application/json"}
    if path == "/runs":
        headers["authorization"] = f"Bearer {buy_licence('team', 'Hostile')}"
    body = b'{"product": "single", "team_name": "\xff"}'
    r = requests.post(local_stack.url + path, data=body, headers=headers, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_body"


def test_a_forged_host_header_does_not_move_the_checkout_success_link(local_stack: Any) -> None:
    """Before: ``Host: evil.example`` made the claim link (which carries the session id, the
    one secret that claims the key) point at evil.example."""
    r = requests.post(
        f"{local_stack.url}/checkout",
        json={"product": "single"},
        headers={"Host": "evil.example:666"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    session = r.json()["session_id"]
    paid = requests.post(f"{local_stack.url}/dev/checkout/{session}", timeout=30).json()
    assert paid["success_url"] == f"{local_stack.url}/licence/claim?session_id={session}"


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "image/png"])
@pytest.mark.parametrize("path", ["/checkout", "/runs"])
def test_a_json_body_sent_as_another_content_type_is_a_415_not_a_500(
    local_stack: Any, buy_licence: Callable[..., str], path: str, content_type: str
) -> None:
    headers = {"content-type": content_type}
    if path == "/runs":
        headers["authorization"] = f"Bearer {buy_licence('team', 'Hostile')}"
    body = b'{"product": "single"}'
    r = requests.post(local_stack.url + path, data=body, headers=headers, timeout=30)
    assert r.status_code == 415, r.text
    assert r.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "payload",
    [
        "[" * 100_000 + "]" * 100_000,  # was a 500
        '{"id": "evt_dup_a", "id": "evt_dup_b", "type": "x", "created": 1, "data": {"object": {}}}',
    ],
    ids=["nested past the stack", "duplicate id"],  # the duplicate was acknowledged (200)
)
def test_a_signed_webhook_body_that_is_not_strict_json_is_a_400(
    local_stack: Any, payload: str
) -> None:
    """Only a holder of the signing secret can send these; still never a 500, and an event
    with two ids is not deduplicated on one of them and applied as the other."""
    from support.stripe import signed

    body, headers = signed(payload, local_stack.context.webhook_secret)
    r = requests.post(f"{local_stack.url}/webhooks/stripe", data=body, headers=headers, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_event"


def test_no_key_or_signing_secret_reaches_the_logs_or_the_state_folder(
    local_stack: Any, buy_licence: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    """Every key and the webhook secret, sent everywhere a hostile caller can put them (the
    right header, wrong schemes, the query, a path id, a body field, Idempotency-Key, the
    Stripe-Signature), then searched for in what the stack logged and in every file of its
    state folder but its secret and key files (the database, its WAL, the objects)."""
    url = local_stack.url
    owner = buy_licence("team", "Leaky")
    team = requests.get(f"{url}/licence", headers={"authorization": f"Bearer {owner}"}).json()
    made = requests.post(
        f"{url}/teams/{team['team']}/keys", headers={"authorization": f"Bearer {owner}"}
    ).json()
    pack = buy_licence("checks-500")
    webhook_secret = local_stack.context.webhook_secret
    secrets = {"owner": owner, "member": made["key"], "pack": pack, "webhook": webhook_secret}
    for secret in secrets.values():
        for scheme in ("Bearer", "Basic", "Token", "Bearer  x"):
            h = {"authorization": f"{scheme} {secret}", "idempotency-key": secret[:100]}
            requests.get(f"{url}/licence", headers=h, params={"key": secret}, timeout=30)
            requests.get(f"{url}/runs/{secret}", headers=h, timeout=30)
            requests.post(
                f"{url}/check", json={"schema": {}, "arguments": {"k": secret}}, headers=h
            )
            requests.post(f"{url}/runs", json={"ref": secret, "commit": secret}, headers=h)
            requests.post(f"{url}/checkout", json={"product": secret}, headers=h, timeout=30)
        requests.post(
            f"{url}/webhooks/stripe",
            json={"id": secret},
            headers={"Stripe-Signature": f"t=1,v1={secret}"},
            timeout=30,
        )
    # every record the stack's threads logged, with its extra fields and any traceback
    logged = caplog.text + "\n".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert "request refused" in logged  # the stack's log lines were captured
    stored = {
        p: stored_bytes(p)
        for p in local_stack.context.state_dir.rglob("*")
        if p.is_file() and p.parent.name not in ("secrets", "keys")
    }
    for name, secret in secrets.items():
        assert secret not in logged, name
        assert not [p for p, data in stored.items() if secret.encode() in data], name


def stored_bytes(path: Path) -> bytes:
    """A stored file's raw bytes, read by a child process: closing a descriptor this process
    opened on the live database (or its -wal, -shm) would drop the POSIX locks the stack's
    own SQLite connections hold on it, and a later connection from another process would then
    reset the shared-memory index under them (a SIGBUS; "How To Corrupt An SQLite Database
    File", section 2.2)."""
    return subprocess.run(["cat", "--", str(path)], capture_output=True, check=True).stdout


def test_another_teams_member_key_id_and_a_revoked_or_reissued_key_open_nothing(
    local_stack: Any, buy_licence: Callable[..., str]
) -> None:
    """Attacks already stopped, end to end: reusing another team's member key id through
    either team's path, and a key that was revoked (a member's) or replaced (an operator's
    reissue of a purchase key) on every kind of route."""
    import io

    from toolcall300.service import admin

    url = local_stack.url

    def call(method: str, path: str, key: str) -> tuple[int, str]:
        h = {"authorization": f"Bearer {key}"}
        body = {"ref": "refs/heads/main", "commit": "abcdef0"} if method == "POST" else None
        r = requests.request(method, url + path, headers=h, json=body, timeout=30)
        return r.status_code, r.json().get("error", {}).get("code", "")

    owner, other = buy_licence("team", "Victim"), buy_licence("team", "Attacker")
    me = requests.get(f"{url}/licence", headers={"authorization": f"Bearer {owner}"}).json()
    team = me["team"]
    them = requests.get(f"{url}/licence", headers={"authorization": f"Bearer {other}"}).json()
    made = requests.post(
        f"{url}/teams/{team}/keys", headers={"authorization": f"Bearer {owner}"}, timeout=30
    ).json()
    member, key_id = made["key"], made["key_id"]
    assert call("DELETE", f"/teams/{them['team']}/keys/{key_id}", other) == (404, "key_not_found")
    assert call("DELETE", f"/teams/{team}/keys/{key_id}", other) == (403, "wrong_team")
    assert call("POST", f"/teams/{team}/keys", other) == (403, "wrong_team")
    assert call("GET", "/licence", member)[0] == 200  # untouched by either attempt

    routes = [
        ("GET", "/licence"),
        ("GET", f"/teams/{team}/runs"),
        ("GET", f"/teams/{team}/baselines"),
        ("GET", "/corpus"),
        ("POST", "/runs"),
    ]
    assert call("DELETE", f"/teams/{team}/keys/{key_id}", owner)[0] == 200
    for method, path in routes:
        assert call(method, path, member) == (401, "licence_revoked"), path

    out = io.StringIO()
    argv = ["--state", str(local_stack.context.state_dir), "licence", "reissue", me["licence_id"]]
    assert admin.run(admin.parse_args(argv), out, io.StringIO()) == 0
    new_key = out.getvalue().splitlines()[-1]
    for method, path in [*routes, ("GET", f"/teams/{team}/keys"), ("POST", f"/teams/{team}/keys")]:
        assert call(method, path, owner) == (401, "key_invalid"), path
    assert call("GET", f"/teams/{team}/keys", new_key)[0] == 200


def test_an_unknown_product_is_quoted_back_short_not_whole(local_stack: Any) -> None:
    """Before: a 5 MB product name came back whole in the 400's message."""
    r = requests.post(f"{local_stack.url}/checkout", json={"product": "x" * 100_000}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_product"
    assert len(r.content) < 1000


def test_racing_checks_never_spend_a_pack_twice(local_stack: Any) -> None:
    """Twelve paid checks at once on a pack of two: two answered, ten refused 402, none
    charged twice and none free (an attack already stopped, now end to end)."""
    import io
    from concurrent.futures import ThreadPoolExecutor

    from toolcall300.service import admin

    state = str(local_stack.context.state_dir)
    out = io.StringIO()
    argv = ["--state", state, "licence", "issue", "--tier", "single"]
    assert admin.run(admin.parse_args(argv), out, io.StringIO()) == 0
    key = out.getvalue().splitlines()[-1]
    licence_id = out.getvalue().split()[1].rstrip(":")
    argv = ["--state", state, "pack", "grant", licence_id, "--checks", "2"]
    assert admin.run(admin.parse_args(argv), io.StringIO(), io.StringIO()) == 0
    h = {"authorization": f"Bearer {key}"}

    def check(i: int) -> int:
        body = {"schema": {"type": "object"}, "arguments": {"i": i}}
        return requests.post(
            f"{local_stack.url}/check", json=body, headers=h, timeout=60
        ).status_code

    with ThreadPoolExecutor(12) as pool:
        statuses = sorted(pool.map(check, range(12)))
    assert statuses == [200] * 2 + [402] * 10
    pack = requests.get(f"{local_stack.url}/licence", headers=h, timeout=30).json()["checks"]
    assert pack == {"remaining": 0, "granted": 2}


def test_a_stack_on_a_public_address_gives_no_free_licence(tmp_path: Any) -> None:
    """Before: the dev checkout page (which pays any session for nothing) was served whatever
    ``--host`` said, so ``serve --host 0.0.0.0`` handed anyone a free team licence.
    Now it is served on loopback only unless the operator passes
    ``--dev-checkout``. The stack listens on every address; the test talks to it through
    loopback only."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    from support.corpus import make_corpus
    from support.dashboard import wait_for_serve_url

    make_corpus(tmp_path / "corpus")
    command = [sys.executable, "-m", "toolcall300", "serve", "--host", "0.0.0.0", "--port", "0"]
    command += ["--corpus", str(tmp_path / "corpus"), "--no-state"]
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        served = wait_for_serve_url(proc, timeout_s=60)
        port = int(re.sub(r".*:(\d+)/?$", r"\1", served))
        url = f"http://127.0.0.1:{port}"
        r = requests.post(
            f"{url}/checkout", json={"product": "team", "team_name": "Free"}, timeout=30
        )
        assert r.status_code == 200, r.text
        session = r.json()["session_id"]
        paid = requests.post(f"{url}/dev/checkout/{session}", timeout=30)
        assert paid.status_code == 404, paid.text
        claim = requests.get(f"{url}/licence/claim", params={"session_id": session}, timeout=30)
        assert claim.status_code != 200 and "key" not in claim.text
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
