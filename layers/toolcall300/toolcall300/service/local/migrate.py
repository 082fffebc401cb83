"""``toolcall300 serve --migrate``: bring an earlier version's moto recording into the database.

Before the SQLite store, the stack kept its state in an embedded moto server and recorded
every request it served to ``moto-recording.jsonl`` (docs/local-stack.md, "Upgrading"). This
replays that recording into a private moto server in this process (moto is a development
dependency: a checkout's ``make venv`` has it), reads every table, bucket and secret back
through the AWS adapters' own item shapes, and writes them into the folder's database and
files. Licences (so every key keeps working), packs and the ledger, usage counters, runs,
reports, the corpus and the Stripe webhook secret come across. The report-signing key does
not: moto never kept its material, so reports signed by the old stack did not verify after
its restarts either; the folder gets its own seed. The recording is then renamed
``moto-recording.jsonl.migrated`` (kept for the operator, never read again, made owner-only:
it holds the old callback secrets in clear, which the database seals; delete it once the
migrated stack is checked). Not a general moto exporter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolcall300.service.local.cfn import resources_of_type
from toolcall300.service.local.provision import physical_name
from toolcall300.service.local.state import LEGACY_RECORDING
from toolcall300.service.statefolder.folder import DATABASE, FolderInUse, lock_folder

#: The physical-name prefix the recording's stack used (``stack.LOCAL_PREFIX`` then and now).
PREFIX = "tc300-local"
_FAKE = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "region_name": "us-east-1",
}


class MigrationError(Exception):
    """The recording cannot be migrated (moto missing, replay failed); the message says why."""


def migrate(folder: Path, template: dict[str, Any]) -> dict[str, int]:
    """Migrate ``folder``'s moto recording into its database and files; what was copied."""
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        raise MigrationError(
            "migrating a moto recording needs moto (pip install 'moto[server]>=5.1,<6')"
        ) from exc

    recording = folder / LEGACY_RECORDING
    if not recording.exists():
        raise MigrationError(f"{folder} holds no {LEGACY_RECORDING}")
    if (folder / DATABASE).exists():
        raise MigrationError(f"{folder} holds a database already: nothing to migrate into")
    try:
        held = lock_folder(folder)
    except FolderInUse as exc:
        raise MigrationError(str(exc)) from None
    try:
        return _migrate(folder, recording, template)
    finally:
        os.close(held)


def _migrate(folder: Path, recording: Path, template: dict[str, Any]) -> dict[str, int]:
    from toolcall300.service.sdk.moto_recording import ReplayFailed, read_recording
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    name = {k: physical_name(PREFIX, k) for k in template["Resources"]}
    tables = ["LicencesTable", "RunsTable", "CheckLedgerTable", "UsageTable"]
    buckets = list(resources_of_type(template, "AWS::S3::Bucket"))
    secrets = list(resources_of_type(template, "AWS::SecretsManager::Secret"))
    try:
        found = read_recording(
            recording,
            tables=[name[t] for t in tables],
            buckets=[name[b] for b in buckets],
            secrets=[name[s] for s in secrets],
        )
    except ReplayFailed as exc:
        raise MigrationError(str(exc)) from exc
    edition = LocalAdapters(StateFolder(folder), public_url=lambda: "")
    try:
        licences, runs = found.items[name["LicencesTable"]], found.items[name["RunsTable"]]
        for item in licences:
            edition.licences.put(item, expected_version=None)
        for item in runs:
            edition.runs.put(item, expected_version=None)
        ledger, counters = found.items[name["CheckLedgerTable"]], found.items[name["UsageTable"]]
        with edition.db.transaction() as db:
            for item in ledger:
                db.execute(
                    "INSERT OR REPLACE INTO ledger (id, item) VALUES (?, ?)",
                    (item["id"], json.dumps(item)),
                )
            for item in counters:
                db.execute(
                    "INSERT OR REPLACE INTO counters (counter_id, expires_at, item) VALUES (?, ?, ?)",
                    (item["counter_id"], item.get("expires_at"), json.dumps(item)),
                )
        objects = 0
        for bucket in buckets:
            files = edition.corpus(name[bucket])
            for key, body in found.objects[name[bucket]].items():
                files.put(key, body)
                objects += 1
        for secret in secrets:
            if name[secret] in found.secrets:
                edition.folder.put_secret(name[secret], found.secrets[name[secret]])
    finally:
        edition.close()
    kept = recording.with_name(LEGACY_RECORDING + ".migrated")
    os.replace(recording, kept)
    # It holds every request the old stack served, callback secrets and the webhook secret in
    # clear (moto wrote it 0644): owner-only, as the folder's own secret files are.
    kept.chmod(0o600)
    return {
        "licences": len(licences), "runs": len(runs), "ledger": len(ledger),
        "counters": len(counters), "objects": objects,
    }  # fmt: skip
