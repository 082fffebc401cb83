"""The service's CLI shells: admin licence, dev purchase's signing, the download client."""

from __future__ import annotations

import hashlib
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support.stores import MemoryLicenceStore

from toolcall300.client import dev as devtools
from toolcall300.client import download as client
from toolcall300.cliutil import UsageError
from toolcall300.service import admin
from toolcall300.service.domain import licences
from toolcall300.service.errors import BadRequest, NotFound


def run_admin(argv: list[str], store: MemoryLicenceStore) -> list[str]:
    out = io.StringIO()
    admin.execute(admin.parse_args(["--table", "t", *argv]), store, out)
    return out.getvalue().splitlines()


def test_admin_issue_list_reissue_revoke() -> None:
    store = MemoryLicenceStore()
    key = run_admin(["licence", "issue", "--tier", "team", "--team", "Acme"], store)[-1]
    assert licences.KEY_RE.match(key)
    [row] = [json.loads(line) for line in run_admin(["licence", "list"], store)]
    assert row["team_name"] == "Acme" and licences.TEAM_RE.match(row["team"])
    assert row["status"] == "active" and key not in json.dumps(row)
    seat = run_admin(
        ["licence", "issue", "--tier", "team", "--team", "Acme", "--team-id", row["team"]], store
    )
    assert f"team {row['team']}" in seat[0]
    new_key = run_admin(["licence", "reissue", row["licence_id"]], store)[-1]
    assert new_key != key and licences.find_by_key(store, key) is None
    assert run_admin(["licence", "revoke", row["licence_id"]], store) == [
        f"licence {row['licence_id']}: revoked"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["licence", "issue", "--tier", "team"],
        ["licence", "issue", "--tier", "team", "--team", "a\nb"],
        ["licence", "issue", "--tier", "team", "--team", "a", "--team-id", "acme"],
        ["licence", "issue", "--tier", "gold"],
        ["licence"],
    ],
)
def test_admin_usage_errors(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        admin.parse_args(["--table", "t", *argv])


class _Ledger:
    def __init__(self) -> None:
        self.grants: list[tuple[str, int, str]] = []

    def grant(self, payer: str, *, checks: int, payment_id: str, granted_at: str) -> None:
        self.grants.append((payer, checks, payment_id))


def test_admin_pack_grant_gives_only_a_house_licence_checks() -> None:
    store, book = MemoryLicenceStore(), _Ledger()
    run_admin(["licence", "issue", "--tier", "single"], store)
    [row] = [json.loads(line) for line in run_admin(["licence", "list"], store)]
    out = io.StringIO()
    grant = ["--table", "t", "--ledger-table", "l", "pack", "grant", row["licence_id"]]
    admin.execute(admin.parse_args([*grant, "--checks", "50"]), store, out, book)  # type: ignore[arg-type]
    assert book.grants == [(row["licence_id"], 50, book.grants[0][2])]
    assert book.grants[0][2].startswith("house-") and "50 house checks" in out.getvalue()
    with pytest.raises(NotFound):
        admin.execute(admin.parse_args([*grant[:-1], "lic_nope"]), store, out, book)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        admin.parse_args([*grant, "--checks", "0"])
    bought = licences.Licence(licence_id="lic_bought", source="stripe", tier="checks")
    store.put(bought.to_item(), expected_version=None)
    with pytest.raises(BadRequest):  # a customer's checks are sales, never gifts
        admin.execute(admin.parse_args([*grant[:-1], "lic_bought"]), store, out, book)  # type: ignore[arg-type]


def test_dev_purchase_team_needs_a_team() -> None:
    with pytest.raises(UsageError):
        devtools.parse_args(["purchase", "--api", "http://127.0.0.1:1", "--tier", "team"])


class _Files(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}

    def do_GET(self) -> None:
        data = self.files.get(self.path.lstrip("/"), b"")
        self.send_response(200 if data else 404)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def file_server() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_verified_keeps_a_matching_file_and_refuses_a_mismatch(
    file_server: str, tmp_path: Path
) -> None:
    _Files.files = {"good": b"hello", "bad": b"tampered"}
    pin = hashlib.sha256(b"hello").hexdigest()
    progress = io.StringIO()
    client.fetch_verified(
        f"{file_server}/good", tmp_path / "good", sha256=pin, size=5, name="good", progress=progress
    )
    assert (tmp_path / "good").read_bytes() == b"hello" and "100%" in progress.getvalue()
    with pytest.raises(client.PinMismatch):
        client.fetch_verified(
            f"{file_server}/bad",
            tmp_path / "bad",
            sha256=pin,
            size=None,
            name="bad",
            progress=progress,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good"]  # no partial or temp file left


def test_key_comes_from_the_environment_or_a_prompt_never_a_flag() -> None:
    assert client.read_key({"TOOLCALL300_LICENCE": " tc300_abc "}) == "tc300_abc"
    assert client.read_key({}, prompt=lambda _: "typed", interactive=True) == "typed"
    with pytest.raises(ValueError, match="TOOLCALL300_LICENCE"):  # no terminal: nobody to ask
        client.read_key({}, prompt=lambda _: "typed", interactive=False)
    with pytest.raises(UsageError):
        client.parse_args(["--api", "http://x", "--out", "d", "--key", "k"])


@pytest.mark.parametrize("api", ["http://example.com", "ftp://127.0.0.1", "http://10.0.0.1:8300"])
def test_keys_are_not_sent_over_plain_http_to_other_machines(api: str) -> None:
    from toolcall300.client.http import check_transport

    with pytest.raises(ValueError):
        check_transport(api)


def test_a_log_gets_one_line_per_file_and_no_redrawn_bar(file_server: str, tmp_path: Path) -> None:
    """Download progress bars are for terminals: a CI log (not a TTY) gets one line per file."""
    _Files.files = {"big": b"x" * (3 * 1024 * 1024)}
    pin = hashlib.sha256(_Files.files["big"]).hexdigest()
    log = io.StringIO()
    client.fetch_verified(
        f"{file_server}/big", tmp_path / "big", sha256=pin, size=None, name="big", progress=log
    )
    assert "\r" not in log.getvalue() and log.getvalue().count("\n") == 1
    assert log.getvalue().startswith("big [") and "100%" in log.getvalue()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Terminal()
    (tmp_path / "big").unlink()
    client.fetch_verified(
        f"{file_server}/big", tmp_path / "big", sha256=pin, size=None, name="big", progress=tty
    )
    assert tty.getvalue().count("\r") > 1  # redrawn in place
