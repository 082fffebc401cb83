"""The unrecoverable rules: texts with no correct call in them, where only a refusal passes.

A mix, rotating with the case index: a required property missing with no default, an enum
value matching no member or two, a lossy coercion (on an optional property too, D5.5), a name
matching two declared tools, calls that differ (every other turn a flattened key differing
from the nested object also written, D7.6), several values for a scalar, a cut inside the
tool name (every other turn in a second call begun after a complete one, D10.2), prose with
no call, a required property written under a noisy name (D7.7), an array or object written
as text that reads as JSON but is none (D8.4), empty arguments text for a tool with required
properties (D9.3), and two different calls' arguments merged into one string (D9.4).
Each builds a correct call first and breaks it in one named way. This module deliberately
builds nothing that a normaliser could repair.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.envelopes import STYLES, call_id, dumps, wrap
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    Maker,
    call_with_path,
    choose_tools,
    dotted,
    draft,
    get_in,
    leaf_paths,
    quote,
    render,
    render_call,
    set_in,
    valid_call,
)
from toolcall300.generator.rules.arrays import plain_scalar
from toolcall300.generator.rules.coercion import coercible
from toolcall300.generator.rules.enums import ENUM_SPELLINGS, string_enum
from toolcall300.generator.rules.names import MANGLERS
from toolcall300.generator.rules.nesting import flatten_sites
from toolcall300.generator.values import build_value, pool_list, props_of
from toolcall300.rules import is_lossless, tool_name_matches

UNRECOVERABLE_KINDS = (
    "missing_required",
    "enum_no_match",
    "lossy_coercion",
    "ambiguous_name",
    "conflicting_calls",
    "multi_element_scalar",
    "cut_in_name",
    "prose",
    "enum_two_members",
    "noisy_property_name",
    "container_text",
    "empty_text",
    "documents_differ",
)


def _refuse(tools: list[Tool], text: str, rule: str, why: str) -> Draft:
    return draft(
        "unrecoverable",
        text,
        tools,
        None,
        rule,
        why + " No correct call exists, so the only passing answer is a refusal (rule 2).",
    )


def _u_missing_required(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = [p for p in props_of(tool) if p.required and not p.has_default]
    if not cands:
        return None
    prop = cands[variant % len(cands)]
    call = valid_call(ctx, tool)
    sent = {k: v for k, v in call["arguments"].items() if k != prop.name}
    why = f"Required property {quote(prop.name)} is missing and its schema declares no default; rule 6 allows no other source."
    return _refuse(
        choose_tools(ctx, tool), render_call(ctx, tool_name(tool), sent, variant), "rule 6", why
    )


def _misspellings(member: str) -> Iterator[str]:
    """Close-looking strings that are not the member (rule 4: never the closest-looking one)."""
    if len(member) > 3:
        yield member[: len(member) // 2 + 1]
        yield member[0] + member[2] + member[1] + member[3:]
    yield member + "s"
    yield member + "_" + "x"


def _u_enum_no_match(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = leaf_paths(tool_schema(tool), string_enum)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    member = get_in(call["arguments"], path)
    if not isinstance(member, str):
        return None
    index = ctx.enum_members(sub["enum"])
    wrong = next((w for w in _misspellings(member) if not index.matches(w)), None)
    if wrong is None:
        return None
    set_in(call["arguments"], path, wrong)
    why = f"{dotted(path)} is {quote(wrong)}, which matches no member of {quote(sub['enum'])} even after rule-4 normalisation; the closest-looking member ({quote(member)}) is never guessed."
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 4 / D4.1",
        why,
    )


def _u_enum_two(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    for path, sub in leaf_paths(tool_schema(tool), string_enum):
        members = ctx.enum_members(sub["enum"])  # one index per enum: linear in its size
        for member in sub["enum"]:
            if not isinstance(member, str):
                continue
            for spell in ENUM_SPELLINGS:
                spelled = spell(member)
                hits = members.matches(spelled)
                if not members.has(spelled) and len(hits) >= 2:
                    call = call_with_path(ctx, tool, path, sub)
                    set_in(call["arguments"], path, spelled)
                    why = f"{dotted(path)} is {quote(spelled)}, which after rule-4 normalisation equals two members, {quote(hits)}; D4.1 refuses an ambiguous value like one matching none."
                    return _refuse(
                        choose_tools(ctx, tool),
                        render_call(ctx, tool_name(tool), call["arguments"], variant),
                        "rule 4 / D4.1",
                        why,
                    )
    return None


_LOSSY: dict[str, tuple[Any, ...]] = {
    "integer": ("4.5", "03", "+3", " 3", "1e3", "three", "3.0"),
    "number": ("12,5", "twelve", "12.5 EUR", "1/2"),
    "boolean": ("yes", "1", "on", "no", 1, 0, "Y"),
}


def _u_lossy(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = leaf_paths(tool_schema(tool), coercible)
    if not cands:
        return None
    # every other turn of the kind writes on an optional property where the tool has one, so
    # D5.5 (refused, never dropped) has its cases whatever the catalog's order
    required = tool_schema(tool).get("required", [])
    optional = [c for c in cands if c[0][0] not in required]
    if optional and variant // len(UNRECOVERABLE_KINDS) % 2:
        cands = optional
    path, sub = cands[variant % len(cands)]
    kind = str(value_type(sub))
    spelled = _LOSSY[kind][variant % len(_LOSSY[kind])]
    if is_lossless(spelled, kind):
        return None
    call = call_with_path(ctx, tool, path, sub)
    set_in(call["arguments"], path, spelled)
    why = f"{dotted(path)} is declared {kind} but was written {quote(spelled)}; that conversion would be a guess, not lossless and reversible (rule 5 / D5.1)."
    rule = "rule 5 / D5.1"
    if path[0] not in tool_schema(tool).get("required", []):
        why += (
            f" {quote(path[0])} is optional, but an invalid value is refused, never dropped (D5.5)."
        )
        rule = "rule 5 / D5.1, D5.5"
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        rule,
        why,
    )


def _noisy(name: str) -> str | None:
    """``name`` as rule 3 would call noise in a tool name: another case, or - for _ (D7.7)."""
    if "_" in name:
        return name.replace("_", "-")
    swapped = name[:1].swapcase() + name[1:]
    return swapped if swapped != name else None


def _u_noisy_property_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    declared = set(tool_schema(tool).get("properties", {}))
    nested = {k for p in props_of(tool) for k in p.schema.get("properties", {})}
    cands = [
        (p, noisy)
        for p in props_of(tool)
        if p.required and not p.has_default
        for noisy in [_noisy(p.name)]
        if noisy and noisy not in declared and noisy not in nested and "." not in noisy
    ]
    if not cands:
        return None
    prop, noisy = cands[variant % len(cands)]
    call = valid_call(ctx, tool)
    sent = {(noisy if k == prop.name else k): v for k, v in call["arguments"].items()}
    why = f"Required property {quote(prop.name)} was written as {quote(noisy)}: property names are never normalised (D7.7), so {quote(noisy)} is undeclared and dropped (D7.2), which leaves {quote(prop.name)} missing with no default (rule 6)."
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), sent, variant),
        "rule 7 / D7.7; rule 6",
        why,
    )


def _u_ambiguous_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    key = ctx.index.key(tool)
    twins = ctx.index.twins(tool)
    if not twins:
        return None
    tools = choose_tools(ctx, tool, must=(twins[0],))
    names = [tool_name(t) for t in tools]
    for k in range(len(MANGLERS)):
        mangled = MANGLERS[(variant + k) % len(MANGLERS)](key)
        if mangled not in names and len(tool_name_matches(mangled, names)) >= 2:
            break
    else:
        return None
    call = valid_call(ctx, tool)
    why = f"The text calls {quote(mangled)}, which normalises (rule 3) to {quote(key)}: both {quote(tool_name(tool))} and {quote(tool_name(twins[0]))} are declared and match, so the name resolves to no single tool."
    return _refuse(
        tools, render_call(ctx, mangled, call["arguments"], variant), "rule 3 / D3.1", why
    )


def _u_conflicting(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    if variant // len(UNRECOVERABLE_KINDS) % 2:
        return _flattened_conflict(ctx, tool, variant)
    first = valid_call(ctx, tool, fill=0.7)
    for _ in range(10):
        second = valid_call(ctx, tool, fill=0.7)
        if json.dumps(second, sort_keys=True) != json.dumps(first, sort_keys=True):
            break
    else:
        return None
    body = {
        "tool_calls": [
            {"id": call_id(ctx.rng, "tool_calls"), "type": "function", "function": c}
            for c in (first, second)
        ]
    }
    diff = sorted(
        k
        for k in set(first["arguments"]) | set(second["arguments"])
        if first["arguments"].get(k) != second["arguments"].get(k)
    )
    why = f"Two calls to {quote(tool_name(tool))} differ in {', '.join(quote(k) for k in diff)}; rule 10 (D10.1) collapses copies only when they are identical, and picking one would be a guess."
    return _refuse(choose_tools(ctx, tool), render(ctx, body), "rule 10 / D10.1", why)


def _flattened_conflict(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D7.6: a nested object written whole, and one of its keys also flattened beside it
    with another value. Every other turn of the conflicting-calls kind (two writes of one
    value that differ), so the mix keeps its kinds and counts; a tool with no nested object
    to flatten (D7.1, D7.3, D7.5) makes none, and the turn goes to the next tool."""
    top, inner = flatten_sites(tool)
    sites = top + inner
    if not sites:
        return None
    where, parent = sites[variant % len(sites)]
    call = valid_call(ctx, tool, force=(where or (parent,))[:1], fill=0.7)
    container = get_in(call["arguments"], where)
    written = container.get(parent)
    if not isinstance(written, dict) or not written:
        return None
    schema = tool_schema(tool) if not where else tool_schema(tool)["properties"][where[0]]
    members = schema["properties"][parent]["properties"]
    key = sorted(written)[variant % len(written)]
    others = (
        build_value(
            ctx.rng, members[key], ctx.pools, tool_name(tool), ".".join((*where, parent, key))
        )
        for _ in range(6)
    )
    other = next((v for v in others if v != written[key]), None)
    if other is None:
        return None
    dotted = f"{parent}.{key}"  # unless the container declares that name itself (rule 7)
    spelled = dotted if variant % 2 and dotted not in schema["properties"] else key
    container[spelled] = other
    home = ".".join((*where, parent))
    why = (
        f"{quote(home)} was written with {quote(key)}: {quote(written[key])}, and "
        f"{quote(spelled)} beside it as {quote(other)}. The flattened key belongs only to "
        f"{quote(parent)} (D7.1, D7.3{', D7.5' if where else ''}), so it re-nests into the "
        "written object, where the same key holds another value: a conflict, which refuses the "
        "call (D7.6); keeping either value would be a guess."
    )
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 7 / D7.6",
        why,
    )


