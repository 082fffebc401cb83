"""A hosted run end to end on a moto server that enforces IAM, each function under its own policy.

``template.yaml`` is translated with samtranslator (what ``sam deploy`` uses), and each
function's generated role (its inline policies and the template's managed policies it names)
becomes one IAM user whose keys that function's code runs with. Then: the Runs function
submits (reads only the job-inputs pointer, signs the links, registers and submits the job),
the harness entrypoint runs with the job's real presigned links over HTTP, the Batch events
function scores the job's end, and the sweeper replays the end of a job whose event was lost.
The scheduled tripwire measure reads the check ledger's day counters and may write nothing.
Each step fails with AccessDenied if its function's policy lacks what its code does.

What moto does not check, so neither does this test: resource ARNs of services other than S3
(DynamoDB tables, Batch queues and definitions, iam:PassRole's role: the actions are checked;
those statements are widened to ``*``, and Batch actions are also granted in the lower case
moto asks about them in, :func:`as_moto_checks`),
conditions, the AWS managed policies (Lambda logs, X-Ray: attached in AWS, unused here), the
S3 endpoint policy and bucket policies, an account principal in a role's trust policy
(:func:`link_signer_role`), and the presigned links' expiry. moto does not implement
ECR's GetDownloadUrlForLayer: it authorises the call, then ``support.registry`` answers it.

Since moto 5.2.6, moto asks about some S3 requests by their API operation (``s3:HeadObject``,
``s3:ListObjectsV2``), where AWS authorises them by an IAM action (``s3:GetObject``,
``s3:ListBucket``: the Service Authorization Reference has no ``s3:HeadObject`` action). So each
S3 statement also names the operations AWS authorises under its actions
(:data:`S3_OPERATIONS_BY_ACTION`); that grants nothing AWS would not.
:func:`test_moto_authorises_an_s3_request_by_the_iam_action_aws_checks` is the minimal case,
expected to fail on such a moto (docs/runs-contract.md, "Reports are written once").
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer
from support import registry
from support import runs as fakes
from support.sam import translated

from toolcall300.jobs import harness
from toolcall300.service.api import wiring
from toolcall300.service.domain import licences, runs
from toolcall300.service.domain.images import ImageFacts
from toolcall300.service.errors import UpstreamUnavailable
from toolcall300.service.hosted import batch, flow
from toolcall300.service.local.cfn import load_template
from toolcall300.service.local.provision import provision
from toolcall300.service.local.stack import LOCAL_EDITION_ENV
from toolcall300.service.sdk.aws import client
from toolcall300.service.sdk.ecr import EcrImages, fetch_blob
from toolcall300.service.sdk.runs import BatchApi

pytest.importorskip("samtranslator.translator.transform")  # support.sam translates with it

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT, REGION = "123456789012", "us-east-1"
CASES = fakes.small_corpus(6)
IMAGE = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/acme/adapter@sha256:" + "d" * 64
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
FUNCTIONS = (
    "RunsFunction",
    "BatchEventsFunction",
    "SweeperFunction",
    "TripwiresFunction",
    "LicencesFunction",
    "BadgesFunction",
)


class Resolver:
    """CloudFormation intrinsics in a policy -> the physical names and ARNs made here."""

    def __init__(self, template: dict[str, Any], names: dict[str, str]) -> None:
        self.types = {n: r["Type"] for n, r in template["Resources"].items()}
        self.names = names

    def arn(self, logical: str) -> str:
        kind, name = self.types.get(logical), self.names.get(logical, logical)
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{name}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        return "*"  # moto checks no other service's resource ARNs

    def _var(self, key: str, local: dict[str, Any]) -> str:
        pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
        if key in local:
            return str(self(local[key]))
        if key in pseudo:
            return pseudo[key]
        if key.endswith(".Arn"):
            return self.arn(key[: -len(".Arn")])
        return self.names.get(key, "*")

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict) and len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.names.get(arg, "*")
            if key == "Fn::GetAtt":
                return self.arn(arg[0]) if arg[1] == "Arn" else "*"
            if key == "Fn::Sub":
                text, local = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                return re.sub(r"\$\{([^}]+)\}", lambda m: self._var(m.group(1), local), text)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value


#: The S3 API operations AWS authorises under each IAM action the template grants (AWS:
#: "HeadObject ... you must have the s3:GetObject permission"; "ListObjectsV2 ... you must
#: have the s3:ListBucket permission"; HeadBucket likewise). moto >= 5.2.6 asks about the
#: operation's own name for these; AWS never does.
S3_OPERATIONS_BY_ACTION = {
    "s3:GetObject": ("s3:HeadObject",),
    "s3:ListBucket": ("s3:ListObjectsV2", "s3:ListObjects", "s3:HeadBucket"),
    "s3:PutObject": ("s3:CreateMultipartUpload", "s3:UploadPart", "s3:CompleteMultipartUpload"),
}


def with_s3_operation_names(actions: list[str]) -> list[str]:
    """``actions`` plus the S3 operations AWS authorises under them (for moto >= 5.2.6)."""
    extra = [op for action in actions for op in S3_OPERATIONS_BY_ACTION.get(str(action), ())]
    return sorted({*actions, *extra})


def as_moto_checks(document: dict[str, Any]) -> dict[str, Any]:
    """moto matches S3 resources against the policy but asks about every other service's
    request with the resource ``*``: a statement naming a table or a queue would never match,
    so outside S3 the resource is widened to ``*`` (the action is still checked). S3 actions
    also grant the operations AWS authorises under them (:func:`with_s3_operation_names`)."""
    statements = document["Statement"]
    statements = statements if isinstance(statements, list) else [statements]
    widened = []
    for statement in statements:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        s3_only = all(str(a).startswith("s3:") for a in actions)
        actions = with_s3_operation_names(actions)
        # moto asks about some Batch actions in lower case (batch:describejobdefinitions);
        # AWS compares actions without case, so both spellings mean the same grant.
        actions = sorted({*actions, *(a.lower() for a in actions if a.startswith("batch:"))})
        statement = dict(statement, Action=actions)
        widened.append(statement if s3_only else dict(statement, Resource="*"))
    return {"Version": "2012-10-17", "Statement": widened}


def function_users(template: dict[str, Any], names: dict[str, str]) -> dict[str, dict[str, str]]:
    """One IAM user per function holding exactly its generated role's policies; its keys."""
    iam, cfn, resolve = client("iam"), translated(template), Resolver(template, names)
    keys: dict[str, dict[str, str]] = {}
    # The sweeper as the template had it before it shared RunScoringPolicy: no S3 at all.
    users = [(f, f, True) for f in FUNCTIONS] + [("SweeperFunction", "SweeperWithoutS3", False)]
    for function, who, with_managed in users:
        role = cfn["Resources"][f"{function}Role"]["Properties"]
        user = f"tc300-{who}"
        iam.create_user(UserName=user)
        for policy in role.get("Policies", []):
            document = json.dumps(as_moto_checks(resolve(policy["PolicyDocument"])))
            iam.put_user_policy(
                UserName=user, PolicyName=policy["PolicyName"], PolicyDocument=document
            )
        for managed in role.get("ManagedPolicyArns", []) if with_managed else []:
            if isinstance(managed, dict):  # one of the template's own managed policies
                logical = managed["Ref"]
                document = json.dumps(
                    as_moto_checks(
                        resolve(template["Resources"][logical]["Properties"]["PolicyDocument"])
                    )
                )
                arn = iam.create_policy(PolicyName=f"{who}-{logical}", PolicyDocument=document)[
                    "Policy"
                ]["Arn"]
                iam.attach_user_policy(UserName=user, PolicyArn=arn)
        made = iam.create_access_key(UserName=user)["AccessKey"]
        keys[who] = {
            "AWS_ACCESS_KEY_ID": made["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": made["SecretAccessKey"],
        }
    iam.create_user(UserName="tc300-operator")  # reads what a test must see (the job's env)
    everything = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }
    iam.put_user_policy(
        UserName="tc300-operator", PolicyName="all", PolicyDocument=json.dumps(everything)
    )
    made = iam.create_access_key(UserName="tc300-operator")["AccessKey"]
    keys["operator"] = {
        "AWS_ACCESS_KEY_ID": made["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": made["SecretAccessKey"],
    }
    return keys


def link_signer_role(template: dict[str, Any], names: dict[str, str]) -> str:
    """The template's JobLinkSignerRole with its own inline policies (S3 ARNs as made here).

    Its trust names this account (``:root``), which AWS reads as any principal of the account
    whose own policy allows ``sts:AssumeRole`` on it. moto checks trust policies but reads that
    principal literally, so the function users are named beside it; whether a function may
    assume the role is still its own generated policy's ``sts:AssumeRole`` grant."""
    iam, resolve = client("iam"), Resolver(template, names)
    props = template["Resources"]["JobLinkSignerRole"]["Properties"]
    trust = resolve(props["AssumeRolePolicyDocument"])
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}
    users = [f"arn:aws:iam::{ACCOUNT}:user/tc300-{who}" for who in FUNCTIONS]
    statement["Principal"] = {"AWS": [statement["Principal"]["AWS"], *users]}
    arn = iam.create_role(
        RoleName="tc300-iam-link-signer",
        AssumeRolePolicyDocument=json.dumps(trust),
        MaxSessionDuration=props["MaxSessionDuration"],
    )["Role"]["Arn"]
    for policy in props["Policies"]:
        iam.put_role_policy(
            RoleName="tc300-iam-link-signer",
            PolicyName=policy["PolicyName"],
            PolicyDocument=json.dumps(resolve(policy["PolicyDocument"])),
        )
    return str(arn)


