"""template.yaml: lints clean (cfn-lint, sam validate --lint) and declares what the service relies on."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from toolcall300.service.local.cfn import http_routes, resources_of_type

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"


def test_cfn_lint_passes() -> None:
    exe = VENV_BIN / "cfn-lint"
    exe = exe if exe.exists() else ROOT / ".venv" / "bin" / "cfn-lint"
    proc = subprocess.run(
        [str(exe), str(ROOT / "template.yaml")], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sam_validate_lint_passes() -> None:
    sam = ROOT / ".sam-venv" / "bin" / "sam"
    assert sam.exists(), "run `make sam-venv` first (SAM CLI lives in its own venv)"
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1"}
    proc = subprocess.run(
        [str(sam), "validate", "--lint", "-t", "template.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runtime_is_stated_once_in_globals(template: dict[str, Any]) -> None:
    assert template["Globals"]["Function"]["Runtime"] == "python3.12"
    assert len(re.findall(r"^\s+Runtime:", (ROOT / "template.yaml").read_text(), flags=re.M)) == 1


def test_corpus_bucket_is_private_versioned_encrypted_and_tls_only(
    template: dict[str, Any],
) -> None:
    bucket = template["Resources"]["CorpusBucket"]["Properties"]
    assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    policy = template["Resources"]["CorpusBucketPolicy"]["Properties"]["PolicyDocument"][
        "Statement"
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"]["Bool"]["aws:SecureTransport"] == "false"
        for s in policy
    )


def test_tables_have_the_keys_the_code_uses(template: dict[str, Any]) -> None:
    res = template["Resources"]
    idem = res["IdempotencyTable"]["Properties"]
    assert idem["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert idem["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    lic = res["LicencesTable"]["Properties"]
    assert {i["IndexName"] for i in lic["GlobalSecondaryIndexes"]} == {
        "by_key_hash",
        "by_session",
        "by_team",
    }
    runs = res["RunsTable"]["Properties"]
    assert runs["KeySchema"] == [{"AttributeName": "run_id", "KeyType": "HASH"}]
    by_team = next(i for i in runs["GlobalSecondaryIndexes"] if i["IndexName"] == "by_team")
    assert [k["AttributeName"] for k in by_team["KeySchema"]] == ["team", "created_at"]
    assert res["UsageTable"]["Properties"]["TimeToLiveSpecification"]["Enabled"] is True


def test_every_route_has_a_handler_file(template: dict[str, Any]) -> None:
    routes = http_routes(template)
    assert {(r.method, r.path) for r in routes} >= {
        ("POST", "/webhooks/stripe"), ("GET", "/licence/claim"), ("GET", "/licence"), ("GET", "/corpus"),
        ("GET", "/cases/{id}/rationale"), ("GET", "/criteria"), ("POST", "/precheck"), ("POST", "/check"),
        ("GET", "/metrics"), ("GET", "/openapi.json"),
    }  # fmt: skip
    for r in routes:
        module = r.handler.rpartition(".")[0]
        assert (ROOT / r.code_uri / f"{module}.py").exists(), r


def test_template_holds_no_secret_values() -> None:
    text = (ROOT / "template.yaml").read_text() + (ROOT / "samconfig.toml").read_text()
    assert not re.search(r"whsec_[A-Za-z0-9]|sk_(live|test)_|rk_(live|test)_[A-Za-z0-9]", text)


def test_functions_read_only_their_own_tables(template: dict[str, Any]) -> None:
    # Least privilege: only the webhook may read the Stripe secrets or the idempotency table.
    for name, fn in resources_of_type(template, "AWS::Serverless::Function").items():
        policies = str(fn["Properties"].get("Policies", []))
        if name != "StripeWebhookFunction":
            assert "StripeWebhookSecret" not in policies and "IdempotencyTable" not in policies, (
                name
            )


@pytest.mark.parametrize("path", ["/cases/tc300-0001/rationale", "/licence"])
def test_route_patterns_match_concrete_paths(template: dict[str, Any], path: str) -> None:
    assert any(r.pattern().match(path) for r in http_routes(template))


@pytest.mark.parametrize(
    "name", ["stripe_webhook", "licences", "corpus", "argcheck", "apidocs", "tripwires", "badges"]
)
def test_handlers_stay_thin(name: str) -> None:
    # CONVENTIONS: "If app.py grows past a screen, logic is leaking in."
    source = (ROOT / "functions" / name / "app.py").read_text()
    assert len(source.splitlines()) <= 40
    assert "boto3" not in source and "stripe" not in source.replace("stripe_webhook", "")


def test_the_adapter_job_has_no_task_role(template: dict[str, Any]) -> None:
    res = template["Resources"]
    props = res["HarnessJobDefinition"]["Properties"]["ContainerProperties"]
    assert "JobRoleArn" not in props  # no role: the adapter's container holds no AWS credentials
    assert "AdapterTaskRole" not in res


def test_scoring_a_finished_job_has_the_s3_rights_it_uses_and_no_more(
    template: dict[str, Any],
) -> None:
    res = template["Resources"]
    statements = res["RunScoringPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    actions = {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions == {"s3:GetObject", "s3:PutObject", "s3:ListBucket"}  # no delete, no ACLs
    for name in ("BatchEventsFunction", "SweeperFunction"):  # the sweeper replays job ends
        assert {"Ref": "RunScoringPolicy"} in res[name]["Properties"]["Policies"], name


def test_the_sweeper_reads_only_runs_in_flight_and_old_runs_expire(
    template: dict[str, Any],
) -> None:
    table = template["Resources"]["RunsTable"]["Properties"]
    indexes = {
        i["IndexName"]: [k["AttributeName"] for k in i["KeySchema"]]
        for i in table["GlobalSecondaryIndexes"]
    }
    assert indexes["by_active_status"] == ["active_status", "created_at"]
    assert indexes["baselines_by_team"] == ["team", "baseline_set_at"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_the_internet_facing_runs_function_never_reads_the_labelled_corpus(
    template: dict[str, Any],
) -> None:
    policies = template["Resources"]["RunsFunction"]["Properties"]["Policies"]
    assert not [p for p in policies if "S3ReadPolicy" in p or "S3CrudPolicy" in p]
    statements = [s for p in policies if "Statement" in p for s in p["Statement"]]
    s3 = {
        s["Sid"]: (s["Action"], s["Resource"])
        for s in statements
        if str(s["Action"]).startswith("s3:")
    }
    assert s3 == {
        "ReadOnlyTheJobInputs": ("s3:GetObject", {"Fn::Sub": "${CorpusBucket.Arn}/job-inputs/*"}),
        "ReadStoredReports": ("s3:GetObject", {"Fn::Sub": "${ReportsBucket.Arn}/reports/*"}),
    }  # the answers upload is signed as JobLinkSignerRole, which alone may write answers/


def test_job_links_are_signed_as_a_role_with_a_known_session_and_two_rights(
    template: dict[str, Any],
) -> None:
    """docs/runs-contract.md, "Links": the signer's session is the links' lifetime."""
    from toolcall300.service.hosted import submit
    from toolcall300.service.sdk.aws import SIGNING_SESSION_SECONDS

    res = template["Resources"]
    signer = res["JobLinkSignerRole"]["Properties"]
    assert signer["MaxSessionDuration"] == SIGNING_SESSION_SECONDS == 3600  # role chaining's cap
    (policy,) = signer["Policies"]
    rights = {
        (st["Action"], st["Resource"]["Fn::Sub"]) for st in policy["PolicyDocument"]["Statement"]
    }
    assert rights == {
        ("s3:GetObject", "${CorpusBucket.Arn}/job-inputs/*"),
        ("s3:PutObject", "${ReportsBucket.Arn}/answers/*"),
    }
    for name in ("RunsFunction", "SweeperFunction"):  # the two that submit jobs
        props = res[name]["Properties"]
        assert props["Environment"]["Variables"]["JOB_LINK_ROLE_ARN"] == {
            "Fn::GetAtt": ["JobLinkSignerRole", "Arn"]
        }
        grants = [
            st
            for p in props["Policies"]
            if "Statement" in p
            for st in p["Statement"]
            if st["Action"] == "sts:AssumeRole"
        ]
        assert [g["Resource"] for g in grants] == [{"Fn::GetAtt": ["JobLinkSignerRole", "Arn"]}]
    # the figures the sweeper's renewal rule is computed from are the template's own
    timeout = res["HarnessJobDefinition"]["Properties"]["Timeout"]["AttemptDurationSeconds"]
    assert timeout == submit.JOB_TIMEOUT_SECONDS == submit.LINK_NEED_SECONDS
    schedule = res["SweeperFunction"]["Properties"]["Events"]["Every5Minutes"]["Properties"]
    assert schedule["Schedule"] == "rate(5 minutes)" and submit.SWEEP_INTERVAL_SECONDS == 300


def test_capacity_is_derived_from_the_expected_runs_per_day(template: dict[str, Any]) -> None:
    from toolcall300.service.hosted.batch import max_vcpus

    allowed = template["Parameters"]["ExpectedRunsPerDay"]["AllowedValues"]
    capacity = template["Mappings"]["Capacity"]
    assert set(capacity) == set(allowed)
    for runs_per_day, row in capacity.items():
        assert row["MaxvCpus"] == max_vcpus(int(runs_per_day)), runs_per_day
    compute = template["Resources"]["AdapterComputeEnvironment"]["Properties"]["ComputeResources"]
    assert compute["MaxvCpus"] == {
        "Fn::FindInMap": ["Capacity", {"Ref": "ExpectedRunsPerDay"}, "MaxvCpus"]
    }
    assert max_vcpus(10_000) >= 35  # 10,000 runs of 5 minutes a day keep ~35 jobs running


def test_every_lambda_has_an_error_alarm_and_the_runs_events_a_dead_letter_queue(
    template: dict[str, Any],
) -> None:
    res = template["Resources"]
    functions = {n for n, r in res.items() if r["Type"] == "AWS::Serverless::Function"}
    alarmed = {
        d["Value"]["Ref"]
        for r in res.values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == "Errors"
        for d in r["Properties"].get("Dimensions", [])
        if d.get("Name") == "FunctionName"
    }
    assert functions == alarmed, functions ^ alarmed
    rule = res["BatchEventsFunction"]["Properties"]["Events"]["JobStateChange"]["Properties"]
    assert rule["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["RunEventsDeadLetterQueue", "Arn"]}}


def test_cfn_lint_passes_with_informational_findings_too() -> None:
    exe = VENV_BIN / "cfn-lint"
    exe = exe if exe.exists() else ROOT / ".venv" / "bin" / "cfn-lint"
    proc = subprocess.run(
        [str(exe), "-t", str(ROOT / "template.yaml"), "--include-checks", "I"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _of_type(res: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {n: r for n, r in res.items() if r["Type"] == kind}


def test_the_adapter_network_has_no_route_out(template: dict[str, Any]) -> None:
    res = template["Resources"]
    for kind in (
        "AWS::EC2::InternetGateway",
        "AWS::EC2::NatGateway",
        "AWS::EC2::Route",
        "AWS::EC2::VPCGatewayAttachment",
        "AWS::EC2::EgressOnlyInternetGateway",
    ):
        assert not _of_type(res, kind), kind  # the only routes: the VPC's own and S3's endpoint
    subnets = _of_type(res, "AWS::EC2::Subnet")
    assert len(subnets) == 2 and all(
        s["Properties"]["MapPublicIpOnLaunch"] is False for s in subnets.values()
    )
    compute = res["AdapterComputeEnvironment"]["Properties"]["ComputeResources"]
    both = [{"Ref": "AdapterSubnetA"}, {"Ref": "AdapterSubnetB"}]
    one_or_two = {"Fn::If": ["AdapterNetworkInTwoZones", both, [{"Ref": "AdapterSubnetA"}]]}
    assert compute["Subnets"]["Fn::If"][1] == one_or_two
    assert template["Conditions"]["CreateAdapterNetwork"] == {
        "Fn::Equals": [{"Ref": "ExistingAdapterVpcId"}, ""]
    }


def test_the_jobs_reach_only_the_endpoints_they_need(template: dict[str, Any]) -> None:
    res = template["Resources"]
    endpoints = {
        r["Properties"]["ServiceName"]["Fn::Sub"].rsplit(".", 1)[-1]
        if "ecr" not in r["Properties"]["ServiceName"]["Fn::Sub"]
        else r["Properties"]["ServiceName"]["Fn::Sub"].split("}.")[1]: r["Properties"]
        for r in _of_type(res, "AWS::EC2::VPCEndpoint").values()
    }
    assert set(endpoints) == {"ecr.api", "ecr.dkr", "logs", "s3"}
    assert endpoints["s3"]["VpcEndpointType"] == "Gateway"
    assert all(e["PrivateDnsEnabled"] for k, e in endpoints.items() if k != "s3")
    job_sg = res["AdapterJobSecurityGroup"]["Properties"]
    assert "SecurityGroupIngress" not in job_sg
    egress = [
        r["Properties"]
        for r in _of_type(res, "AWS::EC2::SecurityGroupEgress").values()
        if r["Properties"]["GroupId"] == {"Ref": "AdapterJobSecurityGroup"}
    ]
    assert {
        (e.get("DestinationPrefixListId") or e.get("DestinationSecurityGroupId"))["Ref"]
        for e in egress
    } == {
        "S3PrefixListId",
        "AdapterEndpointSecurityGroup",
    }
    assert all(e["FromPort"] == e["ToPort"] == 443 and "CidrIp" not in e for e in egress)


def test_every_real_egress_rule_is_a_resource_of_its_own(template: dict[str, Any]) -> None:
    """Inline egress rules beside standalone ones on one group are replaced wholesale by an
    update: a group's only inline egress rule is the one to nowhere that removes
    EC2's default allow-all; every rule that lets traffic out is its own resource."""
    nowhere = {"IpProtocol": "-1", "CidrIp": "127.0.0.1/32"}
    for name, group in _of_type(template["Resources"], "AWS::EC2::SecurityGroup").items():
        inline = group["Properties"].get("SecurityGroupEgress")
        assert inline is not None, f"{name} keeps EC2's allow-all egress"
        assert [{k: r[k] for k in nowhere} for r in inline] == [nowhere], name


