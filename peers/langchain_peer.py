"""LangChain core's ``JsonOutputToolsParser``, fed the way a chat model integration feeds it.

The raw output becomes an ``AIMessage`` whose ``additional_kwargs["tool_calls"]`` carry the
calls in OpenAI's wire form (what ``langchain-openai`` builds from a completion: a bare
``{"name", "arguments"}`` is wrapped into that form first); the parser returns
``{"type": name, "args": {...}}`` for the first tool call. It validates nothing, so this
peer checks only the exact tool name.
"""

from __future__ import annotations

import json
from typing import Any

from glue import call, call_parts, tool_parameters
from langchain_core.messages import AIMessage
from langchain_core.output_parsers.openai_tools import JsonOutputToolsParser
from langchain_core.outputs import ChatGeneration

PARSER = JsonOutputToolsParser(first_tool_only=True)


def _wire(value: Any) -> list[dict[str, Any]] | None:
    """OpenAI wire-form tool calls for a parsed output, or None when it holds no call."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return value["tool_calls"]
    parts = call_parts(value)
    if parts is None:
        return None
    name, raw = parts
    arguments = raw if isinstance(raw, str) else json.dumps(raw)
    return [
        {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}
    ]


def parse(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    try:
        wire = _wire(json.loads(text))
    except ValueError:
        return None
    if not wire:
        return None
    try:
        message = AIMessage(content="", additional_kwargs={"tool_calls": wire})
        parsed = PARSER.parse_result([ChatGeneration(message=message)])
    except Exception:  # OutputParserException and the message model's own validation errors
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("args"), dict):
        return None
    name = parsed.get("type")
    if not isinstance(name, str) or tool_parameters(tools, name) is None:
        return None
    return call(name, parsed["args"])
