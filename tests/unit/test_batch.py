"""The AWS path of hosted runs on moto: job definitions per digest, submission, Batch events.

moto cannot run containers: jobs are submitted for real (moto Batch without Docker) and the
job-state events are built in EventBridge's documented shape. The harness itself is run in
tests/unit/test_batch_harness.py.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from moto.core.config import default_user_config
from support import registry
from support import runs as fakes

from toolcall300.jobs import harness
from toolcall300.service.api import deps, wiring
from toolcall300.service.domain import images, runs
from toolcall300.service.domain.images import ImageFacts
from toolcall300.service.domain.licences import issue_manual
from toolcall300.service.errors import (
    NotFound,
    PayloadTooLarge,
    TooManyRequests,
    UpstreamUnavailable,
)
from toolcall300.service.hosted import batch, events, flow, submit
from toolcall300.service.local.cfn import resolve
from toolcall300.service.sdk.aws import SIGNING_SESSION_SECONDS, client
from toolcall300.service.sdk.dynamo import LicenceTable
from toolcall300.service.sdk.ecr import EcrImages, fetch_blob
from toolcall300.service.sdk.runs import BatchApi, ReportObjects
from toolcall300.service.sdk.s3 import CorpusObjects, upload_corpus

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/acme/adapter@sha256:" + "b" * 64
OTHER = "123456789012.dkr.ecr.us-east-1.amazonaws.com/acme/adapter@sha256:" + "c" * 64
CASES = fakes.small_corpus(8)
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
UNPATCHED_DESCRIBE = EcrImages.describe  # batch_env stands in for it; one test puts it back
ANY_PLATFORM = ImageFacts(2**27, frozenset({"linux/amd64", "linux/arm64"}), index=True)


@pytest.fixture(scope="module")
def batch_resources(aws_session: Any, template: dict[str, Any]) -> dict[str, str]:
    """The template's Batch compute environment, harness job definition and roles, created on
    moto once per module (properties read from template.yaml): making them was most of every
    test's setup. Each test gets its own job queue on them (``batch_env``)."""
    iam, ec2, b = client("iam"), client("ec2"), client("batch")
    res = template["Resources"]
    names: dict[str, str] = {}
    for logical in ("AdapterExecutionRole",):
        role_name = f"tc300-unit-{logical}"
        doc = json.dumps(res[logical]["Properties"]["AssumeRolePolicyDocument"])
        names[logical] = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=doc)["Role"][
            "Arn"
        ]
        names[f"{logical}.Arn"] = names[logical]
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName="adapters", Description="none", VpcId=vpc)["GroupId"]
    ce_props = res["AdapterComputeEnvironment"]["Properties"]
    sized = template["Parameters"]["ExpectedRunsPerDay"]["Default"]  # MaxvCpus by FindInMap
    compute = dict(
        ce_props["ComputeResources"],
        Subnets=[subnet],
        SecurityGroupIds=[sg],
        MaxvCpus=template["Mappings"]["Capacity"][sized]["MaxvCpus"],
    )
    # moto wants a service role; real Batch uses its service-linked role when none is given
    service_role = iam.create_role(RoleName="tc300-unit-batch", AssumeRolePolicyDocument="{}")[
        "Role"
    ]["Arn"]
    ce = b.create_compute_environment(
        computeEnvironmentName="tc300-unit-ce",
        type=ce_props["Type"],
        state=ce_props["State"],
        computeResources=_lower(compute),
        serviceRole=service_role,
    )["computeEnvironmentArn"]
    jd_props = resolve(
        res["HarnessJobDefinition"]["Properties"],
        {**names, "HarnessImage": "public.ecr.aws/toolcall300/harness:1"},
    )
    container = _lower(jd_props["ContainerProperties"])
    container["executionRoleArn"] = names["AdapterExecutionRole"]
    harness_def = b.register_job_definition(
        jobDefinitionName="tc300-unit-harness",
        type="container",
        platformCapabilities=jd_props["PlatformCapabilities"],
        containerProperties=container,
        timeout={"attemptDurationSeconds": jd_props["Timeout"]["AttemptDurationSeconds"]},
    )["jobDefinitionArn"]
    # The links are signed as the template's link-signing role (moto checks no trust policy).
    signer = iam.create_role(RoleName="tc300-unit-links", AssumeRolePolicyDocument="{}")["Role"][
        "Arn"
    ]
    return {"compute_environment": ce, "definition": harness_def, "signer": signer}


_QUEUES = itertools.count()


