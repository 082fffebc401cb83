"""SQLite adapters: the one-machine edition's licences, usage counters, check ledger and runs.

The same ports as ``sdk.dynamo`` and ``sdk.runs`` (``LicenceStore``, ``UsageStore``,
``CheckLedger``, ``RunStore``), on one database file of the standard library's ``sqlite3``
in WAL mode, with the same guarantees: every conditional write the DynamoDB adapters make
(a versioned put, a counter taken under its limit, a paid check taken together with its
ledger record, a refund settled against the pack as read) is one ``BEGIN IMMEDIATE``
transaction that reads, checks and writes, and a failed condition is ``StoreConflict``. One
connection per :class:`Database`, its use serialised by a lock (SQLite runs one writer at a
time anyway; statements here take microseconds), so the adapters are safe under threads; the
busy timeout covers another process (``toolcall300 admin``) writing the same file.

Items are stored whole as JSON beside the few columns the queries need (the DynamoDB
tables' keys and indexes), so both editions hand the domain the same plain dicts. Not an
ORM and not a general DynamoDB emulator: only the operations the ports name.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolcall300.service.domain.runs import FINAL
from toolcall300.service.errors import StoreConflict, UpstreamUnavailable

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS licences (
    licence_id TEXT PRIMARY KEY, key_hash TEXT, session_id TEXT, team TEXT,
    version INTEGER NOT NULL, item TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS licences_by_key_hash ON licences(key_hash) WHERE key_hash IS NOT NULL;
CREATE INDEX IF NOT EXISTS licences_by_session ON licences(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS licences_by_team ON licences(team) WHERE team IS NOT NULL;
CREATE TABLE IF NOT EXISTS counters (
    counter_id TEXT PRIMARY KEY, expires_at INTEGER, item TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (id TEXT PRIMARY KEY, item TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, team TEXT NOT NULL, created_at TEXT NOT NULL,
    active_status TEXT, baseline_set_at TEXT, expires_at INTEGER,
    version INTEGER NOT NULL, item TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_team ON runs(team, created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_active_status ON runs(active_status)
    WHERE active_status IS NOT NULL;
DROP INDEX IF EXISTS runs_baselines_by_team;
CREATE INDEX IF NOT EXISTS runs_baselines_newest
    ON runs(team, baseline_set_at DESC, run_id DESC) WHERE baseline_set_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_by_expiry ON runs(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS counters_by_expiry ON counters(expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS idempotency (
    id TEXT PRIMARY KEY, status TEXT NOT NULL, expiration INTEGER,
    in_progress_expiration INTEGER, data TEXT, validation TEXT);
CREATE INDEX IF NOT EXISTS idempotency_by_expiry ON idempotency(expiration);
CREATE TABLE IF NOT EXISTS lanes (payer TEXT PRIMARY KEY, holder TEXT NOT NULL, until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS dev_checkout (id TEXT PRIMARY KEY, item TEXT NOT NULL);
"""


#: The two pages of a team's runs; each walks an index already in its order (no sort step).
LATEST_RUNS = "SELECT item FROM runs WHERE team = ? ORDER BY created_at DESC, run_id DESC LIMIT ?"
RECENT_BASELINES = (
    "SELECT item FROM runs WHERE team = ? AND baseline_set_at IS NOT NULL"
    " ORDER BY baseline_set_at DESC, run_id DESC LIMIT ?"
)
#: The page after ``(baseline_set_at, run_id)``: a keyset query on the same index.
BASELINES_AFTER = (
    "SELECT item FROM runs WHERE team = ? AND baseline_set_at IS NOT NULL"
    " AND (baseline_set_at, run_id) < (?, ?)"
    " ORDER BY baseline_set_at DESC, run_id DESC LIMIT ?"
)


