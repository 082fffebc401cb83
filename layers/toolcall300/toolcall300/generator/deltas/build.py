"""The corpus built: each source case as one or more streams of its shapes and forms, with
their partitions and rationale rows, in id order from one seeded rng. Pure.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from typing import Any

from toolcall300.canonical import (
    loads_strict,
)
from toolcall300.generator.deltas.checks import flatters
from toolcall300.generator.deltas.forms import (
    BROKEN_FORMS,
    SEED,
    SHAPES,
    SUFFIXES,
    TEXT_ONLY_SHAPES,
)
from toolcall300.generator.deltas.partitions import partitions
from toolcall300.generator.deltas.sources import (
    Source,
    broken_text,
    constructed,
    cut_value,
    emptied_refuses,
    respelled,
    source_of,
)
from toolcall300.generator.deltas.wire import (
    Rendered,
    path_value,
    render,
    vertex_cut,
    vertex_leaves,
)


class _Cases:
    """The corpus as it is built: its cases and rationale rows in id order, one seeded rng
    for every partition (so a form added later leaves every earlier case as it was)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cases: list[dict[str, Any]] = []
        self.rationale: list[dict[str, Any]] = []

    def add(
        self,
        src: Source,
        shape: str,
        form: str,
        text: str,
        expected: Any,
        why: str,
        rendered: Callable[[int], Rendered] | None = None,
        unless_flattering: bool = False,
    ) -> None:
        """One case: ``src``'s call as a ``shape`` stream of ``form`` (``rendered`` when the
        form spells its own events), with its partitions; none when ``unless_flattering`` and
        the plain integrator would pass it."""
        n = len(self.cases) + 1
        events, k, path, continuation = (
            rendered(n) if rendered else render(shape, form, src.name, text, n, cut=form == "cut")
        )
        case = {
            "id": f"tcd-{n:04d}",
            "track": "deltas",
            "category": src.case["category"],
            "source": src.case["id"],
            "shape": shape,
            "form": form,
            "tools": src.case["tools"],
            "events": events,
            "fragment_event": k,
            "fragment_path": path,
            "continuation": continuation,
            "partitions": [[]],
            "expected_kind": "value" if expected is not None else "unrecoverable",
            "expected": expected,
        }
        if unless_flattering and flatters(case):
            return  # accumulate-parse-validate would pass it: no case (see ``check``)
        if k is not None and form != "whole_call":
            fragment = path_value(events[k], path)
            case["partitions"] = partitions(fragment, self.rng)
            around = _around_suffix(fragment, form)
            if around and around not in case["partitions"]:
                case["partitions"].append(around)
        self.cases.append(case)
        self.rationale.append({"id": case["id"], "source": src.case["id"], "rationale": why})


