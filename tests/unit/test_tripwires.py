"""The kill-line tripwires measured on a schedule (toolcall300.service.tripwires): the
scheduled handler under moto publishes the 30-day figures and flags as EMF metrics, and each
tripwire alarm in template.yaml reads a metric it emits (name, namespace, dimensions)."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from toolcall300.service import observability
from toolcall300.service.sdk.dynamo import CheckLedgerTable

ROOT = Path(__file__).resolve().parents[2]


class Ctx:
    function_name, memory_limit_in_mb, aws_request_id = "TripwiresFunction", 512, "r"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:TripwiresFunction"


def _handler() -> Any:
    spec = importlib.util.spec_from_file_location(
        "tripwires_app", ROOT / "functions" / "tripwires" / "app.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def _function_env(template: dict[str, Any], name: str) -> dict[str, Any]:
    """What Lambda gives the function: the template's Globals environment plus its own."""
    env = dict(template["Globals"]["Function"]["Environment"]["Variables"])
    fn = template["Resources"][name]["Properties"]
    env.update(fn.get("Environment", {}).get("Variables", {}))
    return env


def emitted_metrics(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], dict[str, tuple[str, dict[str, str], float]]]:
    """Run the scheduled handler once with metrics on, as Lambda would configure Powertools
    from the function's environment; (its answer, metric name -> (namespace, dimensions,
    value)) read back from the EMF lines it printed."""
    env = _function_env(template, "TripwiresFunction")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    # Powertools reads namespace and service from the environment when the module-level
    # Metrics is built; these are the values it would have read in the function.
    provider = observability.metrics.provider
    monkeypatch.setattr(provider, "namespace", env["POWERTOOLS_METRICS_NAMESPACE"])
    monkeypatch.setattr(provider, "service", env["POWERTOOLS_SERVICE_NAME"])
    # A fresh Lambda environment starts with no metrics; in this test process other tests'
    # counts stay buffered, because Powertools only clears the set when it publishes it, and
    # it does not publish while metrics are disabled (as they are for the other tests).
    observability.metrics.clear_metrics()
    capsys.readouterr()
    answer = _handler()({"source": "aws.events", "detail-type": "Scheduled Event"}, Ctx())
    found: dict[str, tuple[str, dict[str, str], float]] = {}
    for line in capsys.readouterr().out.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        emf = json.loads(line)
        for directive in emf["_aws"]["CloudWatchMetrics"]:
            dims = {d: str(emf[d]) for dset in directive["Dimensions"] for d in dset}
            for metric in directive["Metrics"]:
                value = emf[metric["Name"]]
                (one,) = value if isinstance(value, list) else [value]  # published once each
                assert metric["Name"] not in found, metric["Name"]
                found[metric["Name"]] = (directive["Namespace"], dims, one)
    return answer, found


def _counters(aws: Any, **counts: int) -> None:
    book = CheckLedgerTable(aws.names["CheckLedgerTable"])
    book.count(datetime.now(UTC).strftime("%Y-%m-%d"), counts)


def test_the_scheduled_measure_publishes_the_window_and_its_flags_without_anyone_reading(
    aws: Any,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _counters(aws, paid=100, refunded=6, free=1001)  # both lines crossed
    answer, found = emitted_metrics(template, monkeypatch, capsys)
    assert answer["tripwires"] == {"refunds_over_5_percent": True, "free_over_10x_paid": True}
    assert found["Tripwire_refunds_over_5_percent"][2] == 1.0
    assert found["Tripwire_free_over_10x_paid"][2] == 1.0
    assert found["Window_paid_checks"][2] == 100.0
    assert found["Window_refunded_checks"][2] == 6.0
    assert found["Window_free_checks"][2] == 1001.0
    assert found["Window_refund_share"][2] == 0.06


def test_a_calm_window_publishes_zero_flags(
    aws: Any,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _counters(aws, paid=100, refunded=5, free=1000)  # on the lines, not over them
    _, found = emitted_metrics(template, monkeypatch, capsys)
    assert found["Tripwire_refunds_over_5_percent"][2] == 0.0
    assert found["Tripwire_free_over_10x_paid"][2] == 0.0


def _alarm_dimensions(props: dict[str, Any]) -> dict[str, str]:
    return {d["Name"]: d["Value"] for d in props.get("Dimensions", [])}


def test_each_tripwire_alarm_reads_a_metric_the_scheduled_measure_emits(
    aws: Any,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, found = emitted_metrics(template, monkeypatch, capsys)
    alarms = {
        name: r["Properties"]
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and str(r["Properties"].get("MetricName", "")).startswith(("Tripwire_", "Window_"))
    }
    assert set(alarms) >= {
        "RefundTripwireAlarm",
        "FreeUseTripwireAlarm",
        "TripwiresNotMeasuredAlarm",
    }
    for name, props in alarms.items():
        assert props["MetricName"] in found, name
        namespace, dims, _ = found[props["MetricName"]]
        assert (props["Namespace"], _alarm_dimensions(props)) == (namespace, dims), name
    # Every tripwire the window defines has its alarm.
    flags = {m for m in found if m.startswith("Tripwire_")}
    assert flags == {
        p["MetricName"] for p in alarms.values() if p["MetricName"].startswith("Tripwire_")
    }


def test_the_measure_runs_on_a_schedule_and_may_only_read_the_ledger(
    template: dict[str, Any],
) -> None:
    props = template["Resources"]["TripwiresFunction"]["Properties"]
    assert props["CodeUri"] == "functions/tripwires/"
    (event,) = props["Events"].values()
    assert event == {"Type": "Schedule", "Properties": {"Schedule": "rate(5 minutes)"}}
    assert props["Policies"] == [{"DynamoDBReadPolicy": {"TableName": {"Ref": "CheckLedgerTable"}}}]
