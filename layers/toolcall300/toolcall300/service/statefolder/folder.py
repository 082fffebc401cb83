"""The one-machine edition's state folder: its database, objects, secrets and keys, as files.

Layout (the folder is mode 700, every file in ``secrets/`` and ``keys/`` mode 600)::

    state.db            SQLite (WAL): licences, usage, ledger, runs, idempotency (statefolder.sqlite)
    objects/<bucket>/   the corpus, job inputs, reports (statefolder.files)
    secrets/<name>.json what Secrets Manager holds on AWS: the Stripe webhook secrets, the
                        Stripe key, the free tier's client-id salt (one JSON object each)
    keys/report-signing.seed  32 random bytes; the report-signing keys are derived from it
                        exactly as from the KMS HMAC key on AWS (``sdk.signing``), so the JWKS
                        and each ``kid`` are the same after every restart
    keys/links.key      the HMAC key of the links the stack signs (``statefolder.files``)
    keys/seal.key       the AES-GCM key that seals each run's callback secret in the database

Keys are generated on first open and never rewritten. :class:`LocalAdapters` is every local
adapter over one folder: the adapter set of the one-machine ``api.wiring.Edition``.
:func:`backup` and :func:`restore` copy a folder whole (``toolcall300 admin backup|restore``);
:func:`lock_folder` is the one-process-per-folder lock the stack and ``restore`` hold.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import shutil
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from toolcall300.service.errors import UpstreamUnavailable
from toolcall300.service.statefolder.files import FileBucket, FileCorpus, FileReports, LinkSigner
from toolcall300.service.statefolder.sqlite import (
    Database,
    SqliteDocuments,
    SqliteLanes,
    SqliteLedger,
    SqliteLicences,
    SqliteRuns,
    SqliteUsage,
)

DATABASE = "state.db"
LOCK = "lock"
OBJECTS = "objects"
SECRETS = "secrets"
KEYS = "keys"
REPORT_SEED = "report-signing.seed"
LINK_KEY = "links.key"
SEAL_KEY = "seal.key"
_SEALED = "sealed:v1:"


def private_file(path: Path, data: bytes) -> None:
    """Write ``path`` (mode 600, created so: never readable by others, even for an instant)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".tmp-{path.name}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _key_file(path: Path, size: int = 32) -> bytes:
    """The key in ``path``, made of ``size`` random bytes the first time."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            pass  # another opener made it first: read theirs
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(size))
    raw = path.read_bytes()
    if len(raw) != size:
        raise UpstreamUnavailable(
            f"{path} is damaged (not {size} bytes)", code="secret_unavailable"
        )
    return raw


@dataclass
class StateFolder:
    """Paths and secret files of one state folder (no database or buckets: see LocalAdapters)."""

    root: Path

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)

    @property
    def database(self) -> Path:
        return self.root / DATABASE

    def secret_path(self, name: str) -> Path:
        if not name or "/" in name or name.startswith("."):
            raise UpstreamUnavailable("a secret is unavailable", code="secret_unavailable")
        return self.root / SECRETS / f"{name}.json"

    def put_secret(self, name: str, value: dict[str, Any], *, replace: bool = True) -> None:
        path = self.secret_path(name)
        if replace or not path.exists():
            private_file(path, json.dumps(value, sort_keys=True).encode())

    def secret(self, name: str) -> dict[str, Any]:
        """The JSON object stored as secret ``name`` (503 ``secret_unavailable`` if absent)."""
        try:
            value = json.loads(self.secret_path(name).read_bytes())
        except (OSError, ValueError) as exc:
            raise UpstreamUnavailable("a secret is unavailable", code="secret_unavailable") from exc
        if not isinstance(value, dict):
            raise UpstreamUnavailable("a secret is malformed", code="secret_unavailable")
        return value

    def make_keys(self) -> None:
        """Create every key file now, not at its first use: a backup taken before the stack
        first signed a report or a link must still hold the keys it will sign with."""
        for name in (REPORT_SEED, LINK_KEY, SEAL_KEY):
            _key_file(self.root / KEYS / name)

    def report_mac(self, message: bytes) -> bytes:
        """HMAC-SHA-256 of ``message`` under the folder's report-signing seed: what KMS's
        ``GenerateMac`` gives on AWS, so ``ReportKeys.derived`` makes the keys the same way."""
        seed = _key_file(self.root / KEYS / REPORT_SEED)
        return hmac.new(seed, message, hashlib.sha256).digest()

    @cached_property
    def link_key(self) -> bytes:
        return _key_file(self.root / KEYS / LINK_KEY)

    @cached_property
    def _seal_key(self) -> bytes:
        return _key_file(self.root / KEYS / SEAL_KEY)

    def seal(self, value: str, context: str) -> str:
        """``value`` encrypted (AES-GCM, bound to ``context``: a run's id) for the database."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = secrets.token_bytes(12)
        sealed = AESGCM(self._seal_key).encrypt(nonce, value.encode(), context.encode())
        return _SEALED + base64.urlsafe_b64encode(nonce + sealed).decode()

    def unseal(self, stored: str, context: str) -> str:
        if not stored.startswith(_SEALED):
            return stored
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        raw = base64.urlsafe_b64decode(stored[len(_SEALED) :])
        return AESGCM(self._seal_key).decrypt(raw[:12], raw[12:], context.encode()).decode()


@dataclass
class LocalAdapters:
    """Every local adapter over one state folder (one database connection for all): the
    one-machine edition's ``api.wiring.Adapters``."""

    folder: StateFolder
    public_url: Callable[[], str]
    db: Database = field(init=False)
    #: Wakes the stack's worker pool after a run is queued (``Edition.run_queued``); the
    #: stack sets it when it starts the pool, and until then a queued run waits for the pool's
    #: first look at the table.
    wake: Callable[[], None] = field(default=lambda: None)

    def __post_init__(self) -> None:
        self.db = Database(self.folder.database)
        self.folder.database.chmod(0o600)
        self.signer = LinkSigner(self.folder.link_key, self.public_url)
        self.licences = SqliteLicences(self.db)
        self.usage = SqliteUsage(self.db)
        self.ledger = SqliteLedger(self.db)
        self.runs = SqliteRuns(self.db, sealer=(self.folder.seal, self.folder.unseal))
        self.lanes: SqliteLanes | None = SqliteLanes(self.db)
        #: The dev checkout's sessions (``sdk.stripe_dev``), shared by the stack's processes.
        self.checkout_sessions = SqliteDocuments(self.db)

    def corpus(self, bucket: str) -> FileCorpus:
        return FileCorpus(self.folder.root / OBJECTS, bucket, self.signer)

    def reports(self, bucket: str) -> FileReports:
        return FileReports(self.folder.root / OBJECTS, bucket, self.signer)

    def buckets(self, names: list[str]) -> dict[str, FileBucket]:
        return {name: FileBucket(self.folder.root / OBJECTS, name) for name in names if name}

    def usage_for(self, _table: str) -> SqliteUsage:
        """The usage counters (one table here, whichever function's table is named)."""
        return self.usage

    def secret_json(self, name: str, *, max_age: int = 0) -> dict[str, Any]:
        """The secret file ``name`` (read each time: a rotation needs no cache to expire)."""
        return self.folder.secret(name)

    def report_mac_for(self, _key_id: str) -> Callable[[bytes], bytes]:
        """The folder's seed stands for the KMS key whatever its id (``sdk.signing``)."""
        return self.folder.report_mac

    def together(self) -> contextlib.AbstractContextManager[Any]:
        """The port calls made inside commit as one SQLite transaction (each call's own
        transaction joins it: ``Database.transaction``): a paid check's charge, its day count
        and its metrics are one commit instead of three, and none is stored without the others."""
        return self.db.transaction()

    def idempotency(self) -> Any:
        from toolcall300.service.statefolder.idempotency import SqlitePersistenceLayer

        return SqlitePersistenceLayer(self.db)

    def close(self) -> None:
        self.db.close()


class FolderInUse(Exception):
    """Another live process (a running stack) holds the state folder."""


def lock_folder(folder: Path) -> int:
    """Make ``folder`` (mode 700) and hold its lock; the descriptor (close it to release)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    held = os.open(folder / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(held)
        raise FolderInUse(f"{folder} is in use by another toolcall300 serve") from None
    return held


#: What a backup copies beside the database (objects, secrets, keys), file by file.
_COPIED = (OBJECTS, SECRETS, KEYS)


def backup(folder: Path, out: Path) -> list[str]:
    """Copy the state folder to ``out`` (a new folder, mode 700): the database through
    sqlite3's online backup API (consistent while the stack serves: no write is half in it),
    then the objects, secrets and keys. Returns what was copied."""
    if not (folder / DATABASE).exists():
        raise FileNotFoundError(f"{folder} holds no {DATABASE}: not a state folder")
    out.mkdir(parents=True, exist_ok=False, mode=0o700)
    _copy_database(folder, out)
    copied = [DATABASE]
    for part in _COPIED:
        if (folder / part).is_dir():
            shutil.copytree(folder / part, out / part, ignore=shutil.ignore_patterns(".tmp-*"))
            copied.append(part)
    return copied


def _copy_database(source: Path, target: Path) -> None:
    """``source``'s database into ``target`` (owner-only) by sqlite3's online backup API, which
    copies a consistent state even while a stack writes to it."""
    src = sqlite3.connect(f"file:{source / DATABASE}?mode=ro", uri=True)
    dst = sqlite3.connect(target / DATABASE)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    (target / DATABASE).chmod(0o600)


def _refuse_links(source: Path) -> None:
    """A backup holds regular files and folders only. A symbolic link (or a device, a pipe)
    would be followed by the copy, so a restored stack would serve whatever it pointed at (a
    root-only file as a report); such a backup is refused, naming the entry."""
    entries = [source / DATABASE] + [source / part for part in _COPIED]
    for entry in entries:
        if entry.is_symlink():
            raise ValueError(f"{entry} is a symbolic link; a backup holds files only")
    for part in _COPIED:
        for folder, dirs, files in os.walk(source / part):
            for name in (*dirs, *files):
                path = Path(folder, name)
                mode = path.lstat().st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise ValueError(f"{path} is not a file or a folder; a backup holds files only")


def restore(source: Path, folder: Path) -> list[str]:
    """Make ``folder`` (new, or without a database) a copy of the backup ``source``. Holds
    the folder's lock while it copies (a running stack refuses it: ``FolderInUse``), checks
    the backup first (files and folders only, no link; its database whole: ``PRAGMA
    integrity_check``). Returns what was restored."""
    if not (source / DATABASE).exists():
        raise FileNotFoundError(f"{source} holds no {DATABASE}: not a backup")
    _refuse_links(source)
    check = sqlite3.connect(f"file:{source / DATABASE}?mode=ro", uri=True)
    try:
        verdict = check.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:  # not a database at all ("file is not a database")
        raise ValueError(f"{source / DATABASE} is not a SQLite database: {exc}") from None
    finally:
        check.close()
    if verdict != "ok":
        raise ValueError(f"{source / DATABASE} is damaged: {verdict}")
    held = lock_folder(folder)
    try:
        if (folder / DATABASE).exists():
            raise FileExistsError(
                f"{folder} holds a database already; restore into a new folder (or move it aside)"
            )
        for part in _COPIED:
            if (folder / part).exists():
                shutil.rmtree(folder / part)
        _copy_database(source, folder)
        restored = [DATABASE]
        for part in _COPIED:
            if (source / part).is_dir():
                shutil.copytree(source / part, folder / part)
                restored.append(part)
        return restored
    finally:
        os.close(held)
