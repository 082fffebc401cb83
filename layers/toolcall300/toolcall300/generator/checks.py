"""The integrity checks: the classes of assertion that block a corpus from being written.

Each check class reads only the finished artefacts (cases, rationale, sample, manifest), so
``generate --check-only`` re-runs exactly what a build ran, on files anyone can hold. A
check yields one item per assertion: ``None`` when it held, a one-line message when it did
not. Checks verify labels with the shared predicates of ``schema`` and ``rules`` and with
independent readers of the text (``generator.oracles``); they never
produce a label. They deliberately do not score adapters or judge a normaliser.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import canonical, jsonl_bytes, loads_strict, sha256_hex
from toolcall300.catalog import catalog_problems, tool_name, tool_schema, value_type
from toolcall300.controls import integrator, naive
from toolcall300.generator.envelopes import envelope_of
from toolcall300.generator.oracles import (
    NAME_FIELD,
    argument_documents,
    array_cut_calls,
    calls_of,
    completed_prefix,
    container_held,
    container_texts,
    cut_call_array,
    decisions_rested_on,
    decode_strings,
    enveloped_arguments,
    is_empty_text,
    names_of,
    one_call,
    parsed,
    pass_counts,
    refusal_reasons,
    renested,
    repaired_copy,
    required_defaults,
    strip_undeclared,
    tool_of,
    undeclared_keys,
)
from toolcall300.generator.shape import shape_of
from toolcall300.rules import (
    NotLossless,
    coerce_lossless,
    enum_matches,
    resolve_tool_name,
    takes_nothing,
    tool_name_matches,
)
from toolcall300.schema import format_path, is_valid
from toolcall300.schema.formats import satisfies_format
from toolcall300.spec import CATEGORIES, decision_ids

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


# --------------------------------------------------------------------------- readers


def of(cases: list[dict[str, Any]], *categories: str) -> Iterator[dict[str, Any]]:
    return (c for c in cases if c.get("category") in categories)


def _ok(cond: bool, case: dict[str, Any] | None, message: str) -> Result:
    return None if cond else (f"{case.get('id')}: {message}" if case else message)


def leaves(
    a: Any, b: Any, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any, Any]]:
    """Paths where two argument objects differ (objects are walked, everything else compared)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            yield from leaves(a.get(key, _MISSING), b.get(key, _MISSING), (*path, key))
    elif a is _MISSING or b is _MISSING:
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


_MISSING: Any = _Missing()


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


# --------------------------------------------------------------------------- the check classes

Check = Callable[[Corpus], Iterator[Result]]
CHECKS: dict[str, tuple[str, Check]] = {}


