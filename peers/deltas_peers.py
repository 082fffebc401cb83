"""The deltas track's peers: what users run today to assemble a streamed tool call.

Each is a deltas adapter (docs/adapter-protocols.md, "The deltas track"): it takes the
stream's events one by one and the tools, and returns ``{"name", "arguments"}`` or ``None``.
Each is wired the way its library's documentation shows, and none is tuned to the corpus:

- ``sdk_accumulate``: the providers' SDKs' own stream accumulation: openai's
  ``ChatCompletionStreamState`` (what ``client.chat.completions.stream`` runs) on Chat
  Completions chunks, the ``function_call`` item of ``response.output_item.done`` on Responses
  events (the event the Responses streaming guide points to), anthropic's ``accumulate_event``
  (what ``client.messages.stream`` runs, its ``tool_use`` block's ``input``) on Messages
  events, and a Gemini ``functionCall``'s ``args`` as given; the arguments string read with
  ``json.loads``, no schema check (the SDKs check none).
- ``langchain_chunks``: langchain-core's ``AIMessageChunk`` merging (``chunk + chunk``) of
  ``tool_call_chunks`` built from each event, as the provider integrations do; the merged
  message's ``tool_calls`` (or nothing when it lands in ``invalid_tool_calls``).
- ``langchain_progressive``: the same, committing every top-level value of the merged
  message's partial ``tool_calls[0]["args"]`` as it appears or changes (what a UI showing a
  call as it streams does).
- ``partial_json_gate``: partial-json-parser (vLLM's and SGLang's streaming parser) on the
  accumulated arguments text, behind a jsonschema gate.
- ``json_repair_gate``: json-repair on the accumulated arguments text, behind a jsonschema gate.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

import json_repair
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from glue import tool_parameters
from jsonschema import Draft202012Validator
from langchain_core.messages import AIMessageChunk
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from partial_json_parser import loads as partial_loads
from pydantic import TypeAdapter

Call = dict[str, Any] | None
_ANTHROPIC = TypeAdapter(RawMessageStreamEvent)


def _fragments(event: dict[str, Any]) -> tuple[str | None, str | None, str | None, Any]:
    """``(name, id, arguments fragment, whole args object)`` one event carries, any shape."""
    for choice in event.get("choices") or []:
        for call in (choice.get("delta") or {}).get("tool_calls") or []:
            fn = call.get("function") or {}
            return fn.get("name"), call.get("id"), fn.get("arguments"), None
        return None, None, None, None
    kind = event.get("type")
    if (
        kind == "response.output_item.added"
        and (event.get("item") or {}).get("type") == "function_call"
    ):
        return event["item"].get("name"), event["item"].get("call_id"), None, None
    if kind == "response.function_call_arguments.delta":
        return None, None, event.get("delta"), None
    if (
        kind == "content_block_start"
        and (event.get("content_block") or {}).get("type") == "tool_use"
    ):
        return event["content_block"].get("name"), event["content_block"].get("id"), None, None
    if (
        kind == "content_block_delta"
        and (event.get("delta") or {}).get("type") == "input_json_delta"
    ):
        return None, None, event["delta"].get("partial_json"), None
    for cand in event.get("candidates") or []:
        for part in (cand.get("content") or {}).get("parts") or []:
            if isinstance(part.get("functionCall"), dict):
                fc = part["functionCall"]
                return fc.get("name"), None, None, fc.get("args", {})
    return None, None, None, None


def _accumulated(events: Iterator[dict[str, Any]]) -> tuple[str | None, str, Any]:
    name, parts, whole = None, [], None
    for event in events:
        got_name, _, piece, args = _fragments(event)
        name = name or got_name
        if piece is not None:
            parts.append(piece)
        if args is not None:
            whole = args
    return name, "".join(parts), whole


def _gate(name: str | None, arguments: Any, tools: list[dict[str, Any]]) -> Call:
    params = tool_parameters(tools, name) if isinstance(name, str) else None
    if params is None or not isinstance(arguments, dict):
        return None
    if any(True for _ in Draft202012Validator(params).iter_errors(arguments)):
        return None
    return {"name": name, "arguments": arguments}


# --------------------------------------------------------------------------- the SDKs


def sdk_accumulate(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]) -> Call:
    listed = list(events)
    first = listed[0] if listed else {}
    if (
        "choices" in first
    ):  # openai: ChatCompletionStreamState, as client.chat.completions.stream runs it
        state = ChatCompletionStreamState()
        for event in listed:
            state.handle_chunk(ChatCompletionChunk.model_validate(event))
        message = state.current_completion_snapshot.choices[0].message
        calls = message.tool_calls or []
        if not calls:
            return None
        raw_name, raw_args = calls[0].function.name, calls[0].function.arguments
    elif str(first.get("type", "")).startswith("response."):  # the item of output_item.done
        done = [e["item"] for e in listed if e.get("type") == "response.output_item.done"]
        if not done:
            return None
        raw_name, raw_args = done[-1].get("name"), done[-1].get("arguments")
    elif "candidates" in first:  # Gemini: the functionCall's args object as given
        name, _, whole = _accumulated(iter(listed))
        return {"name": name, "arguments": whole} if isinstance(whole, dict) else None
    else:  # anthropic: accumulate_event, as client.messages.stream runs it
        snapshot = None
        bufs: dict[int, bytes] = {}
        for event in listed:
            snapshot = accumulate_event(
                event=_ANTHROPIC.validate_python(event), current_snapshot=snapshot, json_bufs=bufs
            )
        blocks = [b for b in (snapshot.content if snapshot else []) if b.type == "tool_use"]
        if not blocks:
            return None
        return {"name": blocks[0].name, "arguments": blocks[0].input}
    try:
        arguments = json.loads(raw_args) if raw_args else {}
    except ValueError:
        return None
    return {"name": raw_name, "arguments": arguments}


# --------------------------------------------------------------------------- LangChain


def _chunk(event: dict[str, Any]) -> AIMessageChunk | None:
    name, call_id, piece, whole = _fragments(event)
    if whole is not None:
        piece = json.dumps(whole)
    if name is None and piece is None:
        return None
    return AIMessageChunk(
        content="",
        tool_call_chunks=[
            {
                "name": name,
                "args": piece or "",
                "id": call_id,
                "index": 0,
                "type": "tool_call_chunk",
            }
        ],
    )


def _merged_call(merged: AIMessageChunk | None) -> Call:
    if merged is None or not merged.tool_calls:
        return None
    call = merged.tool_calls[0]
    return {"name": call["name"], "arguments": call["args"]}


def langchain_chunks(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]) -> Call:
    merged: AIMessageChunk | None = None
    for event in events:
        chunk = _chunk(event)
        if chunk is not None:
            merged = chunk if merged is None else merged + chunk
    return _merged_call(merged)


def langchain_progressive(
    events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]
) -> Generator[dict[str, Any], None, Call]:
    merged: AIMessageChunk | None = None
    shown: dict[str, str] = {}
    for event in events:
        chunk = _chunk(event)
        if chunk is None:
            continue
        merged = chunk if merged is None else merged + chunk
        current = _merged_call(merged)
        for key, value in ((current or {}).get("arguments") or {}).items():
            spelled = json.dumps(value, sort_keys=True)
            if shown.get(key) != spelled:
                shown[key] = spelled
                yield {"path": [key], "value": value}
    return _merged_call(merged)


# --------------------------------------------------------------------------- text repairers


def _repaired(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]], parse: Any) -> Call:
    name, text, whole = _accumulated(events)
    if whole is not None:
        return _gate(name, whole, tools)
    try:
        arguments = parse(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return None
    if isinstance(arguments, str):  # the accumulated text was itself a JSON string
        try:
            arguments = parse(arguments)
        except (ValueError, RecursionError):
            return None
    return _gate(name, arguments, tools)


def partial_json_gate(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]) -> Call:
    return _repaired(events, tools, partial_loads)


def json_repair_gate(events: Iterator[dict[str, Any]], tools: list[dict[str, Any]]) -> Call:
    return _repaired(events, tools, json_repair.loads)
