"""The integrity checks: every label re-derived from the events alone with a reader of their
own (never the toolshim's), and a flattering corpus refused (a value case the plain
accumulate-parse-validate integrator would pass under every partition).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import (
    canonical,
    loads_strict,
)
from toolcall300.controls import integrator, passes
from toolcall300.generator.deltas.forms import BROKEN_FORMS, FORMS, SHAPES, SUFFIXES
from toolcall300.generator.deltas.sources import constructed, emptied_refuses, source_of
from toolcall300.generator.deltas.wire import path_value, replay
from toolcall300.generator.oracles import (
    completed_prefix,
)


def flatters(case: dict[str, Any]) -> bool:
    """Whether the plain accumulate-parse-validate integrator (C2 on the accumulated call)
    passes this value case: it reads only the accumulated text, so it would pass it under
    every partition."""
    if case["expected_kind"] != "value":
        return False
    name, text, _ = reassemble(case, case["events"])
    return passes(case, integrator(json.dumps({"name": name, "arguments": text}), case["tools"]))


def reassemble(case: dict[str, Any], events: list[dict[str, Any]]) -> tuple[str | None, str, str]:  # noqa: C901
    """An independent reader: ``(name, arguments text, end)`` where end is ``"complete"`` or
    ``"cut"``, by each shape's documented fields alone."""
    name: str | None = None
    parts: list[str] = []
    pieces: list[dict[str, Any]] = []
    end = "complete"
    shape = case["shape"]
    for event in events:
        if shape == "openai_chat":
            choice = event["choices"][0]
            for call in choice["delta"].get("tool_calls", []):
                fn = call.get("function", {})
                name = name or fn.get("name")
                parts.append(fn.get("arguments", ""))
            if choice["finish_reason"] == "length":
                end = "cut"
        elif shape == "openai_responses":
            if event["type"] == "response.output_item.added":
                name = event["item"]["name"]
            elif event["type"] == "response.function_call_arguments.delta":
                parts.append(event["delta"])
            elif event["type"] == "response.incomplete":
                end = "cut"
        elif shape == "anthropic":
            if event["type"] == "content_block_start":
                name = event["content_block"]["name"]
            elif event["type"] == "content_block_delta":
                parts.append(event["delta"]["partial_json"])
            elif event["type"] == "message_delta" and event["delta"]["stop_reason"] == "max_tokens":
                end = "cut"
        elif shape == "gemini":
            cand = event["candidates"][0]
            call = cand["content"]["parts"][0]["functionCall"]
            name = call["name"]
            parts.append(json.dumps(call["args"], ensure_ascii=False) if "args" in call else "")
            end = "cut" if cand["finishReason"] == "MAX_TOKENS" else end
        else:  # vertex: partialArgs, each value by its jsonPath, strings in pieces
            cand = event["candidates"][0]
            content = cand.get("content", {"parts": [{"functionCall": {}}]})
            call = content["parts"][0]["functionCall"]
            name = call.get("name", name)
            for arg in call.get("partialArgs", []):
                pieces.append(arg)
            end = "cut" if cand.get("finishReason") == "MAX_TOKENS" else end
    if shape == "vertex":
        return name, json.dumps(_from_paths(pieces), ensure_ascii=False), end
    return name, "".join(parts), end


_STEP = re.compile(r"\[(\d+)\]|\['([^'\\]*)'\]")


def _from_paths(args: list[dict[str, Any]]) -> Any:
    """The arguments object Vertex's ``partialArgs`` spell, value by value (strings joined)."""
    root: dict[str, Any] = {}
    for arg in args:
        steps: list[Any] = [int(m[1]) if m[1] else m[2] for m in _STEP.finditer(arg["jsonPath"])]
        kind = next(k for k in ("stringValue", "numberValue", "boolValue", "nullValue") if k in arg)
        value = None if kind == "nullValue" else arg[kind]
        node: Any = root
        for step, after in zip(steps, [*steps[1:], None], strict=True):
            if after is None:
                break
            if isinstance(node, list):
                while len(node) <= step:
                    node.append(None)
                if node[step] is None:
                    node[step] = [] if isinstance(after, int) else {}
                node = node[step]
            else:
                node = node.setdefault(step, [] if isinstance(after, int) else {})
        last = steps[-1]
        if isinstance(node, list):
            while len(node) <= last:
                node.append(None)
            joined = kind == "stringValue" and isinstance(node[last], str)
            node[last] = f"{node[last]}{value}" if joined else value
        elif kind == "stringValue" and last in node:
            node[last] += value
        else:
            node[last] = value
    return root