def batch_resources(template: dict[str, Any]) -> dict[str, str]:
    """The template's compute environment, queue and harness job definition (moto Batch)."""
    iam, ec2, batch = client("iam"), client("ec2"), client("batch")
    res = template["Resources"]
    trust = json.dumps(res["AdapterExecutionRole"]["Properties"]["AssumeRolePolicyDocument"])
    execution = iam.create_role(RoleName="tc300-iam-execution", AssumeRolePolicyDocument=trust)[
        "Role"
    ]["Arn"]
    vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.30.0.0/20")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="tc300-iam-jobs", Description="jobs", VpcId=vpc)[
        "GroupId"
    ]
    service = iam.create_role(RoleName="tc300-iam-batch", AssumeRolePolicyDocument="{}")["Role"][
        "Arn"
    ]
    sized = template["Mappings"]["Capacity"][
        template["Parameters"]["ExpectedRunsPerDay"]["Default"]
    ]
    ce = batch.create_compute_environment(
        computeEnvironmentName="tc300-iam-ce",
        type="MANAGED",
        state="ENABLED",
        computeResources={
            "type": "FARGATE",
            "maxvCpus": sized["MaxvCpus"],
            "subnets": [subnet],
            "securityGroupIds": [group],
        },
        serviceRole=service,
    )["computeEnvironmentArn"]
    queue = batch.create_job_queue(
        jobQueueName="tc300-iam-q", state="ENABLED", priority=1,
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": ce}],
    )["jobQueueArn"]  # fmt: skip
    props = res["HarnessJobDefinition"]["Properties"]
    definition = batch.register_job_definition(
        jobDefinitionName="tc300-iam-harness",
        type="container",
        platformCapabilities=props["PlatformCapabilities"],
        containerProperties={
            "image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/toolcall300/harness@sha256:"
            + "e" * 64,
            "executionRoleArn": execution,
            "resourceRequirements": [
                {"type": "VCPU", "value": "1"},
                {"type": "MEMORY", "value": "2048"},
            ],
            "networkConfiguration": {"assignPublicIp": "DISABLED"},
        },
        timeout={"attemptDurationSeconds": props["Timeout"]["AttemptDurationSeconds"]},
    )["jobDefinitionArn"]
    return {"BATCH_JOB_QUEUE": queue, "BATCH_JOB_DEFINITION": definition}


