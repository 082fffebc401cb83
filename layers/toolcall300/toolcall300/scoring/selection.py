"""Running part of a corpus: ``score --category``, ``--case`` (a glob) and ``-k`` (an expression).

A selection keeps the cases whose category is one of ``--category`` (when given), whose id
matches one of the ``--case`` globs (when given) and for which the ``-k`` expression holds
(when given): words joined by ``and``, ``or``, ``not`` and parentheses, each word true when it
is a substring of the case's id or category, ignoring case (as pytest's ``-k`` reads test
names). A report of a selection says so in its ``selection`` field and is *partial*: the gate
refuses to compare a partial run with a baseline, or to use a partial report as one, so a
partial run can never pass a full baseline (docs/report.md, "Running part of a corpus").
It reads only each case's ``id`` and ``category``, so every track selects the same way. Pure.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

Case = Mapping[str, Any]
Predicate = Callable[[Case], bool]
C = TypeVar("C", bound=Case)

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([^\s()]+))")
_KEYWORDS = frozenset({"and", "or", "not"})


class SelectionError(ValueError):
    """A selection that cannot be applied: a bad expression, an unknown category, no case."""


def _haystack(case: Case) -> str:
    return f"{case.get('id', '')} {case.get('category', '')}".lower()


def _tokens(expression: str) -> list[str]:
    out, pos = [], 0
    while pos < len(expression):
        match = _TOKEN.match(expression, pos)
        if match is None or match.end() == pos:
            break
        out.append(match.group(match.lastindex or 0))
        pos = match.end()
    if expression[pos:].strip():
        raise SelectionError(f"-k: cannot read {expression[pos:]!r}")
    return out


def parse_expression(expression: str) -> Predicate:  # noqa: C901
    """The predicate of a ``-k`` expression.

    >>> keep = parse_expression("enum or (truncated and not 0007)")
    >>> [keep({"id": i, "category": c}) for i, c in
    ...  [("tc300-0001", "enum_violation"), ("tc300-0007", "truncated"), ("tc300-0008", "truncated")]]
    [True, False, True]
    """
    tokens = _tokens(expression)
    if not tokens:
        raise SelectionError("-k: the expression is empty")
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        token = peek()
        if token is None:
            raise SelectionError(f"-k {expression!r}: ends too early")
        position += 1
        return token

    def alternatives() -> Predicate:
        left = conjunction()
        while peek() == "or":
            take()
            right = conjunction()
            left = (lambda a, b: lambda c: a(c) or b(c))(left, right)
        return left

    def conjunction() -> Predicate:
        left = negation()
        while peek() == "and":
            take()
            right = negation()
            left = (lambda a, b: lambda c: a(c) and b(c))(left, right)
        return left

    def negation() -> Predicate:
        if peek() == "not":
            take()
            inner = negation()
            return lambda c: not inner(c)
        return atom()

    def atom() -> Predicate:
        token = take()
        if token == "(":
            inner = alternatives()
            if take() != ")":
                raise SelectionError(f"-k {expression!r}: a '(' is never closed")
            return inner
        if token == ")" or token.lower() in _KEYWORDS:
            raise SelectionError(f"-k {expression!r}: expected a word, found {token!r}")
        word = token.lower()
        return lambda c: word in _haystack(c)

    predicate = alternatives()
    if position != len(tokens):
        raise SelectionError(f"-k {expression!r}: unexpected {tokens[position]!r}")
    return predicate


@dataclass(frozen=True)
class Selection:
    """What the user asked for: categories, id globs, a ``-k`` expression (each optional)."""

    categories: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    expression: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.categories or self.cases or self.expression)

    def describe(self) -> str:
        """The flags that made it, as a user would type them.

        >>> Selection(("truncated",), ("tc300-00*",), "not 0007").describe()
        "--category truncated --case 'tc300-00*' -k 'not 0007'"
        """
        parts = [f"--category {c}" for c in self.categories]
        parts += [f"--case {_quoted(g)}" for g in self.cases]
        if self.expression is not None:
            parts.append(f"-k {_quoted(self.expression)}")
        return " ".join(parts)


def _quoted(text: str) -> str:
    return text if re.fullmatch(r"[\w.-]+", text) else "'" + text.replace("'", "'\\''") + "'"


def select(cases: Sequence[C], selection: Selection) -> list[C]:
    """The cases ``selection`` keeps, in corpus order; raises :class:`SelectionError` for a
    category no case has, a bad expression, or a selection that keeps nothing."""
    known = sorted({str(c.get("category")) for c in cases})
    unknown = [c for c in selection.categories if c not in known]
    if unknown:
        raise SelectionError(
            f"--category {unknown[0]!r} is not a category of this corpus (its categories: "
            f"{', '.join(known)})"
        )
    predicate = parse_expression(selection.expression) if selection.expression is not None else None
    kept = [
        case
        for case in cases
        if (not selection.categories or case.get("category") in selection.categories)
        and (
            not selection.cases
            or any(fnmatch.fnmatchcase(str(case.get("id")), glob) for glob in selection.cases)
        )
        and (predicate is None or predicate(case))
    ]
    if not kept:
        raise SelectionError(f"{selection.describe()} selects no case of the corpus's {len(cases)}")
    return kept


def selection_field(selection: Selection, selected: int, total: int) -> dict[str, Any]:
    """The report's ``selection`` field: what was asked, how many of how many cases ran, and
    ``partial`` (true unless the selection kept every case)."""
    return {
        "partial": selected < total,
        "selected": selected,
        "total": total,
        "flags": selection.describe(),
    }


def is_partial(report: Mapping[str, Any]) -> bool:
    """Whether a report scored only part of its corpus (a report without ``selection``: no)."""
    field = report.get("selection")
    return isinstance(field, Mapping) and field.get("partial") is not False


def partial_note(report: Mapping[str, Any]) -> str | None:
    """The one line a partial report carries wherever it is shown, or None.

    >>> partial_note({"selection": {"partial": True, "selected": 3, "total": 30, "flags": "-k enum"}})
    'PARTIAL run: 3 of 30 cases (-k enum); not comparable with a baseline'
    """
    if not is_partial(report):
        return None
    field = report["selection"]
    return (
        f"PARTIAL run: {field.get('selected')} of {field.get('total')} cases "
        f"({field.get('flags')}); not comparable with a baseline"
    )
