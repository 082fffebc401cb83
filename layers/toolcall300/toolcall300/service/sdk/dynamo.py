"""DynamoDB adapters: the licence table (a ``licences.LicenceStore``) and the usage counters.

Translates ``ConditionalCheckFailedException`` into ``StoreConflict`` and every other
botocore failure into ``UpstreamUnavailable``. Items come back with ``Decimal`` numbers; they
are turned into ints here so domain code sees plain data.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from toolcall300.service.errors import StoreConflict
from toolcall300.service.sdk.aws import LazyTable, translated


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _stored(value: Any) -> Any:
    """``value`` as DynamoDB takes it: a float (the deltas track's ``commit_lead`` in a run's
    summary and comparison) as the ``Decimal`` of its shortest repr, which :func:`_plain`
    reads back as the same float; boto3 refuses floats."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _stored(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stored(v) for v in value]
    return value


def scan_all(table: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Every item a (possibly filtered) scan returns, across all pages, as plain values."""
    items: list[dict[str, Any]] = []
    while True:
        page = table.scan(**kwargs)
        items.extend(_plain(i) for i in page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _translated() -> AbstractContextManager[None]:
    return translated("the database", code="store_unavailable")


class LicenceTable(LazyTable):
    """``LicenceStore`` on the template's ``LicencesTable`` (GSIs ``by_key_hash``, ``by_session``,
    ``by_team``)."""

    def get(self, licence_id: str) -> dict[str, Any] | None:
        with _translated():
            item = self.table.get_item(Key={"licence_id": licence_id}, ConsistentRead=True).get(
                "Item"
            )
        return _plain(item) if item else None

    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None:
        cond = (
            Attr("licence_id").not_exists()
            if expected_version is None
            else Attr("version").eq(expected_version)
        )
        with _translated():
            self.table.put_item(Item=item, ConditionExpression=cond)

    def _one(self, index: str, attr: str, value: str) -> dict[str, Any] | None:
        with _translated():
            items = self.table.query(
                IndexName=index, KeyConditionExpression=Key(attr).eq(value), Limit=2
            )["Items"]
        return _plain(items[0]) if len(items) == 1 else None

    def find_by_key_hash(self, key_hash: str) -> dict[str, Any] | None:
        return self._one("by_key_hash", "key_hash", key_hash)

    def find_by_session(self, session_id: str) -> dict[str, Any] | None:
        return self._one("by_session", "session_id", session_id)

    def by_team(self, team: str) -> list[dict[str, Any]]:
        """Every licence of one team identity (its purchase and member keys)."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "IndexName": "by_team",
            "KeyConditionExpression": Key("team").eq(team),
        }
        with _translated():
            while True:
                page = self.table.query(**kwargs)
                items.extend(_plain(i) for i in page["Items"])
                if "LastEvaluatedKey" not in page:
                    return items
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def scan(self) -> list[dict[str, Any]]:
        with _translated():
            return scan_all(self.table)


class UsageTable(LazyTable):
    """Counters on the template's ``UsageTable`` (key ``counter_id``, TTL ``expires_at``)."""

    def get(self, counter_id: str) -> dict[str, Any] | None:
        with _translated():
            item = self.table.get_item(Key={"counter_id": counter_id}, ConsistentRead=True).get(
                "Item"
            )
        return _plain(item) if item else None

    def take(
        self, counter_id: str, *, limit: int, now_ms: int, min_gap_ms: int, expires_at: int
    ) -> None:
        """Atomically count one use if fewer than ``limit`` so far and the last was at least
        ``min_gap_ms`` ago; raises ``StoreConflict`` otherwise (the caller reads why).

        Without a gap, the time is not a condition: two requests that read their clocks in
        one order and write in the other are both counted, never one of them "too soon"."""
        condition = "attribute_not_exists(counter_id) OR (used < :limit"
        values: dict[str, Any] = {
            ":zero": 0, ":one": 1, ":now": now_ms, ":exp": expires_at, ":limit": limit,
        }  # fmt: skip
        if min_gap_ms > 0:
            condition += " AND last_ms <= :cutoff"
            values[":cutoff"] = now_ms - min_gap_ms
        with _translated():
            self.table.update_item(
                Key={"counter_id": counter_id},
                UpdateExpression="SET used = if_not_exists(used, :zero) + :one, last_ms = :now, expires_at = :exp",
                ConditionExpression=condition + ")",
                ExpressionAttributeValues=values,
            )

    def add(self, counter_id: str, names: list[str]) -> None:
        """Add one to each named attribute of one item (aggregate metrics; no TTL)."""
        if not names:
            return
        placeholders = {f"#n{i}": n for i, n in enumerate(names)}
        expr = "ADD " + ", ".join(f"#n{i} :one" for i in range(len(names)))
        with _translated():
            self.table.update_item(
                Key={"counter_id": counter_id},
                UpdateExpression=expr,
                ExpressionAttributeNames=placeholders,
                ExpressionAttributeValues={":one": 1},
            )


