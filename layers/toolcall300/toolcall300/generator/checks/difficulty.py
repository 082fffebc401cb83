"""Every case earns its place: no recoverable text is already a valid call, no
repairable case passes the integrator control (C2), and every refusal names a
reason no correct call exists.
"""

from __future__ import annotations

from collections.abc import Iterator

from toolcall300.canonical import canonical
from toolcall300.catalog import tool_schema
from toolcall300.controls import integrator
from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    check,
    of,
    value_cases,
    verdict,
)
from toolcall300.generator.oracles import (
    one_call,
    refusal_reasons,
    tool_of,
)
from toolcall300.schema import is_valid


@check(
    "not_valid_as_sent",
    "no recoverable text is already an exact, schema-valid call to a declared tool",
)
def _not_valid_as_sent(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        call = one_call(c)
        tool = tool_of(c, call["name"]) if call else None
        free = (
            call is not None and tool is not None and is_valid(call["arguments"], tool_schema(tool))
        )
        yield verdict(not free, c, "the text is already a valid call as sent (a freebie)")


@check(
    "integrator_fails",
    "no repairable case passes the integrator control (C2: envelopes, first call, exact name, "
    "one decode in the OpenAI family, the suite's own schema engine)",
)
def _integrator_fails(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        got = integrator(c["text"], c["tools"])
        passed = got is not None and canonical(got) == canonical(c["expected"])
        yield verdict(not passed, c, "the integrator control already passes it (a freebie)")


@check(
    "unrecoverable_has_defect",
    "every unrecoverable text (and every D6.4 refusal) has a named reason no correct call exists",
)
def _unrecoverable_defect(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "unrecoverable", "missing_required_arg"):
        if c.get("category") == "unrecoverable" or c.get("expected") is None:
            yield verdict(bool(refusal_reasons(c)), c, "no refusal reason found in the text")
