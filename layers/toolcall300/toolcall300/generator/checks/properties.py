"""Single-property repairs: undeclared keys dropped and never a property's name
(rule 7, D7.2, D7.3), one element wrapped or unwrapped (rule 8, D8.1), required
properties filled from their own default and optional ones never (rule 6, D6.1,
D6.4).
"""

from __future__ import annotations

from collections.abc import Iterator

from toolcall300.canonical import canonical
from toolcall300.catalog import tool_schema, value_type
from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    call_diffs,
    check,
    of,
    property_names,
    schema_at,
    value_cases,
    verdict,
)
from toolcall300.generator.oracles import (
    argument_documents,
    calls_of,
    decode_strings,
    is_empty_text,
    one_call,
    required_defaults,
    strip_undeclared,
    tool_of,
    undeclared_keys,
)
from toolcall300.schema import format_path


@check(
    "undeclared_not_nested",
    "no undeclared key, at any level, names a property of the tool (D7.3); extra_undeclared_arg drops to the expected call (D7.2)",
)
def _undeclared(corpus: Corpus) -> Iterator[Result]:
    for c in value_cases(corpus):
        if c["category"] == "nested_flattened":
            continue
        call = one_call(c)
        tool = tool_of(c, c["expected"]["name"])
        if not call or not tool:
            continue
        schema = tool_schema(tool)
        extra = list(undeclared_keys(call["arguments"], schema))
        names = property_names(schema)
        clash = [format_path(p) for p in extra if p[-1] in names or "." in str(p[-1])]
        yield verdict(not clash, c, f"undeclared {clash} also names a property (or a dotted path)")
        if c["category"] == "extra_undeclared_arg":
            yield verdict(bool(extra), c, "no undeclared key")
            kept = strip_undeclared(call["arguments"], schema)
            yield verdict(
                canonical(kept) == canonical(c["expected"]["arguments"]),
                c,
                "dropping the undeclared keys does not give the expected call",
            )


@check(
    "array_scalar_one_element",
    "every array_vs_scalar difference is one element wrapped or unwrapped (rule 8 / D8.1)",
)
def _array_scalar(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "array_vs_scalar"):
        tool = tool_of(c, c["expected"]["name"])
        diffs = call_diffs(c)
        yield verdict(
            len(diffs) == 1 and tool is not None, c, f"{len(diffs)} properties differ, not one"
        )
        for path, sent, want in diffs:
            kind = value_type(schema_at(tool_schema(tool), path) or {}) if tool else None
            wrapped = (
                kind == "array"
                and isinstance(want, list)
                and len(want) == 1
                and canonical(want[0]) == canonical(sent)
            )
            unwrapped = (
                kind != "array"
                and isinstance(sent, list)
                and len(sent) == 1
                and canonical(sent[0]) == canonical(want)
            )
            yield verdict(wrapped or unwrapped, c, f"{'.'.join(path)} is not a one-element repair")


@check(
    "missing_required_default",
    "every missing_required_arg omission is a required property filled from its own default (rule 6)",
)
def _missing_required(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "missing_required_arg"):
        call = one_call(c)
        if c.get("expected") is None:  # D6.4: a required property with no default is missing
            tool = tool_of(c, call["name"]) if call else None
            args = call["arguments"] if call else None
            lost = (
                required_defaults(tool_schema(tool), args)[1]
                if tool and isinstance(args, dict)
                else []
            )
            yield verdict(
                bool(lost),
                c,
                "no required property without a default is missing (D6.4)",
            )
            continue
        tool = tool_of(c, c["expected"]["name"])
        if not call or not tool:
            yield verdict(False, c, "no single call")
            continue
        fill, lost = required_defaults(tool_schema(tool), call["arguments"])
        yield verdict(bool(fill) and not lost, c, "no required property with a default is missing")
        yield verdict(
            canonical({**call["arguments"], **fill}) == canonical(c["expected"]["arguments"]),
            c,
            "filling the defaults does not give the expected call",
        )


_SAME_SHAPE = (
    "wrong_tool_name",
    "missing_required_arg",
    "extra_undeclared_arg",
    "type_coercion",
    "enum_violation",
    "array_vs_scalar",
)


@check(
    "optional_defaults_unfilled",
    "no expected call holds a property the text omitted unless it is required with a default (D6.1)",
)
def _optional_defaults(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, *_SAME_SHAPE, "multiple_calls", "args_as_string"):
        if c.get("expected") is None:
            continue  # D6.4: a refusal adds nothing
        calls = calls_of(c) or []
        args, _ = decode_strings(calls[0]["arguments"] if calls else None)
        if is_empty_text(args):
            args = {}  # D9.3: nothing was written
        documents = argument_documents(args)
        if documents is not None:  # D9.4: each document is a copy; the first is read
            args, _ = decode_strings(documents[0])
        tool = tool_of(c, c["expected"]["name"])
        if not isinstance(args, dict) or tool is None:
            yield verdict(False, c, "no call to compare")
            continue
        fill, _ = required_defaults(tool_schema(tool), args)
        added = [k for k in c["expected"]["arguments"] if k not in args and k not in fill]
        yield verdict(not added, c, f"expected adds {added}, which the text never wrote")
