"""partial-json-parser (the streaming parser vLLM and SGLang use for tool calls) behind a
jsonschema gate: a cut stream is read as far as it goes, then the schema decides."""

from __future__ import annotations

from typing import Any

from glue import arguments_object, call, call_parts, tool_parameters
from jsonschema import Draft202012Validator
from partial_json_parser import loads


def gate(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    try:
        parts = call_parts(loads(text))
    except Exception:  # the parser raises its own error types on text it cannot read
        return None
    if parts is None:
        return None
    name, raw = parts
    try:
        arguments = arguments_object(raw, loads)
    except Exception:
        return None
    params = tool_parameters(tools, name)
    if arguments is None or params is None:
        return None
    return call(name, arguments) if Draft202012Validator(params).is_valid(arguments) else None
