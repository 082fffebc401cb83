"""What the model is shown and what each label claims, taken on its own.

They guard the tools of each case (a valid tools.json catalog, no pack-only ``x-*``
field) and the expected call of each value case: it names a declared tool, validates
against its schema, holds only declared properties (D7.2) and keeps every ``format``
its schema names. They never read the case's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import catalog_problems, tool_name, tool_schema
from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    check,
    value_cases,
    verdict,
)
from toolcall300.generator.oracles import (
    names_of,
    tool_of,
    undeclared_keys,
)
from toolcall300.schema import format_path, is_valid
from toolcall300.schema.formats import satisfies_format


def _named(entry: Any) -> bool:
    fn = entry.get("function") if isinstance(entry, dict) else None
    return isinstance(fn, dict) and isinstance(fn.get("name"), str)


@check("tools_catalog", "each case's tools are a valid tools.json catalog with no x-* fields")
def _tools_catalog(corpus: Corpus) -> Iterator[Result]:
    seen: dict[str, list[str]] = {}  # the same declaration recurs across cases: check it once

    def problems_of(tools: Any) -> list[str]:
        if not isinstance(tools, list) or not tools:
            return catalog_problems(tools)
        out = catalog_problems([{"function": {"name": tool_name(t)}} for t in tools if _named(t)])
        out = [p for p in out if "duplicate name" in p]
        for entry in tools:
            key = canonical(entry)
            if key not in seen:
                seen[key] = catalog_problems([entry])
            out += seen[key]
        return out

    for c in corpus.cases:
        problems = problems_of(c.get("tools"))
        yield verdict(not problems, c, "; ".join(problems[:2]))
        leaked = [
            k
            for t in c.get("tools", [])
            if isinstance(t, dict)
            for k in [*t, *t.get("function", {})]
            if str(k).startswith("x-")
        ]
        yield verdict(not leaked, c, f"pack-only fields shown to the model: {leaked}")


@check("expected_declared", "every expected call names a declared tool exactly")
def _expected_declared(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        yield verdict(
            c["expected"]["name"] in names_of(c),
            c,
            f"expected tool {c['expected']['name']!r} is not declared",
        )


@check("expected_valid", "every expected call validates against its tool's schema")
def _expected_valid(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        tool = tool_of(c, c["expected"]["name"])
        yield verdict(
            tool is not None and is_valid(c["expected"]["arguments"], tool_schema(tool)),
            c,
            "expected arguments fail the schema",
        )


@check(
    "expected_declared_only",
    "expected arguments hold only declared properties, at every level (D7.2)",
)
def _expected_declared_only(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        tool = tool_of(c, c["expected"]["name"])
        extra = (
            [format_path(p) for p in undeclared_keys(c["expected"]["arguments"], tool_schema(tool))]
            if tool
            else ["<no tool>"]
        )
        yield verdict(not extra, c, f"expected holds undeclared {extra}")


def format_breaks(value: Any, schema: Any, path: tuple[str | int, ...] = ()) -> Iterator[str]:
    """Where a string in ``value`` breaks the ``format`` its schema names (``schema.formats``),
    at every level. A value the schema itself dictates (a member of its ``enum``, its ``const``
    or its ``default``, rule 6) is the author's, not the generator's: it is not held to it."""
    if not isinstance(schema, dict):
        return
    dictated = (
        value in schema.get("enum", ())
        or ("const" in schema and value == schema["const"])
        or ("default" in schema and value == schema["default"])
    )
    if (
        isinstance(value, str)
        and not dictated
        and not satisfies_format(value, schema.get("format"))
    ):
        yield f"{format_path(path)} {value!r} is not a {schema['format']!r}"
    elif isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        for key, sub in value.items():
            yield from format_breaks(sub, schema["properties"].get(key), (*path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            yield from format_breaks(sub, schema["items"], (*path, i))


@check(
    "expected_formats",
    "every expected string satisfies the format its schema names (uri, uuid, email, hostname, "
    "ipv4, ipv6, date, date-time, time), unless the schema dictates it",
)
def _expected_formats(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        tool = tool_of(c, c["expected"]["name"])
        broken = list(format_breaks(c["expected"]["arguments"], tool_schema(tool))) if tool else []
        yield verdict(not broken, c, "expected breaks its format: " + "; ".join(broken[:2]))