@pytest.fixture
def enforced(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    # moto, not the SQLite edition an in-process local stack of this session has selected
    # (its state folder and its URL, which the job's signed links would have pointed at)
    for name in LOCAL_EDITION_ENV:
        monkeypatch.delenv(name, raising=False)
    requests.post(f"{endpoint}/moto-api/reset", timeout=10)  # moto's state is per process
    batch.clear_cache()  # job definitions registered on an earlier server are gone
    requests.post(f"{endpoint}/moto-api/config", json={"batch": {"use_docker": False}}, timeout=10)
    # An AWS edition of its own, on this server; the stack's edition (its routes' and its
    # worker pool's) is never this process's, so nothing here closes its database.
    with wiring.installed():
        yield from _enforced(endpoint, monkeypatch)
    server.stop()


def _enforced(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    template = load_template(ROOT / "template.yaml")
    made = provision(template, prefix="tc300iam", secret_values={})
    for key, value in {**made.environment, **batch_resources(template)}.items():
        monkeypatch.setenv(key, value)
    corpus = fakes.corpus_bytes(CASES)
    s3 = client("s3")
    s3.put_object(Bucket=made.names["CorpusBucket"], Key=harness.CORPUS_FILE, Body=corpus)
    for key, body in harness.derive_inputs(corpus).items():  # what the corpus upload derives
        s3.put_object(Bucket=made.names["CorpusBucket"], Key=key, Body=body)
    keys = function_users(template, made.names)
    monkeypatch.setenv("JOB_LINK_ROLE_ARN", link_signer_role(template, made.names))
    # From here on every request needs credentials whose policy allows it.
    requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0", timeout=10)
    try:
        yield {"keys": keys, "names": made.names, "endpoint": endpoint, "monkeypatch": monkeypatch}
    finally:
        requests.post(
            f"{endpoint}/moto-api/reset-auth", data=str(float("inf")).encode(), timeout=10
        )


def act_as(stack: dict[str, Any], who: str) -> None:
    """Run the next calls with ``who``'s keys (a function's policy, or the operator's)."""
    for key, value in stack["keys"][who].items():
        stack["monkeypatch"].setenv(key, value)
    wiring.renew()


def submit_the_job(stack: dict[str, Any], commit: str, *, now: datetime = NOW) -> runs.Run:
    """POST /runs's work as the Runs function: the run, then its job with its two links."""
    act_as(stack, "RunsFunction")
    body = {"image": IMAGE, "ref": "refs/heads/main", "commit": commit}
    run, _ = runs.submit(
        wiring.edition().runs,
        runs.parse_submission(body, local=False),
        team="acme",
        licence_id="lic_iam",
        take_quota=wiring.edition().quota_taker(NOW),
        now=NOW,
    )
    run = flow.dispatch(wiring.edition().hosted_deps, run, now=now)
    assert run.status == "queued" and run.job_id, run.failure  # submission was allowed
    return run


def submit_and_run_the_job(stack: dict[str, Any], commit: str) -> runs.Run:
    run = submit_the_job(stack, commit)
    act_as(stack, "operator")
    job = client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]
    env = {e["name"]: e["value"] for e in job["container"]["environment"]}
    entry = _entrypoint()
    with enforcement_paused(stack):  # moto answers 500 to a presigned request under IAM
        assert entry.main(fakes.ECHO, {"PATH": "/usr/bin:/bin", **env}) == 0  # the real links
    return run


@contextlib.contextmanager
def enforcement_paused(stack: dict[str, Any]) -> Iterator[None]:
    """moto cannot authorise a presigned (query-string signed) request while it enforces IAM:
    it fails with a 500. The job's two link requests run with enforcement paused; what AWS
    checks for them, the signer's own right to the key, is asserted directly in
    :func:`test_the_runs_function_may_sign_exactly_the_two_links`."""
    requests.post(f"{stack['endpoint']}/moto-api/reset-auth", data=b"inf", timeout=10)
    try:
        yield
    finally:
        requests.post(f"{stack['endpoint']}/moto-api/reset-auth", data=b"0", timeout=10)


def _entrypoint() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tc300_entry", ROOT / "infra" / "harness" / "entrypoint.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_hosted_run_scores_with_each_function_under_its_own_generated_policy(
    enforced: dict[str, Any],
) -> None:
    run = submit_and_run_the_job(enforced, "abc1234")
    act_as(enforced, "operator")
    job = client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]
    act_as(enforced, "BatchEventsFunction")
    event = {
        "source": "aws.batch",
        "detail-type": "Batch Job State Change",
        "detail": dict(job, status="SUCCEEDED"),
    }
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event, now=NOW)
    assert ended is not None and ended.status == "scored", ended and ended.failure
    assert ended.summary is not None and ended.summary["exact"] == len(CASES)


