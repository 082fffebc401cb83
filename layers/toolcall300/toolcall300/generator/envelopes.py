"""Raw model output: the envelopes models and SDKs emit, and how the generator writes them.

A case's text is a call serialised the way real output looks: ``{"name", "arguments"}``,
``{"function": {...}}``, OpenAI's ``{"tool_calls": [...]}``, Anthropic's ``tool_use`` block
with ``input``, or ``parameters`` in place of ``arguments``, in compact, spaced or indented
JSON. :func:`sent_calls` reads those envelopes back for the integrity checks; it is a
reader for verification, not a normaliser, and it never repairs anything.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.spec import ARGUMENT_KEYS, CALLS_KEY, FUNCTION_KEYS

#: Envelope names, in the rotation order the generator uses.
ENVELOPES = ("bare", "function", "typed", "tool_calls", "parameters", "input")

#: E3: the envelopes of the OpenAI family, whose own format carries arguments as a JSON
#: string; the others (bare, parameters, input) carry an object.
STRING_FORMAT = frozenset({"function", "typed", "tool_calls"})

#: How a rationale names each envelope (E2), so every case says how its text is read.
ENVELOPE_NOTES = {
    "bare": "a bare {name, arguments} object",
    "function": "OpenAI's function object under `function`",
    "typed": 'OpenAI\'s function object under `function` with "type": "function"',
    "tool_calls": "OpenAI's `tool_calls` message",
    "parameters": "a {name, parameters} object",
    "input": "Anthropic's `tool_use` block with `input`",
}

_OPENING = (
    ("tool_calls", re.compile(r'\A\s*\[?\s*\{\s*"tool_calls"')),
    ("typed", re.compile(r'\A\s*\[?\s*\{\s*"type"\s*:\s*"function"')),
    ("function", re.compile(r'\A\s*\[?\s*\{\s*"function"')),
    ("input", re.compile(r'\A\s*\[?\s*\{\s*"type"\s*:\s*"tool_use"')),
    (
        "parameters",
        re.compile(r'\A\s*\[?\s*\{\s*"name"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"parameters"'),
    ),
    ("bare", re.compile(r'\A\s*\[?\s*\{\s*"name"')),
)


@dataclass(frozen=True)
class Style:
    """How a text is spaced: compact, spaced, or indented (never for cut texts)."""

    item_sep: str
    key_sep: str
    indent: int | None = None


STYLES = (Style(",", ":"), Style(", ", ": "), Style(",", ": ", 2))


def wrap(name: str, arguments: Any, envelope: str, call_id: str) -> dict[str, Any]:
    """One call in ``envelope``; the name is always written before the arguments."""
    inner = {"name": name, "arguments": arguments}
    if envelope == "bare":
        return inner
    if envelope == "function":
        return {"function": inner}
    if envelope == "typed":
        return {"type": "function", "function": inner}
    if envelope == "tool_calls":
        return {"tool_calls": [{"id": call_id, "type": "function", "function": inner}]}
    if envelope == "parameters":
        return {"name": name, "parameters": arguments}
    if envelope == "input":
        return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
    raise ValueError(f"unknown envelope {envelope!r}")


def envelope_of(text: str) -> str | None:
    """The envelope a text opens with (its first call's, for an array), read from its first
    characters so that a cut text is named too; ``None`` when it opens with none (prose)."""
    return next((name for name, opening in _OPENING if opening.match(text)), None)


def call_id(rng: random.Random, envelope: str) -> str:
    """An id in the style of the SDK the envelope imitates."""
    digits = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))
    return f"toolu_{digits}" if envelope == "input" else f"call_{digits}"


def dumps(value: Any, style: Style) -> str:
    """Serialise ``value`` in ``style``, keys in insertion order (models do not sort keys)."""
    return json.dumps(
        value, ensure_ascii=False, separators=(style.item_sep, style.key_sep), indent=style.indent
    )


def _unwrap_one(value: Any) -> dict[str, Any] | None:
    """E2 for one array item or one ``tool_calls`` entry: the call as written, or ``None``
    when it is not one (E4) or its argument keys disagree (E2: refused)."""
    if not isinstance(value, dict):
        return None  # an item that is itself an array is no call either (E1, E4)
    inner = next((value[k] for k in FUNCTION_KEYS if isinstance(value.get(k), dict)), None)
    if inner is not None:
        value = inner
    if not isinstance(value.get("name"), str):
        return None
    present = [value[key] for key in ARGUMENT_KEYS if key in value]
    if any(canonical(other) != canonical(present[0]) for other in present[1:]):
        return None
    return {"name": value["name"], "arguments": present[0] if present else None}


def sent_calls(parsed: Any) -> list[dict[str, Any]] | None:
    """The calls a parsed text carries, as written (no repair), read as E1 and E2 say; ``None``
    when it is not calls (any item that is not one makes the whole text none, D10.2)."""
    items = parsed if isinstance(parsed, list) else [parsed]
    calls: list[dict[str, Any]] = []
    for item in items:
        entries = (
            item[CALLS_KEY]
            if isinstance(item, dict) and isinstance(item.get(CALLS_KEY), list)
            else [item]
        )
        for entry in entries:
            call = _unwrap_one(entry)
            if call is None:
                return None
            calls.append(call)
    return calls or None
