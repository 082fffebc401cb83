"""The grading contract's small decisions, each in one place: names, enums, lossless coercion.

The generator's integrity checks, the reference normaliser and the scorer's self-test all
call these functions, so "what counts as the same tool name" or "what is a lossless
coercion" is decided once. They are predicates and lookups over plain values; they never
decide what a case's answer is (the generator builds answers by construction).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from toolcall300.canonical import loads_strict
from toolcall300.schema import is_integer

# --------------------------------------------------------------------------- rule 3: tool identity

# Everything up to the last namespace separator (DOTALL: a line break in a name is no exception).
_NAMESPACE = re.compile(r"^.*(?:\.|::|:|/)", re.DOTALL)
_SEPARATORS = re.compile(r"[\s_-]+")


def normalise_tool_name(name: str) -> str:
    """Rule 3: drop surrounding whitespace, a trailing ``()``, namespace prefixes, letter case,
    and treat ``-``, ``_`` and whitespace as the same separator.

    >>> normalise_tool_name("  functions.Get-Weather() ")
    'get_weather'
    >>> normalise_tool_name("default_api:search files")
    'search_files'
    """
    if len(name) > _CACHED_UP_TO:
        return _normalised_tool_name(name)
    return _cached_tool_name(name)


def _normalised_tool_name(name: str) -> str:
    s = name.strip()
    if s.endswith("()"):
        s = s[:-2].rstrip()
    s = _NAMESPACE.sub("", s)
    s = _SEPARATORS.sub("_", s.casefold()).strip("_")
    return s


#: Names and enum members are normalised against every declared one on every call: the
#: results are cached, for strings no longer than this (a model's text is unbounded; a cache
#: of its longest strings would be too).
_CACHED_UP_TO = 256
_cached_tool_name = lru_cache(maxsize=4096)(_normalised_tool_name)


class ToolNames:
    """Rule 3 over one set of declared names, indexed once by normalised form (a normaliser
    resolves a written name on every call against the same catalog)."""

    def __init__(self, declared: Iterable[str]) -> None:
        self.declared = list(declared)
        self._exact = frozenset(self.declared)
        self._by_key: dict[str, list[str]] | None = None  # built the first time it is needed

    def _index(self) -> dict[str, list[str]]:
        if self._by_key is None:
            self._by_key = {}
            for d in self.declared:
                key = normalise_tool_name(d)
                if key:
                    self._by_key.setdefault(key, []).append(d)
        return self._by_key

    def resolve(self, name: str) -> str | None:
        """The one declared name ``name`` means, or ``None`` (no match or several). An exact
        match always wins; otherwise the normalised form must match exactly one tool."""
        if name in self._exact:
            return name
        hits = self.matches(name)
        return hits[0] if len(hits) == 1 else None

    def matches(self, name: str) -> list[str]:
        """Every declared name equal to ``name`` under rule 3."""
        key = normalise_tool_name(name)
        return list(self._index().get(key, ())) if key else []


def resolve_tool_name(name: str, declared: Iterable[str]) -> str | None:
    """The one declared name ``name`` means under rule 3, or ``None`` (no match or several).

    An exact match always wins; otherwise the normalised form must match exactly one tool.

    >>> resolve_tool_name("GET_WEATHER", ["get_weather", "get_forecast"])
    'get_weather'
    >>> resolve_tool_name("send_mail", ["send-mail", "send_mail_v2"])
    'send-mail'
    >>> resolve_tool_name("a", ["A", "a_"]) is None
    True
    """
    return ToolNames(declared).resolve(name)


def tool_name_matches(name: str, declared: Iterable[str]) -> list[str]:
    """Every declared name equal to ``name`` under rule 3 (for integrity checks and reasons)."""
    return ToolNames(declared).matches(name)


# --------------------------------------------------------------------------- rule 4: enums

_ENUM_SEPARATORS = re.compile(r"[\s-]")


def normalise_enum_token(value: str) -> str:
    """Rule 4: trim, case-fold, and ``-`` or whitespace as ``_``.

    >>> normalise_enum_token(" In-Progress ")
    'in_progress'
    """
    if len(value) > _CACHED_UP_TO:
        return _normalised_enum_token(value)
    return _cached_enum_token(value)


def _normalised_enum_token(value: str) -> str:
    return _ENUM_SEPARATORS.sub("_", value.strip().casefold())


_cached_enum_token = lru_cache(maxsize=4096)(_normalised_enum_token)


#: An enum longer than this is matched through a cached :class:`EnumMembers` index.
_INDEXED_FROM = 64


def enum_matches(value: Any, members: Sequence[Any]) -> list[Any]:
    """The string members ``value`` equals under rule 4 (exact members first)."""
    if not isinstance(value, str):
        return []
    if len(members) > _INDEXED_FROM:
        try:
            return _enum_index(tuple(members)).matches(value)
        except TypeError:  # an unhashable member (an object or array): scan
            pass
    exact = [m for m in members if isinstance(m, str) and m == value]
    if exact:
        return exact
    key = normalise_enum_token(value)
    return [m for m in members if isinstance(m, str) and normalise_enum_token(m) == key]


class EnumMembers:
    """Rule 4 over one enum, indexed once by normalised form: :meth:`matches` is
    :func:`enum_matches` without a pass over every member (a generator asks about many
    spellings of the same enum, which made an enum of n members cost n squared)."""

    def __init__(self, members: Sequence[Any]) -> None:
        self.members = members
        self._exact = frozenset(m for m in members if isinstance(m, str))
        self._by_key: dict[str, list[str]] = {}
        for m in members:
            if isinstance(m, str):
                self._by_key.setdefault(normalise_enum_token(m), []).append(m)

    def has(self, value: Any) -> bool:
        """Whether ``value`` is a string member as written."""
        return isinstance(value, str) and value in self._exact

    def matches(self, value: Any) -> list[Any]:
        """The string members ``value`` equals under rule 4 (an exact member alone first).

        >>> EnumMembers(["in_progress", "In-Progress", "done"]).matches("IN PROGRESS")
        ['in_progress', 'In-Progress']
        """
        if not isinstance(value, str):
            return []
        if value in self._exact:
            return [value]
        return list(self._by_key.get(normalise_enum_token(value), ()))


@lru_cache(maxsize=32)
def _enum_index(members: tuple[Any, ...]) -> EnumMembers:
    """One index per enum's contents (a long enum is asked about again and again; the key is
    the members themselves, so an edited enum is never answered from a stale index)."""
    return EnumMembers(members)


def match_enum(value: Any, members: Sequence[Any]) -> Any | None:
    """The one member ``value`` means under rule 4, else ``None``. Never the closest-looking one.

    >>> match_enum("HIGH", ["low", "high"])
    'high'
    >>> match_enum("hi", ["low", "high"]) is None
    True
    """
    hits = enum_matches(value, members)
    return hits[0] if len(hits) == 1 else None


# --------------------------------------------------------------------------- rule 5: coercion

_INTEGER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BOOLEAN_TEXT = {"true": True, "false": False}


class NotLossless(ValueError):
    """The value cannot be coerced to the declared type without a guess (rule 5)."""


def coerce_lossless(value: Any, type_name: str) -> Any:
    """Rule 5: convert ``value`` to JSON type ``type_name`` only where nothing is lost.

    - integer: a string in JSON integer syntax (``"3"``, ``"-12"``; not ``"03"``, ``" 3"``,
      ``"+3"``, ``"4.5"``, ``"3.0"``), or an integral float (``3.0`` -> ``3``);
    - number: a string in JSON number syntax (``"12.5"``, ``"-3"``, ``"1e3"``), finite;
    - boolean: ``"true"`` or ``"false"`` in any letter case (``"True"``, ``"FALSE"``); never
      ``"yes"``, ``"1"``, ``"on"`` or a number;
    - anything else (a number to a string, an object to anything): :class:`NotLossless`.

    A value already of the type is returned unchanged, except that an integral float
    declared ``integer`` becomes an ``int`` (JSON Schema accepts ``3.0`` as an integer, but
    the canonical call writes ``3``).

    >>> coerce_lossless("-12", "integer"), coerce_lossless(3.0, "integer"), coerce_lossless("True", "boolean")
    (-12, 3, True)
    """
    if type_name == "integer":
        if isinstance(value, bool):
            raise NotLossless("a boolean is not an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and is_integer(value):
            return int(value)
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
            return int(value)
        raise NotLossless("not an integer without loss")
    if type_name == "number":
        if isinstance(value, bool):
            raise NotLossless("a boolean is not a number")
        if isinstance(value, (int, float)):
            return value
        if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
            number = float(value) if any(c in value for c in ".eE") else int(value)
            if isinstance(number, float) and number in (float("inf"), float("-inf")):
                raise NotLossless("out of range")
            return number
        raise NotLossless("not a number without loss")
    if type_name == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.casefold() in _BOOLEAN_TEXT:
            return _BOOLEAN_TEXT[value.casefold()]
        raise NotLossless("not a boolean without loss")
    raise NotLossless(f"no lossless coercion to {type_name}")


def is_lossless(value: Any, type_name: str) -> bool:
    """Whether :func:`coerce_lossless` accepts ``value`` for ``type_name``."""
    try:
        coerce_lossless(value, type_name)
    except NotLossless:
        return False
    return True


# --------------------------------------------------------------------------- rule 5, D5.6

#: JSON whitespace (RFC 8259): what may come before the first character of a JSON text.
_JSON_WS = " \t\n\r"
#: The Python type each container type of JSON Schema reads as.
_CONTAINERS = {"array": list, "object": dict}


def takes_nothing(schema: Any) -> bool:
    """D9.3: a parameter schema that declares no property at all (``properties`` empty, or
    absent with ``additionalProperties: false``): ``{}`` is the only call it can receive.

    >>> takes_nothing({"type": "object", "properties": {}}), takes_nothing({"type": "object"})
    (True, False)
    """
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties")
    return props == {} or (props is None and schema.get("additionalProperties") is False)


def reads_as_container(value: Any) -> bool:
    """D5.6: a string whose first character after JSON whitespace is ``[`` or ``{``.

    >>> reads_as_container(' ["a"]'), reads_as_container('[oops'), reads_as_container('a [b]')
    (True, True, False)
    """
    return isinstance(value, str) and value.lstrip(_JSON_WS)[:1] in ("[", "{")


def decode_container_text(value: str, types: Iterable[str]) -> Any:
    """D5.6: the array or object a string reading as a container holds, when it is JSON of
    exactly one of the declared container ``types``; else :class:`NotLossless` (the text is
    refused, never wrapped or unwrapped: D8.4).

    >>> decode_container_text('["a", "b"]', ["array"])
    ['a', 'b']
    >>> decode_container_text('{"a": 1}', ["object", "array"])
    {'a': 1}
    """
    try:
        held = loads_strict(value)
    except (ValueError, RecursionError):
        raise NotLossless("JSON text of no declared container type") from None
    if any(isinstance(held, _CONTAINERS[t]) for t in types if t in _CONTAINERS):
        return held
    raise NotLossless("JSON text of no declared container type")


# --------------------------------------------------------------------- P7: repeating matters


def repeat_matters(tool: Any) -> bool:
    """P7: whether the catalog says explicitly that repeating a call of ``tool`` matters, so
    identical copies in one turn all stand: MCP's ``annotations.idempotentHint: false`` or
    tools.json's ``"x-idempotent": false``, on the entry or on its ``function``. Anything
    else (no hint, ``idempotentHint: true``, ``x-mutates``) says nothing: copies collapse.

    >>> repeat_matters({"function": {"name": "f", "annotations": {"idempotentHint": False}}})
    True
    >>> repeat_matters({"x-idempotent": False, "function": {"name": "f"}})
    True
    >>> repeat_matters({"x-mutates": True, "function": {"name": "f"}})
    False
    """
    if not isinstance(tool, dict):
        return False
    fn = tool.get("function")
    for level in (tool, fn if isinstance(fn, dict) else {}):
        annotations = level.get("annotations")
        if isinstance(annotations, dict) and annotations.get("idempotentHint") is False:
            return True
        if level.get("x-idempotent") is False:
            return True
    return False


def declared_name_splits(name: str, declared: Iterable[str], pieces: int) -> list[list[str]]:
    """P4: every way ``name`` is exactly ``pieces`` declared names written one after another,
    each exactly as declared (at most two ways are looked for: two already make it ambiguous).

    >>> declared_name_splits("write_filewrite_file", ["write_file", "read_file"], 2)
    [['write_file', 'write_file']]
    >>> declared_name_splits("abab", ["a", "ab", "b"], 2)
    [['ab', 'ab']]
    """
    names = sorted({n for n in declared if n}, key=len)
    found: list[list[str]] = []

    def walk(at: int, acc: list[str]) -> None:
        if len(found) >= 2 or len(acc) > pieces:
            return
        if at == len(name):
            if len(acc) == pieces:
                found.append(list(acc))
            return
        for piece in names:
            if name.startswith(piece, at):
                acc.append(piece)
                walk(at + len(piece), acc)
                acc.pop()

    if pieces >= 2:
        walk(0, [])
    return found
