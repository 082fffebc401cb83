"""The wire shapes: one call rendered as the events a provider streams (OpenAI Chat
Completions chunks, OpenAI Responses events, Anthropic Messages events, Gemini and Vertex AI
``functionCall`` chunks), and the replay of a stream under one partition of its fragment.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

from toolcall300.canonical import (
    loads_strict,
)
from toolcall300.generator.deltas.forms import SUFFIXES


def _chat_chunk(delta: dict[str, Any], finish: str | None, n: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n:04d}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chat_args(piece: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}


CHAT_PATH = ["choices", 0, "delta", "tool_calls", 0, "function", "arguments"]


Rendered = tuple[list[dict[str, Any]], int | None, list[Any], dict[str, Any] | None]


def render(shape: str, form: str, name: str, text: str, n: int, *, cut: bool) -> Rendered:
    """``(events, fragment_event, fragment_path, continuation)`` of one stream carrying
    ``name`` and the arguments ``text`` whole in the event ``fragment_event`` at
    ``fragment_path``; ``continuation`` is the event every further fragment rides in (its
    fragment field empty). ``cut``: the provider stopped it at its token limit."""
    call_id = f"call_{n:04d}"
    if shape == "openai_chat":
        first: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ],
        }
        finish = "length" if cut else "tool_calls"
        if form == "whole_call":
            first["tool_calls"][0]["function"]["arguments"] = text
            return (
                [_chat_chunk(first, finish, n)],
                0,
                CHAT_PATH,
                _chat_chunk(_chat_args(""), None, n),
            )
        if form == "name_with_arguments":
            first["tool_calls"][0]["function"]["arguments"] = text
            events = [_chat_chunk(first, None, n), _chat_chunk({}, finish, n)]
            return events, 0, CHAT_PATH, _chat_chunk(_chat_args(""), None, n)
        events = [
            _chat_chunk(first, None, n),
            _chat_chunk(_chat_args(text), None, n),
            _chat_chunk({}, finish, n),
        ]
        return events, 1, CHAT_PATH, _chat_chunk(_chat_args(""), None, n)
    if shape == "openai_responses":
        item = {
            "type": "function_call",
            "id": f"fc_{n:04d}",
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        response = {"id": f"resp_{n:04d}", "object": "response", "status": "in_progress"}
        delta = {
            "type": "response.function_call_arguments.delta",
            "item_id": item["id"],
            "output_index": 0,
            "delta": text,
        }
        done_item = {**item, "arguments": text, "status": "incomplete" if cut else "completed"}
        events = [
            {"type": "response.created", "response": response},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            delta,
        ]
        if not cut:
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": 0,
                    "arguments": text,
                }
            )
        events.append({"type": "response.output_item.done", "output_index": 0, "item": done_item})
        if cut:
            final = {
                **response,
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            }
            events.append({"type": "response.incomplete", "response": final})
        else:
            events.append(
                {"type": "response.completed", "response": {**response, "status": "completed"}}
            )
        for number, event in enumerate(events):
            event["sequence_number"] = number
        return events, 2, ["delta"], {**delta, "delta": ""}
    if shape == "anthropic":
        delta_event: dict[str, Any] = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": text},
        }
        events = [
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{n:04d}",
                    "type": "message",
                    "role": "assistant",
                    "model": "model",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_{n:04d}",
                    "name": name,
                    "input": {},
                },
            },
            delta_event,
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "max_tokens" if cut else "tool_use",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 0},
            },
            {"type": "message_stop"},
        ]
        delta_path: list[Any] = ["delta", "partial_json"]
        return (
            events,
            2,
            delta_path,
            {**delta_event, "delta": {**delta_event["delta"], "partial_json": ""}},
        )
    if shape == "gemini":  # the Gemini API streams a call whole: args is an object, no fragments
        call: dict[str, Any] = {"name": name}
        if text:  # FunctionCall.args is optional: a call of no arguments may leave it out
            call["args"] = loads_strict(text)
        event = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"functionCall": call}]},
                    "finishReason": "MAX_TOKENS" if cut else "STOP",
                    "index": 0,
                }
            ]
        }
        return [event], None, [], None
    if shape == "vertex":  # Vertex AI streamFunctionCallArguments: partialArgs by jsonPath
        return _vertex(name, loads_strict(text), cut)
    raise ValueError(f"unknown shape {shape!r}")


def _vertex_chunk(call: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"functionCall": call}]},
        "index": 0,
    }
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def json_path(path: tuple[Any, ...]) -> str:
    """An RFC 9535 normalized path: ``$['key'][0]``."""
    out = "$"
    for step in path:
        out += (
            f"[{step}]" if isinstance(step, int) else "[" + json.dumps(step).replace('"', "'") + "]"
        )
    return out


def vertex_leaves(
    value: Any, path: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], Any]] | None:
    """The scalar leaves of ``value`` in order, or None when an empty container (which no
    ``PartialArg`` can carry) or a key a normalized path cannot spell simply is in it."""
    if isinstance(value, dict):
        if not value or any("'" in k or "\\" in k for k in value):
            return None
        out: list[tuple[tuple[Any, ...], Any]] = []
        for key, sub in value.items():
            found = vertex_leaves(sub, (*path, key))
            if found is None:
                return None
            out += found
        return out
    if isinstance(value, list):
        if not value:
            return None
        out = []
        for i, sub in enumerate(value):
            found = vertex_leaves(sub, (*path, i))
            if found is None:
                return None
            out += found
        return out
    return [(path, value)]


def _partial(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    arg: dict[str, Any] = {"jsonPath": json_path(path)}
    if value is None:
        arg["nullValue"] = "NULL_VALUE"
    elif isinstance(value, bool):
        arg["boolValue"] = value
    elif isinstance(value, str):
        arg["stringValue"] = value
    else:
        arg["numberValue"] = value
    arg["willContinue"] = False
    return arg


def _vertex(
    name: str, args: Any, cut: bool
) -> tuple[list[dict[str, Any]], int | None, list[Any], dict[str, Any] | None]:
    leaves = vertex_leaves(args) or []
    strings = [i for i, (_, v) in enumerate(leaves) if isinstance(v, str)]
    grown = [i for i in strings if any(x in leaves[i][1] for x in SUFFIXES.values())]
    longest = (
        grown[0]
        if grown
        else max(strings, key=lambda i: (len(leaves[i][1]), -i))
        if strings
        else None
    )  # the fragment cut: a constructed value (``constructed``), else the longest string
    events = [_vertex_chunk({"name": name, "willContinue": True})]
    fragment = None
    for i, (path, value) in enumerate(leaves):
        if i == longest:
            fragment = len(events)
        events.append(_vertex_chunk({"partialArgs": [_partial(path, value)], "willContinue": True}))
    events.append(_vertex_chunk({"willContinue": False}, "MAX_TOKENS" if cut else "STOP"))
    if fragment is None:
        return events, None, [], None
    frag_path: list[Any] = [*VERTEX_FRAGMENT, "stringValue"]
    continuation = copy.deepcopy(events[fragment])
    return events, fragment, frag_path, continuation


VERTEX_FRAGMENT = ["candidates", 0, "content", "parts", 0, "functionCall", "partialArgs", 0]


def vertex_cut(name: str, done: dict[str, Any], key: str, begun: str, n: int = 0) -> Rendered:
    """A Vertex stream stopped by its token limit mid-value: the values ``done`` whole, then
    the string at ``key`` begun as ``begun`` and still continuing (``willContinue: true``),
    then a chunk whose ``finishReason`` is ``MAX_TOKENS`` and which continues nothing
    (``n``, the case's number, names nothing here: a Vertex chunk carries no id)."""
    del n
    events = [_vertex_chunk({"name": name, "willContinue": True})]
    events += [
        _vertex_chunk({"partialArgs": [_partial(path, value)], "willContinue": True})
        for path, value in vertex_leaves(done) or []
    ]
    open_arg = {**_partial((key,), begun), "willContinue": True}
    events.append(_vertex_chunk({"partialArgs": [open_arg], "willContinue": True}))
    events.append({"candidates": [{"finishReason": "MAX_TOKENS", "index": 0}]})
    k = len(events) - 2
    return events, k, [*VERTEX_FRAGMENT, "stringValue"], copy.deepcopy(events[k])


def _set(value: Any, path: list[Any], piece: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = piece


def replay(case: dict[str, Any], offsets: list[int]) -> list[dict[str, Any]]:
    """The events of ``case`` under one partition: its arguments fragment cut at ``offsets``
    (docs/deltas.md, "Partitions"); the scorer's ``tracks.deltas.replay`` is the same rule."""
    events = case["events"]
    k = case["fragment_event"]
    if k is None or not offsets:
        return copy.deepcopy(events)
    path, text = case["fragment_path"], path_value(events[k], case["fragment_path"])
    bounds = [0, *offsets, len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    head = copy.deepcopy(events[k])
    _set(head, path, pieces[0])
    more = []
    for piece in pieces[1:]:
        event = copy.deepcopy(case["continuation"])
        _set(event, path, piece)
        more.append(event)
    _continues([head, *more], path)
    out = (
        [copy.deepcopy(e) for e in events[:k]]
        + [head, *more]
        + [copy.deepcopy(e) for e in events[k + 1 :]]
    )
    if all("sequence_number" in e for e in out):
        for number, event in enumerate(out):
            event["sequence_number"] = number
    return out


def _continues(pieces: list[dict[str, Any]], path: list[Any]) -> None:
    """Vertex's ``PartialArg.willContinue``: every piece but the last of a value says true;
    the last says what the whole fragment said (the head piece is a copy of it): true on a
    value cut mid-way."""
    parents = [path_value(event, path[:-1]) for event in pieces]
    if all(isinstance(p, dict) and "willContinue" in p for p in parents):
        last = parents[0]["willContinue"]
        for parent in parents:
            parent["willContinue"] = True
        parents[-1]["willContinue"] = last


def path_value(value: Any, path: list[Any]) -> Any:
    for step in path:
        value = value[step]
    return value
