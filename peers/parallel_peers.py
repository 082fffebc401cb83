"""The parallel track's peers: what users run on a turn holding several calls.

Each answers the track's list (``toolcall300 score --spec``, P1): one entry per call it found,
the call or ``None``, and ``None`` for a turn it cannot read at all. Each is wired the way its
library's documentation suggests, and none is tuned to the corpus:

- ``langchain_message``: LangChain's per-call reading, what ``langchain-openai`` does when it
  builds an ``AIMessage`` (``parse_tool_call`` on every raw call; a call that fails goes to
  ``invalid_tool_calls``, here its slot is ``None``); exact tool names only.
- ``langchain_parser``: ``JsonOutputToolsParser`` over all the calls (one bad call fails the turn).
- ``sdk_parsed``: the SDKs' parsed messages: OpenAI's ``ChatCompletionMessage`` (each
  ``function.arguments`` read with ``json.loads``, as its docs show) or Anthropic's
  ``ToolUseBlock`` list (``input`` as given); a bare array is neither SDK's and is refused.
- ``json_repair_gate``, ``json_repair_schema``, ``pydantic_lax``: the single-call peers
  (``json_repair_peers``, ``pydantic_peer``) applied to each call of the turn, the turn read
  with ``json_repair`` (or ``json.loads`` for pydantic).

The glue that finds the calls is E1/E2's (``turn_entries``): a JSON array, an OpenAI
message's ``tool_calls``, or one call. Nothing joins fragments, splits documents or collapses
copies: no library here does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import json_repair
import json_repair_peers
import pydantic_peer
from glue import call, tool_parameters
from langchain_core.messages import AIMessage
from langchain_core.output_parsers.openai_tools import JsonOutputToolsParser, parse_tool_call
from langchain_core.outputs import ChatGeneration

Single = Callable[[str, list[dict[str, Any]]], dict[str, Any] | None]
Answer = list[dict[str, Any] | None] | None


def turn_entries(value: Any) -> list[Any]:
    """E1, E2: the entries where calls are (an array's items, ``tool_calls``, or the value)."""
    out: list[Any] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and isinstance(item.get("tool_calls"), list):
            out.extend(item["tool_calls"])
        else:
            out.append(item)
    return out


def _per_call(single: Single, parse: Callable[[str], Any]) -> Callable[..., Answer]:
    def adapter(text: str, tools: list[dict[str, Any]]) -> Answer:
        try:
            entries = turn_entries(parse(text))
        except (ValueError, RecursionError):
            return None
        return [single(json.dumps(entry), tools) for entry in entries]

    return adapter


json_repair_gate = _per_call(json_repair_peers.gate, json_repair.loads)
json_repair_schema = _per_call(json_repair_peers.schema, json_repair.loads)
pydantic_lax = _per_call(pydantic_peer.lax, json.loads)


def _wire(entry: Any) -> dict[str, Any] | None:
    """One call in OpenAI's wire form (how a chat model integration hands it to LangChain)."""
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("function"), dict):
        return entry
    name = entry.get("name")
    raw = next((entry[k] for k in ("arguments", "input", "parameters") if k in entry), {})
    arguments = raw if isinstance(raw, str) else json.dumps(raw)
    return {
        "id": entry.get("id", ""),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _declared(name: Any, args: Any, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    if (
        isinstance(name, str)
        and isinstance(args, dict)
        and tool_parameters(tools, name) is not None
    ):
        return call(name, args)
    return None


def langchain_message(text: str, tools: list[dict[str, Any]]) -> Answer:
    try:
        entries = turn_entries(json.loads(text))
    except ValueError:
        return None
    out: list[dict[str, Any] | None] = []
    for entry in entries:
        wire = _wire(entry)
        try:
            parsed = parse_tool_call(wire, return_id=True) if wire else None
        except Exception:  # OutputParserException: an invalid_tool_call in the message
            parsed = None
        out.append(_declared(parsed.get("name"), parsed.get("args"), tools) if parsed else None)
    return out


PARSER = JsonOutputToolsParser()


def langchain_parser(text: str, tools: list[dict[str, Any]]) -> Answer:
    try:
        wire = [_wire(e) for e in turn_entries(json.loads(text))]
        message = AIMessage(content="", additional_kwargs={"tool_calls": wire})
        parsed = PARSER.parse_result([ChatGeneration(message=message)])
    except Exception:  # OutputParserException, the message model's own validation errors
        return None
    if not isinstance(parsed, list):
        return None
    return [_declared(p.get("type"), p.get("args"), tools) for p in parsed]


def sdk_parsed(text: str, tools: list[dict[str, Any]]) -> Answer:
    from anthropic.types import ToolUseBlock
    from openai.types.chat import ChatCompletionMessage
    from pydantic import ValidationError

    try:
        value = json.loads(text)
    except ValueError:
        return None
    out: list[dict[str, Any] | None] = []
    try:
        if isinstance(value, dict) and "tool_calls" in value:
            message = ChatCompletionMessage.model_validate(value)
            for tool_call in message.tool_calls or []:
                function = getattr(tool_call, "function", None)
                try:
                    args = json.loads(function.arguments) if function else None
                except ValueError:
                    args = None
                out.append(_declared(function.name if function else None, args, tools))
            return out
        if (
            isinstance(value, list)
            and value
            and all(isinstance(b, dict) and b.get("type") == "tool_use" for b in value)
        ):
            blocks = [ToolUseBlock.model_validate(b) for b in value]
            return [_declared(b.name, b.input, tools) for b in blocks]
    except ValidationError:
        return None
    return None
