"""The one-machine edition's files: object keys, the links the stack signs, the state folder's
secrets and keys (docs/local-stack.md), attacked as a tenant with a link or a key would.

Clocks are injected: a link's expiry is tested at the instant before and after, never by
waiting.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.service.errors import NotFound, StoreConflict, UpstreamUnavailable
from toolcall300.service.local import state
from toolcall300.service.statefolder.files import FileBucket, LinkSigner, key_path, serve_link
from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def target(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


@pytest.fixture
def served(tmp_path: Path) -> tuple[Clock, LinkSigner, FileBucket, object]:
    clock = Clock()
    signer = LinkSigner(b"k" * 32, lambda: "http://127.0.0.1:1", clock)
    bucket = FileBucket(tmp_path / "objects", "tc300-corpus", signer)
    bucket.put("manifest.json", b"{}")
    bucket.put("job-inputs/v1/inputs.jsonl", b"[]")
    return clock, signer, bucket, serve_link(signer, {"tc300-corpus": bucket})


def test_a_signed_link_serves_its_object_until_it_expires(served: tuple) -> None:
    clock, _signer, bucket, serve = served
    link = target(bucket.link("job-inputs/v1/inputs.jsonl", seconds=300))
    assert serve("GET", link, b"")[:1] == (200,)
    assert serve("GET", link, b"")[2] == b"[]"
    clock.now = NOW + 300
    assert serve("GET", link, b"")[0] == 200  # the last second of its life
    clock.now = NOW + 301
    status, _, body = serve("GET", link, b"")
    assert status == 403 and b"expired" in body


@pytest.mark.parametrize(
    "edit",
    [
        lambda link: link.replace("manifest.json", "manifest.jsoN"),  # another key
        lambda link: link.replace("tc300-corpus", "tc300-corpuz"),  # another bucket
        lambda link: link.replace("expires=", "expires=9"),  # a longer life
        lambda link: link.replace("signature=", "signature=0"),
        lambda link: link.split("&signature=")[0],  # no signature
        lambda link: link.replace("manifest.json", "../keys/links.key"),
    ],
)
def test_a_changed_link_is_refused(served: tuple, edit: object) -> None:
    _clock, _signer, bucket, serve = served
    status, _, _ = serve("GET", edit(target(bucket.link("manifest.json", seconds=60))), b"")  # type: ignore[operator]
    assert status == 403


def test_a_link_is_read_only_and_other_paths_are_not_its_business(served: tuple) -> None:
    _clock, _signer, bucket, serve = served
    link = target(bucket.link("manifest.json", seconds=60))
    assert serve("PUT", link, b"x")[0] == 405
    assert serve("DELETE", link, b"")[0] == 405
    assert serve("GET", "/corpus", b"") is None  # the gateway routes it
    assert bucket.get("manifest.json") == b"{}"


def test_a_link_signed_by_another_folder_is_refused(served: tuple, tmp_path: Path) -> None:
    serve = served[3]
    other = FileBucket(tmp_path / "o", "tc300-corpus", LinkSigner(b"x" * 32, lambda: "http://h"))
    other.put("manifest.json", b"{}")
    assert serve("GET", target(other.link("manifest.json", seconds=60)), b"")[0] == 403


@pytest.mark.parametrize(
    "key", ["", "../x", "/etc/passwd", "a/../../b", ".hidden", "a//b", "a/.b", "a\x00b", "a\\b"]
)
def test_an_object_key_that_is_not_a_plain_relative_name_is_refused(
    tmp_path: Path, key: str
) -> None:
    with pytest.raises(ValueError):
        key_path(tmp_path, key)
    with pytest.raises(NotFound):
        FileBucket(tmp_path, "tc300-corpus").get(key)


@given(st.text(max_size=60))
def test_no_key_reaches_outside_its_bucket(key: str) -> None:
    root = Path("/srv/state/objects/b")
    try:
        path = key_path(root, key)
    except ValueError:
        return
    assert os.path.normpath(path).startswith(str(root) + "/")


def test_a_report_is_written_once_even_by_racing_writers(tmp_path: Path) -> None:
    bucket = FileBucket(tmp_path, "tc300-reports")
    bucket.put_once("reports/t/r/attempt-1.json", b"first")
    with pytest.raises(StoreConflict):
        bucket.put_once("reports/t/r/attempt-1.json", b"second")
    assert bucket.get("reports/t/r/attempt-1.json") == b"first"
    assert not [p for p in (tmp_path / "tc300-reports").rglob(".tmp-*")]  # nothing left behind


def test_secrets_and_keys_are_files_only_the_operator_reads(tmp_path: Path) -> None:
    folder = StateFolder(tmp_path / "state")
    folder.put_secret("tc300-local-stripewebhooksecret", {"current": "whsec_x", "previous": ""})
    folder.report_mac(b"label")
    _ = folder.link_key
    edition = LocalAdapters(folder, public_url=lambda: "")
    edition.close()
    modes = {
        p.relative_to(folder.root).as_posix(): stat.S_IMODE(p.stat().st_mode)
        for p in folder.root.rglob("*")
        if p.is_file() and p.name != "lock"
    }
    assert set(modes) >= {
        "state.db", "keys/report-signing.seed", "keys/links.key",
        "secrets/tc300-local-stripewebhooksecret.json",
    }  # fmt: skip
    assert set(modes.values()) == {0o600}, modes
    assert stat.S_IMODE(folder.root.stat().st_mode) == 0o700
    with pytest.raises(UpstreamUnavailable):
        folder.secret("../state")


def test_the_report_keys_come_from_the_seed_and_stay(tmp_path: Path) -> None:
    from toolcall300.service.sdk.signing import ReportKeys

    first = ReportKeys.derived(StateFolder(tmp_path / "s").report_mac, (2, 1))
    again = ReportKeys.derived(StateFolder(tmp_path / "s").report_mac, (2, 1))
    other = ReportKeys.derived(StateFolder(tmp_path / "t").report_mac, (2, 1))
    assert first.jwks() == again.jwks()  # the same folder: the same keys and kids
    assert [k["kid"] for k in first.jwks()["keys"]] != [k["kid"] for k in other.jwks()["keys"]]
    rotated = ReportKeys.derived(StateFolder(tmp_path / "s").report_mac, (3, 2, 1))
    assert rotated.jwks()["keys"][1:] == first.jwks()["keys"]  # older generations kept


def test_a_callback_secret_is_sealed_to_its_run(tmp_path: Path) -> None:
    folder = StateFolder(tmp_path / "s")
    sealed = folder.seal("s3cret", "run_A")
    assert "s3cret" not in sealed and folder.unseal(sealed, "run_A") == "s3cret"
    from cryptography.exceptions import InvalidTag

    with pytest.raises(InvalidTag):  # moved to another run's row, it does not open
        folder.unseal(sealed, "run_B")


def test_a_folder_of_the_moto_recording_era_is_refused_with_the_way_forward(tmp_path: Path) -> None:
    old = tmp_path / "state"
    old.mkdir()
    (old / state.LEGACY_RECORDING).write_text("{}\n")
    with pytest.raises(state.LegacyState) as refused:
        state.open_state(old)
    assert "mv " in str(refused.value) and "docs/local-stack.md" in str(refused.value)
    held = state.open_state(tmp_path / "fresh")  # a new folder opens, and only once
    with pytest.raises(state.StateInUse):
        state.open_state(tmp_path / "fresh")
    state.close_state(held)


def _backup(tmp_path: Path) -> Path:
    """A backup of a fresh state folder, made with ``admin backup``'s own function."""
    from toolcall300.service.statefolder import folder as state_folder

    folder = tmp_path / "state"
    edition = LocalAdapters(StateFolder(folder), public_url=lambda: "")
    edition.close()
    (folder / "objects" / "reports").mkdir(parents=True)
    (folder / "objects" / "reports" / "r.json").write_text("{}")
    state_folder.backup(folder, tmp_path / "backup")
    return tmp_path / "backup"


