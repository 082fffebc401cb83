"""Lazily created, cached boto3 clients and resources (one per service per process).

Clients honour ``AWS_ENDPOINT_URL`` (tests point it at a moto server). S3 clients
always sign with SigV4: boto3 would otherwise presign with SigV2. Not a session manager:
tests that need a fresh client call :func:`reset_clients`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

_CONFIG = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=3, read_timeout=8)
_S3_CONFIG = _CONFIG.merge(Config(signature_version="s3v4", s3={"addressing_style": "path"}))


@cache
def client(service: str) -> Any:
    """A boto3 client, created on first use."""
    return boto3.client(service, config=_S3_CONFIG if service == "s3" else _CONFIG)


@cache
def dynamodb_table(name: str) -> Any:
    """A DynamoDB ``Table`` resource, created on first use."""
    return boto3.resource("dynamodb", config=_CONFIG).Table(name)


def reset_clients() -> None:
    """Forget cached clients (after the endpoint or credentials changed).

    The default boto3 session goes too: botocore keeps the credentials it first resolved, so a
    new client from the old session would still sign with the old keys.
    """
    client.cache_clear()
    dynamodb_table.cache_clear()
    boto3.DEFAULT_SESSION = None


def credentials_expiry() -> datetime | None:
    """When the credentials the clients sign with expire, if botocore knows (a role session
    refreshed from a provider); None for static keys and for Lambda's environment keys."""
    credentials = (
        boto3.Session().get_credentials()
        if boto3.DEFAULT_SESSION is None
        else (boto3.DEFAULT_SESSION.get_credentials())
    )
    expiry = getattr(credentials, "_expiry_time", None)  # RefreshableCredentials' own field
    return expiry if isinstance(expiry, datetime) else None


#: How long a link-signing session is asked for: AssumeRole from a Lambda function's own role
#: session is role chaining, which AWS caps at one hour.
SIGNING_SESSION_SECONDS = 3600


def signing_client(role_arn: str, *, session_name: str) -> tuple[Any, datetime | None]:
    """An S3 client that signs as ``role_arn`` (a fresh AssumeRole session) and when that
    session ends. Without a role: the shared client and :func:`credentials_expiry` (None for
    Lambda's own keys, whose lifetime AWS neither documents nor shows)."""
    if not role_arn:
        return client("s3"), credentials_expiry()
    with translated("STS"):
        session = client("sts").assume_role(
            RoleArn=role_arn,
            RoleSessionName=session_name[:64],
            DurationSeconds=SIGNING_SESSION_SECONDS,
        )["Credentials"]
    s3 = boto3.client(
        "s3",
        aws_access_key_id=session["AccessKeyId"],
        aws_secret_access_key=session["SecretAccessKey"],
        aws_session_token=session["SessionToken"],
        config=_S3_CONFIG,
    )
    expiry = session["Expiration"]
    return s3, expiry if isinstance(expiry, datetime) else None


@contextmanager
def translated(what: str, *, code: str = "upstream_unavailable") -> Iterator[None]:
    """SDK errors become our own at the boundary: a failed condition is ``StoreConflict``, a
    missing object ``NotFound``, anything else ``UpstreamUnavailable`` (503) with ``code``."""
    from toolcall300.service.errors import NotFound, StoreConflict, UpstreamUnavailable

    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {}).get("Code")
        # S3 answers 409 ConditionalRequestConflict to a conditional write racing another one
        if error in (
            "ConditionalCheckFailedException",
            "PreconditionFailed",
            "ConditionalRequestConflict",
        ):
            raise StoreConflict(f"{what}: conditional write failed") from exc
        if error in ("NoSuchKey", "404", "NotFound"):
            raise NotFound(f"{what}: not found", code="not_found") from exc
        raise UpstreamUnavailable(f"{what} is unavailable; retry", code=code) from exc
    except BotoCoreError as exc:
        raise UpstreamUnavailable(f"{what} is unavailable; retry", code=code) from exc


class LazyTable:
    """A DynamoDB table by name, its boto3 resource created on first use (or given, for tests)."""

    def __init__(self, name: str, table: Any = None) -> None:
        self._name = name
        self._table = table

    @property
    def table(self) -> Any:
        if self._table is None:
            self._table = dynamodb_table(self._name)
        return self._table


class LazyBucket:
    """One S3 bucket, its client created on first use (or given, for tests)."""

    def __init__(self, bucket: str, s3: Any = None) -> None:
        self.bucket = bucket
        self._s3 = s3

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            self._s3 = client("s3")
        return self._s3
