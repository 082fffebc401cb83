"""Read an earlier local stack's moto recording back: the AWS-shaped state it held.

The stack once kept its state in an embedded moto server that recorded every request to a
file (``moto-recording.jsonl``). :func:`read_recording` replays that file into a private moto
server in this process with moto's own recorder, then reads the named tables, buckets and
secrets back through boto3 as plain items (the DynamoDB adapters' shapes; string sets as
sorted lists). Used once per folder by ``service.local.migrate``; moto is a development
dependency, so the import is the caller's to guard.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from toolcall300.service.sdk.dynamo import _plain, scan_all

_FAKE = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "region_name": "us-east-1",
}


class ReplayFailed(Exception):
    """moto could not replay the recording."""


@dataclass
class Recorded:
    """Items by table, objects by bucket and key, secret values by name."""

    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    objects: dict[str, dict[str, bytes]] = field(default_factory=dict)
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)


def _listed(value: Any) -> Any:
    value = _plain(value)
    if isinstance(value, dict):
        return {k: sorted(v) if isinstance(v, set) else v for k, v in value.items()}
    return value


def read_recording(
    recording: Path, *, tables: list[str], buckets: list[str], secrets: list[str]
) -> Recorded:
    """Replay ``recording`` and read back what it left in ``tables``, ``buckets``, ``secrets``
    (one that the old stack never created is simply empty)."""
    from moto.moto_api._internal.recorder.models import Recorder
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        recorder = Recorder()
        recorder._location = str(recording)  # moto's own replay of its own file
        try:
            recorder.replay_recording(target_host=endpoint)
        except Exception as exc:
            raise ReplayFailed(f"{recording} could not be replayed: {exc}") from exc
        found = Recorded()
        ddb = boto3.resource("dynamodb", endpoint_url=endpoint, **_FAKE)
        for name in tables:
            found.items[name] = _scan(ddb.Table(name))
        s3 = boto3.client("s3", endpoint_url=endpoint, **_FAKE)
        for name in buckets:
            found.objects[name] = _objects(s3, name)
        sm = boto3.client("secretsmanager", endpoint_url=endpoint, **_FAKE)
        for name in secrets:
            try:
                found.secrets[name] = json.loads(sm.get_secret_value(SecretId=name)["SecretString"])
            except Exception:
                continue
        return found
    finally:
        server.stop()


def _scan(table: Any) -> list[dict[str, Any]]:
    try:
        return [_listed(item) for item in scan_all(table)]
    except Exception:  # a table the old stack never created
        return []


def _objects(s3: Any, bucket: str) -> dict[str, bytes]:
    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    except Exception:
        return {}
    return {key: s3.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys}