class Database:
    """One SQLite file (or ``:memory:``), WAL, one connection shared under a lock.

    :meth:`transaction` is ``BEGIN IMMEDIATE``: the write lock is taken before the first read,
    so a read-check-write inside it cannot interleave with another writer (no lost update).
    """

    def __init__(self, path: Path | str, *, clock: Callable[[], float] = time.time) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._depth = 0  # transactions open on this connection (the lock's holder's)
        self._doomed = False  # a joined block failed after writing: the whole rolls back
        #: Transactions committed through this connection (joined ones not counted): what a
        #: request costs in commits, for the tests and the bench.
        self.commits = 0
        self._clock = clock
        try:
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30
            )
            self._conn.execute("PRAGMA busy_timeout = 30000")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable at checkpoint
            self._conn.executescript(_SCHEMA)
            self._conn.execute(
                "INSERT OR IGNORE INTO meta(name, value) VALUES ('schema', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.Error as exc:
            raise UpstreamUnavailable(
                f"the database {self.path} cannot be opened: {exc}", code="store_unavailable"
            ) from exc
        self.expire()

    def now(self) -> int:
        return int(self._clock())

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` .. ``COMMIT`` (``ROLLBACK`` on any exception).

        Inside another transaction of this thread it joins it, so several port calls are one
        commit (``LocalAdapters.together``), without a savepoint (one doubled the cost of a
        paid check's writes): a joined block that fails before writing (every failed
        condition here is checked before the write it guards) leaves the outer transaction as
        it was; one that fails after writing leaves a write only a rollback of the whole can
        undo, so the outer transaction is then rolled back whatever its caller does, and its
        end raises ``StoreConflict`` if the caller went on."""
        with self._lock, _translated():
            if self._depth:
                yield from self._joined()
                return
            self._depth, self._doomed = 1, False
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    if self._doomed:
                        raise StoreConflict("a write in this transaction failed half done")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
                self.commits += 1
            finally:
                self._depth = 0

    def _joined(self) -> Iterator[sqlite3.Connection]:
        if self._doomed:
            raise StoreConflict("a write in this transaction failed half done")
        before = self._conn.total_changes
        self._depth += 1
        try:
            yield self._conn
        except BaseException:
            self._doomed = self._doomed or self._conn.total_changes != before
            raise
        finally:
            self._depth -= 1

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock, _translated():
            return list(self._conn.execute(sql, params).fetchall())

    def expire(self) -> None:
        """Delete what a DynamoDB TTL would have deleted by now (finished runs past their
        retention, daily counters two days after their day, expired idempotency records)."""
        now = self.now()
        with self.transaction() as db:
            for table, column in (
                ("counters", "expires_at"), ("runs", "expires_at"), ("idempotency", "expiration"),
            ):  # fmt: skip
                db.execute(
                    f"DELETE FROM {table} WHERE {column} IS NOT NULL AND {column} < ?", (now,)
                )

    def backup(self, target: Path) -> None:
        """A consistent copy of the whole database at ``target`` (sqlite3's online backup API:
        safe while the stack is serving)."""
        with self._lock, _translated():
            out = sqlite3.connect(str(target))
            try:
                self._conn.backup(out)
            finally:
                out.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


@contextmanager
def _translated() -> Iterator[None]:
    """A database failure (locked past the busy timeout, disk full, corrupt file) is a 503."""
    try:
        yield
    except sqlite3.Error as exc:
        raise UpstreamUnavailable(
            "the database is unavailable; retry", code="store_unavailable"
        ) from exc


def _load(raw: str) -> dict[str, Any]:
    item: dict[str, Any] = json.loads(raw)
    return item


def _dump(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def _versioned_put(
    db: sqlite3.Connection,
    table: str,
    key: str,
    item: dict[str, Any],
    expected_version: int | None,
    columns: dict[str, Any],
) -> None:
    """The DynamoDB adapters' conditional put: None = must not exist, N = still at version N."""
    found = db.execute(f"SELECT version FROM {table} WHERE {key} = ?", (item[key],)).fetchone()
    if (expected_version is None and found is not None) or (
        expected_version is not None and (found is None or found[0] != expected_version)
    ):
        raise StoreConflict(f"{table}: conditional write failed")
    names = [key, *columns, "version", "item"]
    values = [item[key], *columns.values(), int(item.get("version", 0)), _dump(item)]
    marks = ", ".join("?" for _ in names)
    db.execute(f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({marks})", values)


class SqliteLicences:
    """``LicenceStore`` on SQLite (the DynamoDB table's key and its three GSIs as columns)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, licence_id: str) -> dict[str, Any] | None:
        rows = self._db.rows("SELECT item FROM licences WHERE licence_id = ?", (licence_id,))
        return _load(rows[0][0]) if rows else None

    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None:
        columns = {k: item.get(k) for k in ("key_hash", "session_id", "team")}
        with self._db.transaction() as db:
            _versioned_put(db, "licences", "licence_id", item, expected_version, columns)

    def _one(self, column: str, value: str) -> dict[str, Any] | None:
        rows = self._db.rows(f"SELECT item FROM licences WHERE {column} = ? LIMIT 2", (value,))
        return _load(rows[0][0]) if len(rows) == 1 else None  # as the GSI query with Limit=2

    def find_by_key_hash(self, key_hash: str) -> dict[str, Any] | None:
        return self._one("key_hash", key_hash)

    def find_by_session(self, session_id: str) -> dict[str, Any] | None:
        return self._one("session_id", session_id)

    def by_team(self, team: str) -> list[dict[str, Any]]:
        return [
            _load(r[0]) for r in self._db.rows("SELECT item FROM licences WHERE team = ?", (team,))
        ]

    def scan(self) -> list[dict[str, Any]]:
        return [_load(r[0]) for r in self._db.rows("SELECT item FROM licences")]


class SqliteUsage:
    """``UsageStore`` on SQLite: counters by ``counter_id`` (``expires_at`` as the TTL)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, counter_id: str) -> dict[str, Any] | None:
        rows = self._db.rows("SELECT item FROM counters WHERE counter_id = ?", (counter_id,))
        return _load(rows[0][0]) if rows else None

    def take(
        self, counter_id: str, *, limit: int, now_ms: int, min_gap_ms: int, expires_at: int
    ) -> None:
        """Count one use if fewer than ``limit`` so far and the last was at least
        ``min_gap_ms`` ago, in one transaction; ``StoreConflict`` otherwise. Without a gap the
        time is not a condition (as ``UsageTable.take``)."""
        with self._db.transaction() as db:
            found = db.execute(
                "SELECT item FROM counters WHERE counter_id = ?", (counter_id,)
            ).fetchone()
            item: dict[str, Any] = _load(found[0]) if found else {"counter_id": counter_id}
            if found is not None and not (
                int(item.get("used", 0)) < limit
                and (min_gap_ms <= 0 or int(item.get("last_ms", 0)) <= now_ms - min_gap_ms)
            ):
                raise StoreConflict("the counter's condition failed")
            item.update(used=int(item.get("used", 0)) + 1, last_ms=now_ms, expires_at=expires_at)
            db.execute(
                "INSERT OR REPLACE INTO counters (counter_id, expires_at, item) VALUES (?, ?, ?)",
                (counter_id, expires_at, _dump(item)),
            )

    def add(self, counter_id: str, names: list[str]) -> None:
        """Add one to each named attribute of one item (no TTL)."""
        if not names:
            return
        with self._db.transaction() as db:
            found = db.execute(
                "SELECT item FROM counters WHERE counter_id = ?", (counter_id,)
            ).fetchone()
            item: dict[str, Any] = _load(found[0]) if found else {"counter_id": counter_id}
            for name in names:
                item[name] = int(item.get(name, 0)) + 1
            db.execute(
                "INSERT OR REPLACE INTO counters (counter_id, expires_at, item) VALUES (?, NULL, ?)",
                (counter_id, _dump(item)),
            )


class SqliteLanes:
    """``LaneStore`` on SQLite: each payer's lane for a check with a pattern, one row held by
    one process's check until it drops it or its time runs out, so every process serving the
    database keeps criteria D26's one check in flight per payer."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def take(self, payer: str, holder: str, *, until: float, now: float) -> bool:
        with self._db.transaction() as db:
            found = db.execute(
                "SELECT holder, until FROM lanes WHERE payer = ?", (payer,)
            ).fetchone()
            if found is not None and found[0] != holder and found[1] > now:
                return False
            db.execute(
                "INSERT OR REPLACE INTO lanes (payer, holder, until) VALUES (?, ?, ?)",
                (payer, holder, until),
            )
            return True

    def drop(self, payer: str, holder: str) -> None:
        with self._db.transaction() as db:
            db.execute("DELETE FROM lanes WHERE payer = ? AND holder = ?", (payer, holder))


class SqliteDocuments:
    """Items by id in one table, each changed in one transaction: the local stand-in for
    Stripe's Checkout Sessions (``sdk.stripe_dev``), so a session made by one process of the
    stack is paid on the page another one serves."""

    def __init__(self, db: Database, table: str = "dev_checkout") -> None:
        self._db = db
        self._table = table

    def get(self, key: str) -> dict[str, Any] | None:
        rows = self._db.rows(f"SELECT item FROM {self._table} WHERE id = ?", (key,))
        return _load(rows[0][0]) if rows else None

    def put(self, key: str, item: dict[str, Any]) -> None:
        with self._db.transaction() as db:
            db.execute(
                f"INSERT OR REPLACE INTO {self._table} (id, item) VALUES (?, ?)", (key, _dump(item))
            )

    def change(self, key: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        """The item after ``change`` (which edits it in place), stored; None when absent."""
        with self._db.transaction() as db:
            found = db.execute(f"SELECT item FROM {self._table} WHERE id = ?", (key,)).fetchone()
            if found is None:
                return None
            item = _load(found[0])
            change(item)
            db.execute(f"UPDATE {self._table} SET item = ? WHERE id = ?", (_dump(item), key))
            return item


class SqliteLedger:
    """``CheckLedger`` on SQLite: the same items as ``CheckLedgerTable`` (``pack#``, ``check#``,
    ``day#``); each conditional write is one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @staticmethod
    def _read(db: sqlite3.Connection, key: str) -> dict[str, Any] | None:
        found = db.execute("SELECT item FROM ledger WHERE id = ?", (key,)).fetchone()
        return _load(found[0]) if found else None

    @staticmethod
    def _write(db: sqlite3.Connection, item: dict[str, Any]) -> None:
        db.execute(
            "INSERT OR REPLACE INTO ledger (id, item) VALUES (?, ?)", (item["id"], _dump(item))
        )

    def _get(self, key: str) -> dict[str, Any] | None:
        rows = self._db.rows("SELECT item FROM ledger WHERE id = ?", (key,))
        if not rows:
            return None
        item = _load(rows[0][0])
        if "payments" in item:  # a string set in DynamoDB
            item["payments"] = set(item["payments"])
        return item

    def pack(self, payer: str) -> dict[str, Any] | None:
        return self._get(f"pack#{payer}")

    def record(self, check_id: str) -> dict[str, Any] | None:
        return self._get(f"check#{check_id}")

    def grant(self, payer: str, *, checks: int, payment_id: str, granted_at: str) -> None:
        """Add ``checks`` to the payer's pack, once per payment (a replayed grant conflicts)."""
        with self._db.transaction() as db:
            pack = self._read(db, f"pack#{payer}") or {"id": f"pack#{payer}"}
            payments = list(pack.get("payments", []))
            if payment_id in payments:
                raise StoreConflict("the ledger: this payment's pack was granted already")
            pack.update(
                remaining=int(pack.get("remaining", 0)) + checks,
                granted=int(pack.get("granted", 0)) + checks,
                payments=sorted([*payments, payment_id]),
                granted_at=granted_at,
                payment_id=payment_id,
            )
            self._write(db, pack)

    def charge(self, payer: str, check_id: str, record: dict[str, Any]) -> None:
        """One transaction: the pack loses a check and the check's record is stored, both only
        if the pack has one left and the check has no record yet (``StoreConflict`` if not)."""
        with self._db.transaction() as db:
            pack = self._read(db, f"pack#{payer}")
            if pack is None or int(pack.get("remaining", 0)) < 1:
                raise StoreConflict("the ledger: the charge's conditions failed")
            if self._read(db, f"check#{check_id}") is not None:
                raise StoreConflict("the ledger: the charge's conditions failed")
            pack["remaining"] = int(pack["remaining"]) - 1
            self._write(db, pack)
            stored = {**record, "payment_id": str(pack.get("payment_id") or "")}
            self._write(db, {"id": f"check#{check_id}", **stored})

    def settle(
        self,
        payer: str,
        *,
        before: dict[str, Any],
        after: dict[str, int | bool],
        day: str,
        refunded: int,
    ) -> None:
        """One transaction: the pack becomes ``after`` only if it is still as read (``before``:
        same ``remaining``, same ``refunded_amount``, not ended), and ``refunded`` used checks
        are added to ``day``'s refund counter with it. ``StoreConflict`` when the pack moved."""
        with self._db.transaction() as db:
            pack = self._read(db, f"pack#{payer}")
            if (
                pack is None
                or "ended" in pack
                or pack.get("remaining") != before.get("remaining", 0)
                or pack.get("refunded_amount") != before.get("refunded_amount")
            ):
                raise StoreConflict("the ledger: the pack changed while a refund was applied")
            pack.update(after)
            self._write(db, pack)
            if refunded:
                counters = self._read(db, f"day#{day}") or {"id": f"day#{day}"}
                counters["refunded"] = int(counters.get("refunded", 0)) + refunded
                self._write(db, counters)

    def count(self, day: str, amounts: dict[str, int]) -> None:
        with self._db.transaction() as db:
            counters = self._read(db, f"day#{day}") or {"id": f"day#{day}"}
            for name, amount in amounts.items():
                counters[name] = int(counters.get(name, 0)) + amount
            self._write(db, counters)

    def days(self, days: list[str]) -> list[dict[str, Any]]:
        keys = [f"day#{d}" for d in days]
        marks = ", ".join("?" for _ in keys)
        return [
            _load(r[0])
            for r in self._db.rows(f"SELECT item FROM ledger WHERE id IN ({marks})", tuple(keys))
        ]


#: Seals a run's callback secret for storage and opens it again (``statefolder.folder``): the
#: secret is never in clear in the database or a dump of it.
Sealer = tuple[Callable[[str, str], str], Callable[[str, str], str]]


class SqliteRuns:
    """``RunStore`` on SQLite: the table's key and its three indexes as columns, the listing
    bounded by the store (``LIMIT``), a run's callback secret sealed (``sealer``)."""

    def __init__(self, db: Database, sealer: Sealer | None = None) -> None:
        self._db = db
        self._sealer = sealer

    def _open(self, raw: str) -> dict[str, Any]:
        item = _load(raw)
        if self._sealer is not None and item.get("callback_secret"):
            item["callback_secret"] = self._sealer[1](item["callback_secret"], item["run_id"])
        return item

    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = self._db.rows("SELECT item FROM runs WHERE run_id = ?", (run_id,))
        return self._open(rows[0][0]) if rows else None

    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None:
        stored = dict(item)
        if self._sealer is not None and stored.get("callback_secret"):
            stored["callback_secret"] = self._sealer[0](stored["callback_secret"], stored["run_id"])
        columns = {
            "team": stored["team"],
            "created_at": stored.get("created_at", ""),
            "active_status": stored.get("active_status"),
            "baseline_set_at": stored.get("baseline_set_at"),
            "expires_at": stored.get("expires_at"),
        }
        with self._db.transaction() as db:
            _versioned_put(db, "runs", "run_id", stored, expected_version, columns)

    def by_team(self, team: str, *, limit: int) -> list[dict[str, Any]]:
        """The team's ``limit`` newest runs, newest first (the index, never the whole team)."""
        rows = self._db.rows(LATEST_RUNS, (team, max(0, limit)))
        return [self._open(r[0]) for r in rows]

    def by_status(self, status: str) -> list[dict[str, Any]]:
        if status in FINAL:
            raise ValueError("only runs in flight are indexed by status")
        rows = self._db.rows("SELECT item FROM runs WHERE active_status = ?", (status,))
        return [self._open(r[0]) for r in rows]

    def baselines_page(
        self, team: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[dict[str, Any]]:
        """RunStore.baselines_page: the partial index ``runs_baselines_newest`` is in the
        page's order, so the query (from the newest, or keyset after ``after``) reads
        ``limit`` rows and sorts nothing, however many baselines the team has."""
        if after is None:
            rows = self._db.rows(RECENT_BASELINES, (team, max(0, limit)))
        else:
            rows = self._db.rows(BASELINES_AFTER, (team, after[0], after[1], max(0, limit)))
        return [self._open(r[0]) for r in rows]