@pytest.fixture
def batch_env(
    aws: Any, batch_resources: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """A job queue of its own on the module's Batch resources, the functions' settings
    pointed at it, and the corpus and its job inputs in the (emptied) corpus bucket."""
    monkeypatch.setitem(default_user_config, "batch", {"use_docker": False})
    # The images these tests name exist in ECR as far as POST /runs can tell (the ECR
    # adapter itself is tested against moto below).
    monkeypatch.setattr(EcrImages, "describe", lambda _self, _image: ANY_PLATFORM)
    monkeypatch.delenv("TOOLCALL300_LOCAL_STACK", raising=False)  # a local stack ran earlier
    queue = client("batch").create_job_queue(
        jobQueueName=f"tc300-unit-q-{next(_QUEUES)}",
        state="ENABLED",
        priority=1,
        computeEnvironmentOrder=[
            {"order": 1, "computeEnvironment": batch_resources["compute_environment"]}
        ],
    )["jobQueueArn"]
    monkeypatch.setenv("JOB_LINK_ROLE_ARN", batch_resources["signer"])
    monkeypatch.setenv("BATCH_JOB_QUEUE", queue)
    monkeypatch.setenv("BATCH_JOB_DEFINITION", batch_resources["definition"])
    monkeypatch.setenv("RUNS_PER_DAY", "3")
    wiring.renew()
    batch.clear_cache()
    bucket = aws.names["CorpusBucket"]
    corpus = fakes.corpus_bytes(CASES)
    client("s3").put_object(Bucket=bucket, Key="toolcall300.jsonl", Body=corpus)
    for key, body in harness.derive_inputs(corpus).items():  # what the corpus upload derives
        client("s3").put_object(Bucket=bucket, Key=key, Body=body)
    yield {"queue": queue, "definition": batch_resources["definition"]}
    wiring.renew()
    batch.clear_cache()


def _lower(value: Any) -> Any:
    """CloudFormation's PascalCase properties -> the Batch API's camelCase."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = k[0].lower() + k[1:]
            key = {"securityGroupIds": "securityGroupIds", "maxvCpus": "maxvCpus"}.get(key, key)
            out[key] = v if key in ("type", "value") else _lower(v)
        return out
    if isinstance(value, list):
        return [_lower(v) for v in value]
    return value


def team_key(aws: Any, team: str = "acme", tier: str = "team") -> str:
    key, _ = issue_manual(
        LicenceTable(aws.names["LicencesTable"]),
        tier=tier,
        team_name=team if tier == "team" else None,
        now=NOW,
    )
    return key


def post(
    call: Any, key: str, body: dict[str, Any], **headers: str
) -> tuple[int, dict[str, str], Any]:
    status, out_headers, data = call(
        "POST",
        "/runs",
        headers={"authorization": f"Bearer {key}", **headers},
        body=json.dumps(body).encode(),
    )
    return int(status), out_headers, data


def image_body(image: str = IMAGE, **over: Any) -> dict[str, Any]:
    return {"image": image, "ref": "refs/heads/main", "commit": "abc1234", **over}


def test_one_job_definition_per_digest_cached(batch_env: dict[str, str]) -> None:
    api = BatchApi()
    first = batch.ensure_definition(api, IMAGE, batch_env["definition"])
    batch.clear_cache()  # a cold Lambda finds the registered one instead of registering again
    assert batch.ensure_definition(api, IMAGE, batch_env["definition"]) == first
    other = batch.ensure_definition(api, OTHER, batch_env["definition"])
    assert other != first
    found = client("batch").describe_job_definitions(
        jobDefinitionName=batch.definition_name(IMAGE), status="ACTIVE"
    )
    assert len(found["jobDefinitions"]) == 1
    props = found["jobDefinitions"][0]["containerProperties"]
    assert props["image"] == IMAGE
    assert "jobRoleArn" not in props  # no task role: the job holds no AWS credentials
    assert props["networkConfiguration"]["assignPublicIp"] == "DISABLED"
    assert found["jobDefinitions"][0]["platformCapabilities"] == ["FARGATE"]


def test_definition_names_need_a_digest() -> None:
    with pytest.raises(ValueError):
        batch.definition_name("registry/adapter:latest")


def test_post_runs_on_aws_submits_a_batch_job(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    key = team_key(aws)
    started = time.monotonic()
    status, _, answer = post(call, key, image_body())
    took = math.ceil(time.monotonic() - started)  # measured, never bounded: see the links below
    assert status == 202
    run = runs.load(wiring.edition().runs, answer["run_id"])
    assert run is not None and run.job_id and run.status == "queued"
    job = client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]
    assert job["jobQueue"] == batch_env["queue"]
    env = {e["name"]: e["value"] for e in job["container"]["environment"]}
    assert env["TC300_RUN_ID"] == run.run_id
    assert {"TC300_INPUTS_URL", "TC300_ANSWERS_URL"} <= set(env)
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} & set(env)
    # the inputs the job may read carry no labels
    assert (
        run.corpus_sha256 == wiring.edition().scoring_corpus().sha256
    )  # what the inputs came from
    # Both links are signed by one link-signing session and live as long as it does, less a
    # minute's margin (submit.link_lifetime), which is what the run records. The route reads
    # its clock before the session is made, so the lifetime is the session's hour less the
    # minute, plus however long the request took between the two (whole seconds on a loaded
    # machine; one second less if moto rounds the session's end down).
    signed = [parse_qs(urlsplit(env[k]).query) for k in ("TC300_INPUTS_URL", "TC300_ANSWERS_URL")]
    lifetimes = {int(q["X-Amz-Expires"][0]) for q in signed}
    assert len(lifetimes) == 1
    (lifetime,) = lifetimes
    assert SIGNING_SESSION_SECONDS - 61 <= lifetime <= SIGNING_SESSION_SECONDS - 60 + took
    keys = {q["X-Amz-Credential"][0].split("/")[0] for q in signed}
    assert len(keys) == 1 and keys != {"testing"}  # the session's key, not the function's
    assert "X-Amz-Security-Token" in signed[0] and "X-Amz-Security-Token" in signed[1]
    submitted_at = int(datetime.fromisoformat(run.created_at).timestamp())
    assert run.links_expire_at == submitted_at + lifetime
    inputs = CorpusObjects(aws.names["CorpusBucket"]).read(
        harness.inputs_key(wiring.edition().scoring_corpus().sha256)
    )
    rows = [json.loads(line) for line in inputs.splitlines()]
    assert len(rows) == len(CASES) and all(set(r) == {"id", "text", "tools"} for r in rows)


def test_adapter_cmd_is_refused_on_aws(batch_env: dict[str, str], call: Any, aws: Any) -> None:
    status, _, answer = post(
        call, team_key(aws), {"adapter_cmd": ["x"], "ref": "main", "commit": "abc1234"}
    )
    assert status == 400 and answer["error"]["code"] == "adapter_cmd_not_allowed"


def test_daily_cap_answers_429_with_retry_after(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    key = team_key(aws)
    for i in range(3):
        assert post(call, key, image_body(commit=f"{i:07x}"))[0] == 202
    status, headers, answer = post(call, key, image_body(commit="fffffff"))
    assert status == 429 and answer["error"]["code"] == "daily_limit"
    assert int({k.lower(): v for k, v in headers.items()}["retry-after"]) > 0
    # a retried submission with its Idempotency-Key is not a new run and is not refused
    status, _, _ = post(call, key, image_body(commit="0000000"))
    assert status == 429
    idem = post(call, key, image_body(commit="0000001"), **{"idempotency-key": "k1"})
    assert idem[0] == 429  # the cap applies to new runs, keyed or not


def test_quota_taker_counts_per_licence(batch_env: dict[str, str]) -> None:
    take = wiring.edition().quota_taker(NOW)
    for _ in range(3):
        take("lic_a")
    take("lic_b")
    with pytest.raises(TooManyRequests):
        take("lic_a")


def test_a_batch_submission_failure_fails_the_run(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATCH_JOB_QUEUE", "arn:aws:batch:us-east-1:123456789012:job-queue/missing")
    wiring.renew()
    status, _, answer = post(call, team_key(aws), image_body())
    assert status == 202 and answer["status"] == "failed"
    run = runs.load(wiring.edition().runs, answer["run_id"])
    assert run is not None and run.failure is not None and run.failure["reason"] == "infra_error"


def event(run: runs.Run, status: str, **detail: Any) -> dict[str, Any]:
    return {
        "version": "0",
        "source": "aws.batch",
        "detail-type": "Batch Job State Change",
        "detail": {
            "jobId": run.job_id,
            "jobName": submit.JOB_PREFIX + run.run_id[4:],
            "status": status,
            "tags": {"run_id": run.run_id},
            **detail,
        },
    }


def submitted(call: Any, aws: Any, **over: Any) -> runs.Run:
    status, _, answer = post(call, team_key(aws), image_body(**over))
    assert status == 202
    run = runs.load(wiring.edition().runs, answer["run_id"])
    assert run is not None
    return run


def submitted_as(call: Any, licence: str, **over: Any) -> runs.Run:
    """:func:`submitted` with a given team's key (``submitted`` buys another team each time)."""
    status, _, answer = post(call, licence, image_body(**over))
    assert status == 202, answer
    run = runs.load(wiring.edition().runs, answer["run_id"])
    assert run is not None
    return run


def put_answers(aws: Any, run: runs.Run, doc: Any) -> None:
    key = f"answers/{run.team}/{run.run_id}/attempt-1.json"
    client("s3").put_object(
        Bucket=aws.names["ReportsBucket"], Key=key, Body=json.dumps(doc).encode()
    )


def test_events_take_a_run_from_queued_to_scored(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTER_NETWORK_ISOLATED", "true")  # the template created the network
    wiring.renew()
    run = submitted(call, aws)
    assert (
        flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "RUNNING"), now=NOW)
        is None
    )
    assert (runs.load(wiring.edition().runs, run.run_id) or run).status == "running"
    put_answers(
        aws,
        run,
        {
            "answers": {c["id"]: c["expected"] for c in CASES},
            "diagnostics": {"answered": 8},
            "failure": None,
        },
    )
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert ended is not None and ended.status == "scored" and ended.verdict == "baseline_set"
    assert ended.summary is not None and ended.summary["exact"] == len(CASES)
    assert ended.sandbox["network_isolated"] is True
    # a duplicate or late event changes nothing
    assert (
        flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
        is None
    )
    assert (
        flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "RUNNING"), now=NOW)
        is None
    )
    final = runs.load(wiring.edition().runs, run.run_id)
    assert final is not None and final.status == "scored" and final.attempts == 1