class CheckLedgerTable(LazyTable):
    """``ledger.CheckLedger`` on the template's ``CheckLedgerTable`` (key ``id``): one item per
    pack (``pack#<licence>``: granted, remaining, withdrawn, refunded_spent, refunded_amount,
    ended), per paid check (``check#<id>``) and per day's counters (``day#<YYYY-MM-DD>``)."""

    def _get(self, key: str) -> dict[str, Any] | None:
        with _translated():
            item = self.table.get_item(Key={"id": key}, ConsistentRead=True).get("Item")
        return _plain(item) if item else None

    def pack(self, payer: str) -> dict[str, Any] | None:
        return self._get(f"pack#{payer}")

    def record(self, check_id: str) -> dict[str, Any] | None:
        return self._get(f"check#{check_id}")

    def grant(self, payer: str, *, checks: int, payment_id: str, granted_at: str) -> None:
        """Add ``checks`` to the payer's pack, once per payment (a replayed grant conflicts)."""
        with _translated():
            self.table.update_item(
                Key={"id": f"pack#{payer}"},
                UpdateExpression="ADD remaining :n, granted :n, payments :p SET granted_at = :t, payment_id = :id",
                ConditionExpression="attribute_not_exists(payments) OR NOT contains(payments, :id)",
                ExpressionAttributeValues={
                    ":n": checks,
                    ":p": {payment_id},
                    ":t": granted_at,
                    ":id": payment_id,
                },
            )

    def charge(self, payer: str, check_id: str, record: dict[str, Any]) -> None:
        """One transaction: the pack loses a check and the check's record is stored, both only
        if the pack has one left and the check has no record yet (``StoreConflict`` if not)."""
        pack = self.pack(payer)
        stored = {**record, "payment_id": str((pack or {}).get("payment_id") or "")}
        self._transact(
            [
                {
                    "Update": {
                        "TableName": self._name,
                        "Key": {"id": f"pack#{payer}"},
                        "UpdateExpression": "SET remaining = remaining - :one",
                        "ConditionExpression": "remaining >= :one",
                        "ExpressionAttributeValues": {":one": 1},
                    }
                },
                {
                    "Put": {
                        "TableName": self._name,
                        "Item": {"id": f"check#{check_id}", **stored},
                        "ConditionExpression": "attribute_not_exists(id)",
                    }
                },
            ],
            "the ledger: the charge's conditions failed",
        )

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
        no check charged, no refund applied, not ended since), and ``refunded`` used checks are
        added to ``day``'s refund counter with it. ``StoreConflict`` when the pack moved."""
        names = {f"#a{i}": k for i, k in enumerate(after)}
        values: dict[str, Any] = {f":a{i}": v for i, v in enumerate(after.values())}
        condition = "attribute_not_exists(ended) AND remaining = :old_remaining"
        values[":old_remaining"] = before.get("remaining", 0)
        if "refunded_amount" in before:
            condition += " AND refunded_amount = :old_amount"
            values[":old_amount"] = before["refunded_amount"]
        else:
            condition += " AND attribute_not_exists(refunded_amount)"
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._name,
                    "Key": {"id": f"pack#{payer}"},
                    "UpdateExpression": "SET " + ", ".join(f"{n} = :{n[1:]}" for n in names),
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        if refunded:
            items.append(
                {
                    "Update": {
                        "TableName": self._name,
                        "Key": {"id": f"day#{day}"},
                        "UpdateExpression": "ADD refunded :n",
                        "ExpressionAttributeValues": {":n": refunded},
                    }
                }
            )
        self._transact(items, "the ledger: the pack changed while a refund was applied")

    def _transact(self, items: list[dict[str, Any]], conflict: str) -> None:
        try:  # the resource's client: plain Python values in and out
            self.table.meta.client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise StoreConflict(conflict) from exc
            with _translated():
                raise

    def count(self, day: str, amounts: dict[str, int]) -> None:
        names = list(amounts)
        with _translated():
            self.table.update_item(
                Key={"id": f"day#{day}"},
                UpdateExpression="ADD " + ", ".join(f"#n{i} :v{i}" for i in range(len(names))),
                ExpressionAttributeNames={f"#n{i}": n for i, n in enumerate(names)},
                ExpressionAttributeValues={f":v{i}": amounts[n] for i, n in enumerate(names)},
            )

    def days(self, days: list[str]) -> list[dict[str, Any]]:
        keys = [{"id": f"day#{d}"} for d in days]
        with _translated():
            found = self.table.meta.client.batch_get_item(
                RequestItems={self._name: {"Keys": keys, "ConsistentRead": True}}
            )
        # Unprocessed keys are only returned under throttling; read those one by one.
        items = [_plain(i) for i in found["Responses"].get(self._name, [])]
        for key in found.get("UnprocessedKeys", {}).get(self._name, {}).get("Keys", []):
            item = self._get(key["id"])
            if item:
                items.append(item)
        return items
