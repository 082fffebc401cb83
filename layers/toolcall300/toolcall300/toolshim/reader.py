"""An incremental JSON reader that knows which values were completely written (rule 11).

``read_values(text)`` reads a sequence of JSON documents written one after another
(concatenated or separated by whitespace). Complete values come back as plain Python
values. When the text stops in the middle of the last document, the unfinished parts come
back as markers instead of guesses: :class:`OpenObject` and :class:`OpenArray` for a
container whose closing bracket never arrived (holding only what was completely written,
plus at most one unfinished last member), :class:`CutString` for a string whose closing
quote never arrived, and :class:`CutToken` for a number or literal at the cut (a number is
complete only when a delimiter follows it, D11.1 and D11.3). Deciding what to keep is the
caller's job; this module only reports what arrived.

It is not a lenient parser: anything that is not JSON as ``canonical.loads_strict`` reads it
before the cut (a trailing comma, a single quote, ``NaN``, a duplicate key, prose around the
JSON) raises :class:`Malformed`. The fast path for complete text is that strict reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from toolcall300.canonical import json_int, raw_decode_strict

#: Deeper nesting than this is refused rather than risking the interpreter's recursion limit.
MAX_DEPTH = 256

_WS = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# A prefix of some JSON number that the end of the text cut short ("-", "1.", "2e+").
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# What can stand between a high surrogate escape and the cut: the start of its low half.
_CUT_LOW_ESCAPE = re.compile(r"(?:\\(?:u[0-9a-fA-F]{0,3})?)?")
_LITERALS = (("true", True), ("false", False), ("null", None))


#: What ``_Reader`` first tries the standard decoder on (not a number: D11.3 judges those).
_DECODABLE = frozenset('{["')


class Malformed(ValueError):
    """The text is not JSON, even allowing for a cut at its end."""


@dataclass
class OpenObject:
    """An object whose ``}`` never arrived. ``members`` holds every member whose key was
    complete; only the last one's value may be unfinished. ``cut_key`` is the partial key
    the text stopped inside (or after, before its value began), else ``None``."""

    members: dict[str, Any] = field(default_factory=dict)
    cut_key: str | None = None


@dataclass
class OpenArray:
    """An array whose ``]`` never arrived; only the last item may be unfinished."""

    items: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class CutString:
    """A string whose closing quote never arrived; ``prefix`` is what was decoded of it."""

    prefix: str


@dataclass(frozen=True)
class CutToken:
    """A number or literal at the cut: ``text`` is what arrived of it."""

    text: str


def is_complete(value: Any) -> bool:
    """Whether ``value`` was completely written (D11.1): not one of this module's markers."""
    return not isinstance(value, (OpenObject, OpenArray, CutString, CutToken))


def read_values(text: str) -> list[Any]:
    """Every JSON document in ``text``, in order; the last may hold cut markers.

    >>> read_values('{"a": 1} {"b": [2]}')
    [{'a': 1}, {'b': [2]}]
    >>> read_values('{"a": 1, "b": [2')
    [OpenObject(members={'a': 1, 'b': OpenArray(items=[CutToken(text='2')])}, cut_key=None)]
    """
    try:  # fast path: the standard decoder, one document after another
        out: list[Any] = []
        pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
        while pos < len(text):
            start = pos
            value, pos = raw_decode_strict(text, pos)
            if pos == len(text) and isinstance(value, (int, float)) and not isinstance(value, bool):
                value = CutToken(text[start:])  # D11.3: a number at the cut, even a top-level one
            out.append(value)
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        return out
    except (ValueError, RecursionError):
        pass  # not complete JSON: read again, slowly, to tell a cut from a syntax error
    try:
        return _Reader(text).documents()
    except Malformed:
        raise
    except (ValueError, RecursionError) as exc:  # e.g. an integer too long for int()
        raise Malformed(str(exc)) from None