def test_the_sweeper_replays_a_lost_job_end_under_its_own_policy(enforced: dict[str, Any]) -> None:
    run = submit_and_run_the_job(enforced, "def5678")
    act_as(enforced, "SweeperFunction")  # no event arrived; Batch says the job SUCCEEDED
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=NOW)
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "scored")]


def test_a_function_without_the_right_is_refused(enforced: dict[str, Any]) -> None:
    """The tier is real: the sweeper may not register job definitions (so it cannot choose an
    image or a role), the runs function may not read labels."""
    act_as(enforced, "SweeperFunction")
    with pytest.raises(ClientError, match=r"AccessDenied|not authorized"):
        client("batch").register_job_definition(
            jobDefinitionName="x-job", type="container", containerProperties={"image": "x"}
        )
    act_as(enforced, "RunsFunction")
    with pytest.raises(ClientError, match=r"AccessDenied|Forbidden|403"):
        client("s3").get_object(Bucket=enforced["names"]["CorpusBucket"], Key=harness.CORPUS_FILE)


def test_the_runs_function_pages_a_teams_baselines_under_its_own_policy(
    enforced: dict[str, Any],
) -> None:
    """GET /teams/{team}/baselines's work as the Runs function: each page is a Query on the
    ``baselines_by_team`` index with ``Limit`` and, past the first, ``ExclusiveStartKey``."""
    act_as(enforced, "operator")
    made = []
    for i, second in enumerate((1, 1, 2)):  # two set in the same second
        run = runs.Run(
            run_id=runs.new_run_id(NOW.replace(microsecond=i * 1000)),
            team="acme",
            licence_id="lic_iam",
            adapter={"kind": "image"},
            ref="main",
            commit=f"abc123{i}",
            status="scored",
            created_at="2026-12-01T00:00:00Z",
            verdict="baseline_set",
            baseline_set_at=f"2026-12-01T00:00:0{second}Z",
            version=1,
        )
        wiring.edition().runs.put(run.to_item(), expected_version=None)
        made.append(run.run_id)
    act_as(enforced, "RunsFunction")
    first, cursor = runs.baselines_page(wiring.edition().runs, "acme", limit=2)
    assert first[0].run_id == made[2] and cursor is not None
    rest, end = runs.baselines_page(wiring.edition().runs, "acme", limit=2, cursor=cursor)
    assert sorted(r.run_id for r in first + rest) == sorted(made) and end is None


