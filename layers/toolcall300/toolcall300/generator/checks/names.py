"""Tool names (rule 3): a mangled name resolves to exactly the expected tool, a
hallucinated one to none, and outside the name categories every call uses the expected
name as declared.
"""

from __future__ import annotations

from collections.abc import Iterator

from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    check,
    of,
    verdict,
)
from toolcall300.generator.oracles import (
    calls_of,
    names_of,
    one_call,
)
from toolcall300.rules import (
    resolve_tool_name,
    tool_name_matches,
)
from toolcall300.spec import CATEGORIES


@check(
    "mangled_names_resolve",
    "every wrong_tool_name text names no tool exactly and resolves to exactly the expected one (rule 3)",
)
def _mangled(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "wrong_tool_name"):
        call = one_call(c)
        name = call["name"] if call else None
        yield verdict(
            name is not None and name not in names_of(c), c, f"name {name!r} is not mangled"
        )
        yield verdict(
            name is not None
            and resolve_tool_name(name, names_of(c)) == (c.get("expected") or {}).get("name"),
            c,
            f"name {name!r} does not resolve to the expected tool alone",
        )


@check(
    "names_untouched",
    "outside the name categories (and multiple_calls, D10.3) every call in the text uses the "
    "expected name exactly",
)
def _names_untouched(corpus: Corpus) -> Iterator[Result]:
    cats = [
        k
        for k in CATEGORIES
        if k
        not in (
            "wrong_tool_name",
            "hallucinated_tool",
            "truncated",
            "unrecoverable",
            "multiple_calls",
        )
    ]
    for c in of(corpus.cases, *cats):
        calls = calls_of(c) or []
        if isinstance(c.get("expected"), dict):
            want = c["expected"]["name"]
        else:  # D6.4: a refusal names its tool as declared, like any other
            want = calls[0]["name"] if calls and calls[0]["name"] in names_of(c) else None
        yield verdict(
            bool(calls) and all(x["name"] == want for x in calls),
            c,
            "a call names another tool",
        )


@check("hallucinated_resolve_none", "every hallucinated name matches no declared tool (rule 3)")
def _hallucinated(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "hallucinated_tool"):
        calls = calls_of(c)
        yield verdict(bool(calls), c, "the text carries no call")
        for call in calls or []:
            yield verdict(
                not tool_name_matches(call["name"], names_of(c))
                and call["name"] not in names_of(c),
                c,
                f"{call['name']!r} matches a declared tool",
            )