def test_succeeded_before_running_still_scores(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    run = submitted(call, aws)
    put_answers(aws, run, {"answers": {}, "diagnostics": {}, "failure": None})
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert ended is not None and ended.status == "scored"


def test_a_harness_reported_failure_fails_the_run(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    run = submitted(call, aws)
    put_answers(
        aws,
        run,
        {
            "answers": {},
            "diagnostics": {},
            "failure": {"reason": "job_timeout", "detail": "slow", "stderr_tail": "zzz"},
        },
    )
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert ended is not None and ended.failure == {
        "reason": "job_timeout",
        "detail": "slow",
        "stderr_tail": "zzz",
    }


@pytest.mark.parametrize("doc", [None, "not json", {"answers": []}, {"no": "answers"}])
def test_a_missing_or_bad_answers_file_is_output_malformed(
    batch_env: dict[str, str], call: Any, aws: Any, doc: Any
) -> None:
    run = submitted(call, aws)
    if doc == "not json":
        client("s3").put_object(
            Bucket=aws.names["ReportsBucket"],
            Key=f"answers/{run.team}/{run.run_id}/attempt-1.json",
            Body=b"{oops",
        )
    elif doc is not None:
        put_answers(aws, run, doc)
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert (
        ended is not None
        and ended.failure is not None
        and ended.failure["reason"] == "output_malformed"
    )


@pytest.mark.parametrize(
    ("reason", "container", "exit_code", "expected"),
    [
        (
            "CannotPullContainerError: pull image manifest has been retried",
            "",
            None,
            "image_pull_failed",
        ),
        (
            "Essential container in task exited",
            "OutOfMemoryError: Container killed due to memory usage",
            137,
            "out_of_memory",
        ),
        ("Job attempt duration exceeded timeout", "", None, "job_timeout"),
        ("Essential container in task exited", "", 127, "adapter_start_failed"),
        ("Essential container in task exited", "", 1, "infra_error"),  # the harness crashed
        ("Host EC2 terminated", "", None, "infra_error"),
    ],
)
def test_batch_failures_map_onto_the_closed_list(
    batch_env: dict[str, str],
    call: Any,
    aws: Any,
    reason: str,
    container: str,
    exit_code: int | None,
    expected: str,
) -> None:
    run = submitted(call, aws)
    ev = event(
        run,
        "FAILED",
        statusReason=reason,
        container={
            "reason": container,
            **({"exitCode": exit_code} if exit_code is not None else {}),
        },
    )
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, ev, now=NOW)
    assert ended is not None and ended.status == "failed"
    assert ended.failure is not None and ended.failure["reason"] == expected


def test_other_events_are_ignored() -> None:
    assert events.parse_event({"source": "aws.ec2", "detail-type": "x", "detail": {}}) is None
    assert (
        events.parse_event(
            {"source": "aws.batch", "detail-type": "Batch Job State Change", "detail": {}}
        )
        is None
    )
    assert flow.handle_batch_event(wiring.edition().hosted_deps, {"hello": "world"}) is None


def test_the_sweeper_fails_runs_whose_job_is_gone(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    run = submitted(call, aws)
    store = wiring.edition().runs
    runs.mark_running(store, run.run_id, now=NOW, job_id="00000000-dead-beef-0000-000000000000")
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=NOW)
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "failed")]


def test_handlers_route_events_and_schedules(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]

    def load(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(
            f"{name}_app", root / "functions" / name / "app.py"
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    class Ctx:
        function_name, memory_limit_in_mb, aws_request_id = "f", 128, "r"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:f"

    run = submitted(call, aws)
    out = load("batch_events").handler(
        event(run, "FAILED", statusReason="CannotPullContainerError"), Ctx()
    )
    assert out == {"run_id": run.run_id, "ended": True}
    assert load("sweeper").handler({"source": "aws.events"}, Ctx()) == {"reconciled": []}


def test_the_sweeper_replays_a_job_end_whose_event_was_lost(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    run = submitted(call, aws)
    put_answers(aws, run, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    # Given Batch finished the job (moto without Docker ends it at once) and no event arrived
    for _ in range(50):
        if client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]["status"] == "SUCCEEDED":
            break
        time.sleep(0.1)
    # When the sweeper runs, Then the run is scored from the job's own record
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=NOW)
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "scored")]
    final = runs.load(wiring.edition().runs, run.run_id)
    assert final is not None and final.summary is not None and final.summary["exact"] == len(CASES)


