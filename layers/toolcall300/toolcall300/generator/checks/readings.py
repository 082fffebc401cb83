"""How an arguments text is read, in whatever category it appears.

They guard the readings real traffic reached: JSON text of a declared container
(D5.6, never wrapped as D8.4), an empty arguments text (D9.3), several JSON documents
in one arguments string (D9.4) and arguments one level off their key (E5, D7.9).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import tool_schema, value_type
from toolcall300.generator.checks.base import (
    MISSING,
    Corpus,
    Result,
    check,
    documents_of,
    verdict,
)
from toolcall300.generator.oracles import (
    calls_of,
    container_held,
    container_texts,
    decode_strings,
    enveloped_arguments,
    is_empty_text,
    repaired_copy,
    tool_of,
)
from toolcall300.rules import (
    takes_nothing,
)


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
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
            yield verdict(bool(found), c, "cites D5.6 but writes no JSON text of a container")
        for path, text, sub in found:
            held, value = container_held(text, sub)
            where = ".".join(path)
            if not isinstance(c.get("expected"), dict):
                continue  # a refusal: its reasons are unrecoverable_has_defect's
            yield verdict(
                held, c, f"{where}: {text!r} is no JSON {value_type(sub)}, labelled a value"
            )
            got = _at(c["expected"]["arguments"], path)
            yield verdict(
                canonical(got) != canonical([text]),
                c,
                f"{where}: JSON text wrapped into a one-element array (D8.4)",
            )
            yield verdict(
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
        yield verdict(
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
        documents = documents_of(calls[0]) if len(calls) == 1 else None
        if documents is None:
            continue
        copies = [repaired_copy({"name": calls[0]["name"], "arguments": d}, c) for d in documents]
        agree = None not in copies and len({canonical(x) for x in copies}) == 1
        if not isinstance(c.get("expected"), dict):
            yield verdict(not agree, c, "the documents agree once repaired: a call, not a refusal")
            continue
        written = [canonical(d) for d in documents]
        yield verdict(len(set(written)) == len(written), c, "two documents are written alike")
        yield verdict(
            canonical(c["expected"]["arguments"]) not in written,
            c,
            "a document is the expected arguments as written",
        )
        yield verdict(
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
            yield verdict(
                lifted.arguments is None, c, "lifts without conflict: a call, not a refusal"
            )
            continue
        yield verdict(
            lifted.arguments is not None
            and canonical(lifted.arguments) == canonical(c["expected"]["arguments"]),
            c,
            f"{'/'.join(sorted(lifted.decisions))} does not give the expected arguments",
        )