@pytest.mark.parametrize(
    "where", ["objects/reports/r.json", "objects/reports/new.json", "state.db"]
)
def test_a_backup_holding_a_link_is_refused_not_followed(tmp_path: Path, where: str) -> None:
    """Before: ``admin restore`` followed links in a backup, so a restored stack served a
    root-only file as a report."""
    from toolcall300.service.statefolder import folder as state_folder

    backup = _backup(tmp_path)
    secret = tmp_path / "root-only"
    secret.write_text("secret")
    secret.chmod(0o600)
    if (backup / where).exists():
        (backup / where).unlink()
    (backup / where).symlink_to(secret)
    with pytest.raises(ValueError, match=r"symbolic link|not a file"):
        state_folder.restore(backup, tmp_path / "restored")
    assert not (tmp_path / "restored" / "state.db").exists()


def test_restore_from_a_backup_whose_database_is_not_sqlite_is_one_line(tmp_path: Path) -> None:
    """Before: a traceback (sqlite3.DatabaseError escaped the CLI)."""
    import io

    from toolcall300.service import admin

    backup = _backup(tmp_path)
    (backup / "state.db").write_bytes(b"not a database" * 100)
    out, err = io.StringIO(), io.StringIO()
    argv = ["--state", str(tmp_path / "restored"), "restore", "--from", str(backup)]
    assert admin.run(admin.parse_args(argv), out, err) == 1
    assert "is not a SQLite database" in err.getvalue() and "Traceback" not in err.getvalue()