def test_the_job_links_are_signed_as_a_role_that_may_do_exactly_the_two_things(
    enforced: dict[str, Any],
) -> None:
    """A presigned link carries its signer's rights: the Runs function assumes the link-signing
    role (its session's end is known), which holds GetObject on the job inputs and PutObject
    on the answers, and no more of either bucket; the Runs function itself uploads nothing."""
    names = enforced["names"]
    act_as(enforced, "RunsFunction")
    with pytest.raises(ClientError, match=r"AccessDenied|Forbidden|403"):
        client("s3").put_object(
            Bucket=names["ReportsBucket"], Key="answers/acme/run_x/attempt-1.json", Body=b"{}"
        )
    links = wiring.edition().job_link_objects(session_name="tc300-test")
    assert links.session_expires is not None  # what the run's links_expire_at is taken from
    s3 = links.reports.s3
    pointer = json.loads(
        s3.get_object(Bucket=names["CorpusBucket"], Key=harness.INPUTS_POINTER)["Body"].read()
    )
    assert s3.get_object(Bucket=names["CorpusBucket"], Key=pointer["key"])["Body"].read()
    s3.put_object(
        Bucket=names["ReportsBucket"], Key="answers/acme/run_x/attempt-1.json", Body=b"{}"
    )
    for bucket, key in (
        (names["ReportsBucket"], "reports/acme/run_x/attempt-1.json"),
        (names["CorpusBucket"], "job-inputs/forged.jsonl"),
    ):
        with pytest.raises(ClientError, match=r"AccessDenied|Forbidden|403"):
            s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
    with pytest.raises(ClientError, match=r"AccessDenied|Forbidden|403"):
        s3.get_object(Bucket=names["CorpusBucket"], Key=harness.CORPUS_FILE)  # the labels