def build(
    sources: list[dict[str, Any]], seed: int = SEED
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(cases, rationale)`` of the deltas corpus from the main corpus's cases. Pure."""
    built = _Cases(seed)
    usable = [s for s in map(source_of, sources) if s is not None]
    for index, src in enumerate(usable):
        _first_forms(built, index, src)
    _later_forms(usable, built.add)
    return built.cases, built.rationale


def _first_forms(built: _Cases, index: int, src: Source) -> None:
    """Version 1.1's cases of one source: a cut, or the standard stream, then (every fifth)
    name with arguments and the whole call, then (every third object) the broken forms."""
    add, rng = built.add, built.rng
    label = src.case["expected"]
    base = f"{src.case['id']} ({src.case['category']}) as one {{shape}} stream, {{form}}"
    if src.cut:
        shape = ("openai_chat", "anthropic", "openai_responses")[index % 3]
        why = base.format(shape=shape, form="cut by the token limit") + (
            "; rule 11 reads the provider's own signal, so the label is the source's"
        )
        add(src, shape, "cut", src.text, label, why)
        return
    text = respelled(src.text, index)
    is_object = text.startswith("{")
    leaves = vertex_leaves(loads_strict(text)) if is_object else None
    vertex_ok = bool(leaves) and any(isinstance(v, str) for _, v in leaves or [])
    shapes = [s for s in SHAPES if (s != "gemini" or is_object) and (s != "vertex" or vertex_ok)]
    shape = shapes[index % len(shapes)]
    add(
        src,
        shape,
        "standard",
        text,
        label,
        base.format(shape=shape, form="as written") + ": DS1, the source's label",
    )
    if index % 5 == 0:
        for form in ("name_with_arguments", "whole_call"):
            add(
                src,
                "openai_chat",
                form,
                text,
                label,
                base.format(shape="openai_chat", form=form) + ": DS1, the source's label",
            )
    if index % 3 == 0 and is_object:
        shape = TEXT_ONLY_SHAPES[index // 3 % 2]
        for form in BROKEN_FORMS:
            broken = broken_text(form, text, rng)
            if broken is None:
                continue
            if form == "arguments_emptied" and not emptied_refuses(src.case, src.name):
                continue
            rule = "DS3 and rule 6" if form == "arguments_emptied" else "DS2"
            add(
                src,
                shape,
                form,
                broken,
                None,
                base.format(shape=shape, form=form)
                + f": {rule}, a refusal, never an invented call",
            )


#: a tool of no arguments as each provider streams it: (shape, arguments text, how it is sent)
EMPTY_SPELLINGS = (
    ("openai_chat", "", '`arguments: ""` in the first chunk, no further fragment'),
    ("openai_chat", "{}", '`arguments: "{}"` after the first chunk'),
    ("openai_responses", "{}", 'a `.delta` of "{}" and `.done` with "{}"'),
    ("anthropic", "", 'one `input_json_delta` with `partial_json: ""`'),
    ("anthropic", None, "no `input_json_delta` at all (the block's `input: {}` only)"),
    ("gemini", "", "a `functionCall` without `args` (it is optional)"),
    ("gemini", "{}", "`args: {}`"),
    ("vertex", "{}", "a name chunk and a closing chunk, no `partialArgs`"),
)


def _empty_rendering(shape: str, text: str | None, name: str, n: int) -> Rendered:
    """One stream of a call with no arguments, spelled as ``EMPTY_SPELLINGS`` says."""
    if shape == "openai_chat" and text == "":
        return render(shape, "name_with_arguments", name, "", n, cut=False)
    events, k, path, continuation = render(shape, "standard", name, text or "", n, cut=False)
    if text is None:  # Anthropic: the tool_use block opens and stops with no delta between
        del events[k or 0]
        return events, None, [], None
    return events, k, path, continuation


def _later_forms(usable: list[Source], add: Any) -> None:
    """The forms added in version 1.2, after every earlier case (whose ids and partitions
    stay as they were): a tool of no arguments in each provider's spelling, a closing quote
    and brace inside a string value, a character past U+FFFF (its escaped surrogate pair cut
    between and inside its halves), and a Vertex stream cut mid-value."""
    for src in usable:
        label = src.case["expected"]
        base = f"{src.case['id']} ({src.case['category']}) as one {{shape}} stream, {{form}}"
        if label is not None and label["arguments"] == {} and not src.cut:
            for shape, text, how in EMPTY_SPELLINGS:
                why = base.format(shape=shape, form="of a tool that takes no arguments, " + how)
                rendered = functools.partial(_empty_rendering, shape, text, src.name)
                why += ": DS3 reads it as {}, the source's label"
                add(src, shape, "no_arguments", text or "", label, why, rendered, True)
    for form in ("closer_in_string", "astral_in_string"):
        built = [(s, constructed(s.case, s.text, form)) for s in usable if not s.cut]
        for number, (src, made) in enumerate([(s, m) for s, m in built if m is not None][:3]):
            args, label = made
            for shape in SHAPES:
                if shape == "vertex" and not vertex_leaves(args):
                    continue
                text = json.dumps(args, ensure_ascii=number != 2)
                why = (
                    f"{src.case['id']} ({src.case['category']}) as one {shape} stream, a string "
                    f"value with {SUFFIXES[form]!r} appended in the text and the label (a plain "
                    "string is kept as written: the label by construction)"
                )
                add(src, shape, form, text, label, why, None, True)
    for src in usable:
        found = cut_value(src)
        if found is not None:
            why = (
                f"{src.case['id']} ({src.case['category']}) as one vertex stream cut mid-value "
                "(MAX_TOKENS, the value still continuing); rule 11 reads the provider's own "
                "signal, so the label is the source's"
            )
            rendered = functools.partial(vertex_cut, src.name, *found)
            add(src, "vertex", "cut", "", src.case["expected"], why, rendered)


def _around_suffix(fragment: str, form: str) -> list[int]:
    """For a constructed form, one partition cutting at every offset next to and inside what
    was appended (the closing quote and brace, or the surrogate pair), as providers split it."""
    if form not in SUFFIXES:
        return []
    for spelled in (json.dumps(SUFFIXES[form])[1:-1], SUFFIXES[form]):
        at = fragment.find(spelled)
        if at >= 0:
            lo, hi = max(1, at - 1), min(len(fragment), at + len(spelled) + 2)
            return list(range(lo, hi))
    return []
