"""The deltas track's corpus: one tool call per stream, as providers stream it, built from the
main corpus's labelled calls and refusals (docs/deltas.md).

Each source case of the main corpus (its label already proven by ``generate --check-only``)
becomes one or more streams: the call it carries, rendered as the events of one wire shape
(OpenAI Chat Completions chunks, OpenAI Responses events, Anthropic Messages events, Gemini
``functionCall`` chunks), with the deterministic partitions of its arguments text the scorer
replays, plus the provider-layer forms users report and the broken serving-layer streams
(labelled a refusal: deltas decisions DS2 and DS3). Pure: ``(source cases, seed)`` in, files
out; the integrity checks re-derive every label from the events alone with their own reader
and refuse a flattering corpus. It grades nothing and repairs nothing.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import (
    canonical,
    jsonl_bytes,
    loads_strict,
    pretty_bytes,
    raw_decode_strict,
    sha256_hex,
)
from toolcall300.catalog import tool_name, tool_schema
from toolcall300.controls import integrator, passes
from toolcall300.generator.oracles import (
    calls_of,
    completed_prefix,
    read_whole,
    required_defaults,
    tool_of,
)
from toolcall300.schema import is_valid

DELTAS_VERSION = "1.2"
GENERATOR = "toolcall300-deltas/1"
SHAPES = ("openai_chat", "openai_responses", "anthropic", "gemini", "vertex")
#: shapes whose stream carries no final copy of the arguments (a lost fragment is lost)
TEXT_ONLY_SHAPES = ("openai_chat", "anthropic")
FORMS = (
    "standard",  # id and name in the first event, the arguments in fragments after it
    "name_with_arguments",  # the name and the first arguments fragment in one delta
    "whole_call",  # the whole call and its finish in one delta
    "cut",  # stopped by the token limit mid-call, with the provider's own signal (rule 11)
    "no_arguments",  # a tool that takes none: each provider's empty arguments (DS3)
    "closer_in_string",  # a string value holding a closing quote and brace, escaped
    "astral_in_string",  # a string value holding a character past U+FFFF (a surrogate pair)
    "first_fragment_dropped",  # broken serving layer (DS2)
    "last_fragment_dropped",  # broken serving layer (DS2)
    "fragment_repeated",  # broken serving layer (DS2)
    "arguments_emptied",  # broken serving layer (DS3)
)
BROKEN_FORMS = FORMS[7:]
#: what the constructed forms append to one plain string value (``_constructed``)
SUFFIXES = {"closer_in_string": ' "} \\"}', "astral_in_string": " \U0001f600"}
RANDOM_PARTITIONS = 4
SEED = 31
#: The free sample (CC0, in the kit): the first case of every form and shape there is.
SAMPLE_FILE = "deltas-sample.jsonl"


# --------------------------------------------------------------------------- the four wire shapes


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
    path, text = case["fragment_path"], _get(events[k], case["fragment_path"])
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
    parents = [_get(event, path[:-1]) for event in pieces]
    if all(isinstance(p, dict) and "willContinue" in p for p in parents):
        last = parents[0]["willContinue"]
        for parent in parents:
            parent["willContinue"] = True
        parents[-1]["willContinue"] = last


def _get(value: Any, path: list[Any]) -> Any:
    for step in path:
        value = value[step]
    return value


# --------------------------------------------------------------------------- partitions


def _special_cuts(text: str) -> list[int]:
    """Cuts users' reports name: inside an escape (``\\"``, ``\\u00e9``), between the halves of
    an escaped surrogate pair, next to a multi-byte character, inside a number."""
    cuts: set[int] = set()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cuts.add(i + 1)
            if text[i + 1] == "u":
                cuts.update(range(i + 2, min(i + 6, len(text))))
                if text[i + 6 : i + 8] == "\\u":
                    cuts.add(i + 6)  # between the halves of a surrogate pair
            i += 2
            continue
        if ord(ch) > 0x7F:
            cuts.update((i, i + 1))
        if ch.isdigit() and i + 1 < len(text) and (text[i + 1].isdigit() or text[i + 1] == "."):
            cuts.add(i + 1)
        i += 1
    return sorted(c for c in cuts if 0 < c < len(text))


def partitions(text: str, rng: random.Random) -> list[list[int]]:
    """The whole stream, every two-way split, seeded random partitions, and a partition
    cutting at every special place at once; each as the sorted offsets of its cuts."""
    out: list[list[int]] = [[]]
    out += [[i] for i in range(1, len(text))]
    if len(text) > 2:
        for _ in range(RANDOM_PARTITIONS):
            count = rng.randint(2, min(len(text) - 1, 12))
            out.append(sorted(rng.sample(range(1, len(text)), count)))
        out.append(list(range(1, len(text))))  # one character per fragment
    special = _special_cuts(text)
    if special:
        out.append(special)
    seen: set[str] = set()
    unique = []
    for offsets in out:
        key = json.dumps(offsets)
        if key not in seen:
            seen.add(key)
            unique.append(offsets)
    return unique


# --------------------------------------------------------------------------- from the main corpus


@dataclass(frozen=True)
class Source:
    """One main-corpus case as a stream carries it: the name and the arguments text."""

    case: dict[str, Any]
    name: str
    text: str
    cut: bool


_ARGS_KEYS = ('"arguments"', '"parameters"', '"input"')


def source_of(case: dict[str, Any]) -> Source | None:
    """The one call a main-corpus case carries, as a stream would carry it, or None (several
    calls belong to the parallel track; a cut inside string-encoded arguments has no
    arguments text of its own)."""
    if case["category"] == "multiple_calls" or read_whole(case):
        return None  # D9.3, D9.4, D7.9: the answer rests on the whole call object, not a text
    calls = calls_of(case)
    if calls is not None:
        if len(calls) != 1:
            return None
        call = calls[0]
        args = call["arguments"]
        if args is None:
            return Source(case, call["name"], "", False)
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return Source(case, call["name"], text, False)
    # rule 11: a cut text; its arguments text is what follows the arguments key
    prefix = completed_prefix(case["text"])
    if prefix is None:
        return None
    name = re.search(r'"name"\s*:\s*("(?:[^"\\]|\\.)*")', case["text"])
    opened = re.search(r'"(?:arguments|parameters|input)"\s*:\s*\{', case["text"])
    if not name or not opened or len(re.findall(r'"name"\s*:', case["text"])) != 1:
        return None
    text = case["text"][opened.end() - 1 :]
    try:
        raw_decode_strict(text, 0)
        return None  # the arguments closed: a cut elsewhere (an array of calls, D10.4)
    except ValueError:
        return Source(case, loads_strict(name.group(1)), text, True)


def _respelled(text: str, index: int) -> str:
    """Every other stream writes non-ASCII as ``\\u`` escapes (surrogate pairs included), so
    partitions cut inside escapes as providers send them; the value is the same."""
    if index % 2 or not text:
        return text
    try:
        value = loads_strict(text)
    except ValueError:
        return text
    return json.dumps(value, ensure_ascii=True) if isinstance(value, dict) else text


_OPEN_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"[ \t\r\n]*:[ \t\r\n]*"((?:[^"\\]|\\.)*)\Z')


def cut_value(src: Source) -> tuple[dict[str, Any], str, str] | None:
    """A cut source stopped inside a top-level string value, as ``(the values completed
    before it, its key, the string begun)``; None for any other cut (mid-number, mid-key,
    inside a container: Vertex sends numbers and array items whole, so there the values it
    completed would not be rule 11's)."""
    if not src.cut:
        return None
    m = _OPEN_STRING.search(src.text)
    if m is None:
        return None
    head = src.text[: m.start()].rstrip(" \t\r\n")
    try:
        key, begun = loads_strict(f'"{m[1]}"'), loads_strict(f'"{m[2]}"')
        done = loads_strict(head.rstrip(",") + "}") if head.endswith(",") else None
    except ValueError:
        return None  # a key or string cut inside an escape, or not at the top level
    whole = completed_prefix('"arguments":' + src.text)
    if not isinstance(done, dict) or whole is None or canonical(done) != canonical(whole):
        return None
    if key in done or "'" in key or "\\" in key or not begun:
        return None
    if done and vertex_leaves(done) is None:
        return None
    return done, key, begun


def _plain_string(schema: Any) -> bool:
    """A property schema that accepts any string as it is (no enum, const, pattern, format)."""
    return (
        isinstance(schema, dict)
        and schema.get("type") == "string"
        and not {"enum", "const", "pattern", "format", "maxLength"} & set(schema)
    )


def constructed(case: dict[str, Any], text: str, form: str) -> tuple[Any, Any] | None:
    """``(arguments, label)`` of a constructed form: the first top-level string the source
    wrote that its label keeps as written, under a plain string schema, with ``SUFFIXES[form]``
    appended in both (the rules keep a valid plain string as written, so the label follows by
    construction). None when the source has no such value."""
    label = case["expected"]
    tool = tool_of(case, label["name"]) if label is not None else None
    if label is None or tool is None or not text.startswith("{"):
        return None
    args = loads_strict(text)
    props = tool_schema(tool).get("properties") or {}
    for key, value in args.items():
        kept = label["arguments"].get(key) if isinstance(label["arguments"], dict) else None
        if isinstance(value, str) and value == kept and _plain_string(props.get(key)):
            grown = value + SUFFIXES[form]
            new_label = {**label, "arguments": {**label["arguments"], key: grown}}
            if not is_valid(new_label["arguments"], tool_schema(tool)):
                return None
            return {**args, key: grown}, new_label
    return None


def _broken_text(form: str, text: str, rng: random.Random) -> str | None:
    """The arguments text a broken serving layer sends for ``form``, or None when it would
    be strict JSON again (then no stream could tell it from a real call: not a case)."""
    if len(text) < 4:
        return None
    k = rng.randint(1, max(1, min(8, len(text) // 3)))
    if form == "first_fragment_dropped":
        broken = text[k:]
    elif form == "last_fragment_dropped":
        broken = text[:-k]
    elif form == "fragment_repeated":
        i = rng.randint(0, len(text) - k)
        broken = text[: i + k] + text[i : i + k] + text[i + k :]
    else:
        return ""
    try:
        loads_strict(broken)
    except ValueError:
        return broken
    return None


def _emptied_refuses(case: dict[str, Any], name: str) -> bool:
    """DS3: an emptied arguments text is ``{}``; it is a case only where rule 6 then refuses
    (a required property without a default), never where ``{}`` would be a call."""
    tool = tool_of(case, name)
    if tool is None:
        return False
    _, lost = required_defaults(tool_schema(tool), {})
    return bool(lost)


class _Cases:
    """The corpus as it is built: its cases and rationale rows in id order, one seeded rng
    for every partition (so a form added later leaves every earlier case as it was)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cases: list[dict[str, Any]] = []
        self.rationale: list[dict[str, Any]] = []

    def add(
        self,
        src: Source,
        shape: str,
        form: str,
        text: str,
        expected: Any,
        why: str,
        rendered: Callable[[int], Rendered] | None = None,
        unless_flattering: bool = False,
    ) -> None:
        """One case: ``src``'s call as a ``shape`` stream of ``form`` (``rendered`` when the
        form spells its own events), with its partitions; none when ``unless_flattering`` and
        the plain integrator would pass it."""
        n = len(self.cases) + 1
        events, k, path, continuation = (
            rendered(n) if rendered else render(shape, form, src.name, text, n, cut=form == "cut")
        )
        case = {
            "id": f"tcd-{n:04d}",
            "track": "deltas",
            "category": src.case["category"],
            "source": src.case["id"],
            "shape": shape,
            "form": form,
            "tools": src.case["tools"],
            "events": events,
            "fragment_event": k,
            "fragment_path": path,
            "continuation": continuation,
            "partitions": [[]],
            "expected_kind": "value" if expected is not None else "unrecoverable",
            "expected": expected,
        }
        if unless_flattering and flatters(case):
            return  # accumulate-parse-validate would pass it: no case (see ``check``)
        if k is not None and form != "whole_call":
            fragment = _get(events[k], path)
            case["partitions"] = partitions(fragment, self.rng)
            around = _around_suffix(fragment, form)
            if around and around not in case["partitions"]:
                case["partitions"].append(around)
        self.cases.append(case)
        self.rationale.append({"id": case["id"], "source": src.case["id"], "rationale": why})


def build(
    sources: list[dict[str, Any]], seed: int = SEED
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(cases, rationale)`` of the deltas corpus from the main corpus's cases. Pure."""
    built = _Cases(seed)
    usable = [s for s in map(source_of, sources) if s is not None]
    for index, src in enumerate(usable):
        _first_forms(built, index, src)
    _later_forms(usable, built.add)
    return built.cases, built.rationale


def _first_forms(built: _Cases, index: int, src: Source) -> None:
    """Version 1.1's cases of one source: a cut, or the standard stream, then (every fifth)
    name with arguments and the whole call, then (every third object) the broken forms."""
    add, rng = built.add, built.rng
    label = src.case["expected"]
    base = f"{src.case['id']} ({src.case['category']}) as one {{shape}} stream, {{form}}"
    if src.cut:
        shape = ("openai_chat", "anthropic", "openai_responses")[index % 3]
        why = base.format(shape=shape, form="cut by the token limit") + (
            "; rule 11 reads the provider's own signal, so the label is the source's"
        )
        add(src, shape, "cut", src.text, label, why)
        return
    text = _respelled(src.text, index)
    is_object = text.startswith("{")
    leaves = vertex_leaves(loads_strict(text)) if is_object else None
    vertex_ok = bool(leaves) and any(isinstance(v, str) for _, v in leaves or [])
    shapes = [s for s in SHAPES if (s != "gemini" or is_object) and (s != "vertex" or vertex_ok)]
    shape = shapes[index % len(shapes)]
    add(
        src,
        shape,
        "standard",
        text,
        label,
        base.format(shape=shape, form="as written") + ": DS1, the source's label",
    )
    if index % 5 == 0:
        for form in ("name_with_arguments", "whole_call"):
            add(
                src,
                "openai_chat",
                form,
                text,
                label,
                base.format(shape="openai_chat", form=form) + ": DS1, the source's label",
            )
    if index % 3 == 0 and is_object:
        shape = TEXT_ONLY_SHAPES[index // 3 % 2]
        for form in BROKEN_FORMS:
            broken = _broken_text(form, text, rng)
            if broken is None:
                continue
            if form == "arguments_emptied" and not _emptied_refuses(src.case, src.name):
                continue
            rule = "DS3 and rule 6" if form == "arguments_emptied" else "DS2"
            add(
                src,
                shape,
                form,
                broken,
                None,
                base.format(shape=shape, form=form)
                + f": {rule}, a refusal, never an invented call",
            )


#: a tool of no arguments as each provider streams it: (shape, arguments text, how it is sent)
EMPTY_SPELLINGS = (
    ("openai_chat", "", '`arguments: ""` in the first chunk, no further fragment'),
    ("openai_chat", "{}", '`arguments: "{}"` after the first chunk'),
    ("openai_responses", "{}", 'a `.delta` of "{}" and `.done` with "{}"'),
    ("anthropic", "", 'one `input_json_delta` with `partial_json: ""`'),
    ("anthropic", None, "no `input_json_delta` at all (the block's `input: {}` only)"),
    ("gemini", "", "a `functionCall` without `args` (it is optional)"),
    ("gemini", "{}", "`args: {}`"),
    ("vertex", "{}", "a name chunk and a closing chunk, no `partialArgs`"),
)


def _empty_rendering(shape: str, text: str | None, name: str, n: int) -> Rendered:
    """One stream of a call with no arguments, spelled as ``EMPTY_SPELLINGS`` says."""
    if shape == "openai_chat" and text == "":
        return render(shape, "name_with_arguments", name, "", n, cut=False)
    events, k, path, continuation = render(shape, "standard", name, text or "", n, cut=False)
    if text is None:  # Anthropic: the tool_use block opens and stops with no delta between
        del events[k or 0]
        return events, None, [], None
    return events, k, path, continuation


def _later_forms(usable: list[Source], add: Any) -> None:
    """The forms added in version 1.2, after every earlier case (whose ids and partitions
    stay as they were): a tool of no arguments in each provider's spelling, a closing quote
    and brace inside a string value, a character past U+FFFF (its escaped surrogate pair cut
    between and inside its halves), and a Vertex stream cut mid-value."""
    for src in usable:
        label = src.case["expected"]
        base = f"{src.case['id']} ({src.case['category']}) as one {{shape}} stream, {{form}}"
        if label is not None and label["arguments"] == {} and not src.cut:
            for shape, text, how in EMPTY_SPELLINGS:
                why = base.format(shape=shape, form="of a tool that takes no arguments, " + how)
                rendered = functools.partial(_empty_rendering, shape, text, src.name)
                why += ": DS3 reads it as {}, the source's label"
                add(src, shape, "no_arguments", text or "", label, why, rendered, True)
    for form in ("closer_in_string", "astral_in_string"):
        built = [(s, constructed(s.case, s.text, form)) for s in usable if not s.cut]
        for number, (src, made) in enumerate([(s, m) for s, m in built if m is not None][:3]):
            args, label = made
            for shape in SHAPES:
                if shape == "vertex" and not vertex_leaves(args):
                    continue
                text = json.dumps(args, ensure_ascii=number != 2)
                why = (
                    f"{src.case['id']} ({src.case['category']}) as one {shape} stream, a string "
                    f"value with {SUFFIXES[form]!r} appended in the text and the label (a plain "
                    "string is kept as written: the label by construction)"
                )
                add(src, shape, form, text, label, why, None, True)
    for src in usable:
        found = cut_value(src)
        if found is not None:
            why = (
                f"{src.case['id']} ({src.case['category']}) as one vertex stream cut mid-value "
                "(MAX_TOKENS, the value still continuing); rule 11 reads the provider's own "
                "signal, so the label is the source's"
            )
            rendered = functools.partial(vertex_cut, src.name, *found)
            add(src, "vertex", "cut", "", src.case["expected"], why, rendered)


def _around_suffix(fragment: str, form: str) -> list[int]:
    """For a constructed form, one partition cutting at every offset next to and inside what
    was appended (the closing quote and brace, or the surrogate pair), as providers split it."""
    if form not in SUFFIXES:
        return []
    for spelled in (json.dumps(SUFFIXES[form])[1:-1], SUFFIXES[form]):
        at = fragment.find(spelled)
        if at >= 0:
            lo, hi = max(1, at - 1), min(len(fragment), at + len(spelled) + 2)
            return list(range(lo, hi))
    return []


def flatters(case: dict[str, Any]) -> bool:
    """Whether the plain accumulate-parse-validate integrator (C2 on the accumulated call)
    passes this value case: it reads only the accumulated text, so it would pass it under
    every partition."""
    if case["expected_kind"] != "value":
        return False
    name, text, _ = reassemble(case, case["events"])
    return passes(case, integrator(json.dumps({"name": name, "arguments": text}), case["tools"]))


# --------------------------------------------------------------------------- integrity checks


def reassemble(case: dict[str, Any], events: list[dict[str, Any]]) -> tuple[str | None, str, str]:  # noqa: C901
    """An independent reader: ``(name, arguments text, end)`` where end is ``"complete"`` or
    ``"cut"``, by each shape's documented fields alone."""
    name: str | None = None
    parts: list[str] = []
    pieces: list[dict[str, Any]] = []
    end = "complete"
    shape = case["shape"]
    for event in events:
        if shape == "openai_chat":
            choice = event["choices"][0]
            for call in choice["delta"].get("tool_calls", []):
                fn = call.get("function", {})
                name = name or fn.get("name")
                parts.append(fn.get("arguments", ""))
            if choice["finish_reason"] == "length":
                end = "cut"
        elif shape == "openai_responses":
            if event["type"] == "response.output_item.added":
                name = event["item"]["name"]
            elif event["type"] == "response.function_call_arguments.delta":
                parts.append(event["delta"])
            elif event["type"] == "response.incomplete":
                end = "cut"
        elif shape == "anthropic":
            if event["type"] == "content_block_start":
                name = event["content_block"]["name"]
            elif event["type"] == "content_block_delta":
                parts.append(event["delta"]["partial_json"])
            elif event["type"] == "message_delta" and event["delta"]["stop_reason"] == "max_tokens":
                end = "cut"
        elif shape == "gemini":
            cand = event["candidates"][0]
            call = cand["content"]["parts"][0]["functionCall"]
            name = call["name"]
            parts.append(json.dumps(call["args"], ensure_ascii=False) if "args" in call else "")
            end = "cut" if cand["finishReason"] == "MAX_TOKENS" else end
        else:  # vertex: partialArgs, each value by its jsonPath, strings in pieces
            cand = event["candidates"][0]
            content = cand.get("content", {"parts": [{"functionCall": {}}]})
            call = content["parts"][0]["functionCall"]
            name = call.get("name", name)
            for arg in call.get("partialArgs", []):
                pieces.append(arg)
            end = "cut" if cand.get("finishReason") == "MAX_TOKENS" else end
    if shape == "vertex":
        return name, json.dumps(_from_paths(pieces), ensure_ascii=False), end
    return name, "".join(parts), end


_STEP = re.compile(r"\[(\d+)\]|\['([^'\\]*)'\]")


def _from_paths(args: list[dict[str, Any]]) -> Any:
    """The arguments object Vertex's ``partialArgs`` spell, value by value (strings joined)."""
    root: dict[str, Any] = {}
    for arg in args:
        steps: list[Any] = [int(m[1]) if m[1] else m[2] for m in _STEP.finditer(arg["jsonPath"])]
        kind = next(k for k in ("stringValue", "numberValue", "boolValue", "nullValue") if k in arg)
        value = None if kind == "nullValue" else arg[kind]
        node: Any = root
        for step, after in zip(steps, [*steps[1:], None], strict=True):
            if after is None:
                break
            if isinstance(node, list):
                while len(node) <= step:
                    node.append(None)
                if node[step] is None:
                    node[step] = [] if isinstance(after, int) else {}
                node = node[step]
            else:
                node = node.setdefault(step, [] if isinstance(after, int) else {})
        last = steps[-1]
        if isinstance(node, list):
            while len(node) <= last:
                node.append(None)
            joined = kind == "stringValue" and isinstance(node[last], str)
            node[last] = f"{node[last]}{value}" if joined else value
        elif kind == "stringValue" and last in node:
            node[last] += value
        else:
            node[last] = value
    return root


def check(  # noqa: C901, PLR0915
    cases: list[dict[str, Any]], rationale: list[dict[str, Any]], sources: list[dict[str, Any]]
) -> Iterator[str]:
    """Every problem with a built deltas corpus (nothing: it is sound)."""
    by_id = {c["id"]: c for c in sources}
    ids = [c["id"] for c in cases]
    if ids != [f"tcd-{i:04d}" for i in range(1, len(cases) + 1)]:
        yield "ids are not tcd-0001.. in order"
    if [r["id"] for r in rationale] != ids:
        yield "rationale rows do not match the cases one for one"
    forms = {c["form"] for c in cases}
    shapes = {c["shape"] for c in cases}
    if forms != set(FORMS) or shapes != set(SHAPES):
        yield f"forms or shapes missing: {sorted(set(FORMS) - forms)} {sorted(set(SHAPES) - shapes)}"
    integrator_passed = 0
    for case in cases:
        where = case["id"]
        src = by_id.get(case["source"])
        if src is None:
            yield f"{where}: source {case['source']} is not in the main corpus"
            continue
        name, text, end = reassemble(case, case["events"])
        k = case["fragment_event"]
        fragment = _get(case["events"][k], case["fragment_path"]) if k is not None else ""
        for offsets in case["partitions"]:
            if offsets != sorted(set(offsets)) or any(
                not 0 < o < max(len(fragment), 1) for o in offsets
            ):
                yield f"{where}: partition {offsets} is not increasing cuts inside the text"
                break
            events = replay(case, offsets)
            again = reassemble(case, events)
            if again != (name, text, end) or (
                case["shape"] == "vertex"
                and vertex_completed(events) != vertex_completed(case["events"])
            ):
                yield f"{where}: partition {offsets} reads another call"
                break
        splits = [p for p in case["partitions"] if len(p) == 1]
        fragmented = case["fragment_event"] is not None and case["form"] != "whole_call"
        if fragmented and len(fragment) > 1 and splits != [[i] for i in range(1, len(fragment))]:
            yield f"{where}: not every two-way split is replayed"
        if end != ("cut" if case["form"] == "cut" else "complete"):
            yield f"{where}: the stream's own signal disagrees with its form"
        if case["form"] in BROKEN_FORMS:
            strict = True
            try:
                loads_strict(text)
            except ValueError:
                strict = False
            emptied = case["form"] == "arguments_emptied" and text == ""
            if case["expected"] is not None or (strict and not emptied):
                yield f"{where}: a broken stream must read as no call (DS2, DS3) and expect a refusal"
            if emptied and not _emptied_refuses(src, name or ""):
                yield f"{where}: an emptied call that rule 6 would complete is no case"
            continue
        for problem in _label_problems(case, src, name, text, end):
            yield f"{where}: {problem}"
        if flatters(case):
            integrator_passed += 1
            yield f"{where}: flattering: accumulate-parse-validate passes it under every partition"
    del integrator_passed


def _label_problems(
    case: dict[str, Any], src: dict[str, Any], name: str | None, text: str, end: str
) -> Iterator[str]:
    """What is wrong with a value or cut case's label, re-derived from its stream and source."""
    form = case["form"]
    sent = source_of(src)
    if sent is None or name != sent.name:
        yield "the stream's name is not its source's"
        return
    if form in SUFFIXES:  # the label by construction: the source's, one plain string grown
        made = constructed(src, sent.text, form)
        if made is None or canonical(case["expected"]) != canonical(made[1]):
            yield f"label is not its source's with {SUFFIXES[form]!r} appended to a plain string"
        elif canonical(loads_strict(text)) != canonical(made[0]):
            yield f"the streamed arguments are not its source's with {SUFFIXES[form]!r} appended"
        return
    if canonical(case["expected"]) != canonical(src["expected"]):
        yield "label differs from its source's"
    if form == "no_arguments":
        label = src["expected"]
        if text not in ("", "{}") or label is None or label["arguments"] != {}:
            yield "a no-arguments stream carries none (DS3: empty is {}) for a call labelled {}"
        return
    if end == "cut" and case["shape"] == "vertex":
        done, still = vertex_completed(case["events"])
        if not still:
            yield "a cut Vertex stream stops mid-value: a value still continuing"
        if canonical(done) != canonical(completed_prefix(src["text"])):
            yield "the cut stream's completed values are not its source's (rule 11)"
    elif end == "cut":
        if completed_prefix('"arguments":' + text) != completed_prefix(src["text"]):
            yield "the cut stream's completed values are not its source's (rule 11)"
    else:
        streamed = loads_strict(text) if text else None
        written = loads_strict(sent.text) if sent.text else None
        if canonical(streamed) != canonical(written):
            yield "the streamed arguments are not its source's"


def vertex_completed(events: list[dict[str, Any]]) -> tuple[dict[str, Any], set[str]]:
    """A Vertex stream's values whose last piece said no more follows, and the paths of
    those still continuing (``PartialArg.willContinue``): rule 11 keeps only the first."""
    args = [
        arg
        for event in events
        for cand in event["candidates"]
        for part in cand.get("content", {}).get("parts", [])
        for arg in part.get("functionCall", {}).get("partialArgs", [])
    ]
    going = {a["jsonPath"]: a["willContinue"] for a in args}
    still = {path for path, more in going.items() if more}
    return _from_paths([a for a in args if a["jsonPath"] not in still]), still


def sample(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The free sample: the first case (in id order) of each (form, shape) the corpus has,
    byte-identical rows of the corpus."""
    seen: set[tuple[str, str]] = set()
    out = []
    for case in cases:
        key = (case["form"], case["shape"])
        if key not in seen:
            seen.add(key)
            out.append(case)
    return out


def corpus_files(
    sources: list[dict[str, Any]], main_sha256: str, seed: int = SEED
) -> dict[str, bytes]:
    """The deltas corpus's files, byte for byte (deterministic)."""
    cases, rationale = build(sources, seed)
    problems = list(check(cases, rationale, sources))
    if problems:
        raise ValueError("deltas corpus fails its integrity checks:\n" + "\n".join(problems[:20]))
    data = jsonl_bytes(cases)
    notes = jsonl_bytes(rationale)
    free = jsonl_bytes(sample(cases))
    manifest = {
        "generator_version": GENERATOR,
        "version": DELTAS_VERSION,
        "track": "deltas",
        "seed": seed,
        "source": {"name": "toolcall300.jsonl", "sha256": main_sha256},
        "cases": len(cases),
        "streams": sum(len(c["partitions"]) for c in cases),
        "files": {
            "deltas.jsonl": {"sha256": sha256_hex(data)},
            "rationale.jsonl": {"sha256": sha256_hex(notes)},
            SAMPLE_FILE: {"sha256": sha256_hex(free)},
        },
    }
    return {
        "deltas.jsonl": data,
        "rationale.jsonl": notes,
        "manifest.json": pretty_bytes(manifest),
        SAMPLE_FILE: free,
    }


__all__ = ["build", "check", "corpus_files", "partitions", "render", "replay", "tool_name"]
