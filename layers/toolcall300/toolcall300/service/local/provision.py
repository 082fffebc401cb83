"""Create the buckets, tables, secrets and KMS keys ``template.yaml`` declares, on any AWS endpoint.

Used by the tests (against ``mock_aws``): the resource properties are read from the template,
never restated, so a table or index added there exists here too. Also computes the
functions' environment from the template's ``Globals`` and, for the local stack (which
creates no AWS resource), the names and the secrets' first values (:func:`restored`,
:func:`local_secrets`). Deliberately not a CloudFormation emulator: only the resource types
the service uses, and only the properties that change behaviour (keys, indexes, TTL, versioning).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from toolcall300.service.local.cfn import resolve, resources_of_type
from toolcall300.service.sdk.aws import client


@dataclass
class Provisioned:
    """Physical names of what was created, by logical id, and the functions' environment."""

    names: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)


def physical_name(prefix: str, logical_id: str) -> str:
    """A deterministic, bucket-safe physical name (lowercase, <= 63 characters)."""
    return f"{prefix}-{logical_id}".lower()[:63]


def _table_args(name: str, props: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if props.get("GlobalSecondaryIndexes"):
        args["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return args


def create_tables(template: dict[str, Any], prefix: str) -> dict[str, str]:
    ddb = client("dynamodb")
    names = {}
    for logical, res in resources_of_type(template, "AWS::DynamoDB::Table").items():
        props = res.get("Properties", {})
        name = physical_name(prefix, logical)
        ddb.create_table(**_table_args(name, props))
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            ddb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        names[logical] = name
    return names


def create_buckets(template: dict[str, Any], prefix: str) -> dict[str, str]:
    s3 = client("s3")
    names = {}
    for logical, res in resources_of_type(template, "AWS::S3::Bucket").items():
        props = res.get("Properties", {})
        name = physical_name(prefix, logical)
        s3.create_bucket(Bucket=name)
        if (props.get("VersioningConfiguration") or {}).get("Status") == "Enabled":
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        if props.get("PublicAccessBlockConfiguration"):
            s3.put_public_access_block(
                Bucket=name, PublicAccessBlockConfiguration=props["PublicAccessBlockConfiguration"]
            )
        rules = (props.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration", [])
        if rules:  # CloudFormation's shape -> the S3 API's shape
            api_rules = [
                {"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"]}
                for r in rules
            ]
            s3.put_bucket_encryption(
                Bucket=name, ServerSideEncryptionConfiguration={"Rules": api_rules}
            )
        names[logical] = name
    return names


def _generated_secret(properties: dict[str, Any]) -> str:
    spec = properties.get("GenerateSecretString") or {}
    doc = json.loads(spec.get("SecretStringTemplate") or "{}")
    if spec.get("GenerateStringKey"):
        doc[spec["GenerateStringKey"]] = secrets.token_urlsafe(36)
    return json.dumps(doc)


def local_secrets(
    template: dict[str, Any], names: dict[str, str], stripe_api_key: str
) -> dict[str, dict[str, Any]]:
    """Physical name -> first value of every secret the template declares, for the local
    stack's state folder: a random Stripe webhook signing secret (the dev checkout page signs
    with it), the given dev Stripe key, and the others generated as CloudFormation would."""
    values: dict[str, dict[str, Any]] = {}
    for logical, res in resources_of_type(template, "AWS::SecretsManager::Secret").items():
        if logical == "StripeWebhookSecret":
            value: dict[str, Any] = {"current": "whsec_" + secrets.token_hex(24), "previous": ""}
        elif logical == "StripeApiKeySecret":
            value = {"api_key": stripe_api_key}
        else:
            value = json.loads(_generated_secret(res.get("Properties") or {}))
        values[names[logical]] = value
    return values


def create_secrets(template: dict[str, Any], prefix: str, values: dict[str, str]) -> dict[str, str]:
    """Secrets get the caller's value for their logical id (never a value from the template);
    one the caller gives no value for is generated as CloudFormation would, from its
    ``GenerateSecretString`` (template JSON plus a random string under ``GenerateStringKey``)."""
    sm = client("secretsmanager")
    names = {}
    for logical in resources_of_type(template, "AWS::SecretsManager::Secret"):
        name = physical_name(prefix, logical)
        value = values.get(logical)
        if value is None:
            value = _generated_secret(template["Resources"][logical].get("Properties") or {})
        sm.create_secret(Name=name, SecretString=value)
        names[logical] = name
    return names


def _alias(prefix: str, logical: str) -> str:
    return f"alias/{physical_name(prefix, logical)}"


def create_keys(template: dict[str, Any], prefix: str) -> dict[str, str]:
    """KMS keys of the template's key spec and usage, each named by an alias (what the
    functions' environment then carries as the key id). For the tests (moto enforces no key
    policy); the local stack derives its keys from its state folder's seed instead."""
    kms = client("kms")
    names = {}
    for logical in resources_of_type(template, "AWS::KMS::Key"):
        props = template["Resources"][logical].get("Properties") or {}
        made = kms.create_key(
            KeySpec=props.get("KeySpec", "SYMMETRIC_DEFAULT"),
            KeyUsage=props.get("KeyUsage", "ENCRYPT_DECRYPT"),
            Description=str(props.get("Description", logical)),
        )
        kms.create_alias(
            AliasName=_alias(prefix, logical), TargetKeyId=made["KeyMetadata"]["KeyId"]
        )
        names[logical] = _alias(prefix, logical)
    return names


def function_environment(template: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    """``Globals.Function.Environment.Variables`` with ``!Ref`` resolved to physical names."""
    variables = (
        ((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}
    ).get("Variables", {})
    defaults = {
        k: str(v.get("Default"))
        for k, v in (template.get("Parameters") or {}).items()
        if "Default" in v
    }
    resolved = resolve(variables, {**defaults, **names})
    return {k: str(v) for k, v in resolved.items() if isinstance(v, str | int | float)}


def stack_owned(template: dict[str, Any]) -> frozenset[str]:
    """The ``Globals`` variables that name one of the template's own resources (a table, a
    bucket, a secret, a key): the stack decides those. Every other variable (a parameter's
    default, a literal such as the log level) is configuration an operator's environment
    overrides (docs/local-stack.md, "Configuration")."""
    variables = (
        ((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}
    ).get("Variables", {})
    resources = template.get("Resources") or {}
    return frozenset(
        name
        for name, value in variables.items()
        if isinstance(value, dict) and value.get("Ref") in resources
    )


def provision(
    template: dict[str, Any], *, prefix: str, secret_values: dict[str, str]
) -> Provisioned:
    """Create everything the service stores data in; return names and the functions' env."""
    names = {
        **create_tables(template, prefix),
        **create_buckets(template, prefix),
        **create_secrets(template, prefix, secret_values),
        **create_keys(template, prefix),
    }
    return Provisioned(names=names, environment=function_environment(template, names))


def restored(template: dict[str, Any], *, prefix: str) -> Provisioned:
    """The names and environment :func:`provision` gives, creating nothing (the local stack:
    its adapters take these names as labels of its tables, folders and secret files)."""
    names = {
        logical: physical_name(prefix, logical)
        for kind in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SecretsManager::Secret")
        for logical in resources_of_type(template, kind)
    }
    names.update({k: _alias(prefix, k) for k in resources_of_type(template, "AWS::KMS::Key")})
    return Provisioned(names=names, environment=function_environment(template, names))
