"""What every check family shares: the artefacts a check reads (:class:`Corpus`), the
registry that runs them (:data:`CHECKS`, in registration order, which the manifest
records), readers over cases and argument objects, and :func:`run_checks`. It holds
no check itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.generator.oracles import (
    argument_documents,
    decode_strings,
    one_call,
)

CASE_KEYS = ("category", "expected", "expected_kind", "id", "text", "tools")

Result = str | None


@dataclass
class Corpus:
    """The artefacts the checks read; ``files`` holds written bytes when they exist."""

    cases: list[dict[str, Any]]
    rationale: list[dict[str, Any]] = field(default_factory=list)
    sample: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    files: dict[str, bytes] = field(default_factory=dict)


def of(cases: list[dict[str, Any]], *categories: str) -> Iterator[dict[str, Any]]:
    return (c for c in cases if c.get("category") in categories)


def verdict(cond: bool, case: dict[str, Any] | None, message: str) -> Result:
    """One assertion: ``None`` when ``cond`` held, else ``message`` (after the case's id)."""
    return None if cond else (f"{case.get('id')}: {message}" if case else message)


def leaves(
    a: Any, b: Any, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any, Any]]:
    """Paths where two argument objects differ (objects are walked, everything else compared)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            yield from leaves(a.get(key, MISSING), b.get(key, MISSING), (*path, key))
    elif a is MISSING or b is MISSING:
        if a is not b:
            yield path, a, b
    elif canonical(a) != canonical(b):
        yield path, a, b


def walk(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf of nested objects with its path (arrays and scalars are leaves)."""
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from walk(sub, (*path, key))
    else:
        yield path, value


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    for key in path:
        props = schema.get("properties", {})
        if key not in props:
            return None
        schema = props[key]
    return schema


def property_names(schema: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for key, sub in schema.get("properties", {}).items():
        out |= {key} | property_names(sub)
    if isinstance(schema.get("items"), dict):
        out |= property_names(schema["items"])
    return out


def value_cases(corpus: Corpus) -> Iterator[dict[str, Any]]:
    return (
        c
        for c in corpus.cases
        if c.get("expected_kind") == "value" and isinstance(c.get("expected"), dict)
    )


def call_diffs(c: dict[str, Any]) -> list[tuple[tuple[str, ...], Any, Any]]:
    call = one_call(c)
    return list(leaves(call["arguments"], c["expected"]["arguments"])) if call else []


def documents_of(call: dict[str, Any]) -> list[Any] | None:
    """D9.4: the documents of a call's arguments string (decoded as far as it decodes)."""
    return argument_documents(decode_strings(call["arguments"])[0])


_CITED = re.compile(r"\b[DEC]\d{1,2}(?:\.\d{1,2})?\b")
#: What a rationale quotes from the case (values, names, text: JSON strings or `code`) is
#: not a citation, even when it looks like one (an envelope size "C5", a room "E1").
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`')


def cited(text: str) -> set[str]:
    """The decision ids a rationale cites, outside what it quotes.

    >>> sorted(cited('size is "C5", not a member (rule 4 / D4.1); read as `E9` (E2)'))
    ['D4.1', 'E2']
    """
    return set(_CITED.findall(_QUOTED.sub("", text)))


Check = Callable[[Corpus], Iterator[Result]]
CHECKS: dict[str, tuple[str, Check]] = {}


def check(name: str, description: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = (description, fn)
        return fn

    return register


@dataclass(frozen=True)
class Report:
    """How many assertions ran and which failed, by check class."""

    assertions: int
    failures: list[tuple[str, str]]

    @property
    def ok(self) -> bool:
        return not self.failures


def run_checks(corpus: Corpus, only: tuple[str, ...] = ()) -> Report:
    """Run every check class (or ``only`` these) and count each assertion."""
    count, failures = 0, []
    for name, (_, fn) in CHECKS.items():
        if only and name not in only:
            continue
        for result in fn(corpus):
            count += 1
            if result is not None:
                failures.append((name, result))
    return Report(count, failures)
