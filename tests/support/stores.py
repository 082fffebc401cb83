"""The service's ports in memory (no moto, no patching), with DynamoDB's conditional writes.

Every store here keeps items as private copies and refuses a write exactly as the DynamoDB
adapters do (``toolcall300.service.sdk``): ``expected_version=None`` means "must not exist
yet", an integer means "must still be at that version"; anything else raises
``StoreConflict``. Domain functions take these where production passes the real tables.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

from toolcall300.service.errors import NotFound, PayloadTooLarge, StoreConflict, TooManyRequests


class _VersionedItems:
    """Items by key, written under the one conditional-write rule, safe across threads."""

    key = ""

    @staticmethod
    def copy(item: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy(item)

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.writes = 0
        self.lock = threading.Lock()

    def get(self, item_id: str) -> dict[str, Any] | None:
        with self.lock:
            item = self.items.get(item_id)
            return self.copy(item) if item else None

    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None:
        with self.lock:
            current = self.items.get(item[self.key])
            if (expected_version is None and current is not None) or (
                expected_version is not None
                and (current is None or current.get("version") != expected_version)
            ):
                raise StoreConflict("version mismatch")
            self.items[item[self.key]] = self.copy(item)
            self.writes += 1

    def _rows(self) -> list[dict[str, Any]]:
        with self.lock:
            return [self.copy(i) for i in self.items.values()]


class MemoryLicenceStore(_VersionedItems):
    """``LicenceStore`` (``service.domain.licences``) over a dict."""

    key = "licence_id"

    def _find(self, attr: str, value: str) -> dict[str, Any] | None:
        found = [i for i in self._rows() if i.get(attr) == value]
        return found[0] if len(found) == 1 else None

    def find_by_key_hash(self, key_hash: str) -> dict[str, Any] | None:
        return self._find("key_hash", key_hash)

    def find_by_session(self, session_id: str) -> dict[str, Any] | None:
        return self._find("session_id", session_id)

    def by_team(self, team: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(i) for i in self.items.values() if i.get("team") == team]

    def scan(self) -> list[dict[str, Any]]:
        return self._rows()


class MemoryRunStore(_VersionedItems):
    """``RunStore`` (``service.domain.runs``) over a dict, with its two queries."""

    key = "run_id"

    @staticmethod
    def copy(item: dict[str, Any]) -> dict[str, Any]:
        """Through JSON, as a run record is plain JSON data."""
        copied: dict[str, Any] = json.loads(json.dumps(item))
        return copied

    def by_team(self, team: str, *, limit: int) -> list[dict[str, Any]]:
        rows = [i for i in self._rows() if i["team"] == team]
        return sorted(rows, key=lambda i: i["created_at"], reverse=True)[:limit]

    def by_status(self, status: str) -> list[dict[str, Any]]:
        # the sparse index: only runs in flight carry active_status
        return [i for i in self._rows() if i.get("active_status") == status]

    def baselines_page(
        self, team: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[dict[str, Any]]:
        mine = [i for i in self._rows() if i["team"] == team and i.get("baseline_set_at")]
        newest = sorted(mine, key=lambda i: (i["baseline_set_at"], i["run_id"]), reverse=True)
        if after is not None:
            newest = [i for i in newest if (i["baseline_set_at"], i["run_id"]) < after]
        return newest[:limit]


class MemoryReports:
    """``ReportStore`` in a dict: write once."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def put_once(self, key: str, body: bytes) -> None:
        with self.lock:
            if key in self.objects:
                raise StoreConflict(key)
            self.objects[key] = body

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        with self.lock:
            if key not in self.objects:
                raise NotFound(key)
            if max_bytes is not None and len(self.objects[key]) > max_bytes:
                raise PayloadTooLarge(key)
            return self.objects[key]


class CountingQuota:
    """A daily cap (``TakeQuota``) that records every take."""

    def __init__(self, limit: int = 100) -> None:
        self.limit = limit
        self.taken: list[str] = []

    def __call__(self, licence_id: str) -> None:
        if len(self.taken) >= self.limit:
            raise TooManyRequests("cap", headers={"Retry-After": "60"})
        self.taken.append(licence_id)
