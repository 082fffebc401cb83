"""The main corpus's cases as sources of streams: which of them carry one call, its
arguments text as written or respelled, the value a cut ends inside, and the broken
serving-layer texts (DS2, DS3) a source can be turned into.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import (
    canonical,
    loads_strict,
    raw_decode_strict,
)
from toolcall300.catalog import tool_schema
from toolcall300.generator.deltas.forms import SUFFIXES
from toolcall300.generator.deltas.wire import vertex_leaves
from toolcall300.generator.oracles import (
    calls_of,
    completed_prefix,
    read_whole,
    required_defaults,
    tool_of,
)
from toolcall300.schema import is_valid


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


def respelled(text: str, index: int) -> str:
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


def broken_text(form: str, text: str, rng: random.Random) -> str | None:
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


def emptied_refuses(case: dict[str, Any], name: str) -> bool:
    """DS3: an emptied arguments text is ``{}``; it is a case only where rule 6 then refuses
    (a required property without a default), never where ``{}`` would be a call."""
    tool = tool_of(case, name)
    if tool is None:
        return False
    _, lost = required_defaults(tool_schema(tool), {})
    return bool(lost)