def test_the_sweeper_renews_a_queued_jobs_links_under_its_own_policy(
    enforced: dict[str, Any],
) -> None:
    """A job still RUNNABLE whose links would die: the sweeper signs fresh ones as the
    link-signing role, submits a successor on the old job's definition, ends the old job."""
    now = datetime.now(UTC)  # the signing session's end is real time
    run = submit_the_job(enforced, "feed123", now=now)
    act_as(enforced, "operator")
    soon = int(now.timestamp()) + 60
    assert runs.update(
        wiring.edition().runs, run.run_id, lambda r: replace(r, links_expire_at=soon)
    )
    real = BatchApi.describe_job  # moto without Docker ends every job at submission

    def runnable(self: BatchApi, job_id: str) -> dict[str, Any] | None:
        job = real(self, job_id)
        return dict(job, status="RUNNABLE") if job and job_id == run.job_id else job

    enforced["monkeypatch"].setattr(BatchApi, "describe_job", runnable)
    act_as(enforced, "SweeperFunction")
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=now)
    assert [(r.run_id, r.status, r.job_renewals) for r in changed] == [(run.run_id, "queued", 1)]
    assert changed[0].job_id != run.job_id


def test_a_sweeper_refused_s3_leaves_the_run_for_the_next_sweep_instead_of_failing_it(
    enforced: dict[str, Any],
) -> None:
    """The sweeper's role once had no S3 read, and a replayed run failed as output_malformed.
    A refusal is not "the answers are missing": the run stays in flight for the next sweep,
    and a sweeper with the template's policy scores it."""
    run = submit_and_run_the_job(enforced, "0badc0de")
    act_as(enforced, "SweeperWithoutS3")
    assert flow.sweep_now(wiring.edition().hosted_deps, now=NOW) == []
    act_as(enforced, "operator")
    still = runs.load(wiring.edition().runs, run.run_id)
    assert still is not None and still.status not in runs.FINAL and still.failure is None
    act_as(enforced, "SweeperFunction")
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=NOW)
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "scored")]


def test_the_runs_function_may_check_an_adapter_image_in_ecr(enforced: dict[str, Any]) -> None:
    """Size, manifest and the single image's config blob (its platform), under the Runs
    function's policy. moto lacks GetDownloadUrlForLayer: ``support.registry`` answers it with
    a link to a local blob server, after moto has authorised the call."""
    act_as(enforced, "operator")
    ecr = client("ecr")
    ecr.create_repository(repositoryName="acme/adapter")
    blob = registry.config_blob("arm64", variant="v8")
    manifest = registry.single_manifest(blob)
    ecr.put_image(repositoryName="acme/adapter", imageManifest=json.dumps(manifest), imageTag="v1")
    detail = ecr.describe_images(repositoryName="acme/adapter", imageIds=[{"imageTag": "v1"}])
    digest = detail["imageDetails"][0]["imageDigest"]
    image = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/acme/adapter@{digest}"
    over_http = functools.partial(fetch_blob, schemes=("http",))
    with (
        registry.BlobServer() as blobs,
        registry.moto_download_links(enforced["monkeypatch"], blobs),
    ):
        blobs.add(blob)
        act_as(enforced, "RunsFunction")
        assert EcrImages(fetch=over_http).describe(image) == ImageFacts(
            detail["imageDetails"][0]["imageSizeInBytes"], frozenset({"linux/arm64"})
        )
        act_as(enforced, "SweeperFunction")  # a role without ECR rights learns nothing
        with pytest.raises(ClientError, match=r"AccessDenied|not authorized"):
            client("ecr").get_download_url_for_layer(
                repositoryName="acme/adapter", layerDigest=manifest["config"]["digest"]
            )


