"""json_repair (PyPI ``json-repair``) as its users wire it: plain, behind a jsonschema gate,
and in its schema-guided mode (``repair_json(..., schema=...)``)."""

from __future__ import annotations

import json
from typing import Any

import json_repair
from glue import arguments_object, call, call_parts, tool_parameters
from jsonschema import Draft202012Validator


def _parsed(text: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    parts = call_parts(json_repair.loads(text))
    if parts is None:
        return None
    name, raw = parts
    arguments = arguments_object(raw, json_repair.loads)
    return (name, arguments) if arguments is not None else None


def plain(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Repair the text, take the first call, pass it on."""
    parsed = _parsed(text, tools)
    return call(*parsed) if parsed else None


def gate(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Repair, then refuse unless the declared schema accepts the arguments."""
    parsed = _parsed(text, tools)
    if parsed is None:
        return None
    params = tool_parameters(tools, parsed[0])
    if params is None or not Draft202012Validator(params).is_valid(parsed[1]):
        return None
    return call(*parsed)


def schema(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Repair the envelope, then repair the arguments guided by the tool's schema."""
    parts = call_parts(json_repair.loads(text))
    if parts is None:
        return None
    name, raw = parts
    params = tool_parameters(tools, name)
    if params is None:
        return None
    source = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        arguments = json_repair.repair_json(source, schema=params, return_objects=True)
    except ValueError:  # the library's answer when the schema cannot be met
        return None
    return call(name, arguments) if isinstance(arguments, dict) else None