def _u_multi_element(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = [p for p in props_of(tool) if plain_scalar(p.schema)]
    if not cands:
        return None
    prop = cands[variant % len(cands)]
    call = valid_call(ctx, tool, force=(prop.name,))
    first = call["arguments"][prop.name]
    others = (
        build_value(ctx.rng, prop.schema, ctx.pools, tool_name(tool), prop.name) for _ in range(6)
    )
    other = next((v for v in others if v != first), None)
    if other is None:
        return None
    call["arguments"][prop.name] = [first, other]
    why = f"{quote(prop.name)} is a {prop.type} but two values were written, {quote([first, other])}; rule 8 (D8.1) repairs only the one-element direction, and choosing one would be a guess."
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 8 / D8.1",
        why,
    )


def _u_cut_in_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    name = tool_name(tool)
    if len(name) < 3:
        return None
    if variant // len(UNRECOVERABLE_KINDS) % 2:
        return _second_call_cut(ctx, tool, variant)
    call = valid_call(ctx, tool)
    env = ("bare", "function", "typed", "tool_calls")[variant % 4]
    text = dumps(wrap(name, call["arguments"], env, call_id(ctx.rng, env)), STYLES[variant % 2])
    at = text.index('"name"')
    start = text.index('"', at + 6) + 1
    cut = start + ctx.rng.randint(1, len(name) - 1)
    why = f"The stream stopped inside the tool name, after {quote(text[start:cut])} of what may have been any tool (D11.5): no call was written."
    return _refuse(choose_tools(ctx, tool), text[:cut], "rule 11 / D11.5", why)


