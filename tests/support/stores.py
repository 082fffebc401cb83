"""Recording in-memory fakes for the service's ports (no moto, no patching)."""

from __future__ import annotations

import copy
from typing import Any

from toolcall300.service.errors import StoreConflict


class MemoryLicenceStore:
    """``LicenceStore`` over a dict, with the same conditional-write semantics as DynamoDB."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.writes = 0

    def get(self, licence_id: str) -> dict[str, Any] | None:
        item = self.items.get(licence_id)
        return copy.deepcopy(item) if item else None

    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None:
        current = self.items.get(item["licence_id"])
        if (expected_version is None and current is not None) or (
            expected_version is not None
            and (current is None or current.get("version") != expected_version)
        ):
            raise StoreConflict("version mismatch")
        self.items[item["licence_id"]] = copy.deepcopy(item)
        self.writes += 1

    def _find(self, attr: str, value: str) -> dict[str, Any] | None:
        found = [i for i in self.items.values() if i.get(attr) == value]
        return copy.deepcopy(found[0]) if len(found) == 1 else None

    def find_by_key_hash(self, key_hash: str) -> dict[str, Any] | None:
        return self._find("key_hash", key_hash)

    def find_by_session(self, session_id: str) -> dict[str, Any] | None:
        return self._find("session_id", session_id)

    def by_team(self, team: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(i) for i in self.items.values() if i.get("team") == team]

    def scan(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(i) for i in self.items.values()]