def test_the_s3_endpoint_lets_jobs_touch_only_this_stacks_objects(template: dict[str, Any]) -> None:
    policy = template["Resources"]["S3GatewayEndpoint"]["Properties"]["PolicyDocument"]
    allowed = {(s["Action"], s["Resource"]["Fn::Sub"]) for s in policy["Statement"]}
    assert allowed == {
        ("s3:GetObject", "${CorpusBucket.Arn}/job-inputs/*"),
        ("s3:PutObject", "${ReportsBucket.Arn}/answers/*"),
        ("s3:GetObject", "arn:${AWS::Partition}:s3:::prod-${AWS::Region}-starport-layer-bucket/*"),
    }
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])


def test_the_dns_firewall_answers_only_the_aws_names_a_job_needs(template: dict[str, Any]) -> None:
    res = template["Resources"]
    rules = res["AdapterDnsFirewall"]["Properties"]["FirewallRules"]
    by_priority = sorted(rules, key=lambda r: r["Priority"])
    assert [r["Action"] for r in by_priority] == ["ALLOW", "BLOCK"]
    assert by_priority[1]["FirewallDomainListId"] == {"Ref": "AdapterAnyName"}
    assert res["AdapterAnyName"]["Properties"]["Domains"] == ["*."]
    names = [
        d if isinstance(d, str) else d["Fn::Sub"]
        for d in res["AdapterAllowedNames"]["Properties"]["Domains"]
    ]
    assert all(n.endswith("amazonaws.com.") for n in names)
    assert res["AdapterDnsFirewallAssociation"]["Properties"]["VpcId"] == {"Ref": "AdapterVpc"}


