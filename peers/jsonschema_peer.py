"""jsonschema alone as a strict gate: parse with ``json``, validate, refuse on any error."""

from __future__ import annotations

import json
from typing import Any

from glue import arguments_object, call, call_parts, tool_parameters
from jsonschema import Draft202012Validator


def gate(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    try:
        parts = call_parts(json.loads(text))
    except ValueError:
        return None
    if parts is None:
        return None
    name, raw = parts
    arguments = arguments_object(raw, json.loads)
    params = tool_parameters(tools, name)
    if arguments is None or params is None:
        return None
    return call(name, arguments) if Draft202012Validator(params).is_valid(arguments) else None
