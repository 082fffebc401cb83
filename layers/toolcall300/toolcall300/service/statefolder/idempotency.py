"""Powertools idempotency records in SQLite: a ``BasePersistenceLayer`` (its extension point).

The one-machine edition's counterpart of ``DynamoDBPersistenceLayer``, with the same rule
for taking a key: a record is written only when none exists, or the one there has expired,
or it is still ``INPROGRESS`` past its in-progress expiry (a crashed attempt); otherwise
``IdempotencyItemAlreadyExistsError`` carries the stored record so Powertools can answer
from it. The check and the write are one ``BEGIN IMMEDIATE`` transaction
(``statefolder.sqlite.Database``), the table is the database's ``idempotency``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import (
    STATUS_CONSTANTS,
    DataRecord,
)

from toolcall300.service.statefolder.sqlite import Database

_COLUMNS = "id, status, expiration, in_progress_expiration, data, validation"


def _record(row: tuple[Any, ...]) -> DataRecord:
    key, status, expiry, in_progress, data, validation = row
    return DataRecord(
        idempotency_key=key,
        status=status,
        expiry_timestamp=expiry,
        in_progress_expiry_timestamp=in_progress,
        response_data=data,
        payload_hash=validation,
    )


class SqlitePersistenceLayer(BasePersistenceLayer):
    """Idempotency records in the ``idempotency`` table of one :class:`Database`."""

    def __init__(self, db: Database) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._db = db

    def _get_record(self, idempotency_key: str) -> DataRecord:
        rows = self._db.rows(f"SELECT {_COLUMNS} FROM idempotency WHERE id = ?", (idempotency_key,))
        if not rows:
            raise IdempotencyItemNotFoundError
        return _record(rows[0])

    def _put_record(self, data_record: DataRecord) -> None:
        now = dt.datetime.now()
        with self._db.transaction() as db:
            found = db.execute(
                f"SELECT {_COLUMNS} FROM idempotency WHERE id = ?", (data_record.idempotency_key,)
            ).fetchone()
            if found is not None:
                old = _record(found)
                expired = old.expiry_timestamp is not None and old.expiry_timestamp < int(
                    now.timestamp()
                )
                stale = (
                    found[1] == STATUS_CONSTANTS["INPROGRESS"]
                    and old.in_progress_expiry_timestamp is not None
                    and old.in_progress_expiry_timestamp < int(now.timestamp() * 1000)
                )
                if not (expired or stale):
                    self._validate_payload(data_payload=data_record, stored_data_record=old)
                    self._save_to_cache(data_record=old)
                    raise IdempotencyItemAlreadyExistsError(old_data_record=old)
            db.execute(
                f"INSERT OR REPLACE INTO idempotency ({_COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?)",
                (
                    data_record.idempotency_key,
                    data_record.status,
                    data_record.expiry_timestamp,
                    data_record.in_progress_expiry_timestamp,
                    data_record.payload_hash if self.payload_validation_enabled else None,
                ),
            )

    def _update_record(self, data_record: DataRecord) -> None:
        with self._db.transaction() as db:
            db.execute(
                "UPDATE idempotency SET data = ?, expiration = ?, status = ?"
                + (", validation = ?" if self.payload_validation_enabled else "")
                + " WHERE id = ?",
                (
                    data_record.response_data,
                    data_record.expiry_timestamp,
                    data_record.status,
                    *([data_record.payload_hash] if self.payload_validation_enabled else []),
                    data_record.idempotency_key,
                ),
            )

    def _delete_record(self, data_record: DataRecord) -> None:
        with self._db.transaction() as db:
            db.execute("DELETE FROM idempotency WHERE id = ?", (data_record.idempotency_key,))
