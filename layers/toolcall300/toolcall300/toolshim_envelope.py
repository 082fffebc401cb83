"""Finding the calls inside what a model or an SDK emitted: the envelope extractor.

Models and SDKs wrap a call in different envelopes: a bare ``{"name", "arguments"}``,
``{"function": {...}}``, ``{"type": "function", "function": {...}}``, ``{"tool_calls": [...]}``,
the legacy ``{"function_call": {...}}``, a JSON array of calls, or several documents one
after another; some write ``parameters`` or ``input`` instead of ``arguments``. This module
turns the reader's documents (possibly holding cut markers, see ``toolshim_reader``) into a
flat list of :class:`RawCall`. It judges nothing about names or arguments; it does not
look for JSON inside prose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.toolshim_reader import OpenArray, OpenObject, is_complete
from toolcall300.toolshim_types import ABSENT

#: The keys a call's arguments may arrive under, in order of preference.
ARGUMENT_KEYS = ("arguments", "parameters", "input")
#: Keys whose value is a list of calls, or one call, one level down.
_LIST_KEYS = ("tool_calls",)
_ONE_KEYS = ("function", "function_call")


@dataclass(slots=True)
class RawCall:
    """One call as written: ``name`` and ``arguments`` may be cut markers or :data:`ABSENT`.

    ``open``: the call object's own ``}`` never arrived (rule 11). ``args_key``: the key the
    arguments came under. ``args_conflict``: several argument keys with different values.
    ``path``: where the call sat in the input (for the repair log)."""

    name: Any
    arguments: Any
    args_key: str | None
    open: bool
    path: str
    args_conflict: bool = False

    @property
    def is_call(self) -> bool:
        """Whether anything call-shaped was found here (a name key, even if cut)."""
        return self.name is not ABSENT


def _members(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, OpenObject):
        return value.members
    return None


def _items(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, OpenArray):
        return value.items
    return None


def extract_calls(documents: list[Any]) -> list[RawCall]:
    """Every call-shaped thing in ``documents``, in order; non-calls come back as a RawCall
    whose ``is_call`` is false, so that a caller can refuse them under rule 10 (D10.1)."""
    out: list[RawCall] = []
    for i, doc in enumerate(documents):
        path = "$" if len(documents) == 1 else f"$<document {i}>"
        out.extend(_extract(doc, path, 0))
    return out


def _extract(value: Any, path: str, depth: int) -> list[RawCall]:
    items = _items(value)
    if items is not None:
        return [
            call
            for i, item in enumerate(items)
            for call in _extract(item, f"{path}[{i}]", depth + 1)
        ]
    members = _members(value)
    if members is None or depth > 8:
        return [RawCall(ABSENT, ABSENT, None, not is_complete(value), path)]
    for key in _LIST_KEYS:
        if key in members and _items(members[key]) is not None:
            return _extract(members[key], f"{path}.{key}", depth + 1)
    for key in _ONE_KEYS:
        if key in members and _members(members[key]) is not None:
            return _extract(members[key], f"{path}.{key}", depth + 1)
    return [_call(members, isinstance(value, OpenObject), path)]


def _call(members: dict[str, Any], is_open: bool, path: str) -> RawCall:
    """One call object: its name and whichever argument key it used."""
    present = [k for k in ARGUMENT_KEYS if k in members]
    if not present:
        return RawCall(members.get("name", ABSENT), ABSENT, None, is_open, path)
    first = members[present[0]]
    conflict = any(
        not (
            is_complete(first)
            and is_complete(members[k])
            and canonical(first) == canonical(members[k])
        )
        for k in present[1:]
    )
    return RawCall(members.get("name", ABSENT), first, present[0], is_open, path, conflict)