def test_every_function_logs_to_its_own_group_with_a_retention(template: dict[str, Any]) -> None:
    """A group named /aws/lambda/<function> would clash with the one Lambda auto-created on a
    stack deployed before the template made it: each function names a stack-scoped group of
    its own in LoggingConfig instead (never under aws/, which Lambda refuses)."""
    res = template["Resources"]
    functions = {n for n, r in res.items() if r["Type"] == "AWS::Serverless::Function"}
    groups = {n: r for n, r in res.items() if r["Type"] == "AWS::Logs::LogGroup"}
    assert all(
        r["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"} for r in groups.values()
    )
    used = []
    for name in functions:
        logging = res[name]["Properties"]["LoggingConfig"]
        group = logging["LogGroup"]["Ref"]
        used.append(group)
        assert res[group]["Type"] == "AWS::Logs::LogGroup"
        assert res[group]["Properties"]["LogGroupName"] == {
            "Fn::Sub": f"/toolcall300/${{AWS::StackName}}/{name}"
        }
        assert res[group]["UpdateReplacePolicy"] == "Retain"  # the renamed group's logs stay
    assert len(set(used)) == len(functions)  # one group each
    named = [str(r["Properties"].get("LogGroupName")) for r in groups.values()]
    assert not [n for n in named if "/aws/" in n or n.startswith("aws/")]
    job_logs = res["HarnessJobDefinition"]["Properties"]["ContainerProperties"]["LogConfiguration"]
    assert job_logs["Options"]["awslogs-group"] == {"Ref": "AdapterJobLogs"}