def _second_call_cut(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D10.2: an array of calls holding one complete call, then a second one begun and cut
    inside its tool name. Every other turn of the cut-in-name kind, so the mix keeps its
    kinds and counts; the first call alone is what D10.4 would have read had nothing begun."""
    name, env, style = tool_name(tool), ("bare", "input")[variant % 2], STYLES[variant % 2]
    first, second = (
        dumps(wrap(name, valid_call(ctx, tool)["arguments"], env, call_id(ctx.rng, env)), style)
        for _ in range(2)
    )
    start = second.index('"', second.index('"name"') + 6) + 1
    cut = start + ctx.rng.randint(1, len(name) - 1)
    text = "[" + first + style.item_sep + second[:cut]
    why = (
        f"The array of calls holds one complete call to {quote(name)}, then a second call "
        f"begun and cut inside its tool name, after {quote(second[start:cut])} (D11.5). A "
        "text holding several calls of which one is cut is refused as a whole (D10.2): the "
        "first call is not the answer, since what the model was writing next is unknown."
    )
    return _refuse(choose_tools(ctx, tool), text, "rule 10 / D10.2", why)


def _u_prose(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    prose = pool_list(ctx.pools, "prose")
    if not prose:
        return None
    text = prose[variant % len(prose)]
    why = "The model answered in prose and emitted no call at all; inventing one (even with empty arguments) is the failure rule 2 measures."
    return _refuse(choose_tools(ctx, tool), text, "rule 2 / D2.1", why)


def _u_container_text(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D8.4: an array or object written as text that reads as a JSON container but is no JSON
    of the declared type: cut short, or an array of strings written without its quotes."""
    cands = [
        (p, sub)
        for p, sub in leaf_paths(tool_schema(tool), lambda x: value_type(x) in ("array", "object"))
        if len(p) == 1
    ]
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    value = get_in(call["arguments"], path)
    if not value:
        return None
    strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if strings and variant // len(UNRECOVERABLE_KINDS) % 2:
        spelled = "[" + ", ".join(value) + "]"
        how = "its strings written without their quotes"
    else:
        spelled = json.dumps(value, ensure_ascii=False)[:-1]
        how = "its closing bracket missing"
    set_in(call["arguments"], path, spelled)
    why = (
        f"{dotted(path)} is declared {value_type(sub)} but was written as the text "
        f"{quote(spelled)}, {how}: it reads as a JSON container (D5.6) yet is no JSON of the "
        "declared type, so nothing decodes it losslessly, and rule 8 never wraps such a string "
        "into a one-element array (D8.4): that call would be accepted by the schema, plausible "
        "and wrong."
    )
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 5 / D5.6, D8.4",
        why,
    )


