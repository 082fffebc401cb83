"""``normalise_all``: the reference normaliser for the parallel track (decisions P1-P12).

A turn may hold several calls. ``normalise_all(text, tools)`` answers one entry per call the
text attempted, in the order emitted (P11): the call as the single-call pipeline repairs it on
its own (rules 1-9 and 11, ``toolshim.pipeline``), or ``None`` where that call is refused
(P9); ``[]`` when the text holds no call (P2). Before any call is repaired the turn is split
into calls: fragments of one call sent as several entries are joined (P5), two documents in
one arguments string are two calls (P3), a name doubled by concatenation is split when it
can be split one way only (P4), and entries sharing an ``index`` stay apart (P6). After
repair, identical copies collapse unless the catalog says that repeating matters (P7).

It is not a second normaliser: each call goes through the single-call pipeline's own code.
Where the turn could be split two ways it chooses none (P8): the calls involved are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.rules import declared_name_splits, repeat_matters
from toolcall300.spec import CALLS_KEY
from toolcall300.toolshim.envelope import RawCall, extract_calls

# The single-call pipeline's per-call step and its catalog, shared (one normaliser, two shapes).
from toolcall300.toolshim.pipeline import _REFUSED, _Catalog, _catalog, _one
from toolcall300.toolshim.reader import (
    CutString,
    Malformed,
    OpenArray,
    OpenObject,
    is_complete,
    read_values,
)
from toolcall300.toolshim.types import ABSENT

__all__ = ["normalise_all"]

#: A call refused before the pipeline sees it (D11.8: a value cut inside a complete string).
_REFUSE = object()


def normalise_all(text: str, tools: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """Every call ``text`` attempted, in the order emitted: repaired, or ``None`` if refused.

    >>> tools = [{"type": "function", "function": {"name": "write_file", "parameters": {
    ...     "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
    >>> normalise_all('[{"name": "write_filewrite_file", '
    ...               '"arguments": "{\\\\"path\\\\": \\\\"a\\\\"}{\\\\"path\\\\": \\\\"b\\\\"}"}]', tools)
    [{'name': 'write_file', 'arguments': {'path': 'a'}}, {'name': 'write_file', 'arguments': {'path': 'b'}}]
    >>> normalise_all('[{"name": "write_file", "arguments": {"path": "a"}}, {"name": "rm"}]', tools)
    [{'name': 'write_file', 'arguments': {'path': 'a'}}, None]
    >>> normalise_all('{"tool_calls": []}', tools)
    []
    """
    if not isinstance(text, str):
        return [None]
    try:
        documents = read_values(text)
    except (Malformed, RecursionError):
        return [None]  # P2: attempted, and nothing of it can be read
    catalog = _catalog(tools)
    out: list[dict[str, Any] | None] = []
    for raw in _calls(_slots(documents), catalog):
        out.append(_repair(raw, catalog))
    return _collapse(out, tools)


# ------------------------------------------------------------------------ the turn's entries


@dataclass(slots=True)
class _Slot:
    """One call of the turn as written, its arguments string possibly joined from fragments."""

    raw: RawCall
    index: int | None
    pieces: list[Any] = field(default_factory=list)  # str pieces, the last may be a CutString

    @property
    def named(self) -> bool:
        return _has_name(self.raw)

    def string_open(self) -> bool:
        """P5: the arguments are a string still open (JSON cut short, or nothing yet)."""
        if not self.pieces or not all(isinstance(p, str) for p in self.pieces):
            return False  # not a string, or the text itself ended inside it
        try:
            values = read_values("".join(self.pieces))
        except (Malformed, RecursionError):
            return False
        return not values or not is_complete(values[-1])

    def arguments(self) -> Any:
        if not self.pieces:
            return self.raw.arguments
        head = "".join(p for p in self.pieces if isinstance(p, str))
        last = self.pieces[-1]
        return CutString(head + last.prefix) if isinstance(last, CutString) else head


def _has_name(raw: RawCall) -> bool:
    return raw.name is not ABSENT and raw.name is not None and raw.name != ""


def _slots(documents: list[Any]) -> list[_Slot]:
    """P2, P5, P6: the turn's calls in the order emitted, fragments joined to their call."""
    slots: list[_Slot] = []
    for item in _items(documents):
        raws = extract_calls([item]) if isinstance(item, (dict, OpenObject)) else []
        if not raws:  # E4: an array where a call should be, a number, a string
            slots.append(_Slot(RawCall(ABSENT, ABSENT, None, not is_complete(item), (0,)), None))
            continue
        raw, index = raws[0], _index(item)
        string = isinstance(raw.arguments, (str, CutString))
        if string and not _has_name(raw):  # P5: a fragment, if one open call can take it
            if index is None:
                open_calls = [s for s in slots if s.named and s.string_open()]
            else:  # the latest named entry of that index, if its string is still open
                latest = [s for s in slots if s.named and s.index == index][-1:]
                open_calls = [s for s in latest if s.string_open()]
            if len(open_calls) == 1:
                open_calls[0].pieces.append(raw.arguments)
                continue
            if len(open_calls) > 1:
                continue  # P8: two calls could take it; it joins none and adds no entry
        slot = _Slot(raw, index)
        if string:
            slot.pieces.append(raw.arguments)
        slots.append(slot)
    return slots


def _items(documents: list[Any]) -> list[Any]:
    """E1, E2: every value where a call should be (each document, array item, and
    ``tool_calls`` entry), in order."""
    out: list[Any] = []
    for doc in documents:
        for item in (
            doc.items if isinstance(doc, OpenArray) else doc if isinstance(doc, list) else [doc]
        ):
            members = item.members if isinstance(item, OpenObject) else item
            inner = members.get(CALLS_KEY) if isinstance(members, dict) else None
            if isinstance(inner, (list, OpenArray)):
                out.extend(inner.items if isinstance(inner, OpenArray) else inner)
            else:
                out.append(item)
    return out


def _index(item: Any) -> int | None:
    """OpenAI's accumulation key, on the entry or on its ``function`` (P5)."""
    members = item.members if isinstance(item, OpenObject) else item
    for level in (members, members.get("function") if isinstance(members, dict) else None):
        level = level.members if isinstance(level, OpenObject) else level
        if isinstance(level, dict):
            value = level.get("index")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


# -------------------------------------------------------------------- from slots to calls


def _calls(slots: list[_Slot], catalog: _Catalog) -> list[Any]:
    """Each slot as one or more RawCalls: P3 splits its arguments string, P4 its name."""
    out: list[Any] = []
    for slot in slots:
        raw = slot.raw
        arguments = slot.arguments()
        # P3 splits a named call's string; a nameless one is one call, refused (P5, E4)
        values = None if raw.args_conflict or not slot.named else _documents(arguments)
        if values is None or len(values) < 2:
            out.append(_with(raw, raw.name, arguments))
            continue
        names = _split_name(raw.name, len(values), catalog) or [raw.name] * len(values)
        complete = isinstance(arguments, str)
        for name, value in zip(names, values, strict=True):
            if complete and not is_complete(value):
                out.append(_REFUSE)  # D11.8: a complete string holding cut JSON
            else:
                out.append(_with(raw, name, value))
    return out


def _documents(arguments: Any) -> list[Any] | None:
    """P3: the JSON values an arguments string holds, or None when it is no string or no JSON."""
    text = arguments.prefix if isinstance(arguments, CutString) else arguments
    if not isinstance(text, str):
        return None
    try:
        return read_values(text)
    except (Malformed, RecursionError):
        return None


def _split_name(name: Any, pieces: int, catalog: _Catalog) -> list[str] | None:
    """P4: the declared names a doubled name is, when it splits one way only."""
    if not isinstance(name, str) or name in catalog.schemas:
        return None
    if catalog.names.resolve(name) is not None or catalog.names.matches(name):
        return None  # rule 3 reads it as one tool (or as ambiguous): not a concatenation
    splits = declared_name_splits(name, catalog.schemas, pieces)
    return splits[0] if len(splits) == 1 else None  # P8: two ways is none


def _with(raw: RawCall, name: Any, arguments: Any) -> RawCall:
    """The call with its name and arguments as the turn reads them; the keys written beside
    the arguments go with it (D7.9 lifts a declared one, as for a single call)."""
    return RawCall(
        name, arguments, raw.args_key, raw.open, raw.where, raw.args_conflict, raw.beside
    )


def _repair(raw: Any, catalog: _Catalog) -> dict[str, Any] | None:
    """One call through the single-call pipeline (rules 1-9, 11); a refusal is ``None`` (P9)."""
    if raw is _REFUSE:
        return None
    try:
        return _one(raw, catalog, [])
    except _REFUSED:
        return None


def _collapse(
    calls: list[dict[str, Any] | None], tools: list[dict[str, Any]]
) -> list[dict[str, Any] | None]:
    """P7: a later identical copy leaves no entry, unless the tool says repeating matters."""
    by_name: dict[str, Any] = {}
    for tool in tools if isinstance(tools, list) else []:
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            by_name.setdefault(fn["name"], tool)
    seen: set[str] = set()
    out: list[dict[str, Any] | None] = []
    for call in calls:
        if call is not None:
            key = canonical(call)
            if key in seen and not repeat_matters(by_name.get(call["name"])):
                continue
            seen.add(key)
        out.append(call)
    return out
