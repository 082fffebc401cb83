"""The strict JSON text reader behind tool-argument/v1's two text repairs, R1 and R2.

It reads RFC 8259 JSON and nothing looser: no comments, no single quotes, no ``NaN``, no
duplicate object keys, no lone surrogates, no number that a double cannot hold exactly as
written. When a text does not parse, :func:`repair_text` tries exactly R2 (drop each comma
that precedes a closing delimiter or the end of the text) and R1 (append the closers the
open-delimiter stack forces) and returns the result only if it then parses.

It is deliberately not a tolerant parser: it never completes a string, a literal or a number,
never inserts a comma, a colon, a key or a value, and never guesses what a cut text meant.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from toolcall300.canonical import loads_strict

TEXT_PATH = "$arguments_text"

_CLOSER = {"{": "}", "[": "]"}

# RFC 8259 tokens. A string may not hold raw control characters (section 7).
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\n\r]+)
  | (?P<punct>[{}\[\]:,])
  | (?P<string>"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")
  | (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
  | (?P<literal>true|false|null)
    """,
    re.VERBOSE,
)


class TextError(ValueError):
    """The text is not (strict) JSON."""


class TooDeep(ValueError):
    """The text nests deeper than the caller's limit allows."""


class Token(NamedTuple):
    """One lexical token: ``kind`` is the punctuation character itself, ``string``,
    ``number`` or ``literal``; ``start``/``end`` index the text."""

    kind: str
    start: int
    end: int


def lex(text: str) -> list[Token]:
    """Split ``text`` into JSON tokens (whitespace dropped); :class:`TextError` on any other
    character, including a string, literal or number cut off by the end of the text."""
    out: list[Token] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TextError(f"no JSON token at character {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(Token(text[pos] if kind == "punct" else kind, pos, m.end()))
        pos = m.end()
    return out


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value (a scalar is 0, ``{}`` is 1), counted iteratively and
    stopping once past ``limit`` so a hostile value costs no more than ``limit`` levels."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (not valid Unicode text, RFC 8259 s. 8.2)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _strings_ok(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if has_lone_surrogate(node):
                return False
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def loads(text: str, max_depth: int) -> Any:
    """Parse strict JSON. :class:`TooDeep` past ``max_depth`` levels, :class:`TextError`
    for anything that is not RFC 8259 JSON of valid Unicode text."""
    try:
        value = loads_strict(text)  # no duplicate keys (D14), NaN or overflowing numbers (D17)
    except RecursionError as exc:
        raise TooDeep("nesting exceeds the parser's limit") from exc
    except ValueError as exc:  # JSONDecodeError, TextError, int digit limit
        raise TextError(str(exc)) from exc
    # Each walk runs only when a scan of the text cannot rule its finding out: no more opening
    # brackets than the limit means no deeper nesting, and a string of the value can hold a
    # surrogate only from a raw one in the text or from a \u escape of one.
    if text.count("{") + text.count("[") > max_depth and json_depth(value, max_depth) > max_depth:
        raise TooDeep(f"nesting exceeds {max_depth} levels")
    if (_SURROGATE_ESCAPE.search(text) or has_lone_surrogate(text)) and not _strings_ok(value):
        raise TextError("string holds a lone surrogate")
    return value


#: A ``\u`` escape of a surrogate code point (one of a valid pair matches too).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _ends_at_token_boundary(text: str, tokens: list[Token]) -> bool:
    # Decision (open in the criteria): a number that runs to the very end of the text may
    # have been cut mid-digits ("days": 1 could have been 12), so it is not a token
    # boundary and R1 does not apply. A number followed by anything (even a space) ended.
    return not (tokens and tokens[-1].kind == "number" and tokens[-1].end == len(text))


def repair_text(text: str, max_depth: int) -> tuple[Any, list[dict[str, Any]]] | None:
    """Try R2 then R1 on a text that did not parse; the parsed value and the diff, or None.

    Both rules are judged on the text as submitted: R2 removes every comma whose next token
    is a closing delimiter or the end of the text (in text order, each its own diff entry),
    then R1 appends the closers of the delimiters still open, innermost first. If the
    result does not parse, the text is not repairable (invalid_json_text).
    """
    try:
        tokens = lex(text)
    except TextError:
        return None  # ends inside a string or mid-token, or holds a non-JSON character
    stack: list[str] = []
    trailing: list[Token] = []
    for i, tok in enumerate(tokens):
        if tok.kind in _CLOSER:
            stack.append(tok.kind)
        elif tok.kind in ("}", "]"):
            if not stack or _CLOSER[stack.pop()] != tok.kind:
                return None  # a mismatched closer: nothing on the whitelist fixes it
        elif tok.kind == ",":
            nxt = tokens[i + 1].kind if i + 1 < len(tokens) else None
            if nxt in (None, "}", "]"):
                trailing.append(tok)
    closers = "".join(_CLOSER[c] for c in reversed(stack))
    if closers and not _ends_at_token_boundary(text, tokens):
        return None
    if not trailing and not closers:
        return None
    repaired = drop_commas(text, [t.start for t in trailing]) + closers
    try:
        value = loads(repaired, max_depth)
    except TextError:
        return None
    diff: list[dict[str, Any]] = [
        {"path": TEXT_PATH, "rule": "R2", "op": "remove", "before": ",", "after": ""}
        for _ in trailing
    ]
    if closers:
        diff.append(
            {"path": TEXT_PATH, "rule": "R1", "op": "append", "before": None, "after": closers}
        )
    return value, diff


def drop_commas(text: str, offsets: list[int]) -> str:
    """``text`` without the characters at ``offsets`` (each one a comma)."""
    out: list[str] = []
    prev = 0
    for off in sorted(offsets):
        out.append(text[prev:off])
        prev = off + 1
    out.append(text[prev:])
    return "".join(out)


def trailing_comma_offsets(text: str) -> list[int]:
    """Offsets of the commas R2 would remove, in text order (empty if the text does not lex).

    :func:`apply_text_diff` uses it: the k-th R2 diff entry removes the k-th such comma, so
    the five-field diff entry of the criteria locates its comma without an offset field.
    """
    try:
        tokens = lex(text)
    except TextError:
        return []
    return [
        tok.start
        for i, tok in enumerate(tokens)
        if tok.kind == "," and (i + 1 == len(tokens) or tokens[i + 1].kind in ("}", "]"))
    ]


def apply_text_diff(text: str, entries: list[dict[str, Any]]) -> str:
    """Apply the ``$arguments_text`` entries of a diff (R2 removals, then an R1 append)."""
    offsets = trailing_comma_offsets(text)
    removals = [e for e in entries if e["rule"] == "R2"]
    if len(removals) > len(offsets):
        raise ValueError("diff removes more trailing commas than the text has")
    out = drop_commas(text, offsets[: len(removals)])
    for entry in entries:
        if entry["rule"] == "R1":
            out += entry["after"]
    return out