def test_an_answers_file_over_the_cap_is_output_malformed_and_never_read_whole(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = submitted(call, aws)
    doc = {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None}
    put_answers(aws, run, doc)
    monkeypatch.setattr(events, "MAX_ANSWERS_BYTES", len(json.dumps(doc)) - 1)
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert ended is not None and ended.failure is not None
    assert ended.failure["reason"] == "output_malformed"
    assert "larger than" in ended.failure["detail"]


def test_reading_the_answers_stops_at_the_cap_even_when_the_length_is_not_declared(
    aws: Any,
) -> None:
    objects = ReportObjects(aws.names["ReportsBucket"])
    client("s3").put_object(Bucket=objects.bucket, Key="answers/x", Body=b"x" * 5000)
    assert objects.get("answers/x", max_bytes=5000) == b"x" * 5000
    with pytest.raises(PayloadTooLarge):
        objects.get("answers/x", max_bytes=4999)


class _Jobs:
    """A Batch port that knows one job, in ``status``."""

    def __init__(self, status: str | None) -> None:
        self.status = status

    def job_status(self, job_id: str) -> str | None:
        return self.status


@pytest.mark.parametrize(
    ("status", "alive"),
    [("RUNNABLE", True), ("RUNNING", True), ("SUCCEEDED", True), ("FAILED", True), (None, False)],
)
def test_a_job_that_ended_is_left_to_its_event_never_failed_as_gone(
    status: str | None, alive: bool
) -> None:
    # Failing a SUCCEEDED job's run as "gone" would race the scoring its event started.
    run = runs.Run(
        run_id="run_" + "0" * 26, team="t", licence_id="l", adapter={}, ref="main", commit="abc1234",
        status="running", job_id="job-1",
    )  # fmt: skip
    assert events.job_alive(_Jobs(status))(run) is alive  # type: ignore[arg-type]


def test_one_runs_failing_replay_does_not_stop_the_sweeper(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad, good = submitted(call, aws), submitted(call, aws, commit="ddddddd")
    put_answers(aws, good, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    real = events.missed_event

    def replay(run: runs.Run, api: Any) -> Any:
        if run.run_id == bad.run_id:
            raise UpstreamUnavailable("S3 refused", code="upstream_unavailable")
        return real(run, api)

    monkeypatch.setattr(events, "missed_event", replay)
    for _ in range(50):
        if client("batch").describe_jobs(jobs=[good.job_id])["jobs"][0]["status"] == "SUCCEEDED":
            break
        time.sleep(0.1)
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=NOW)
    assert (good.run_id, "scored") in [(r.run_id, r.status) for r in changed]
    still = runs.load(wiring.edition().runs, bad.run_id)
    assert still is not None and still.status not in runs.FINAL  # left for the next sweep


# Batch's statusReason and the container's reason as AWS writes them (the ECS / Fargate
# stopped-task error messages for platform 1.4, and Batch's own job states), one per cause.
REAL_FAILURES = [
    # (statusReason, container reason, exit code, reason)
    (
        "Task failed to start",
        "CannotPullContainerError: pull image manifest has been retried 5 time(s): failed to "
        "resolve ref 123456789012.dkr.ecr.us-east-1.amazonaws.com/acme/adapter@sha256:bbbb: not found",
        None,
        "image_pull_failed",
    ),
    (
        "Task failed to start",
        "CannotPullContainerError: Error response from daemon: pull access denied for acme/adapter, "
        "repository does not exist or may require 'docker login'",
        None,
        "image_pull_failed",
    ),
    (
        "Task failed to start",
        "ResourceInitializationError: unable to pull secrets or registry auth: execution resource "
        "retrieval failed: unable to retrieve ecr registry auth: service call has been retried 3 "
        'time(s): RequestError: send request failed caused by: Post "https://api.ecr.us-east-1.'
        'amazonaws.com/": dial tcp 10.0.0.1:443: i/o timeout',
        None,
        "image_pull_failed",
    ),
    (
        "Task failed to start",
        "ResourceInitializationError: failed to validate logger args: create stream has been "
        "retried 1 times: failed to create Cloudwatch log stream: RequestError: send request failed "
        'caused by: Post "https://logs.us-east-1.amazonaws.com/": dial tcp 10.0.0.2:443: i/o timeout',
        None,
        "infra_error",
    ),
    (
        "Task failed to start",
        "ResourceInitializationError: failed to configure ENI: failed to setup regular eni: "
        "netplugin failed: timed out waiting for IP address",
        None,
        "infra_error",
    ),
    (
        "Task failed to start",
        "ContainerRuntimeTimeoutError: Could not transition to running; timed out after waiting 1m",
        None,
        "infra_error",
    ),
    (
        "Task failed to start",
        "CannotStartContainerError: Error response from daemon: failed to create shim task: OCI "
        "runtime create failed: runc create failed: unable to start container process: exec: "
        '"python3": executable file not found in $PATH: unknown',
        None,
        "adapter_start_failed",
    ),
    (
        "Essential container in task exited",
        "OutOfMemoryError: Container killed due to memory usage",
        137,
        "out_of_memory",
    ),
    ("Job attempt duration exceeded timeout", "", 137, "job_timeout"),
    ("Essential container in task exited", "", 1, "infra_error"),  # a harness crash
    ("Essential container in task exited", "", 2, "adapter_start_failed"),  # the image has no CMD
    ("Essential container in task exited", "", 3, "infra_error"),  # its inputs link refused
    ("Essential container in task exited", "", 4, "infra_error"),  # its answers link refused
    ("Essential container in task exited", "", 5, "infra_error"),  # S3: the link expired
    ("Essential container in task exited", "", 126, "adapter_start_failed"),
    ("Host EC2 (instance i-0123456789abcdef0) terminated.", "", None, "infra_error"),
    ("Your Spot Task was interrupted.", "", None, "infra_error"),
    ("Terminated by the sweeper", "", None, "infra_error"),
]


@pytest.mark.parametrize(
    ("reason", "container", "exit_code", "expected"),
    REAL_FAILURES,
    ids=[f"{r[3]}-{(r[1] or r[0])[:40]}-{r[2]}" for r in REAL_FAILURES],
)
def test_each_real_batch_or_ecs_failure_maps_to_its_reason(
    reason: str, container: str, exit_code: int | None, expected: str
) -> None:
    ev = events.JobEvent("job-1", "run_x", "FAILED", reason, exit_code, container)
    got = events.failure_of(ev)
    assert got["reason"] == expected, got
    assert got["detail"]  # the operator sees what AWS said


def test_a_run_whose_corpus_changed_while_it_queued_is_not_scored_against_the_new_one(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    run = submitted(call, aws)
    put_answers(aws, run, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    store = wiring.edition().runs
    stale = runs.update(store, run.run_id, lambda r: replace(r, corpus_sha256="0" * 64))
    assert stale is not None
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert ended is not None and ended.status == "failed" and ended.failure is not None
    assert (
        ended.failure["reason"] == "infra_error" and "no longer stored" in ended.failure["detail"]
    )


def _upload(aws: Any, tmp_path: Path, cases: list[dict[str, Any]], version: str) -> str:
    """A corpus upload as infra/upload_corpus.py makes it (manifest, pinned copy, job inputs)."""
    import hashlib

    folder = tmp_path / version
    folder.mkdir()
    data = fakes.corpus_bytes(cases)
    (folder / harness.CORPUS_FILE).write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    files = [{"name": harness.CORPUS_FILE, "sha256": sha, "bytes": len(data)}]
    (folder / "manifest.json").write_text(json.dumps({"version": version, "files": files}))
    upload_corpus(folder, CorpusObjects(aws.names["CorpusBucket"]))
    return sha


def test_a_warm_scorer_scores_each_run_against_the_corpus_it_was_submitted_under(
    batch_env: dict[str, str], call: Any, aws: Any, tmp_path: Path
) -> None:
    """One process (the deps built once, as a warm Lambda keeps them) across a corpus upload:
    a run submitted after the upload is scored against the new corpus (it was refused as
    "corpus changed while queued" until the process recycled), a run queued across it against
    the version its inputs came from."""
    old_sha = _upload(aws, tmp_path, CASES, "v1")
    deps = wiring.edition().hosted_deps
    first, queued = submitted(call, aws), submitted(call, aws, ref="refs/heads/dev")
    assert first.corpus_sha256 == queued.corpus_sha256 == old_sha
    put_answers(aws, first, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    warm = flow.handle_batch_event(deps, event(first, "SUCCEEDED"), now=NOW)
    assert warm is not None and warm.status == "scored"  # the old corpus is now held parsed
    new_cases = fakes.small_corpus(12)[4:]  # other ids, other count
    new_sha = _upload(aws, tmp_path, new_cases, "v2")
    after = submitted(call, aws, ref="refs/heads/feature")
    assert after.corpus_sha256 == new_sha != old_sha
    put_answers(
        aws, after, {"answers": {c["id"]: c["expected"] for c in new_cases}, "failure": None}
    )
    put_answers(aws, queued, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    for run, cases, sha in ((after, new_cases, new_sha), (queued, CASES, old_sha)):
        ended = flow.handle_batch_event(deps, event(run, "SUCCEEDED"), now=NOW)
        assert ended is not None and ended.status == "scored", ended and ended.failure
        assert ended.summary is not None and ended.summary["cases"] == len(cases)
        assert ended.corpus_sha256 == sha


def test_a_corpus_version_is_read_once_per_process_and_never_mistaken_for_another() -> None:
    reads: list[str] = []
    stored = {harness.CORPUS_FILE: fakes.corpus_bytes(CASES)}

    def read(key: str) -> bytes:
        reads.append(key)
        if key not in stored:
            raise NotFound(key)
        return stored[key]

    import hashlib

    current = hashlib.sha256(stored[harness.CORPUS_FILE]).hexdigest()
    corpora = runs.PinnedCorpora(read)
    assert corpora(current).sha256 == current  # no pinned copy yet: the current one is it
    reads.clear()
    assert corpora(current).sha256 == current and reads == []  # held
    other = fakes.corpus_bytes(CASES[:3])
    other_sha = hashlib.sha256(other).hexdigest()
    stored[runs.pinned_corpus_key(other_sha)] = other
    assert len(corpora(other_sha).cases) == 3
    with pytest.raises(runs.CorpusVersionGone, match="no longer stored"):
        corpora("0" * 64)


@pytest.mark.parametrize(
    ("over", "code"),
    [
        ({"ref": "main\n"}, "invalid_request"),
        ({"commit": "abc1234\n"}, "invalid_request"),
        ({"baseline": "main\n"}, "invalid_request"),
        ({"image": IMAGE + "\n"}, "invalid_request"),
        ({"callback_url": "https://10.0.0.1/hook"}, "callback_not_allowed"),
        ({"callback_url": "https://[::1]/hook"}, "callback_not_allowed"),
        ({"callback_url": "https://metadata.example/hook"}, "callback_not_allowed"),
        ({"callback_url": "http://hooks.example.com/hook"}, "invalid_callback"),
    ],
)
def test_a_bad_submission_is_a_400_and_submits_nothing(
    batch_env: dict[str, str],
    call: Any,
    aws: Any,
    overrides: dict[Any, Any],
    over: dict[str, Any],
    code: str,
) -> None:
    """Patterns match whole values (no trailing newline); callbacks to non-public addresses
    are refused at submission (a stub resolver: metadata.example -> the metadata service)."""

    def resolve(host: str, port: int, **_kw: Any) -> list[tuple[Any, ...]]:
        address = {"metadata.example": "169.254.169.254"}.get(host, host.strip("[]"))
        return [(0, 0, 0, "", (address, port))]

    overrides[deps.resolver] = lambda: resolve
    status, _, answer = post(call, team_key(aws), image_body(**over))
    assert status == 400 and answer["error"]["code"] == code
    assert client("dynamodb").scan(TableName=aws.names["RunsTable"])["Items"] == []


def test_a_public_callback_is_accepted(
    batch_env: dict[str, str], call: Any, aws: Any, overrides: dict[Any, Any]
) -> None:
    overrides[deps.resolver] = lambda: lambda h, p, **_k: [(0, 0, 0, "", ("93.184.216.34", p))]
    body = image_body(callback_url="https://hooks.example.com/ci")
    assert post(call, team_key(aws), body)[0] == 202


@pytest.mark.parametrize("template_network", [True, False])
def test_the_run_record_says_what_isolation_really_held(
    batch_env: dict[str, str],
    call: Any,
    aws: Any,
    monkeypatch: pytest.MonkeyPatch,
    template_network: bool,
) -> None:
    monkeypatch.setenv("ADAPTER_NETWORK_ISOLATED", str(template_network).lower())
    wiring.renew()
    run = submitted(call, aws)
    # What the harness found inside a Fargate container: unshare refused (EPERM), no namespace
    harness_saw = {"network_isolated": False, "method": "none", "uid_dropped": True, "notes": []}
    answers = {c["id"]: c["expected"] for c in CASES}
    put_answers(
        aws, run, {"answers": answers, "diagnostics": {"sandbox": harness_saw}, "failure": None}
    )
    ended = flow.handle_batch_event(wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=NOW)
    assert ended is not None and ended.status == "scored"
    assert ended.sandbox["network_isolated"] is template_network
    assert ended.sandbox["harness"]["network_isolated"] is False
    assert any("shares the harness's network" in n for n in ended.sandbox["notes"])
    if not template_network:
        assert any("not verified" in n for n in ended.sandbox["notes"])


def test_an_arm64_image_gets_its_own_definition_on_fargates_arm64(
    batch_env: dict[str, str],
) -> None:
    api = BatchApi()
    amd = batch.ensure_definition(api, IMAGE, batch_env["definition"])
    arm = batch.ensure_definition(api, IMAGE, batch_env["definition"], "linux/arm64")
    assert arm != amd
    found = client("batch").describe_job_definitions(
        jobDefinitionName=batch.definition_name(IMAGE, "linux/arm64"), status="ACTIVE"
    )["jobDefinitions"][0]
    platform = found["containerProperties"]["runtimePlatform"]
    assert platform == {"cpuArchitecture": "ARM64", "operatingSystemFamily": "LINUX"}


def test_post_runs_refuses_an_image_outside_ecr(
    batch_env: dict[str, str], call: Any, aws: Any
) -> None:
    status, _, answer = post(
        call, team_key(aws), image_body(image="ghcr.io/acme/adapter@sha256:" + "b" * 64)
    )
    assert status == 400 and answer["error"]["code"] == "image_registry_not_allowed"
    assert client("dynamodb").scan(TableName=aws.names["RunsTable"])["Items"] == []


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (None, "image_not_found"),
        (ImageFacts(images.MAX_IMAGE_BYTES + 1, frozenset({"linux/amd64"})), "image_too_large"),
        (ImageFacts(2**27, frozenset({"linux/arm64"})), "image_platform_mismatch"),
        (ImageFacts(2**27, frozenset({"linux/arm64"}), index=True), "image_platform_mismatch"),
        (ImageFacts(2**27, frozenset(), unreadable="it is not JSON"), "image_config_unreadable"),
    ],
)
def test_post_runs_refuses_an_image_a_job_could_not_pull_or_run(
    batch_env: dict[str, str],
    call: Any,
    aws: Any,
    monkeypatch: pytest.MonkeyPatch,
    facts: ImageFacts | None,
    code: str,
) -> None:
    monkeypatch.setattr(EcrImages, "describe", lambda _self, _image: facts)
    status, _, answer = post(call, team_key(aws), image_body())  # linux/amd64 by default
    assert status == 400 and answer["error"]["code"] == code
    assert client("dynamodb").scan(TableName=aws.names["RunsTable"])["Items"] == []
    assert client("batch").list_jobs(jobQueue=batch_env["queue"])["jobSummaryList"] == []


def test_an_index_with_the_platform_is_accepted() -> None:
    assert images.image_problem(ANY_PLATFORM, "linux/arm64") is None
    assert images.image_problem(ANY_PLATFORM, "linux/amd64") is None


def test_post_runs_refuses_an_arm64_image_submitted_for_amd64_from_its_config(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No stand-in for the check: moto's ECR holds the manifest, the blob is served over HTTP."""
    monkeypatch.setattr(EcrImages, "describe", UNPATCHED_DESCRIBE)
    over_http = partial(fetch_blob, schemes=("http",))  # the blob server is plain HTTP
    monkeypatch.setattr(wiring.edition(), "image_registry", EcrImages(fetch=over_http))
    ecr = client("ecr")
    ecr.create_repository(repositoryName="acme/arm")
    blob = registry.config_blob("arm64", variant="v8")
    ecr.put_image(
        repositoryName="acme/arm",
        imageManifest=json.dumps(registry.single_manifest(blob)),
        imageTag="v1",
    )
    digest = ecr.describe_images(repositoryName="acme/arm", imageIds=[{"imageTag": "v1"}])[
        "imageDetails"
    ][0]["imageDigest"]
    image = f"123456789012.dkr.ecr.us-east-1.amazonaws.com/acme/arm@{digest}"
    key = team_key(aws)
    with registry.BlobServer() as blobs, registry.moto_download_links(monkeypatch, blobs):
        blobs.add(blob)
        status, _, answer = post(call, key, image_body(image=image))  # linux/amd64 by default
        assert status == 400 and answer["error"]["code"] == "image_platform_mismatch"
        assert "built for linux/arm64" in answer["error"]["message"]
        assert client("dynamodb").scan(TableName=aws.names["RunsTable"])["Items"] == []
        status, _, answer = post(call, key, image_body(image=image, platform="linux/arm64"))
        assert status == 202, answer


def test_without_a_signing_role_links_take_their_full_lifetime(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Static keys (a local stack, a test) show no expiry: the links ask for PRESIGN_SECONDS."""
    monkeypatch.delenv("JOB_LINK_ROLE_ARN")
    wiring.renew()
    run = submitted(call, aws)
    job = client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]
    env = {e["name"]: e["value"] for e in job["container"]["environment"]}
    assert parse_qs(urlsplit(env["TC300_ANSWERS_URL"]).query)["X-Amz-Expires"] == [
        str(submit.PRESIGN_SECONDS)
    ]


def job_env(job_id: str) -> dict[str, str]:
    job = client("batch").describe_jobs(jobs=[job_id])["jobs"][0]
    return {e["name"]: e["value"] for e in job["container"]["environment"]}


def batch_says(monkeypatch: pytest.MonkeyPatch, statuses: dict[str, str]) -> None:
    """Batch reports these jobs in these states (moto without Docker ends every job at once)."""
    real = BatchApi.describe_job

    def describe_job(self: BatchApi, job_id: str) -> dict[str, Any] | None:
        job = real(self, job_id)
        return dict(job, status=statuses[job_id]) if job and job_id in statuses else job

    monkeypatch.setattr(BatchApi, "describe_job", describe_job)


def links_would_die(run: runs.Run, *, in_seconds: int) -> runs.Run:
    """The run's links as if signed by a session that ends in ``in_seconds``."""
    expires = int(datetime.now(UTC).timestamp()) + in_seconds

    def edit(r: runs.Run) -> runs.Run:
        return replace(r, links_expire_at=expires)

    changed = runs.update(wiring.edition().runs, run.run_id, edit)
    assert changed is not None
    return changed


def test_a_run_whose_link_renewals_are_spent_fails_and_its_queued_job_is_ended(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the run failed but its job stayed queued, to start later, be billed and fail
    to upload."""
    run = links_would_die(submitted(call, aws), in_seconds=submit.LINK_NEED_SECONDS)

    def spent(r: runs.Run) -> runs.Run:
        return replace(r, job_renewals=submit.MAX_JOB_RENEWALS)

    assert runs.update(wiring.edition().runs, run.run_id, spent) is not None
    batch_says(monkeypatch, {str(run.job_id): "RUNNABLE"})
    ended: list[tuple[str, str]] = []
    monkeypatch.setattr(BatchApi, "terminate", lambda _self, job, why: ended.append((job, why)))
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=datetime.now(UTC))
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "failed")]
    assert [job for job, _ in ended] == [run.job_id]


def test_the_sweeper_gives_a_queued_job_whose_links_would_die_a_successor_with_fresh_links(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = links_would_die(submitted(call, aws), in_seconds=submit.LINK_NEED_SECONDS)
    old_job = str(run.job_id)
    batch_says(monkeypatch, {old_job: "RUNNABLE"})
    now = datetime.now(UTC)
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=now)
    assert [(r.run_id, r.status) for r in changed] == [(run.run_id, "queued")]
    renewed = runs.load(wiring.edition().runs, run.run_id)
    assert renewed is not None and renewed.job_id not in (None, old_job)
    assert renewed.job_renewals == 1 and renewed.failure is None
    assert renewed.links_expire_at - int(now.timestamp()) >= SIGNING_SESSION_SECONDS - 120
    old = client("batch").describe_jobs(jobs=[old_job])["jobs"][0]
    assert "fresh links" in old.get("statusReason", "")  # the old job was ended
    env = job_env(str(renewed.job_id))
    assert "attempt-1-links-1.json" in env["TC300_ANSWERS_URL"]  # its own answers key
    # The old job's end is not the run's; the successor's is, from its own key
    assert (
        flow.handle_batch_event(
            wiring.edition().hosted_deps, event(run, "FAILED", jobId=old_job), now=now
        )
        is None
    )
    key = runs.answers_key(replace(renewed, attempts=1), attempt=1)
    client("s3").put_object(
        Bucket=aws.names["ReportsBucket"],
        Key=key,
        Body=json.dumps({"answers": {c["id"]: c["expected"] for c in CASES}}).encode(),
    )
    ended = flow.handle_batch_event(
        wiring.edition().hosted_deps, event(renewed, "SUCCEEDED"), now=now
    )
    assert ended is not None and ended.status == "scored", ended and ended.failure


def test_a_renewed_job_keeps_its_place_ahead_of_later_jobs(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A successor was submitted like a new job, at the back of a FIFO queue, and starved
    under a backlog. On the fair-share queue (template.yaml) every job names its team's share
    and a successor a higher scheduling priority than any first submission, so within its
    share it goes ahead of the jobs submitted after it."""
    sent: list[dict[str, Any]] = []
    real = BatchApi.submit

    def recording(self: BatchApi, **kwargs: Any) -> str:
        sent.append(kwargs)
        return real(self, **kwargs)

    monkeypatch.setattr(BatchApi, "submit", recording)
    run = links_would_die(submitted(call, aws), in_seconds=submit.LINK_NEED_SECONDS)
    later = submitted(call, aws, commit="bbbbbbb")
    batch_says(monkeypatch, {str(run.job_id): "RUNNABLE", str(later.job_id): "RUNNABLE"})
    changed = flow.sweep_now(wiring.edition().hosted_deps, now=datetime.now(UTC))
    assert [r.run_id for r in changed] == [run.run_id]
    first, second, successor = sent
    share = submit.share_identifier(run.team)
    assert re.fullmatch(r"[A-Za-z0-9_]{1,255}", share)
    assert first["shareIdentifier"] == successor["shareIdentifier"] == share
    assert second["shareIdentifier"] == submit.share_identifier(later.team)

    assert first["schedulingPriorityOverride"] == second["schedulingPriorityOverride"] == 0
    assert successor["schedulingPriorityOverride"] > second["schedulingPriorityOverride"]


def test_any_number_of_teams_fits_the_fair_share_queues_identifier_quota() -> None:
    """A fair-share queue admits at most 500 active share identifiers; with one per team, the
    501st team's every run was refused by SubmitJob as a bare 503. Teams are hashed
    into a fixed number of shares (the quota checklist in infra/README.md)."""
    teams = [f"team-{i:016x}" for i in range(5000)]
    shares = {submit.share_identifier(t) for t in teams}
    assert len(shares) <= submit.SHARES < 500
    assert len(shares) > submit.SHARES * 0.9  # spread over them, not bunched
    assert all(re.fullmatch(r"[A-Za-z0-9_]{1,255}", s) for s in shares)
    assert submit.share_identifier(teams[0]) == submit.share_identifier(teams[0])


@pytest.mark.parametrize("status", ["STARTING", "RUNNING"])
def test_a_started_job_keeps_its_links(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch, status: str
) -> None:
    run = links_would_die(submitted(call, aws), in_seconds=60)
    batch_says(monkeypatch, {str(run.job_id): status})
    assert flow.sweep_now(wiring.edition().hosted_deps, now=datetime.now(UTC)) == []
    after = runs.load(wiring.edition().runs, run.run_id)
    assert after is not None and after.job_id == run.job_id and after.job_renewals == 0


def test_a_job_renewed_twice_at_once_is_renewed_once(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sweeps that both saw the old job: the second one's swap fails, and it ends the job
    it submitted instead of leaving two jobs for one run."""
    stale = links_would_die(submitted(call, aws), in_seconds=60)
    batch_says(monkeypatch, {str(stale.job_id): "RUNNABLE"})
    first = flow.renew_links(wiring.edition().hosted_deps, stale, now=datetime.now(UTC))
    assert first is not None and first.job_renewals == 1
    before = {
        j["jobId"]
        for j in client("batch").list_jobs(
            jobQueue=batch_env["queue"], filters=[{"name": "JOB_NAME", "values": ["*"]}]
        )["jobSummaryList"]
    }
    assert flow.renew_links(wiring.edition().hosted_deps, stale, now=datetime.now(UTC)) is None
    after = runs.load(wiring.edition().runs, stale.run_id)
    assert after is not None and after.job_id == first.job_id and after.job_renewals == 1
    jobs = client("batch").list_jobs(
        jobQueue=batch_env["queue"], filters=[{"name": "JOB_NAME", "values": ["*"]}]
    )["jobSummaryList"]
    surplus = [j for j in jobs if j["jobId"] not in before]
    assert len(surplus) == 1
    ended = client("batch").describe_jobs(jobs=[surplus[0]["jobId"]])["jobs"][0]
    assert "surplus" in ended.get("statusReason", "")


def test_one_runs_failing_renewal_does_not_stop_the_sweep(
    batch_env: dict[str, str], call: Any, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stuck = links_would_die(submitted(call, aws, commit="aaa1111"), in_seconds=60)
    other = links_would_die(submitted(call, aws, commit="bbb2222"), in_seconds=60)
    batch_says(monkeypatch, {str(stuck.job_id): "RUNNABLE", str(other.job_id): "RUNNABLE"})
    deps = wiring.edition().hosted_deps

    def one_fails(session_name: str) -> flow.JobLinks:
        if session_name == f"tc300-{stuck.run_id}":  # STS refusing this one run's session
            raise ValueError("the link-signing session could not be made")
        return deps.job_links(session_name)

    changed = flow.sweep_now(replace(deps, job_links=one_fails), now=datetime.now(UTC))
    assert [(r.run_id, r.job_renewals) for r in changed] == [(other.run_id, 1)]
    left = runs.load(wiring.edition().runs, stuck.run_id)
    assert left is not None and left.status == "queued" and left.job_id == stuck.job_id


def test_a_parallel_track_run_on_aws_gets_its_tracks_label_free_inputs_and_judge(
    batch_env: dict[str, str], call: Any, aws: Any, tmp_path: Path
) -> None:
    """The parallel track on the AWS path (moto): the upload derives the track's inputs, the
    job is given only those (no label), and the Batch end scores with the track's judge
    against the version its inputs came from; its baseline is not the single track's."""
    from support.corpus import make_corpus

    from toolcall300.scoring.adapters import AdapterRun
    from toolcall300.scoring.tracks import get_track, read_corpus

    make_corpus(tmp_path / "corpus", tracks=True)
    upload_corpus(tmp_path / "corpus", CorpusObjects(aws.names["CorpusBucket"]))
    licence = team_key(aws)  # one team: its single-call baseline is there, and not compared
    single = submitted_as(call, licence)
    put_answers(aws, single, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    done = flow.handle_batch_event(
        wiring.edition().hosted_deps, event(single, "SUCCEEDED"), now=NOW
    )
    assert done is not None and done.verdict == "baseline_set" and done.track == "single"
    data = (tmp_path / "corpus" / "parallel" / "toolcall300-parallel.jsonl").read_bytes()
    track, turns = read_corpus(data)
    run = submitted_as(call, licence, track="parallel")
    assert run.track == "parallel" and run.corpus_sha256 == hashlib.sha256(data).hexdigest()
    job = client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]
    env = {e["name"]: e["value"] for e in job["container"]["environment"]}
    assert urlsplit(env["TC300_INPUTS_URL"]).path.endswith(
        f"/job-inputs/parallel/{run.corpus_sha256}.jsonl"
    )
    inputs = CorpusObjects(aws.names["CorpusBucket"]).read(
        f"job-inputs/parallel/{run.corpus_sha256}.jsonl"
    )
    rows = [json.loads(line) for line in inputs.splitlines()]
    assert rows == track.adapter_items(turns)
    assert all(set(r) == {"id", "text", "tools"} for r in rows)  # no label reaches the job
    answers = {t["id"]: t["expected"] for t in turns}  # every turn exactly right
    answers[turns[0]["id"]] = []  # but one
    put_answers(aws, run, {"answers": answers, "failure": None})
    later = NOW + timedelta(minutes=1)
    ended = flow.handle_batch_event(
        wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=later
    )
    assert ended is not None and ended.status == "scored", ended and ended.failure
    assert ended.verdict == "baseline_set" and ended.comparison is None  # its own baseline
    mine = get_track("parallel").score(
        turns,
        AdapterRun(answers),
        adapter="x",
        corpus_sha256=run.corpus_sha256,
        corpus_version="1.0",
    )
    assert ended.summary is not None
    assert ended.summary["exact_turns"] == mine["exact_turns"] == len(turns) - 1
    report = json.loads(ReportObjects(aws.names["ReportsBucket"]).get(ended.report_key or ""))
    assert report["track"] == "parallel" and report["score"]["corpus_version"] == "1.0"


def test_a_deltas_track_run_on_aws_gets_its_streams_without_labels_and_the_tracks_judge(
    batch_env: dict[str, str], call: Any, aws: Any, tmp_path: Path
) -> None:
    """The deltas track on the AWS path (moto): the upload derives the track's label-free
    streams, the job is told its track (``TC300_TRACK``, which input fields and protocol) and
    given only those; the harness drives toolshim's deltas process adapter over them in the
    sandbox, as the job's container would; the Batch end rebuilds the streams from the records
    and judges them with the deltas judge against the version the inputs came from; its
    baseline is its own, and a worse deltas run regresses against it."""
    from support.corpus import make_corpus

    from toolcall300.jobs import harness, sandbox
    from toolcall300.scoring.tracks import read_corpus

    make_corpus(tmp_path / "corpus", tracks=True, deltas=True)
    upload_corpus(tmp_path / "corpus", CorpusObjects(aws.names["CorpusBucket"]))
    licence = team_key(aws)  # one team throughout (each team_key is another team's licence)
    single = submitted_as(call, licence)
    put_answers(aws, single, {"answers": {c["id"]: c["expected"] for c in CASES}, "failure": None})
    done = flow.handle_batch_event(
        wiring.edition().hosted_deps, event(single, "SUCCEEDED"), now=NOW
    )
    assert done is not None and done.verdict == "baseline_set" and done.track == "single"
    data = (tmp_path / "corpus" / "deltas" / "deltas.jsonl").read_bytes()
    track, cases = read_corpus(data)
    run = submitted_as(call, licence, track="deltas")
    assert run.track == "deltas" and run.corpus_sha256 == hashlib.sha256(data).hexdigest()
    job = client("batch").describe_jobs(jobs=[run.job_id])["jobs"][0]
    env = {e["name"]: e["value"] for e in job["container"]["environment"]}
    assert env["TC300_TRACK"] == "deltas"
    key = f"job-inputs/deltas/{run.corpus_sha256}.jsonl"
    assert urlsplit(env["TC300_INPUTS_URL"]).path.endswith(f"/{key}")
    rows = [
        json.loads(line) for line in CorpusObjects(aws.names["CorpusBucket"]).read(key).splitlines()
    ]
    assert rows == track.adapter_items(cases)
    assert all(set(r) == set(harness.input_fields("deltas")) for r in rows)  # no label
    with sandbox.session(["python3", "-m", "toolcall300.toolshim.deltas"]) as prepared:
        output = harness.run_track_job(
            "deltas", prepared.argv, rows, popen_kwargs=prepared.popen_kwargs
        )
    assert output.failure is None, output.failure
    put_answers(aws, run, output.document())
    # each run ends at its own time (baselines are ordered by when they were set)
    later = NOW + timedelta(minutes=1)
    ended = flow.handle_batch_event(
        wiring.edition().hosted_deps, event(run, "SUCCEEDED"), now=later
    )
    assert ended is not None and ended.status == "scored", ended and ended.failure
    assert ended.verdict == "baseline_set" and ended.comparison is None  # its own baseline
    mine = track.score(
        cases,
        track.build_adapter("callable", "toolshim").run(rows, timeout=10),
        adapter="in process",
        corpus_sha256=run.corpus_sha256 or "",
        corpus_version="test-1",
    )
    assert ended.summary is not None
    for figure in ("cases", "exact", "streams", "streams_exact", "commits", "commit_lead"):
        assert ended.summary[figure] == mine[figure], figure
    assert ended.summary["exact"] == len(cases) and ended.summary["unsafe_commits"] == 0
    report = json.loads(ReportObjects(aws.names["ReportsBucket"]).get(ended.report_key or ""))
    assert report["track"] == "deltas" and report["score"]["corpus_version"] == "test-1"
    a_worse_deltas_run_regresses(call, aws, licence, run, output.answers, cases)


def a_worse_deltas_run_regresses(
    call: Any,
    aws: Any,
    licence: str,
    run: runs.Run,
    answers: dict[str, Any],
    cases: list[dict[str, Any]],
) -> None:
    """The same records with one value case's first stream refused: a regression against the
    team's deltas baseline ``run``, naming the case."""
    worse = submitted_as(call, licence, track="deltas", commit="bbbbbbb")
    answers = json.loads(json.dumps(answers))
    broken = next(c["id"] for c in cases if c["expected_kind"] == "value")
    answers[broken][0] = {"call": None, "commits": []}
    put_answers(aws, worse, {"answers": answers, "failure": None})
    later = NOW + timedelta(minutes=2)
    judged = flow.handle_batch_event(
        wiring.edition().hosted_deps, event(worse, "SUCCEEDED"), now=later
    )
    assert judged is not None and judged.verdict == "regression"
    assert judged.comparison is not None and judged.comparison["baseline_run_id"] == run.run_id
    assert judged.comparison["flipped"]["broken"] == [broken]
    assert judged.summary is not None and judged.summary["exact"] == len(cases) - 1
