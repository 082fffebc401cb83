"""Which texts parse, and the truncation labels re-derived from the text.

They guard that every text meant to parse parses, that an unparsable refusal is prose
or a cut tool name, and that each truncated label is what an independent reader finds
complete plus required defaults (rule 11, D11.1-D11.4, rule 6), or the one complete
call before a cut in the array of calls (D10.4, never D10.2).
"""

from __future__ import annotations

from collections.abc import Iterator

from toolcall300.canonical import canonical, loads_strict
from toolcall300.catalog import tool_schema
from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    check,
    of,
    verdict,
)
from toolcall300.generator.oracles import (
    NAME_FIELD,
    array_cut_calls,
    completed_prefix,
    cut_call_array,
    parsed,
    refusal_reasons,
    required_defaults,
    tool_of,
)

_PARSE_EXEMPT = ("truncated", "unrecoverable")


@check(
    "texts_parse",
    "every text meant to parse parses; an unparsable refusal is prose or a cut tool name",
)
def _texts_parse(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        ok, _ = parsed(c)
        if c.get("category") not in _PARSE_EXEMPT:
            yield verdict(ok, c, "text does not parse as JSON")
        elif c.get("category") == "unrecoverable" and not ok:
            yield verdict(
                bool(refusal_reasons(c)), c, "unparsable text is neither prose nor a cut tool name"
            )


@check("truncated_unparsable", "every truncated text genuinely fails to parse")
def _truncated_unparsable(corpus: Corpus) -> Iterator[Result]:
    for c in of(corpus.cases, "truncated"):
        yield verdict(not parsed(c)[0], c, "truncated text parses")


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
            yield verdict(
                not cut[1], c, "a call was begun after a complete one and cut: D10.2 refuses"
            )
            calls = array_cut_calls(c["text"]) or []
            yield verdict(
                len(calls) == 1, c, f"{len(calls)} complete calls before the cut, not one"
            )
            yield verdict(
                len(calls) == 1 and canonical(calls[0]) == canonical(c.get("expected")),
                c,
                "expected is not the one complete call as written (rule 11 / D10.4)",
            )
            continue
        match = NAME_FIELD.search(c["text"])
        name = loads_strict(match.group(1)) if match else None
        yield verdict(
            name == exp.get("name"), c, f"the text's tool name {name!r} is not the expected one"
        )
        tool = tool_of(c, str(exp.get("name")))
        prefix = completed_prefix(c["text"])
        if tool is None or prefix is None:
            yield verdict(False, c, "no arguments object in the truncated text")
            continue
        fill, lost = required_defaults(tool_schema(tool), prefix)
        yield verdict(
            not lost, c, f"required {lost} lost with no default: this belongs to unrecoverable"
        )
        yield verdict(
            canonical({**prefix, **fill}) == canonical(exp.get("arguments")),
            c,
            "expected is not exactly the completed prefix plus required defaults",
        )
        yield verdict(
            bool(prefix), c, "nothing was completely written: the case keeps no written property"
        )
