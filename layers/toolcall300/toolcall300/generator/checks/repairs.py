"""Each repair category's label re-derived from the text by a reader of its own.

They guard the categories whose answer is one repair: an enum value mapping to one
member (rule 4, D4.1), a lossless string (rule 5, D5.1, D5.4, D5.6), arguments encoded
more than once (rule 9, D9.1, D9.2), several copies of one call (rule 10, D10.1, D10.3)
and flattened keys re-nested (rule 7, D7.1-D7.6).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import canonical, loads_strict
from toolcall300.catalog import tool_schema, value_type
from toolcall300.generator.checks.base import (
    MISSING,
    Corpus,
    Result,
    call_diffs,
    check,
    cited,
    documents_of,
    of,
    schema_at,
    verdict,
    walk,
)
from toolcall300.generator.oracles import (
    calls_of,
    container_held,
    decode_strings,
    enveloped_arguments,
    is_empty_text,
    one_call,
    renested,
    repaired_copy,
    tool_of,
    undeclared_keys,
)
from toolcall300.rules import (
    NotLossless,
    coerce_lossless,
    enum_matches,
)


@check(
    "enum_single_member",
    "every enum_violation value is no member and maps to exactly the expected member (rule 4)",
)
def _enum_single(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "enum_violation"):
        tool = tool_of(c, c["expected"]["name"])
        diffs = call_diffs(c)
        yield verdict(
            bool(diffs) and tool is not None, c, "no enum value differs from the expected call"
        )
        for path, sent, want in diffs:
            sub = schema_at(tool_schema(tool), path) if tool else None
            members = (sub or {}).get("enum", [])
            yield verdict(
                sent not in members and enum_matches(sent, members) == [want],
                c,
                f"{'.'.join(path)}: {sent!r} does not map to {want!r} alone",
            )


@check(
    "unrecoverable_enum_none",
    "every unrecoverable enum value maps to no member or to two (rule 4 / D4.1)",
)
def _unrecoverable_enum(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "unrecoverable"):
        call = one_call(c)
        tool = tool_of(c, call["name"]) if call else None
        if not call or not tool:
            continue
        for path, sent in walk(call["arguments"]):
            sub = schema_at(tool_schema(tool), path)
            if sub and "enum" in sub and sent not in sub["enum"]:
                yield verdict(
                    len(enum_matches(sent, sub["enum"])) != 1,
                    c,
                    f"{'.'.join(path)}: {sent!r} maps to a single member",
                )


@check(
    "lossless_roundtrip",
    "every type_coercion string converts losslessly to the expected value (rule 5): an "
    "integer or boolean one writes it back unchanged (D5.1); a number one is in JSON number "
    "syntax and a strict JSON reader reads it as exactly the expected value, int or float "
    '("1e3" is 1000.0, never 1000; "3" is 3, never 3.0; D5.4)',
)
def _lossless(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "type_coercion"):
        tool = tool_of(c, c["expected"]["name"])
        diffs = call_diffs(c)
        yield verdict(bool(diffs), c, "nothing was written as a string")
        for path, sent, want in diffs:
            sub = schema_at(tool_schema(tool), path) if tool else None
            kind = value_type(sub) if sub else None
            where = ".".join(path)
            if kind in ("array", "object") and sub is not None:  # D5.6: JSON text, decoded
                held = container_held(sent, sub) if isinstance(sent, str) else (False, None)
                yield verdict(
                    held[0] and canonical(held[1]) == canonical(want),
                    c,
                    f"{where}: {sent!r} is not JSON text of exactly the expected {kind} (D5.6)",
                )
                continue
            if kind == "number":
                yield verdict(
                    isinstance(sent, str) and _reads_as_number(sent, want),
                    c,
                    f"{where}: {sent!r} is not JSON number syntax a JSON reader reads as "
                    f"exactly {want!r} (D5.4)",
                )
                continue
            try:
                got = coerce_lossless(sent, str(kind)) if isinstance(sent, str) else MISSING
            except NotLossless:
                got = MISSING
            yield verdict(
                got is not MISSING and canonical(got) == canonical(want) and _respell(got, sent),
                c,
                f"{where}: {sent!r} is not a lossless {kind} for {want!r}",
            )


#: RFC 8259's number grammar, spelled out here so the check does not lean on ``rules``.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _reads_as_number(sent: str, want: Any) -> bool:
    """D5.4 read independently: ``sent`` is one JSON number (no sign, space or digit a JSON
    text would not hold) and the strict reader reads it as exactly ``want``, of the same
    type: a fraction or an exponent makes a float, neither an int."""
    if not _JSON_NUMBER.fullmatch(sent) or isinstance(want, bool):
        return False
    try:
        got = loads_strict(sent)
    except ValueError:  # "1e999": past a double, which no JSON reader may read as inf
        return False
    return type(got) is type(want) and canonical(got) == canonical(want)


def _respell(value: Any, sent: str) -> bool:
    """Reversible: writing the value back gives the sent text (booleans up to letter case)."""
    back = json.dumps(value)
    return back == sent if not isinstance(value, bool) else back == sent.casefold()


@check(
    "args_string_decodes",
    "every args_as_string text carries a string, encoded more often than one decode undoes "
    "(D9.2), that decodes to exactly the expected arguments (rule 9 / D9.1)",
)
def _args_string(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "args_as_string"):
        calls = calls_of(c) or []
        args = calls[0]["arguments"] if len(calls) == 1 else None
        yield verdict(isinstance(args, str), c, "arguments are not a string")
        if is_empty_text(args):
            continue  # D9.3: empty text, not an encoding (check empty_text_reads)
        args, times = decode_strings(args)
        yield verdict(times >= 2, c, f"encoded {times} time(s): one decode undoes it (D9.2)")
        yield verdict(
            canonical(args) == canonical(c["expected"]["arguments"]),
            c,
            "decoded arguments differ from the expected ones",
        )


@check(
    "multiple_agree",
    "every multiple_calls text holds 2+ copies that differ as written, none the expected call, "
    "each the expected call once repaired on its own (rule 10 / D10.1, D10.3)",
)
def _multiple(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "multiple_calls"):
        calls = calls_of(c) or []
        if len(calls) == 1 and documents_of(calls[0]) is not None:
            continue  # D9.4: copies merged into one arguments string (check documents_agree)
        yield verdict(len(calls) >= 2, c, "fewer than two calls")
        written = [canonical(x) for x in calls]
        yield verdict(len(set(written)) == len(written), c, "two copies are written alike")
        yield verdict(
            canonical(c["expected"]) not in written, c, "a copy is the expected call as written"
        )
        yield verdict(
            all(canonical(repaired_copy(x, c)) == canonical(c["expected"]) for x in calls),
            c,
            "a copy, repaired on its own, is not the expected call",
        )


@check(
    "flattened_renests",
    "every nested_flattened text re-nests, at every level (D7.5), each key with no declared "
    "place to one nested home (D7.1, D7.3), merging into an object also written (D7.6: a "
    "conflicting value would be a refusal) to exactly the expected call, and its rationale "
    "cites D7.5 and D7.6 where the re-nesting used them",
)
def _flattened(corpus: Corpus) -> Iterator[Result]:
    notes = {r.get("id"): f"{r.get('rule', '')} {r.get('rationale', '')}" for r in corpus.rationale}
    for c in of(corpus.cases, "nested_flattened"):
        lifted = enveloped_arguments(c)
        if lifted is not None and lifted.decisions:
            continue  # E5, D7.9: arguments one level off (check envelope_lifts)
        call = one_call(c)
        tool = tool_of(c, c["expected"]["name"])
        if not call or not tool:
            yield verdict(False, c, "no single call")
            continue
        schema = tool_schema(tool)
        yield verdict(bool(list(undeclared_keys(call["arguments"], schema))), c, "no flattened key")
        back = renested(call["arguments"], schema)
        yield verdict(not back.conflict, c, f"{back.problem}: a conflict, refused, not a value")
        yield verdict(
            back.arguments is not None
            and canonical(back.arguments) == canonical(c["expected"]["arguments"]),
            c,
            "re-nesting does not give the expected arguments",
        )
        cites = cited(notes.get(c.get("id"), ""))
        for did in sorted(back.decisions & {"D7.5", "D7.6"}):
            yield verdict(
                did in cites, c, f"re-nesting uses {did}, which the rationale does not cite"
            )