def test_the_tripwire_measure_reads_the_ledger_under_its_own_policy_and_writes_nothing(
    enforced: dict[str, Any],
) -> None:
    from toolcall300.service import tripwires
    from toolcall300.service.errors import UpstreamUnavailable

    act_as(enforced, "operator")
    wiring.edition().ledger.count(NOW.strftime("%Y-%m-%d"), {"paid": 20, "refunded": 2})
    act_as(enforced, "TripwiresFunction")
    window = tripwires.measure(NOW, wiring.edition().ledger)
    assert (window["paid_checks"], window["tripwires"]["refunds_over_5_percent"]) == (20, True)
    with pytest.raises(UpstreamUnavailable):  # AccessDenied: the ledger is read-only to it
        wiring.edition().ledger.count(NOW.strftime("%Y-%m-%d"), {"paid": 1})


# ------------------------------------------------------------------------ a missing report

MISSING_REPORT = "reports/acme/run_missing/attempt-1.json"


@pytest.mark.parametrize("who", ["BatchEventsFunction", "SweeperFunction"])
def test_a_missing_report_is_missing_not_forbidden_under_the_scoring_policy(
    enforced: dict[str, Any], who: str
) -> None:
    """What S3 answers the functions that score a run (RunScoringPolicy) for a report that is
    not there. AWS: HeadObject and GetObject of a missing key answer 404 only to a caller that
    also holds ``s3:ListBucket`` on the bucket, 403 otherwise; moto answers 404 either way, so
    the right is checked directly (a listing of ``reports/``). Then the report is written once
    under the same policy: the write is conditional (``If-None-Match: *``), no probe first, and
    a second write is the store's conflict, not an overwrite."""
    from toolcall300.service.errors import NotFound, StoreConflict
    from toolcall300.service.sdk.runs import ReportObjects

    bucket = enforced["names"]["ReportsBucket"]
    act_as(enforced, who)
    s3 = client("s3")
    s3.list_objects_v2(Bucket=bucket, Prefix="reports/")  # the right that makes a 404 a 404
    with pytest.raises(ClientError) as head:
        s3.head_object(Bucket=bucket, Key=MISSING_REPORT)
    assert head.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(ClientError) as get:
        s3.get_object(Bucket=bucket, Key=MISSING_REPORT)
    assert get.value.response["Error"]["Code"] == "NoSuchKey"
    reports = ReportObjects(bucket)
    with pytest.raises(NotFound):
        reports.get(MISSING_REPORT)
    reports.put_once(MISSING_REPORT, b'{"first": true}')
    with pytest.raises(StoreConflict):
        reports.put_once(MISSING_REPORT, b'{"second": true}')
    assert reports.get(MISSING_REPORT) == b'{"first": true}'


def test_the_runs_function_cannot_list_reports(enforced: dict[str, Any]) -> None:
    """The internet-facing Runs function reads only the report its run record names, after the
    write: it holds no ``s3:ListBucket``, so on AWS a missing report would answer it 403, not
    404 (docs/runs-contract.md). The tier holds that it cannot list."""
    act_as(enforced, "RunsFunction")
    with pytest.raises(ClientError, match=r"AccessDenied"):
        client("s3").list_objects_v2(Bucket=enforced["names"]["ReportsBucket"], Prefix="reports/")


def _moto_asks_by_operation() -> bool:
    import moto

    version = tuple(int(p) for p in re.findall(r"\d+", moto.__version__)[:3])
    return version >= (5, 2, 6)


