"""How a case's text is read, the way the grading contract says: its calls as written in
their envelopes (the one-call readers every check starts from), arguments strings decoded
as often as they decode, the completely written prefix of a cut text (rule 11, D10.4,
D11.1-D11.4) and the defaults a missing required property takes (rule 6).
"""

from __future__ import annotations

import re
from typing import Any

from toolcall300.canonical import loads_strict, raw_decode_strict
from toolcall300.catalog import Tool, tool_name
from toolcall300.generator.envelopes import sent_calls
from toolcall300.schema import is_number
from toolcall300.spec import CALLS_KEY


def parsed(case: dict[str, Any]) -> tuple[bool, Any]:
    """``(True, value)`` when the text is strict JSON, else ``(False, None)``."""
    try:
        return True, loads_strict(case["text"])
    except ValueError:
        return False, None


def calls_of(case: dict[str, Any]) -> list[dict[str, Any]] | None:
    ok, value = parsed(case)
    return sent_calls(value) if ok else None


def tool_of(case: dict[str, Any], name: str) -> Tool | None:
    return next((t for t in case["tools"] if tool_name(t) == name), None)


def names_of(case: dict[str, Any]) -> list[str]:
    return [tool_name(t) for t in case["tools"]]


def one_call(case: dict[str, Any]) -> dict[str, Any] | None:
    """The single call a text carries with object arguments, else ``None``."""
    calls = calls_of(case)
    if not calls or len(calls) != 1 or not isinstance(calls[0]["arguments"], dict):
        return None
    return calls[0]


def decode_strings(args: Any) -> tuple[Any, int]:
    """Rule 9: decode a string until it is no longer one; the value and how many decodes."""
    times = 0
    while isinstance(args, str):
        try:
            args = loads_strict(args)
        except ValueError:
            break
        times += 1
    return args, times


_ARGS_OPEN = re.compile(r'"(?:arguments|parameters|input)"\s*:\s*\{')
NAME_FIELD = re.compile(r'"name"\s*:\s*("(?:[^"\\]|\\.)*")')


_WS = " \t\r\n"
_DELIMITERS = ",}] \t\r\n"


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def completed_prefix(text: str) -> dict[str, Any] | None:
    """The top-level arguments whose values were completely written before a cut (D11.1-D11.4).

    An independent reader of cut text used to verify truncated labels: a value counts only
    if it decodes whole, and a number only if a delimiter follows it (D11.3). Containers that
    never closed fail to decode and are therefore dropped whole (D11.2, D11.4).
    """
    match = _ARGS_OPEN.search(text)
    if not match:
        return None
    pos = match.end()
    out: dict[str, Any] = {}
    while True:
        pos = _skip(text, pos)
        if pos >= len(text) or text[pos] != '"':
            return out
        try:
            key, pos = raw_decode_strict(text, pos)
        except ValueError:
            return out
        pos = _skip(text, pos)
        if pos >= len(text) or text[pos] != ":":
            return out
        pos = _skip(text, pos + 1)
        try:
            value, end = raw_decode_strict(text, pos)
        except ValueError:
            return out
        if is_number(value) and (end >= len(text) or text[end] not in _DELIMITERS):
            return out  # D11.3: a number with no delimiter after it may have had more digits
        out[key] = value
        pos = _skip(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        return out


_CALL_ARRAY = re.compile(r'\A[ \t\r\n]*(?:\[|\{[ \t\r\n]*"tool_calls"[ \t\r\n]*:[ \t\r\n]*\[)')


def cut_call_array(text: str) -> tuple[list[Any], str] | None:
    """A text cut inside its array of calls (E1's array, or the `tool_calls` message's), read
    after the calls it completed: those items as written, and what follows them (whitespace
    and one comma skipped). ``None`` when the text opens no such array, when the cut fell inside
    its first item (a rule 11 cut within one call), or when the array closed (no cut in it).

    An empty rest is D10.4's text (`[{...}` or `[{...},` at the cut: rule 11 closes the array,
    nothing was begun after the calls); a rest is a further item begun and cut (D10.2).
    """
    match = _CALL_ARRAY.match(text)
    if not match:
        return None
    pos, items = match.end(), []
    while True:
        pos = _skip(text, pos)
        try:
            item, end = raw_decode_strict(text, pos)
        except ValueError:
            break
        items.append(item)
        pos = _skip(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        break
    rest = text[_skip(text, pos) :]
    if not items or rest.startswith("]"):
        return None
    return items, rest


def array_cut_calls(text: str) -> list[dict[str, Any]] | None:
    """D10.4: the calls of a text whose only incomplete part is its array of calls, cut after
    the last complete one, read as E2 says (no repair); ``None`` for any other text, a second
    call begun and cut (D10.2) included."""
    cut = cut_call_array(text)
    if cut is None or cut[1]:
        return None
    items = cut[0]
    return sent_calls(items if text.lstrip().startswith("[") else {CALLS_KEY: items})


def required_defaults(
    schema: dict[str, Any], present: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Rule 6: defaults for missing required properties, and the missing ones without a default."""
    fill, lost = {}, []
    for key in schema.get("required", []):
        if key not in present:
            sub = schema.get("properties", {}).get(key, {})
            if "default" in sub:
                fill[key] = sub["default"]
            else:
                lost.append(key)
    return fill, lost
