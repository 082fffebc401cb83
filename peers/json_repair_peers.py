"""json_repair (PyPI ``json-repair``) as its users wire it: plain, behind a jsonschema gate,
and in its schema-guided mode (``repair_json(..., schema=...)``)."""

from __future__ import annotations

import json
from typing import Any

import json_repair
from glue import arguments_object, call, call_parts, read_call, tool_parameters
from jsonschema import Draft202012Validator


def plain(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Repair the text, take the first call, pass it on."""
    try:
        parts = call_parts(json_repair.loads(text))
    except (ValueError, RecursionError):
        return None
    if parts is None:
        return None
    arguments = arguments_object(parts[1], json_repair.loads)
    return call(parts[0], arguments) if arguments is not None else None


def gate(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Repair, then refuse unless the declared schema accepts the arguments."""
    found = read_call(text, tools, json_repair.loads)
    if found is None:
        return None
    name, arguments, params = found
    return call(name, arguments) if Draft202012Validator(params).is_valid(arguments) else None


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