class _Reader:
    """Recursive descent over one text; ``pos`` only moves forward."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0

    def documents(self) -> list[Any]:
        out: list[Any] = []
        self._ws()
        while self.pos < self.n:
            value = self._value(0)
            out.append(value)
            if not is_complete(value):
                return out  # the cut: nothing can follow it
            self._ws()
        return out

    def _ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def _at_end(self) -> bool:
        return self.pos >= self.n

    def _value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise Malformed("nested too deeply")
        c = self.text[self.pos]
        if c in _DECODABLE:
            # A container or string that is complete is read at C speed; only the values the
            # cut runs through (and a malformed one, to say where) are read by hand below.
            try:
                value, self.pos = raw_decode_strict(self.text, self.pos)
            except (ValueError, RecursionError):
                pass
            else:
                return value
        if c == "{":
            return self._object(depth + 1)
        if c == "[":
            return self._array(depth + 1)
        if c == '"':
            return self._string()
        if c == "-" or "0" <= c <= "9":
            return self._number()
        return self._literal()

    def _object(self, depth: int) -> Any:  # noqa: C901
        self.pos += 1
        members: dict[str, Any] = {}
        self._ws()
        if self._at_end():
            return OpenObject(members)
        if self.text[self.pos] == "}":
            self.pos += 1
            return members
        while True:
            if self.text[self.pos] != '"':
                raise Malformed(f"expected a key at {self.pos}")
            try:
                key, self.pos = scanstring(self.text, self.pos + 1)
            except ValueError:
                key = self._string()  # cut inside the key, or malformed: read it by hand
            if isinstance(key, CutString):
                return OpenObject(members, cut_key=key.prefix)
            if key in members:  # as loads_strict refuses it: which value was meant is unknown
                raise Malformed(f"duplicate key at {self.pos}")
            self._ws()
            if self._at_end():
                return OpenObject(members, cut_key=key)
            if self.text[self.pos] != ":":
                raise Malformed(f"expected ':' at {self.pos}")
            self.pos += 1
            self._ws()
            if self._at_end():
                return OpenObject(members, cut_key=key)
            value = self._value(depth)
            members[key] = value
            if not is_complete(value):
                return OpenObject(members)
            self._ws()
            if self._at_end():
                return OpenObject(members)
            c = self.text[self.pos]
            self.pos += 1
            if c == "}":
                return members
            if c != ",":
                raise Malformed(f"expected ',' or '}}' at {self.pos - 1}")
            self._ws()
            if self._at_end():
                return OpenObject(members)

    def _array(self, depth: int) -> Any:
        self.pos += 1
        items: list[Any] = []
        self._ws()
        if self._at_end():
            return OpenArray(items)
        if self.text[self.pos] == "]":
            self.pos += 1
            return items
        while True:
            value = self._value(depth)
            items.append(value)
            if not is_complete(value):
                return OpenArray(items)
            self._ws()
            if self._at_end():
                return OpenArray(items)
            c = self.text[self.pos]
            self.pos += 1
            if c == "]":
                return items
            if c != ",":
                raise Malformed(f"expected ',' or ']' at {self.pos - 1}")
            self._ws()
            if self._at_end():
                return OpenArray(items)

    def _string(self) -> str | CutString:
        """A string from its opening quote; a cut inside an escape drops that escape."""
        text, n = self.text, self.n
        self.pos += 1
        parts: list[str] = []
        while True:
            end = _STRING_RUN.match(text, self.pos).end()  # type: ignore[union-attr]
            parts.append(text[self.pos : end])
            self.pos = end
            if end >= n:
                return CutString("".join(parts))
            c = text[end]
            if c == '"':
                self.pos += 1
                return "".join(parts)
            if c != "\\":
                raise Malformed(f"control character in string at {end}")
            if end + 1 >= n:
                self.pos = n
                return CutString("".join(parts))
            e = text[end + 1]
            if e in _ESCAPES:
                parts.append(_ESCAPES[e])
                self.pos = end + 2
            elif e == "u":
                char = self._unicode_escape(end)
                if char is None:
                    self.pos = n
                    return CutString("".join(parts))
                parts.append(char)
            else:
                raise Malformed(f"bad escape at {end}")

    def _unicode_escape(self, start: int) -> str | None:
        """Decode ``\\uXXXX`` (a surrogate pair when one follows) at ``start``; ``None`` at the cut."""
        hexdigits = self.text[start + 2 : start + 6]
        if not re.fullmatch(r"[0-9a-fA-F]*", hexdigits):
            raise Malformed(f"bad unicode escape at {start}")
        if len(hexdigits) < 4:
            return None
        code = int(hexdigits, 16)
        self.pos = start + 6
        if 0xD800 <= code <= 0xDBFF:
            rest = self.text[self.pos : self.pos + 6]
            if _CUT_LOW_ESCAPE.fullmatch(rest):
                return (
                    None  # cut where the low half of the pair would be: the character is incomplete
                )
            if re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", rest):
                self.pos += 6
                return chr(0x10000 + ((code - 0xD800) << 10) + (int(rest[2:], 16) - 0xDC00))
        return chr(code)

    def _number(self) -> Any:
        # D11.3: a number that reaches the cut is incomplete, whatever its digits ("1", "1.", "2e").
        p = _NUMBER_PREFIX.match(self.text, self.pos)
        if p is not None and p.end() >= self.n:
            token = self.text[self.pos :]
            self.pos = self.n
            return CutToken(token)
        m = _NUMBER.match(self.text, self.pos)
        if m is None:
            raise Malformed(f"bad number at {self.pos}")
        self.pos = m.end()
        token = m.group()
        if any(c in token for c in ".eE"):
            value = float(token)
            if value in (float("inf"), float("-inf")):
                raise Malformed(f"number out of range at {m.start()}")
            return value
        return json_int(token)  # past a double's range it is no JSON (E1): Malformed

    def _literal(self) -> Any:
        rest = self.text[self.pos : self.pos + 5]
        for word, value in _LITERALS:
            if rest.startswith(word):
                self.pos += len(word)
                return value
            if word.startswith(rest) and self.pos + len(rest) >= self.n:
                self.pos = self.n
                return CutToken(rest)  # D11.1: a literal counts only when written in full
        raise Malformed(f"unexpected character at {self.pos}")