def test_only_the_checker_role_may_derive_the_report_signing_keys(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/argcheck-report.md "Keys and rotation": the signing keys are HMACs under a KMS
    key whose key policy gives GenerateMac to the checker's role alone; nothing else in the
    template, key policy or IAM, can use it, and no secret holds a signing seed."""
    res = template["Resources"]
    key = res["ReportSigningKey"]["Properties"]
    assert (key["KeySpec"], key["KeyUsage"]) == ("HMAC_256", "GENERATE_VERIFY_MAC")
    statements = key["KeyPolicy"]["Statement"]
    granting = [s for s in statements if s["Effect"] == "Allow"]
    uses = {"kms:GenerateMac", "kms:VerifyMac", "kms:CreateGrant", "kms:*", "*"}

    def actions(statement: dict[str, Any]) -> set[str]:
        found = statement["Action"]
        return set(found if isinstance(found, list) else [found])

    users = [s for s in granting if actions(s) & uses]
    assert len(users) == 1, users
    (user,) = users
    assert actions(user) == {"kms:GenerateMac"}
    # The account delegates to IAM, and the condition admits the checker's role alone: KMS
    # would refuse a Principal naming a role IAM has not propagated yet (a first create).
    assert user["Principal"] == {
        "AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}
    }
    assert user["Condition"] == {
        "StringEquals": {"kms:MacAlgorithm": "HMAC_SHA_256"},
        "ArnEquals": {"aws:PrincipalArn": {"Fn::GetAtt": ["ArgcheckFunctionRole", "Arn"]}},
    }
    assert all("*" not in a for s in granting for a in actions(s))  # no wildcard grants
    # The role the key policy names is the one SAM makes for the checker function.
    from samtranslator.translator.transform import transform

    sam = copy.deepcopy(template)
    for resource in sam["Resources"].values():
        for prop in ("CodeUri", "ContentUri"):
            if isinstance(resource.get("Properties", {}).get(prop), str):
                resource["Properties"][prop] = "s3://bucket/code.zip"

    class NoManagedPolicies:
        def load(self) -> dict[str, str]:
            return {}

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # samtranslator's ARN partition
    cfn = transform(sam, {"AWS::Region": "us-east-1"}, NoManagedPolicies())
    role = cfn["Resources"]["ArgcheckFunction"]["Properties"]["Role"]
    assert role == {"Fn::GetAtt": ["ArgcheckFunctionRole", "Arn"]}
    # IAM grants the key to the checker's role alone (the key policy's condition is the same
    # role), and no secret holds a seed.
    for name, fn in resources_of_type(template, "AWS::Serverless::Function").items():
        assert "ReportSigningKey" not in str(fn["Properties"].get("Policies", [])), name
    grants = {
        n: r
        for n, r in res.items()
        if r["Type"] == "AWS::IAM::Policy" and "ReportSigningKey" in str(r)
    }
    assert list(grants) == ["ArgcheckDerivesSigningKeys"]
    grant = grants["ArgcheckDerivesSigningKeys"]["Properties"]
    assert grant["Roles"] == [{"Ref": "ArgcheckFunctionRole"}]
    assert grant["PolicyDocument"]["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "kms:GenerateMac",
            "Resource": {"Fn::GetAtt": ["ReportSigningKey", "Arn"]},
        }
    ]
    assert "ReportSigningKey" not in str(
        {n: r for n, r in res.items() if n not in grants | {"ReportSigningKey": 0}}
    )
    assert "ReportSigningSecret" not in res
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["REPORT_SIGNING_KEY_ID"] == {"Ref": "ReportSigningKey"}


def test_sam_passes_each_functions_log_group_to_lambda(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed samtranslator (what sam deploy runs) keeps LoggingConfig on the
    AWS::Lambda::Function it generates."""
    pytest.importorskip("samtranslator.translator.transform")
    from support.sam import translated

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    out = translated(template)
    lambdas = {n: r for n, r in out["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}
    assert lambdas and all(
        r["Properties"]["LoggingConfig"] == {"LogGroup": {"Ref": f"{n}Logs"}}
        for n, r in lambdas.items()
    )


def test_the_dns_firewall_trusts_an_allowed_names_chain_and_logs_every_query(
    template: dict[str, Any],
) -> None:
    """S3 and ECR names answer through CNAMEs of AWS's choosing (s3-r-w.<region>...): with the
    default INSPECT_REDIRECTION_DOMAIN every name in the chain meets the block-all rule, so no
    image or link resolves. Allow rules trust the chain; the block rule keeps the default. Every
    query is logged, so a first deploy sees what was blocked."""
    res = template["Resources"]
    rules = res["AdapterDnsFirewall"]["Properties"]["FirewallRules"]
    for rule in rules:
        redirection = rule.get("FirewallDomainRedirectionAction", "INSPECT_REDIRECTION_DOMAIN")
        wanted = "TRUST_REDIRECTION_DOMAIN" if rule["Action"] == "ALLOW" else redirection
        assert redirection == wanted, rule
    assert any(r["Action"] == "ALLOW" for r in rules)
    logging = _of_type(res, "AWS::Route53Resolver::ResolverQueryLoggingConfig")
    associations = _of_type(res, "AWS::Route53Resolver::ResolverQueryLoggingConfigAssociation")
    assert len(logging) == 1 and len(associations) == 1
    ((config_name, config),) = logging.items()
    (association,) = associations.values()
    assert association["Properties"] == {
        "ResolverQueryLogConfigId": {"Ref": config_name},
        "ResourceId": {"Ref": "AdapterVpc"},
    }
    destination = config["Properties"]["DestinationArn"]["Fn::Sub"]
    group = re.fullmatch(
        r"arn:\$\{AWS::Partition\}:logs:\$\{AWS::Region\}:\$\{AWS::AccountId\}:log-group:\$\{(\w+)\}",
        destination,
    )
    assert group, destination  # a log group's ARN without GetAtt's trailing ":*"
    assert res[group.group(1)]["Type"] == "AWS::Logs::LogGroup"
    assert config.get("Condition") == association.get("Condition") == "CreateAdapterNetwork"


#: What AWS allows in a rule's RuleCondition and Assertions ("Rule functions", CloudFormation
#: template reference: intrinsic-function-reference-rules); cfn-lint does not check it.
RULE_FUNCTIONS = {
    "Fn::And", "Fn::Contains", "Fn::EachMemberEquals", "Fn::EachMemberIn", "Fn::Equals",
    "Fn::Not", "Fn::Or", "Fn::RefAll", "Fn::ValueOf", "Fn::ValueOfAll", "Ref",
}  # fmt: skip


def _functions_in(value: Any) -> set[str]:
    if isinstance(value, list):
        return {f for v in value for f in _functions_in(v)}
    if isinstance(value, dict):
        here = {k for k in value if k == "Ref" or k.startswith("Fn::") or k == "Condition"}
        return here | {f for v in value.values() for f in _functions_in(v)}
    return set()


def test_every_rule_uses_only_the_functions_aws_allows_in_rules(template: dict[str, Any]) -> None:
    assert template["Rules"]
    for name, rule in template["Rules"].items():
        used = _functions_in(rule.get("RuleCondition", {}))
        for assertion in rule["Assertions"]:
            used |= _functions_in(assertion["Assert"])
        assert used <= RULE_FUNCTIONS, (name, used - RULE_FUNCTIONS)


def test_the_rules_refuse_an_existing_vpc_without_its_subnets_and_groups(
    template: dict[str, Any],
) -> None:
    """The rules evaluated as CloudFormation does, for the cases a deployer can give."""

    def evaluate(node: Any, params: dict[str, Any]) -> Any:
        if isinstance(node, dict):
            ((fn, arg),) = node.items()
            if fn == "Ref":
                return params[arg]
            args = [evaluate(a, params) for a in arg]
            if fn == "Fn::Equals":
                return args[0] == args[1]
            if fn == "Fn::Not":
                return not args[0]
            if fn == "Fn::EachMemberEquals":
                return all(m == args[1] for m in args[0])
            raise AssertionError(f"no evaluator for {fn}")
        return node

    def refused(**given: Any) -> list[str]:
        params = {"ExistingAdapterVpcId": "", "S3PrefixListId": ""}
        params |= {"AdapterSubnetIds": [""], "AdapterSecurityGroupIds": [""]} | given
        failed = []
        for name, rule in template["Rules"].items():
            if evaluate(rule.get("RuleCondition", True), params):
                failed += [name for a in rule["Assertions"] if not evaluate(a["Assert"], params)]
        return failed

    assert refused(S3PrefixListId="pl-0123abcd") == []
    assert refused() == ["CreatedNetworkNeedsTheS3PrefixList"]
    vpc = "vpc-0123abcd"
    assert refused(ExistingAdapterVpcId=vpc) == ["ExistingNetworkNeedsSubnetsAndGroups"] * 2
    assert refused(ExistingAdapterVpcId=vpc, AdapterSubnetIds=["subnet-1"]) == [
        "ExistingNetworkNeedsSubnetsAndGroups"
    ]
    both = {"AdapterSubnetIds": ["subnet-1", "subnet-2"], "AdapterSecurityGroupIds": ["sg-1"]}
    assert refused(ExistingAdapterVpcId=vpc, **both) == []


def test_the_outputs_name_what_a_deployer_must_fill_or_hand_to_teams(
    template: dict[str, Any],
) -> None:
    """infra/README.md's steps read these: the secrets to fill, the role ARNs teams allow on
    their repositories, the buckets, the DNS query log group."""
    outputs = template["Outputs"]
    assert outputs["AdapterExecutionRoleArn"]["Value"] == {
        "Fn::GetAtt": ["AdapterExecutionRole", "Arn"]
    }
    assert outputs["RunsFunctionRoleArn"]["Value"] == {"Fn::GetAtt": ["RunsFunctionRole", "Arn"]}
    for secret in ("StripeWebhookSecret", "StripeApiKeySecret"):
        assert outputs[f"{secret}Name"]["Value"] == {"Ref": secret}
    for bucket in ("CorpusBucket", "ReportsBucket"):
        assert outputs[f"{bucket}Name"]["Value"] == {"Ref": bucket}
    assert outputs["AdapterDnsQueryLogGroup"]["Condition"] == "CreateAdapterNetwork"
    readme = (ROOT / "infra" / "README.md").read_text()
    assert all(name in readme for name in outputs), [n for n in outputs if n not in readme]
    docs = "".join(p.read_text() for p in (ROOT / "docs").glob("*.md")) + readme
    assert "api.toolcall300.example" not in docs and "public.ecr.aws/toolcall300" not in docs


def test_the_adapter_network_can_live_in_one_zone(template: dict[str, Any]) -> None:
    """docs/cost.md, "One AZ": the second subnet and every interface endpoint's second
    network interface exist only with AdapterAvailabilityZones=2 (the default)."""
    res = template["Resources"]
    param = template["Parameters"]["AdapterAvailabilityZones"]
    assert (param["Default"], param["AllowedValues"]) == ("2", ["1", "2"])
    assert template["Conditions"]["AdapterNetworkInTwoZones"] == {
        "Fn::And": [
            {"Condition": "CreateAdapterNetwork"},
            {"Fn::Equals": [{"Ref": "AdapterAvailabilityZones"}, "2"]},
        ]
    }
    assert res["AdapterSubnetA"]["Condition"] == "CreateAdapterNetwork"
    for name in ("AdapterSubnetB", "AdapterSubnetBRoutes"):
        assert res[name]["Condition"] == "AdapterNetworkInTwoZones", name
    one_or_two = {
        "Fn::If": [
            "AdapterNetworkInTwoZones",
            [{"Ref": "AdapterSubnetA"}, {"Ref": "AdapterSubnetB"}],
            [{"Ref": "AdapterSubnetA"}],
        ]
    }
    interface = [
        r["Properties"]
        for r in _of_type(res, "AWS::EC2::VPCEndpoint").values()
        if r["Properties"]["VpcEndpointType"] == "Interface"
    ]
    assert interface and all(p["SubnetIds"] == one_or_two for p in interface)
    assert "AdapterSubnetB" not in str({n: r for n, r in res.items() if n not in (
        "AdapterSubnetB", "AdapterSubnetBRoutes", "AdapterComputeEnvironment",
        "EcrApiEndpoint", "EcrDockerEndpoint", "LogsEndpoint",
    )})  # fmt: skip


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = document["Statement"]
    return found if isinstance(found, list) else [found]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_interface_endpoints_answer_only_the_execution_role_pulling_and_logging(
    template: dict[str, Any],
) -> None:
    """An adapter carrying its own AWS keys could otherwise push case texts to its own
    registry or log group through the endpoints (no policy = full access for any principal)."""
    res = template["Resources"]
    interface = {
        n: r["Properties"]
        for n, r in _of_type(res, "AWS::EC2::VPCEndpoint").items()
        if r["Properties"]["VpcEndpointType"] == "Interface"
    }
    assert set(interface) == {"EcrApiEndpoint", "EcrDockerEndpoint", "LogsEndpoint"}
    allowed = {
        "EcrApiEndpoint": {"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                           "ecr:BatchCheckLayerAvailability", "ecr:GetAuthorizationToken"},
        "LogsEndpoint": {"logs:CreateLogStream", "logs:PutLogEvents"},
    }  # fmt: skip
    allowed["EcrDockerEndpoint"] = allowed["EcrApiEndpoint"]
    execution_role = {
        "ArnEquals": {"aws:PrincipalArn": {"Fn::GetAtt": ["AdapterExecutionRole", "Arn"]}}
    }
    for name, props in interface.items():
        statements = _statements(props["PolicyDocument"])
        actions = {a for st in statements for a in _listed(st["Action"])}
        assert actions == allowed[name], name
        for st in statements:
            assert st["Effect"] == "Allow" and st["Condition"] == execution_role, (name, st)
            if _listed(st["Action"]) != ["ecr:GetAuthorizationToken"]:  # no resource-level
                assert st["Resource"] != "*", (name, st)
    logs = _statements(interface["LogsEndpoint"]["PolicyDocument"])[0]["Resource"]["Fn::Sub"]
    assert logs.endswith(":log-group:${AdapterJobLogs}:*")


#: Batch actions that support no resource-level permissions (Service Authorization Reference,
#: "Actions, resources, and condition keys for AWS Batch"): the only ones left on "*".
BATCH_WITHOUT_RESOURCES = {"batch:DescribeJobs", "batch:DescribeJobDefinitions", "batch:ListJobs"}


def test_batch_rights_name_this_stacks_queue_definitions_and_jobs(template: dict[str, Any]) -> None:
    from toolcall300.service.hosted.batch import DEFINITION_PREFIX

    res = template["Resources"]
    definitions = {
        "Fn::Sub": "arn:${AWS::Partition}:batch:${AWS::Region}:${AWS::AccountId}:job-definition/"
        + DEFINITION_PREFIX
        + "*"
    }
    jobs = {"Fn::Sub": "arn:${AWS::Partition}:batch:${AWS::Region}:${AWS::AccountId}:job/*"}
    granted: dict[str, dict[str, list[Any]]] = {}
    for name in ("RunsFunction", "SweeperFunction"):
        for policy in res[name]["Properties"]["Policies"]:
            for st in policy.get("Statement", []) if isinstance(policy, dict) else []:
                for action in _listed(st["Action"]):
                    if not action.startswith("batch:"):
                        continue
                    if st["Resource"] == "*":
                        assert action in BATCH_WITHOUT_RESOURCES, (name, action)
                    granted.setdefault(name, {}).setdefault(action, []).extend(
                        _listed(st["Resource"])
                    )
                    if action == "batch:TerminateJob":
                        assert st["Condition"] == {"Null": {"aws:ResourceTag/run_id": "false"}}
    queue = {"Ref": "AdapterJobQueue"}
    runs, sweeper = granted["RunsFunction"], granted["SweeperFunction"]
    # the Service Authorization Reference lists SubmitJob on job too
    assert runs["batch:SubmitJob"] == sweeper["batch:SubmitJob"] == [queue, definitions, jobs]
    assert runs["batch:RegisterJobDefinition"] == [definitions]
    assert "batch:RegisterJobDefinition" not in sweeper  # it cannot choose an image or a role
    assert sweeper["batch:TerminateJob"] == [jobs]
    assert "batch:TerminateJob" not in runs
    assert {str(r) for r in runs["batch:TagResource"]} >= {str(definitions), str(jobs)}


def test_a_batch_event_the_function_fails_on_reaches_the_dead_letter_queue(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule's DeadLetterConfig catches only what EventBridge could not deliver; a delivered
    event the function fails on is Lambda's (asynchronous invocation): its on-failure
    destination is the same queue, and SAM grants the role the SendMessage it needs."""
    from support.sam import translated

    res = template["Resources"]
    config = res["BatchEventsFunction"]["Properties"]["EventInvokeConfig"]
    queue = {"Fn::GetAtt": ["RunEventsDeadLetterQueue", "Arn"]}
    assert config["DestinationConfig"]["OnFailure"] == {"Type": "SQS", "Destination": queue}
    assert config["MaximumRetryAttempts"] == 2
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    out = translated(template)["Resources"]
    (invoke,) = [r for r in out.values() if r["Type"] == "AWS::Lambda::EventInvokeConfig"]
    assert invoke["Properties"]["FunctionName"] == {"Ref": "BatchEventsFunction"}
    assert invoke["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] == queue
    role = out["BatchEventsFunctionRole"]["Properties"]
    sends = [
        st for p in role.get("Policies", []) for st in _statements(p["PolicyDocument"])
        if "sqs:SendMessage" in _listed(st["Action"])
    ]  # fmt: skip
    assert sends and all(st["Resource"] == queue for st in sends)
    alarm = res["RunEventsDeadLetterAlarm"]["Properties"]["AlarmDescription"]
    assert "could not deliver" in alarm and "failed on it" in alarm


def test_the_stack_deletes_and_rolls_back_without_losing_what_it_keeps(
    template: dict[str, Any],
) -> None:
    """Mutation protection would make the firewall association undeletable (sam delete and a
    rollback fail on it); the reports are kept as the runs table is; no key or endpoint policy
    names a principal created in the same deploy (KMS refuses one IAM has not propagated)."""
    res = template["Resources"]
    association = res["AdapterDnsFirewallAssociation"]["Properties"]
    assert association.get("MutationProtection", "DISABLED") == "DISABLED"
    for name in ("RunsTable", "ReportsBucket", "CorpusBucket", "CheckLedgerTable", "LicencesTable"):
        assert res[name].get("DeletionPolicy") == "Retain", name
        assert res[name].get("UpdateReplacePolicy") == "Retain", name
    documents = [res["ReportSigningKey"]["Properties"]["KeyPolicy"]] + [
        r["Properties"]["PolicyDocument"] for r in _of_type(res, "AWS::EC2::VPCEndpoint").values()
    ]
    for document in documents:
        for st in _statements(document):
            assert "Fn::GetAtt" not in str(st.get("Principal")), st


def test_the_job_queue_shares_fairly_between_teams_so_a_renewed_job_keeps_its_place(
    template: dict[str, Any],
) -> None:
    """hosted/submit.py names each job's team share and gives a renewed job a higher
    scheduling priority; Batch honours both only on a queue with a fair-share policy."""
    res = template["Resources"]
    queue = res["AdapterJobQueue"]["Properties"]
    policy = queue["SchedulingPolicyArn"]["Ref"]
    assert res[policy]["Type"] == "AWS::Batch::SchedulingPolicy"
    assert "FairsharePolicy" in res[policy]["Properties"]


def test_the_http_api_stage_writes_an_access_log_without_headers_or_bodies(
    template: dict[str, Any],
) -> None:
    """Before: the stage logged nothing of its requests. One JSON line a request,
    to a log group of this stack with the stack's retention; no header, query or body
    variable, so no key or session id reaches it."""
    res = template["Resources"]
    settings = res["HttpApi"]["Properties"]["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["HttpApiAccessLogs", "Arn"]}
    group = res["HttpApiAccessLogs"]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    fields = json.loads(settings["Format"])
    assert {"requestId", "status", "routeKey"} <= set(fields)
    assert not re.search(
        r"\$(request|context\.authorizer)|header|querystring|body", settings["Format"], re.I
    )


def test_make_deploy_asks_for_aws_region_before_it_builds() -> None:
    """``make deploy`` needed AWS_REGION and did not say so."""
    makefile = (ROOT / "Makefile").read_text()
    deploy = re.search(r"^deploy: *(.*)$", makefile, re.M)
    assert deploy is not None and deploy.group(1).split()[0] == "aws-region"
    env = {k: v for k, v in os.environ.items() if k != "AWS_REGION"}
    proc = subprocess.run(
        ["make", "-s", "aws-region"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0 and "needs AWS_REGION" in proc.stderr


def test_the_cost_page_counts_the_alarms_the_template_declares(template: dict[str, Any]) -> None:
    """docs/cost.md said 16 alarms where the template has 18."""
    alarms = len(_of_type(template["Resources"], "AWS::CloudWatch::Alarm"))
    said = {int(n) for n in re.findall(r"(\d+) alarms", (ROOT / "docs" / "cost.md").read_text())}
    assert said == {alarms}