def check(  # noqa: C901, PLR0915
    cases: list[dict[str, Any]], rationale: list[dict[str, Any]], sources: list[dict[str, Any]]
) -> Iterator[str]:
    """Every problem with a built deltas corpus (nothing: it is sound)."""
    by_id = {c["id"]: c for c in sources}
    ids = [c["id"] for c in cases]
    if ids != [f"tcd-{i:04d}" for i in range(1, len(cases) + 1)]:
        yield "ids are not tcd-0001.. in order"
    if [r["id"] for r in rationale] != ids:
        yield "rationale rows do not match the cases one for one"
    forms = {c["form"] for c in cases}
    shapes = {c["shape"] for c in cases}
    if forms != set(FORMS) or shapes != set(SHAPES):
        yield f"forms or shapes missing: {sorted(set(FORMS) - forms)} {sorted(set(SHAPES) - shapes)}"
    integrator_passed = 0
    for case in cases:
        where = case["id"]
        src = by_id.get(case["source"])
        if src is None:
            yield f"{where}: source {case['source']} is not in the main corpus"
            continue
        name, text, end = reassemble(case, case["events"])
        k = case["fragment_event"]
        fragment = path_value(case["events"][k], case["fragment_path"]) if k is not None else ""
        for offsets in case["partitions"]:
            if offsets != sorted(set(offsets)) or any(
                not 0 < o < max(len(fragment), 1) for o in offsets
            ):
                yield f"{where}: partition {offsets} is not increasing cuts inside the text"
                break
            events = replay(case, offsets)
            again = reassemble(case, events)
            if again != (name, text, end) or (
                case["shape"] == "vertex"
                and vertex_completed(events) != vertex_completed(case["events"])
            ):
                yield f"{where}: partition {offsets} reads another call"
                break
        splits = [p for p in case["partitions"] if len(p) == 1]
        fragmented = case["fragment_event"] is not None and case["form"] != "whole_call"
        if fragmented and len(fragment) > 1 and splits != [[i] for i in range(1, len(fragment))]:
            yield f"{where}: not every two-way split is replayed"
        if end != ("cut" if case["form"] == "cut" else "complete"):
            yield f"{where}: the stream's own signal disagrees with its form"
        if case["form"] in BROKEN_FORMS:
            strict = True
            try:
                loads_strict(text)
            except ValueError:
                strict = False
            emptied = case["form"] == "arguments_emptied" and text == ""
            if case["expected"] is not None or (strict and not emptied):
                yield f"{where}: a broken stream must read as no call (DS2, DS3) and expect a refusal"
            if emptied and not emptied_refuses(src, name or ""):
                yield f"{where}: an emptied call that rule 6 would complete is no case"
            continue
        for problem in _label_problems(case, src, name, text, end):
            yield f"{where}: {problem}"
        if flatters(case):
            integrator_passed += 1
            yield f"{where}: flattering: accumulate-parse-validate passes it under every partition"
    del integrator_passed


def _label_problems(
    case: dict[str, Any], src: dict[str, Any], name: str | None, text: str, end: str
) -> Iterator[str]:
    """What is wrong with a value or cut case's label, re-derived from its stream and source."""
    form = case["form"]
    sent = source_of(src)
    if sent is None or name != sent.name:
        yield "the stream's name is not its source's"
        return
    if form in SUFFIXES:  # the label by construction: the source's, one plain string grown
        made = constructed(src, sent.text, form)
        if made is None or canonical(case["expected"]) != canonical(made[1]):
            yield f"label is not its source's with {SUFFIXES[form]!r} appended to a plain string"
        elif canonical(loads_strict(text)) != canonical(made[0]):
            yield f"the streamed arguments are not its source's with {SUFFIXES[form]!r} appended"
        return
    if canonical(case["expected"]) != canonical(src["expected"]):
        yield "label differs from its source's"
    if form == "no_arguments":
        label = src["expected"]
        if text not in ("", "{}") or label is None or label["arguments"] != {}:
            yield "a no-arguments stream carries none (DS3: empty is {}) for a call labelled {}"
        return
    if end == "cut" and case["shape"] == "vertex":
        done, still = vertex_completed(case["events"])
        if not still:
            yield "a cut Vertex stream stops mid-value: a value still continuing"
        if canonical(done) != canonical(completed_prefix(src["text"])):
            yield "the cut stream's completed values are not its source's (rule 11)"
    elif end == "cut":
        if completed_prefix('"arguments":' + text) != completed_prefix(src["text"]):
            yield "the cut stream's completed values are not its source's (rule 11)"
    else:
        streamed = loads_strict(text) if text else None
        written = loads_strict(sent.text) if sent.text else None
        if canonical(streamed) != canonical(written):
            yield "the streamed arguments are not its source's"


def vertex_completed(events: list[dict[str, Any]]) -> tuple[dict[str, Any], set[str]]:
    """A Vertex stream's values whose last piece said no more follows, and the paths of
    those still continuing (``PartialArg.willContinue``): rule 11 keeps only the first."""
    args = [
        arg
        for event in events
        for cand in event["candidates"]
        for part in cand.get("content", {}).get("parts", [])
        for arg in part.get("functionCall", {}).get("partialArgs", [])
    ]
    going = {a["jsonPath"]: a["willContinue"] for a in args}
    still = {path for path, more in going.items() if more}
    return _from_paths([a for a in args if a["jsonPath"] not in still]), still
