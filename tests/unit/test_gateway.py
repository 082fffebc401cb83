"""The local gateway's pieces: CloudFormation tags, routes from the template, v2 events."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolcall300.service.local.cfn import HttpRoute, load_template, resolve
from toolcall300.service.local.gateway import build_event

ROUTE = HttpRoute(
    "CorpusFunction", "GET", "/cases/{id}/rationale", "functions/corpus/", "app.handler"
)


def test_loader_understands_short_form_intrinsics(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "Resources:\n  A:\n    Type: X\n    Properties:\n"
        "      R: !Ref B\n      G: !GetAtt B.Arn\n      S: !Sub '${B}-x'\n      I: !If [C, [!Ref B], !Ref AWS::NoValue]\n"
    )
    props = load_template(path)["Resources"]["A"]["Properties"]
    assert props["R"] == {"Ref": "B"} and props["G"] == {"Fn::GetAtt": ["B", "Arn"]}
    assert resolve(props, {"B": "bee"})["S"] == "bee-x"
    assert props["I"] == {"Fn::If": ["C", [{"Ref": "B"}], {"Ref": "AWS::NoValue"}]}


@given(
    st.text(
        alphabet=st.characters(blacklist_characters="/", blacklist_categories=["Cs"]),
        min_size=1,
        max_size=30,
    )
)
def test_path_parameter_is_one_segment(segment: str) -> None:
    m = ROUTE.pattern().match(f"/cases/{segment}/rationale")
    assert m is not None and m.group("id") == segment
    assert ROUTE.pattern().match(f"/cases/{segment}/x/rationale") is None


def event(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "method": "GET", "raw_path": "/cases/tc300-0001/rationale", "query": "", "headers": [],
        "body": b"", "source_ip": "192.0.2.1", "route": ROUTE, "path_params": {"id": "tc300-0001"},
    }  # fmt: skip
    args.update(kw)
    return build_event(**args)


def test_event_is_http_api_v2() -> None:
    e = event(query="a=1&a=2&b=", headers=[("Cookie", "x=1; y=2"), ("X-Thing", "v")])
    assert e["version"] == "2.0" and e["routeKey"] == "GET /cases/{id}/rationale"
    assert e["requestContext"]["http"]["sourceIp"] == "192.0.2.1"
    assert e["requestContext"]["stage"] == "$default"
    assert e["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert e["cookies"] == ["x=1", "y=2"] and e["headers"] == {"x-thing": "v"}
    assert e["pathParameters"] == {"id": "tc300-0001"}


@given(st.binary(max_size=64))
def test_binary_bodies_are_base64_and_round_trip(raw: bytes) -> None:
    e = event(method="POST", body=raw, headers=[("content-type", "application/octet-stream")])
    if raw:
        assert e["isBase64Encoded"] and base64.b64decode(e["body"]) == raw
    else:
        assert "body" not in e