@pytest.mark.xfail(
    _moto_asks_by_operation(),
    reason="moto >= 5.2.6 authorises HeadObject as s3:HeadObject, which no AWS policy grants",
    raises=AssertionError,  # the 403 itself, never a setup error
    strict=True,
)
def test_moto_authorises_an_s3_request_by_the_iam_action_aws_checks() -> None:
    """The minimal case of moto 5.2.6 against AWS, with no aliasing: a user holding exactly ``s3:GetObject``
    on ``reports/*`` and ``s3:ListBucket`` on the bucket asks for a missing report. AWS
    answers 404 (HeadObject is authorised as s3:GetObject; ListBucket makes a missing key a
    404). moto 5.2.5 agrees; 5.2.6 answers 403. Strict: when moto is fixed, this passes and
    the xfail must go."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        requests.post(f"{endpoint}/moto-api/reset", timeout=10)
        root = {
            "endpoint_url": endpoint,
            "region_name": REGION,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        import boto3

        boto3.client("s3", **root).create_bucket(Bucket="tc300-min")
        iam = boto3.client("iam", **root)
        iam.create_user(UserName="minimal")
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "s3:GetObject",
                 "Resource": "arn:aws:s3:::tc300-min/reports/*"},
                {"Effect": "Allow", "Action": "s3:ListBucket",
                 "Resource": "arn:aws:s3:::tc300-min"},
            ],
        }  # fmt: skip
        iam.put_user_policy(UserName="minimal", PolicyName="p", PolicyDocument=json.dumps(policy))
        made = iam.create_access_key(UserName="minimal")["AccessKey"]
        requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0", timeout=10)
        user = {
            **root,
            "aws_access_key_id": made["AccessKeyId"],
            "aws_secret_access_key": made["SecretAccessKey"],
        }
        s3 = boto3.client("s3", **user)
        with pytest.raises(ClientError) as head:
            s3.head_object(Bucket="tc300-min", Key=MISSING_REPORT)
        assert head.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    finally:
        requests.post(f"{endpoint}/moto-api/reset-auth", data=b"inf", timeout=10)
        server.stop()


def _handler_call(stack: dict[str, Any], who: str, method: str, target: str, **kw: Any) -> Any:
    """One request through ``who``'s real handler (the gateway's routes) under its policy."""
    from toolcall300.service.local.httpapi import bind_routes, invoke

    # as the template's Globals set them; metrics off (an earlier test's buffered count would
    # otherwise be flushed, and refused without the namespace, by this handler)
    stack["monkeypatch"].setenv("POWERTOOLS_METRICS_NAMESPACE", "TOOLCALL300")
    stack["monkeypatch"].setenv("POWERTOOLS_METRICS_DISABLED", "true")
    act_as(stack, who)
    routes = bind_routes(ROOT, load_template(ROOT / "template.yaml"))
    mine = [r for r in routes if r.route.function == who]
    return invoke(mine, method=method, target=target, source_ip="198.51.100.7", **kw)


def test_the_badge_is_set_by_the_licences_function_and_drawn_by_the_badges_function(
    enforced: dict[str, Any],
) -> None:
    """PUT /teams/{team}/badge as the Licences function, GET /badges/... as the Badges
    function, each through its real handler under its own generated policy; the Badges
    function (public, no key) may read a team's settings item and its runs by index, and
    may neither write the licences table nor scan it."""
    act_as(enforced, "operator")
    key, owner = licences.issue_manual(
        wiring.edition().licences, tier="team", team_name="acme", now=NOW
    )
    team = str(owner.team)
    run = runs.Run(
        run_id=runs.new_run_id(NOW),
        team=team,
        licence_id=owner.licence_id,
        adapter={"kind": "image"},
        ref="refs/heads/feature/x",
        commit="abc1234",
        status="scored",
        created_at="2026-12-01T12:00:00Z",
        finished_at="2026-12-01T12:05:00Z",
        verdict="regression",
        summary={"cases": 300, "exact": 271},
        version=1,
    )
    wiring.edition().runs.put(run.to_item(), expected_version=None)
    target = f"/badges/{team}/feature/x.svg"
    status, _, _ = _handler_call(enforced, "BadgesFunction", "GET", target, headers=[], body=b"")
    assert status == 404  # private by default (the settings item is read, and absent)
    status, _, body = _handler_call(
        enforced,
        "LicencesFunction",
        "PUT",
        f"/teams/{team}/badge",
        headers=[("authorization", f"Bearer {key}"), ("content-type", "application/json")],
        body=b'{"public": true}',
    )
    assert status == 200, body
    status, headers, body = _handler_call(
        enforced, "BadgesFunction", "GET", target, headers=[], body=b""
    )
    assert status == 200 and headers["content-type"] == "image/svg+xml", body
    assert "regression · 271/300 exact" in body.decode()
    act_as(enforced, "BadgesFunction")
    with pytest.raises(UpstreamUnavailable) as refused:
        licences.set_badge_public(wiring.edition().licences, owner, team, False)
    assert "AccessDenied" in str(refused.value.__cause__)
    with pytest.raises(UpstreamUnavailable):
        wiring.edition().licences.scan()
    assert licences.badge_public(wiring.edition().licences, team)
