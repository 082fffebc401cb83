"""Read ``template.yaml``: a YAML loader that understands CloudFormation's short-form tags.

The local stack and the tests create tables, buckets and secrets from the template's own
resource properties and route HTTP requests by each function's ``HttpApi`` events, so the
template stays the single source of truth. This is a reader, not a CloudFormation engine:
intrinsic functions are kept as ``{"Ref": ...}`` / ``{"Fn::X": ...}`` dicts for callers to
resolve the few they need (:func:`resolve`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_TAGS = (
    "Ref", "GetAtt", "Sub", "Join", "If", "Not", "Equals", "And", "Or", "Select", "Split",
    "FindInMap", "GetAZs", "ImportValue", "Base64", "Cidr", "Condition", "Transform",
)  # fmt: skip


class CfnLoader(yaml.SafeLoader):
    """SafeLoader plus ``!Ref``, ``!GetAtt`` and the other short-form intrinsics."""


def _construct(tag: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        key = tag if tag in ("Ref", "Condition") else f"Fn::{tag}"
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if tag == "GetAtt":
                value = str(value).split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        return {key: value}

    return construct


for _tag in _TAGS:
    CfnLoader.add_constructor(f"!{_tag}", _construct(_tag))


def load_template(path: Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM template into plain data (intrinsics as dicts)."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=CfnLoader)
    if not isinstance(data, dict) or "Resources" not in data:
        raise ValueError(f"{path}: not a CloudFormation template")
    return data


def resources_of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource for every resource of one ``Type``."""
    return {k: v for k, v in template["Resources"].items() if v.get("Type") == kind}


@dataclass(frozen=True)
class HttpRoute:
    """One ``HttpApi`` event of one function: what the local gateway routes on."""

    function: str
    method: str
    path: str
    code_uri: str
    handler: str

    def pattern(self) -> re.Pattern[str]:
        """``/cases/{id}/rationale`` -> a regex with one named group per path parameter."""
        parts = re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\+?\})", self.path)
        out = []
        for part in parts:
            if part.startswith("{") and part.endswith("}"):
                name = part[1:-1]
                greedy = name.endswith("+")
                out.append(f"(?P<{name.rstrip('+')}>{'.+' if greedy else '[^/]+'})")
            else:
                out.append(re.escape(part))
        return re.compile("^" + "".join(out) + "$")


def http_routes(template: dict[str, Any]) -> list[HttpRoute]:
    """Every (function, method, path) the HTTP API serves, read from the functions' events."""
    routes = []
    for name, res in resources_of_type(template, "AWS::Serverless::Function").items():
        props = res.get("Properties", {})
        for event in props.get("Events", {}).values():
            if event.get("Type") != "HttpApi":
                continue
            ep = event.get("Properties", {})
            routes.append(
                HttpRoute(
                    function=name,
                    method=str(ep.get("Method", "ANY")).upper(),
                    path=str(ep.get("Path", "/")),
                    code_uri=str(props.get("CodeUri", "")),
                    handler=str(props.get("Handler", "app.handler")),
                )
            )
    return routes


def resolve(value: Any, names: dict[str, str]) -> Any:
    """Resolve ``Ref`` / ``Fn::Sub`` / ``Fn::GetAtt`` against physical names; leave the rest."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref":
            return names.get(arg, arg)
        if key == "Fn::GetAtt":
            return f"{names.get(arg[0], arg[0])}.{arg[1]}"
        if key == "Fn::Sub" and isinstance(arg, str):
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(names.get(m.group(1), m.group(0))), arg)
    if isinstance(value, dict):
        return {k: resolve(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, names) for v in value]
    return value