def _u_empty_text(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D9.3: empty arguments text for a tool with required properties."""
    required = tool_schema(tool).get("required", [])
    if not required:
        return None
    env = ("tool_calls", "typed", "function")[variant % 3]
    blank = ("", " ")[variant // len(UNRECOVERABLE_KINDS) % 2]
    text = render(ctx, wrap(tool_name(tool), blank, env, call_id(ctx.rng, env)))
    why = (
        f"The arguments of {quote(tool_name(tool))} are the empty text {quote(blank)}, what a "
        "stream that lost its arguments also delivers; the tool declares required properties "
        f"({', '.join(quote(k) for k in required)}), none written (rule 6), and `{{}}` is a call "
        "only for a tool that declares no property (D9.3)."
    )
    return _refuse(choose_tools(ctx, tool), text, "rule 9 / D9.3", why)


def _u_documents_differ(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D9.4: two different calls' arguments merged into one arguments string."""
    first = valid_call(ctx, tool, fill=0.7)
    for _ in range(10):
        second = valid_call(ctx, tool, fill=0.7)
        if canonical(second) != canonical(first):
            break
    else:
        return None
    env = ("tool_calls", "function", "typed")[variant % 3]
    arguments = json.dumps(first["arguments"]) + json.dumps(second["arguments"])
    text = render(ctx, wrap(tool_name(tool), arguments, env, call_id(ctx.rng, env)))
    diff = sorted(
        k
        for k in set(first["arguments"]) | set(second["arguments"])
        if canonical(first["arguments"].get(k)) != canonical(second["arguments"].get(k))
    )
    why = (
        f"The one arguments string of {quote(tool_name(tool))} holds two JSON documents, as a "
        "serving layer writes two calls' fragments merged; they differ in "
        f"{', '.join(quote(k) for k in diff)}, and two different calls cannot be one answer "
        "(D9.4, read as rule 10 / D10.1 reads several calls)."
    )
    return _refuse(choose_tools(ctx, tool), text, "rule 10 / D9.4, D10.1", why)


_UNRECOVERABLE: dict[str, Maker] = {
    "missing_required": _u_missing_required,
    "enum_no_match": _u_enum_no_match,
    "lossy_coercion": _u_lossy,
    "ambiguous_name": _u_ambiguous_name,
    "conflicting_calls": _u_conflicting,
    "multi_element_scalar": _u_multi_element,
    "cut_in_name": _u_cut_in_name,
    "prose": _u_prose,
    "enum_two_members": _u_enum_two,
    "noisy_property_name": _u_noisy_property_name,
    "container_text": _u_container_text,
    "empty_text": _u_empty_text,
    "documents_differ": _u_documents_differ,
}


def unrecoverable(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 2: a mix of texts with no correct call in them; the kind rotates with the index."""
    return _UNRECOVERABLE[UNRECOVERABLE_KINDS[variant % len(UNRECOVERABLE_KINDS)]](
        ctx, tool, variant
    )
