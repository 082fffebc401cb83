"""One real user journey against a deployed stack (infra/README.md, "The end-to-end test").

Runs only with ``TOOLCALL300_E2E_STACK`` naming a deployed stack and AWS credentials that may
describe it and write its licences table; skipped otherwise, saying what to set. It issues a
team licence with the admin CLI, submits a hosted run of an image already in ECR (the stack's
own ``HarnessImage``, whose CMD is the reference normaliser, unless ``TOOLCALL300_E2E_IMAGE``
names another) with ``toolcall300 ci``, waits for it by polling until a deadline, checks the
stored report, and checks that nothing the team can read about the run holds a label. The
licence is revoked at the end. Nothing here runs against moto: it costs one Fargate job.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcall300.client.http import request_json

ROOT = Path(__file__).resolve().parents[2]
STACK = os.environ.get("TOOLCALL300_E2E_STACK", "")
#: Fields that carry the corpus's labels or their explanations; a team's view of a run has none.
LABEL_FIELDS = frozenset({"expected", "rationale", "labels", "accept"})


def _why_not() -> str | None:
    if not STACK:
        return (
            "set TOOLCALL300_E2E_STACK to a deployed stack's name (and AWS credentials, e.g. "
            "AWS_PROFILE, that may describe it and write its licences table) to run the "
            "end-to-end journey; optional: TOOLCALL300_E2E_IMAGE, TOOLCALL300_E2E_PLATFORM, "
            "TOOLCALL300_E2E_TIMEOUT (infra/README.md)"
        )
    if os.environ.get("AWS_ENDPOINT_URL"):
        return "AWS_ENDPOINT_URL is set: the end-to-end journey runs against AWS, not an emulator"
    import boto3

    if boto3.Session().get_credentials() is None:
        return f"TOOLCALL300_E2E_STACK={STACK} but no AWS credentials were found"
    return None


pytestmark = [
    pytest.mark.e2e_aws,
    pytest.mark.skipif(_why_not() is not None, reason=str(_why_not())),
]


def cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """``toolcall300 ARGV`` as a user runs it; its stdout (a failure shows its stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "toolcall300", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


@pytest.fixture(scope="module")
def stack() -> dict[str, str]:
    """The stack's API URL, harness image and licences table, as CloudFormation says."""
    import boto3

    cfn = boto3.client("cloudformation")
    (found,) = cfn.describe_stacks(StackName=STACK)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}
    parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in found["Parameters"]}
    table = cfn.describe_stack_resource(StackName=STACK, LogicalResourceId="LicencesTable")
    return {
        "api": outputs["ApiUrl"].rstrip("/"),
        "image": os.environ.get("TOOLCALL300_E2E_IMAGE") or parameters["HarnessImage"],
        "licences_table": table["StackResourceDetail"]["PhysicalResourceId"],
    }


@pytest.fixture(scope="module")
def team_key(stack: dict[str, str]) -> Iterator[str]:
    """A new team's licence, issued as an operator does (admin CLI); revoked afterwards."""
    team = f"e2e-{secrets.token_hex(4)}"
    out = cli(
        "admin", "--table", stack["licences_table"], "licence", "issue", "--tier", "team",
        "--team", team,
    )  # fmt: skip
    first, *_, key = out.strip().splitlines()
    licence_id = first.split()[1].rstrip(":")
    try:
        yield key.strip()
    finally:
        cli("admin", "--table", stack["licences_table"], "licence", "revoke", licence_id)


def label_fields(value: Any, path: str = "$") -> list[str]:
    """Where in ``value`` a key that carries labels appears."""
    if isinstance(value, dict):
        here = [f"{path}.{k}" for k in value if k in LABEL_FIELDS]
        return here + [p for k, v in value.items() for p in label_fields(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in label_fields(v, f"{path}[{i}]")]
    return []


def test_a_team_scores_an_image_on_the_deployed_stack(stack: dict[str, str], team_key: str) -> None:
    timeout = float(os.environ.get("TOOLCALL300_E2E_TIMEOUT", "1800"))
    platform = os.environ.get("TOOLCALL300_E2E_PLATFORM", "linux/amd64")
    commit = secrets.token_hex(6)
    out = cli(
        "ci", "--api", stack["api"], "--image", stack["image"], "--platform", platform,
        "--ref", "refs/heads/e2e", "--commit", commit, "--baseline", "e2e",
        "--wait", "--timeout", str(timeout), "--poll", "10", "--json",
        env={"TOOLCALL300_LICENCE": team_key},
        timeout=timeout + 120,  # ci's own deadline ends the polling first
    )  # fmt: skip
    run = json.loads(out)
    assert run["status"] == "scored", run.get("failure")
    assert run["verdict"] == "baseline_set"  # a new team's first run on its baseline
    assert run["commit"] == commit and run["attempts"] >= 1
    assert isinstance(run["sandbox"]["network_isolated"], bool)
    headers = {"Authorization": f"Bearer {team_key}"}
    _, _, report = request_json("GET", f"{stack['api']}{run['report_url']}", headers=headers)
    score = report["score"]
    assert score["cases"] == len(score["per_case"]) == run["summary"]["cases"] > 0
    assert score["exact"] == run["summary"]["exact"]  # the record says what the report says
    # Nothing the team can read about its run carries a label
    _, _, again = request_json("GET", f"{stack['api']}/runs/{run['run_id']}", headers=headers)
    _, _, listing = request_json("GET", f"{stack['api']}/teams/{run['team']}/runs", headers=headers)
    assert label_fields(again) == [] and label_fields(run) == [] and label_fields(listing) == []
