"""The vocabulary ``toolshim`` answers in: refusal reasons, the one refusal exception, repairs.

A refusal is a result, not an accident: every way the normaliser can decline to return a
call is one member of :class:`Reason`, a closed list that tests assert on. Every change it
makes to what the model wrote is one :class:`Repair`; anything not in the list of repairs
did not change. This module holds data types only; it decides nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Reason(enum.Enum):
    """Why no call was returned (the closed list of refusal reasons)."""

    NO_CALL = "no_call"  # nothing that looks like a call (D11.5: cut before any name)
    NOT_JSON = "not_json"  # not JSON even allowing for a cut at the end
    INVALID_NAME = "invalid_name"  # the call's name is not a string
    TRUNCATED_NAME = "truncated_name"  # D11.5: the cut fell inside the tool name
    UNKNOWN_TOOL = "unknown_tool"  # rule 3: the name matches no declared tool
    AMBIGUOUS_TOOL = "ambiguous_tool"  # rule 3: the name matches several declared tools
    TRUNCATED_ARGUMENTS = "truncated_arguments"  # rule 11: cut before the arguments began
    AMBIGUOUS_ARGUMENTS = "ambiguous_arguments"  # `arguments`, `parameters`, `input` disagree
    INVALID_ARGUMENTS = "invalid_arguments"  # D9.1: a string that does not decode to an object
    NOT_AN_OBJECT = "not_an_object"  # arguments (or an object property) is not an object
    MISSING_REQUIRED = "missing_required"  # rule 6 / rule 11: required, absent, no default
    ENUM_NO_MATCH = "enum_no_match"  # rule 4: matches no member
    ENUM_AMBIGUOUS = "enum_ambiguous"  # D4.1: matches several members
    LOSSY_COERCION = "lossy_coercion"  # rule 5: no lossless conversion to the declared type
    ARRAY_TOO_LONG_FOR_SCALAR = "array_too_long_for_scalar"  # D8.1: two or more elements
    EMPTY_ARRAY_FOR_SCALAR = "empty_array_for_scalar"  # D8.1: no element to take
    CONFLICTING_VALUES = "conflicting_values"  # rule 7: a flattened key disagrees with a nested one
    CONFLICTING_CALLS = "conflicting_calls"  # rule 10 / D10.1
    UNUSABLE_SCHEMA = "unusable_schema"  # the tool's schema is outside the covered subset
    SCHEMA_VIOLATION = "schema_violation"  # breaks a keyword no rule may repair (maxLength...)
    UNREPRESENTABLE = "unrepresentable"  # a value JSON cannot carry (NaN, a 5000-digit integer)


class Refusal(Exception):
    """Raised inside the normaliser; the public ``normalise`` turns it into ``None``."""

    def __init__(self, reason: Reason, detail: str = "", path: str = "$") -> None:
        super().__init__(f"{reason.value} at {path}: {detail}" if detail else reason.value)
        self.reason = reason
        self.detail = detail
        self.path = path


#: Marks the side of a repair where no value existed (a dropped or an added property).
ABSENT: Any = object()


@dataclass(slots=True)
class Repair:
    """One change to what the model wrote. ``path`` is in ``schema.format_path`` syntax, rooted
    at the call (``$.arguments.city``); ``rule`` is the grading rule (or decision) behind it."""

    path: str
    rule: str
    change: str
    before: Any = ABSENT
    after: Any = ABSENT

    def as_dict(self) -> dict[str, Any]:
        """JSON form; a side that did not exist is left out rather than written as null."""
        out: dict[str, Any] = {"path": self.path, "rule": self.rule, "change": self.change}
        if self.before is not ABSENT:
            out["before"] = self.before
        if self.after is not ABSENT:
            out["after"] = self.after
        return out


@dataclass(slots=True)
class Explained:
    """A call and how it was obtained, or a refusal and why."""

    call: dict[str, Any] | None
    repairs: list[Repair] = field(default_factory=list)
    refusal: Reason | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON form, for ``toolshim --explain``."""
        return {
            "call": self.call,
            "repairs": [r.as_dict() for r in self.repairs],
            "refusal": None if self.refusal is None else self.refusal.value,
            "detail": self.detail,
        }