def check(name: str, description: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = (description, fn)
        return fn

    return register


@check(
    "categories",
    "exactly 25 cases in each of the 12 categories and no other category (or, in a corpus "
    "whose manifest records a smaller shape, its counts, each absent category named with why)",
)
def _categories(corpus: Corpus) -> Iterator[Result]:
    shape = shape_of(corpus.manifest)
    counts = Counter(c.get("category") for c in corpus.cases)
    for cat in CATEGORIES:
        want = shape.counts.get(cat, 0)
        if want or shape.is_default:
            yield _ok(
                counts[cat] == want, None, f"category {cat} has {counts[cat]} cases, not {want}"
            )
        else:
            yield _ok(
                counts[cat] == 0 and bool(shape.absent.get(cat)),
                None,
                f"category {cat} is absent from the shape but has {counts[cat]} cases or no reason",
            )
    extra = sorted(str(k) for k in counts if k not in CATEGORIES)
    yield _ok(not extra, None, f"unknown categories {extra}")


@check("ids_sequential", "ids are tc300-0001 .. tc300-0300 (the shape's total) in file order")
def _ids_sequential(corpus: Corpus) -> Iterator[Result]:
    total = shape_of(corpus.manifest).total
    want = [f"tc300-{i:04d}" for i in range(1, total + 1)]
    got = [c.get("id") for c in corpus.cases]
    yield _ok(got == want, None, f"ids are not tc300-0001..tc300-{total:04d} in order")


@check("ids_unique", "all 300 ids are unique")
def _ids_unique(corpus: Corpus) -> Iterator[Result]:
    dupes = [k for k, n in Counter(c.get("id") for c in corpus.cases).items() if n > 1]
    yield _ok(not dupes, None, f"duplicate ids {dupes[:5]}")


@check("texts_unique", "all 300 input texts are unique")
def _texts_unique(corpus: Corpus) -> Iterator[Result]:
    seen: dict[str, str] = {}
    for c in corpus.cases:
        yield _ok(c.get("text") not in seen, c, f"text duplicates {seen.get(c.get('text', ''))}")
        seen.setdefault(c.get("text", ""), str(c.get("id")))


@check(
    "case_shape",
    "each case has exactly the docs/case-format.md fields; expected_kind and expected agree",
)
def _case_shape(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        yield _ok(tuple(sorted(c)) == CASE_KEYS, c, f"fields {sorted(c)}")
        yield _ok(
            isinstance(c.get("text"), str) and bool(c.get("text")),
            c,
            "text must be a non-empty string",
        )
        exp, kind = c.get("expected"), c.get("expected_kind")
        if kind == "value":
            good = (
                isinstance(exp, dict)
                and sorted(exp) == ["arguments", "name"]
                and isinstance(exp["name"], str)
                and isinstance(exp["arguments"], dict)
            )
            yield _ok(good, c, "a value case needs expected {name, arguments(object)}")
        else:
            yield _ok(
                kind == "unrecoverable" and exp is None,
                c,
                "an unrecoverable case needs expected null",
            )


@check(
    "refusals",
    "the 50 hallucinated_tool and unrecoverable cases, and only they, expect a refusal (D2.1; "
    "with D6.4's reading, missing_required_arg's too)",
)
def _refusals(corpus: Corpus) -> Iterator[Result]:
    shape = shape_of(corpus.manifest)
    for c in corpus.cases:
        refuse = shape.expects_refusal(c.get("category"))
        yield _ok(
            (c.get("expected_kind") == "unrecoverable") == refuse,
            c,
            "expected_kind disagrees with its category",
        )
    count = sum(1 for c in corpus.cases if c.get("expected_kind") == "unrecoverable")
    want = shape.refusal_cases
    yield _ok(count == want, None, f"{count} refusal cases, not {want}")


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
        yield _ok(not problems, c, "; ".join(problems[:2]))
        leaked = [
            k
            for t in c.get("tools", [])
            if isinstance(t, dict)
            for k in [*t, *t.get("function", {})]
            if str(k).startswith("x-")
        ]
        yield _ok(not leaked, c, f"pack-only fields shown to the model: {leaked}")


def _value_cases(corpus: Corpus) -> Iterator[dict[str, Any]]:
    return (
        c
        for c in corpus.cases
        if c.get("expected_kind") == "value" and isinstance(c.get("expected"), dict)
    )


@check("expected_declared", "every expected call names a declared tool exactly")
def _expected_declared(corpus: Corpus) -> Iterator[Result]:
    for c in _value_cases(corpus):
        yield _ok(
            c["expected"]["name"] in names_of(c),
            c,
            f"expected tool {c['expected']['name']!r} is not declared",
        )


@check("expected_valid", "every expected call validates against its tool's schema")
def _expected_valid(corpus: Corpus) -> Iterator[Result]:
    for c in _value_cases(corpus):
        tool = tool_of(c, c["expected"]["name"])
        yield _ok(
            tool is not None and is_valid(c["expected"]["arguments"], tool_schema(tool)),
            c,
            "expected arguments fail the schema",
        )


@check(
    "expected_declared_only",
    "expected arguments hold only declared properties, at every level (D7.2)",
)
def _expected_declared_only(corpus: Corpus) -> Iterator[Result]:
    for c in _value_cases(corpus):
        tool = tool_of(c, c["expected"]["name"])
        extra = (
            [format_path(p) for p in undeclared_keys(c["expected"]["arguments"], tool_schema(tool))]
            if tool
            else ["<no tool>"]
        )
        yield _ok(not extra, c, f"expected holds undeclared {extra}")


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
    for c in _value_cases(corpus):
        tool = tool_of(c, c["expected"]["name"])
        broken = list(format_breaks(c["expected"]["arguments"], tool_schema(tool))) if tool else []
        yield _ok(not broken, c, "expected breaks its format: " + "; ".join(broken[:2]))


_PARSE_EXEMPT = ("truncated", "unrecoverable")


@check(
    "texts_parse",
    "every text meant to parse parses; an unparsable refusal is prose or a cut tool name",
)
def _texts_parse(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        ok, _ = parsed(c)
        if c.get("category") not in _PARSE_EXEMPT:
            yield _ok(ok, c, "text does not parse as JSON")
        elif c.get("category") == "unrecoverable" and not ok:
            yield _ok(
                bool(refusal_reasons(c)), c, "unparsable text is neither prose nor a cut tool name"
            )


@check("truncated_unparsable", "every truncated text genuinely fails to parse")
def _truncated_unparsable(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "truncated"):
        yield _ok(not parsed(c)[0], c, "truncated text parses")


@check(
    "truncated_rederived",
    "each truncated label equals what an independent reader finds complete (D11.1-D11.4) plus "
    "required defaults (rule 6); a cut in the array of calls after one complete call is that "
    "call (D10.4), never after a second call begun (D10.2)",
)
def _truncated_rederived(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "truncated"):
        exp = c.get("expected") or {}
        cut = cut_call_array(c["text"])
        if cut is not None:  # the cut fell in the array of calls, after a complete call
            yield _ok(not cut[1], c, "a call was begun after a complete one and cut: D10.2 refuses")
            calls = array_cut_calls(c["text"]) or []
            yield _ok(len(calls) == 1, c, f"{len(calls)} complete calls before the cut, not one")
            yield _ok(
                len(calls) == 1 and canonical(calls[0]) == canonical(c.get("expected")),
                c,
                "expected is not the one complete call as written (rule 11 / D10.4)",
            )
            continue
        match = NAME_FIELD.search(c["text"])
        name = loads_strict(match.group(1)) if match else None
        yield _ok(
            name == exp.get("name"), c, f"the text's tool name {name!r} is not the expected one"
        )
        tool = tool_of(c, str(exp.get("name")))
        prefix = completed_prefix(c["text"])
        if tool is None or prefix is None:
            yield _ok(False, c, "no arguments object in the truncated text")
            continue
        fill, lost = required_defaults(tool_schema(tool), prefix)
        yield _ok(
            not lost, c, f"required {lost} lost with no default: this belongs to unrecoverable"
        )
        yield _ok(
            canonical({**prefix, **fill}) == canonical(exp.get("arguments")),
            c,
            "expected is not exactly the completed prefix plus required defaults",
        )
        yield _ok(
            bool(prefix), c, "nothing was completely written: the case keeps no written property"
        )


@check(
    "mangled_names_resolve",
    "every wrong_tool_name text names no tool exactly and resolves to exactly the expected one (rule 3)",
)
def _mangled(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "wrong_tool_name"):
        call = one_call(c)
        name = call["name"] if call else None
        yield _ok(name is not None and name not in names_of(c), c, f"name {name!r} is not mangled")
        yield _ok(
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
        yield _ok(
            bool(calls) and all(x["name"] == want for x in calls),
            c,
            "a call names another tool",
        )


@check("hallucinated_resolve_none", "every hallucinated name matches no declared tool (rule 3)")
def _hallucinated(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "hallucinated_tool"):
        calls = calls_of(c)
        yield _ok(bool(calls), c, "the text carries no call")
        for call in calls or []:
            yield _ok(
                not tool_name_matches(call["name"], names_of(c))
                and call["name"] not in names_of(c),
                c,
                f"{call['name']!r} matches a declared tool",
            )


def _diffs(c: dict[str, Any]) -> list[tuple[tuple[str, ...], Any, Any]]:
    call = one_call(c)
    return list(leaves(call["arguments"], c["expected"]["arguments"])) if call else []


@check(
    "enum_single_member",
    "every enum_violation value is no member and maps to exactly the expected member (rule 4)",
)
def _enum_single(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "enum_violation"):
        tool = tool_of(c, c["expected"]["name"])
        diffs = _diffs(c)
        yield _ok(
            bool(diffs) and tool is not None, c, "no enum value differs from the expected call"
        )
        for path, sent, want in diffs:
            sub = schema_at(tool_schema(tool), path) if tool else None
            members = (sub or {}).get("enum", [])
            yield _ok(
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
                yield _ok(
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
        diffs = _diffs(c)
        yield _ok(bool(diffs), c, "nothing was written as a string")
        for path, sent, want in diffs:
            sub = schema_at(tool_schema(tool), path) if tool else None
            kind = value_type(sub) if sub else None
            where = ".".join(path)
            if kind in ("array", "object") and sub is not None:  # D5.6: JSON text, decoded
                held = container_held(sent, sub) if isinstance(sent, str) else (False, None)
                yield _ok(
                    held[0] and canonical(held[1]) == canonical(want),
                    c,
                    f"{where}: {sent!r} is not JSON text of exactly the expected {kind} (D5.6)",
                )
                continue
            if kind == "number":
                yield _ok(
                    isinstance(sent, str) and _reads_as_number(sent, want),
                    c,
                    f"{where}: {sent!r} is not JSON number syntax a JSON reader reads as "
                    f"exactly {want!r} (D5.4)",
                )
                continue
            try:
                got = coerce_lossless(sent, str(kind)) if isinstance(sent, str) else _MISSING
            except NotLossless:
                got = _MISSING
            yield _ok(
                got is not _MISSING and canonical(got) == canonical(want) and _respell(got, sent),
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
        yield _ok(isinstance(args, str), c, "arguments are not a string")
        if is_empty_text(args):
            continue  # D9.3: empty text, not an encoding (check empty_text_reads)
        args, times = decode_strings(args)
        yield _ok(times >= 2, c, f"encoded {times} time(s): one decode undoes it (D9.2)")
        yield _ok(
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
        if len(calls) == 1 and _documents(calls[0]) is not None:
            continue  # D9.4: copies merged into one arguments string (check documents_agree)
        yield _ok(len(calls) >= 2, c, "fewer than two calls")
        written = [canonical(x) for x in calls]
        yield _ok(len(set(written)) == len(written), c, "two copies are written alike")
        yield _ok(
            canonical(c["expected"]) not in written, c, "a copy is the expected call as written"
        )
        yield _ok(
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
            yield _ok(False, c, "no single call")
            continue
        schema = tool_schema(tool)
        yield _ok(bool(list(undeclared_keys(call["arguments"], schema))), c, "no flattened key")
        back = renested(call["arguments"], schema)
        yield _ok(not back.conflict, c, f"{back.problem}: a conflict, refused, not a value")
        yield _ok(
            back.arguments is not None
            and canonical(back.arguments) == canonical(c["expected"]["arguments"]),
            c,
            "re-nesting does not give the expected arguments",
        )
        cites = cited(notes.get(c.get("id"), ""))
        for did in sorted(back.decisions & {"D7.5", "D7.6"}):
            yield _ok(did in cites, c, f"re-nesting uses {did}, which the rationale does not cite")


def _documents(call: dict[str, Any]) -> list[Any] | None:
    """D9.4: the documents of a call's arguments string (decoded as far as it decodes)."""
    return argument_documents(decode_strings(call["arguments"])[0])


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
    return value


@check(
    "container_text_decoded",
    "every string written where an array or object is declared that reads as a JSON container "
    "(D5.6) is, in the expected call, exactly the container it parses as, never wrapped into "
    "a one-element array (D8.4); such text that is no JSON of the declared type is only ever "
    "a refusal's; and every type_coercion case whose rule cites D5.6 writes one",
)
def _container_text(corpus: Corpus) -> Iterator[Result]:
    rules = {r.get("id"): str(r.get("rule", "")) for r in corpus.rationale}
    for c in corpus.cases:
        calls = calls_of(c) or []
        lifted = enveloped_arguments(c)
        args = lifted.arguments if lifted is not None else None
        tool = tool_of(c, calls[0]["name"]) if len(calls) == 1 else None
        found = list(container_texts(args, tool_schema(tool))) if tool else []
        if c.get("category") == "type_coercion" and "D5.6" in rules.get(c.get("id"), ""):
            yield _ok(bool(found), c, "cites D5.6 but writes no JSON text of a container")
        for path, text, sub in found:
            held, value = container_held(text, sub)
            where = ".".join(path)
            if not isinstance(c.get("expected"), dict):
                continue  # a refusal: its reasons are unrecoverable_has_defect's
            yield _ok(held, c, f"{where}: {text!r} is no JSON {value_type(sub)}, labelled a value")
            got = _at(c["expected"]["arguments"], path)
            yield _ok(
                canonical(got) != canonical([text]),
                c,
                f"{where}: JSON text wrapped into a one-element array (D8.4)",
            )
            yield _ok(
                held and canonical(got) == canonical(value),
                c,
                f"{where}: the expected value is not the container {text!r} holds (D5.6)",
            )


@check(
    "empty_text_reads",
    "a call whose arguments text is empty or whitespace expects {} when its tool declares no "
    "property, and a refusal otherwise (D9.3)",
)
def _empty_text(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        calls = calls_of(c) or []
        if len(calls) != 1 or not is_empty_text(decode_strings(calls[0]["arguments"])[0]):
            continue
        tool = tool_of(c, calls[0]["name"])
        nothing = tool is not None and takes_nothing(tool_schema(tool))
        want = {"name": calls[0]["name"], "arguments": {}} if nothing else None
        yield _ok(
            canonical(c.get("expected")) == canonical(want),
            c,
            f"empty arguments text must be {'{}' if nothing else 'a refusal'} here (D9.3)",
        )


@check(
    "documents_agree",
    "an arguments string holding several JSON documents (D9.4) expects a call only when they "
    "differ as written, none is the expected arguments as written, and each, repaired on its "
    "own, is the expected call; a refusal only when they differ once repaired",
)
def _documents_agree(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        calls = calls_of(c) or []
        documents = _documents(calls[0]) if len(calls) == 1 else None
        if documents is None:
            continue
        copies = [repaired_copy({"name": calls[0]["name"], "arguments": d}, c) for d in documents]
        agree = None not in copies and len({canonical(x) for x in copies}) == 1
        if not isinstance(c.get("expected"), dict):
            yield _ok(not agree, c, "the documents agree once repaired: a call, not a refusal")
            continue
        written = [canonical(d) for d in documents]
        yield _ok(len(set(written)) == len(written), c, "two documents are written alike")
        yield _ok(
            canonical(c["expected"]["arguments"]) not in written,
            c,
            "a document is the expected arguments as written",
        )
        yield _ok(
            agree and canonical(copies[0]) == canonical(c["expected"]),
            c,
            "a document, repaired on its own, is not the expected call (D9.4)",
        )


@check(
    "envelope_lifts",
    "arguments nested once more under an undeclared argument key (E5), and declared properties "
    "written beside the arguments key (D7.9), read from the text alone, give exactly the "
    "expected arguments (a lifted value conflicting with the one inside is a refusal)",
)
def _envelope_lifts(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        lifted = enveloped_arguments(c)
        if lifted is None or not lifted.decisions:
            continue
        if not isinstance(c.get("expected"), dict):
            yield _ok(lifted.arguments is None, c, "lifts without conflict: a call, not a refusal")
            continue
        yield _ok(
            lifted.arguments is not None
            and canonical(lifted.arguments) == canonical(c["expected"]["arguments"]),
            c,
            f"{'/'.join(sorted(lifted.decisions))} does not give the expected arguments",
        )


@check(
    "undeclared_not_nested",
    "no undeclared key, at any level, names a property of the tool (D7.3); extra_undeclared_arg drops to the expected call (D7.2)",
)
def _undeclared(corpus: Corpus) -> Iterator[Result]:
    for c in _value_cases(corpus):
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
        yield _ok(not clash, c, f"undeclared {clash} also names a property (or a dotted path)")
        if c["category"] == "extra_undeclared_arg":
            yield _ok(bool(extra), c, "no undeclared key")
            kept = strip_undeclared(call["arguments"], schema)
            yield _ok(
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
        diffs = _diffs(c)
        yield _ok(
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
            yield _ok(wrapped or unwrapped, c, f"{'.'.join(path)} is not a one-element repair")


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
            yield _ok(
                bool(lost),
                c,
                "no required property without a default is missing (D6.4)",
            )
            continue
        tool = tool_of(c, c["expected"]["name"])
        if not call or not tool:
            yield _ok(False, c, "no single call")
            continue
        fill, lost = required_defaults(tool_schema(tool), call["arguments"])
        yield _ok(bool(fill) and not lost, c, "no required property with a default is missing")
        yield _ok(
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
            yield _ok(False, c, "no call to compare")
            continue
        fill, _ = required_defaults(tool_schema(tool), args)
        added = [k for k in c["expected"]["arguments"] if k not in args and k not in fill]
        yield _ok(not added, c, f"expected adds {added}, which the text never wrote")


@check(
    "not_valid_as_sent",
    "no recoverable text is already an exact, schema-valid call to a declared tool",
)
def _not_valid_as_sent(corpus: Corpus) -> Iterator[Result]:
    for c in _value_cases(corpus):
        call = one_call(c)
        tool = tool_of(c, call["name"]) if call else None
        free = (
            call is not None and tool is not None and is_valid(call["arguments"], tool_schema(tool))
        )
        yield _ok(not free, c, "the text is already a valid call as sent (a freebie)")


@check(
    "integrator_fails",
    "no repairable case passes the integrator control (C2: envelopes, first call, exact name, "
    "one decode in the OpenAI family, the suite's own schema engine)",
)
def _integrator_fails(corpus: Corpus) -> Iterator[Result]:
    for c in _value_cases(corpus):
        got = integrator(c["text"], c["tools"])
        passed = got is not None and canonical(got) == canonical(c["expected"])
        yield _ok(not passed, c, "the integrator control already passes it (a freebie)")


@check(
    "unrecoverable_has_defect",
    "every unrecoverable text (and every D6.4 refusal) has a named reason no correct call exists",
)
def _unrecoverable_defect(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "unrecoverable", "missing_required_arg"):
        if c.get("category") == "unrecoverable" or c.get("expected") is None:
            yield _ok(bool(refusal_reasons(c)), c, "no refusal reason found in the text")


@check(
    "rationale_rows",
    "rationale.jsonl has one {id, rule, rationale} row per case, in order, citing a rule",
)
def _rationale(corpus: Corpus) -> Iterator[Result]:
    ids = [c.get("id") for c in corpus.cases]
    yield _ok(
        [r.get("id") for r in corpus.rationale] == ids,
        None,
        "rationale ids do not match the cases one to one",
    )
    for r in corpus.rationale:
        good = (
            sorted(r) == ["id", "rationale", "rule"]
            and str(r.get("rule", "")).startswith("rule ")
            and len(str(r.get("rationale", ""))) >= 40
        )
        yield _ok(good, r, "rationale row lacks a rule or a specific rationale")


@check(
    "decisions_named",
    "a case whose answer rests on a decision the reference normaliser once took alone "
    "(D1.3, D7.4, D8.2, D10.4, D11.7, D11.8), or on one real traffic reached (D5.6, D8.4, "
    "D9.3, D9.4, E5, D7.9), names it in its rationale",
)
def _decisions_named(corpus: Corpus) -> Iterator[Result]:
    notes = {r.get("id"): f"{r.get('rule', '')} {r.get('rationale', '')}" for r in corpus.rationale}
    for c in corpus.cases:
        for did in decisions_rested_on(c):
            yield _ok(did in cited(notes.get(c.get("id"), "")), c, f"rests on {did} unnamed")


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


@check(
    "rationale_cites",
    "every decision a rationale cites exists in the contract, and every text written in an "
    "envelope names it (E2)",
)
def _rationale_cites(corpus: Corpus) -> Iterator[Result]:
    known = set(decision_ids())
    texts = {c.get("id"): str(c.get("text", "")) for c in corpus.cases}
    for r in corpus.rationale:
        ids = cited(f"{r.get('rule', '')} {r.get('rationale', '')}")
        yield _ok(ids <= known, r, f"cites {sorted(ids - known)}, not in the contract")
        envelope = envelope_of(texts.get(r.get("id"), ""))
        yield _ok(envelope is None or "E2" in ids, r, "does not say how its envelope is read (E2)")


@check(
    "sample30",
    "sample30.jsonl is 30 corpus cases, byte-identical rows, 2 or 3 per category, in id order "
    "(a smaller shape: the same split of 30, or of all its cases, over its categories)",
)
def _sample(corpus: Corpus) -> Iterator[Result]:
    shape = shape_of(corpus.manifest)
    rows = {c.get("id"): canonical(c) for c in corpus.cases}
    size = shape.sample_size()
    yield _ok(
        len(corpus.sample) == size,
        None,
        f"sample has {len(corpus.sample)} cases, not {size}",
    )
    for s in corpus.sample:
        yield _ok(rows.get(s.get("id")) == canonical(s), s, "sample row is not the corpus row")
    counts = Counter(s.get("category") for s in corpus.sample)
    for cat in CATEGORIES:
        allowed = shape.sample_allowed(cat)
        yield _ok(
            counts[cat] in allowed,
            None,
            f"sample has {counts[cat]} {cat} cases, not {sorted(allowed)}",
        )
    ids = [s.get("id") for s in corpus.sample]
    yield _ok(ids == sorted(set(ids), key=str), None, "sample ids repeat or are out of order")


@check(
    "discrimination",
    "the manifest's per-category table is what the naive (C1) and integrator (C2) controls pass",
)
def _discrimination(corpus: Corpus) -> Iterator[Result]:
    table = ((corpus.manifest or {}).get("discrimination") or {}).get("categories")
    yield _ok(isinstance(table, dict), None, "the manifest has no discrimination table")
    if isinstance(table, dict):
        controls = {"naive": naive, "integrator": integrator}
        now = pass_counts(corpus.cases, controls, trusted=tuple(controls))
        for cat, row in now.items():
            for name, count in row.items():
                written = (table.get(cat) or {}).get(name)
                yield _ok(
                    written == count,
                    None,
                    f"{cat}: {name} passes {count}, the manifest says {written}",
                )


@check("manifest_pins", "manifest.json pins the sha256 and count of every file")
def _manifest(corpus: Corpus) -> Iterator[Result]:
    files = (corpus.manifest or {}).get("files", {})
    yield _ok(corpus.manifest is not None and bool(files), None, "no manifest or no file pins")
    for fname, pin in sorted(files.items()):
        data = corpus.files.get(fname)
        yield _ok(data is not None, None, f"{fname} is pinned but missing")
        if data is not None:
            yield _ok(
                sha256_hex(data) == pin.get("sha256"),
                None,
                f"{fname} sha256 does not match its pin",
            )
            yield _ok(len(data) == pin.get("bytes"), None, f"{fname} size does not match its pin")
            lines = data.count(b"\n")
            yield _ok(
                lines == pin.get("count"),
                None,
                f"{fname} has {lines} rows, pinned {pin.get('count')}",
            )
    for fname, rows in (
        ("toolcall300.jsonl", corpus.cases),
        ("rationale.jsonl", corpus.rationale),
        ("sample30.jsonl", corpus.sample),
    ):
        if fname in corpus.files:
            yield _ok(
                corpus.files[fname] == jsonl_bytes(rows), None, f"{fname} is not in canonical form"
            )


# --------------------------------------------------------------------------- running


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
