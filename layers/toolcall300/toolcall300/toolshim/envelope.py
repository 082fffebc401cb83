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
from toolcall300.spec import ARGUMENT_KEYS, CALLS_KEY, ENVELOPE_KEYS, FUNCTION_KEYS
from toolcall300.toolshim.reader import OpenArray, OpenObject, is_complete
from toolcall300.toolshim.types import ABSENT


@dataclass(slots=True)
class RawCall:
    """One call as written: ``name`` and ``arguments`` may be cut markers or :data:`ABSENT`.

    ``open``: the call object's own ``}`` never arrived (rule 11). ``args_key``: the key the
    arguments came under. ``args_conflict``: several argument keys with different values.
    ``where``: the document index (``None`` when there was one document) and the keys and
    indexes that led to the call; :attr:`path` renders it for messages. ``beside``: the call
    object's keys that are no envelope key (D7.9 lifts those a tool declares), or ``None``."""

    name: Any
    arguments: Any
    args_key: str | None
    open: bool
    where: tuple[Any, ...]
    args_conflict: bool = False
    beside: dict[str, Any] | None = None

    @property
    def is_call(self) -> bool:
        """Whether anything call-shaped was found here (a name key, even if cut)."""
        return self.name is not ABSENT

    @property
    def path(self) -> str:
        """Where the call sat in the input, for the repair log and refusal messages."""
        document, *steps = self.where
        out = "$" if document is None else f"$<document {document}>"
        return out + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)


def extract_calls(documents: list[Any]) -> list[RawCall]:
    """Every call-shaped thing in ``documents``, in order; non-calls come back as a RawCall
    whose ``is_call`` is false, so that a caller can refuse them under rule 10 (D10.1)."""
    out: list[RawCall] = []
    if len(documents) == 1:
        _extract(documents[0], _ONE_DOCUMENT, out, array_allowed=True)
        return out
    for i, doc in enumerate(documents):
        _extract(doc, (i,), out, array_allowed=True)
    return out


#: ``where`` for the only document: it is not numbered in paths.
_ONE_DOCUMENT = (None,)


def _extract(
    value: Any, where: tuple[Any, ...], out: list[RawCall], array_allowed: bool = False
) -> None:
    """Append the calls in ``value``; ``where`` is the way to it (its length bounds the depth).
    ``array_allowed``: ``value`` is a document or a ``tool_calls`` value, where an array holds
    calls (E1, E2); an array anywhere else, an array's item included, is no call (E4)."""
    if isinstance(value, dict):  # the usual case first
        members, is_open = value, False
    elif isinstance(value, OpenObject):
        members, is_open = value.members, True
    elif isinstance(value, (list, OpenArray)) and array_allowed:
        for i, item in enumerate(value if isinstance(value, list) else value.items):
            _extract(item, (*where, i), out)
        return
    else:
        members = None
    if members is None or len(where) > 9:
        out.append(RawCall(ABSENT, ABSENT, None, not is_complete(value), where))
        return
    if CALLS_KEY in members:
        inner = members[CALLS_KEY]
        if isinstance(inner, (list, OpenArray)):
            _extract(inner, (*where, CALLS_KEY), out, array_allowed=True)
            return
    if "function" in members or "function_call" in members:
        for key in FUNCTION_KEYS:
            inner = members.get(key)
            if isinstance(inner, (dict, OpenObject)):
                _extract(inner, (*where, key), out)
                return
    out.append(_call(members, is_open, where))


def _call(members: dict[str, Any], is_open: bool, where: tuple[Any, ...]) -> RawCall:
    """One call object: its name, whichever argument key it used, and the keys beside them."""
    name = members.get("name", ABSENT)
    beside = {k: v for k, v in members.items() if k not in ENVELOPE_KEYS} or None  # D7.9
    if "arguments" in members and "parameters" not in members and "input" not in members:
        # the usual case
        return RawCall(name, members["arguments"], "arguments", is_open, where, beside=beside)
    present = [k for k in ARGUMENT_KEYS if k in members]
    if len(present) < 2:  # one key, or none: there is nothing to reconcile
        key = present[0] if present else None
        return RawCall(name, members[key] if key else ABSENT, key, is_open, where, beside=beside)
    first = members[present[0]]
    conflict = any(
        not (
            is_complete(first)
            and is_complete(members[k])
            and canonical(first) == canonical(members[k])
        )
        for k in present[1:]
    )
    return RawCall(name, first, present[0], is_open, where, conflict, beside)
