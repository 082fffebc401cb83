"""Rule 10: one call emitted two or three times, each copy needing a repair of its own.

How the corpus builds rule 10 (D10.3): identical valid copies pass by taking the first call,
which every integrator does (control C2), so each copy here carries a different defect that
another rule repairs (rule 3 name noise, rule 9 string arguments, rule 5 lossless coercion,
rule 4 enum spelling). The copies differ as written and agree only once each is normalised
on its own, which is what rule 10 (D10.1) asks of a normaliser.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import Tool, tool_name, tool_schema
from toolcall300.controls import integrator
from toolcall300.generator.envelopes import ENVELOPE_NOTES, call_id, wrap
from toolcall300.generator.rules import (
    Call,
    Ctx,
    Draft,
    choose_tools,
    draft,
    quote,
    render,
    valid_call,
)
from toolcall300.generator.rules.coercion import as_text, coercible
from toolcall300.generator.rules.enums import respell, string_enum
from toolcall300.generator.rules.names import MANGLER_NOISE, mangle
from toolcall300.generator.rules.strings import TIMES, encode

#: The envelopes a JSON array of copies uses (tool_calls entries are the other shape).
ARRAY_ENVELOPES = ("bare", "typed", "input", "function", "parameters")
#: The rule each kind of copy defect rests on, for the case's ``rule`` field.
RULE_OF = {
    "name": "rule 3 / D3.1",
    "string": "rule 9 / D9.1",
    "coerce": "rule 5 / D5.1",
    "enum": "rule 4 / D4.1",
}


def _spoil(
    ctx: Ctx, tool: Tool, call: Call, kind: str, k: int, env: str, names: list[str]
) -> tuple[str, Any, str] | None:
    """One copy of ``call`` with one defect of ``kind``: (name, arguments, what was done)."""
    name, args = call["name"], copy.deepcopy(call["arguments"])
    props: dict[str, Any] = tool_schema(tool).get("properties", {})
    if kind == "name":
        found = mangle(name, names, k)
        if found is None:
            return None
        mangled, index = found
        return mangled, args, f"calls {quote(mangled)}, {MANGLER_NOISE[index]} (rule 3 / D3.1)"
    if kind == "string":
        return (  # D9.2: twice in every envelope, since one decode is what C2 does
            name,
            encode(ctx, args, 2),
            f"carries the arguments as a JSON string encoded {TIMES[2]} (rule 9 / D9.1, D9.2)",
        )
    if kind == "coerce":
        keys = [key for key in args if coercible(props.get(key, {}))]
        if not keys:
            return None
        key = keys[k % len(keys)]
        spelled = as_text(ctx.rng, args[key])
        args[key] = spelled
        return name, args, f"writes {key} as {quote(spelled)} (rule 5 / D5.1)"
    keys = [key for key in args if string_enum(props.get(key, {})) and isinstance(args[key], str)]
    for key in keys:
        noisy = respell(args[key], props[key]["enum"], k, ctx.enum_members(props[key]["enum"]))
        if noisy is not None:
            args[key] = noisy
            return name, args, f"writes {key} as {quote(noisy)} (rule 4 / D4.1)"
    return None


#: D9.4: what stands between the documents a serving layer merged into one arguments string.
DOCUMENT_SEPARATORS = ("", " ", "\n")


def merged_documents(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 10 / D9.4: two copies of the arguments merged into one arguments string, as a
    serving layer merges two calls' fragments; each copy needs its own repair (D10.3)."""
    call = valid_call(ctx, tool)
    tools = choose_tools(ctx, tool)
    env = ("tool_calls", "function", "typed")[(variant // 8) % 3]
    copies: list[tuple[Any, str]] = []
    kinds = ["coerce", "enum", "string"]
    ctx.rng.shuffle(kinds)
    for kind in kinds:
        if len(copies) == 2:
            break
        if kind == "string":  # a document that is itself the arguments' JSON text (rule 9)
            copies.append(
                (encode(ctx, call["arguments"], 1), "is the arguments' JSON text (rule 9 / D9.1)")
            )
            continue
        spoilt = _spoil(ctx, tool, call, kind, variant + len(copies), env, [])
        if spoilt is not None:
            copies.append((spoilt[1], spoilt[2]))
    if len(copies) < 2 or canonical(copies[0][0]) == canonical(copies[1][0]):
        return None
    sep = DOCUMENT_SEPARATORS[(variant // 8) % len(DOCUMENT_SEPARATORS)]
    arguments = sep.join(json.dumps(a, ensure_ascii=False) for a, _ in copies)
    text = render(ctx, wrap(call["name"], arguments, env, call_id(ctx.rng, env)))
    told = "; ".join(f"document {i} {what}" for i, (_, what) in enumerate(copies, 1))
    why = (
        f"The text is {ENVELOPE_NOTES[env]} (E2) whose one arguments string holds two JSON "
        f"documents one after another, as a serving layer writes two calls' fragments merged: "
        f"{told}. Rule 10 reads them as copies (D9.4): each, repaired on its own, is the same "
        "call, so they collapse to it; a client that decodes the string once gets no JSON at "
        "all (D10.3)."
    )
    return draft("multiple_calls", text, tools, call, "rule 10 / D9.4, D10.1, D10.3", why)


def multiple_calls(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 10 / D10.3: two or three copies of one call, each with a different repairable
    defect; on one variant in eight the copies are two documents in one arguments string
    (D9.4)."""
    if variant % 8 == 7:
        return merged_documents(ctx, tool, variant)
    call = valid_call(ctx, tool)
    tools = choose_tools(ctx, tool)
    names = [tool_name(t) for t in tools]
    count = 2 + variant % 2
    as_tool_calls = variant % 2 == 1
    env = "tool_calls" if as_tool_calls else ARRAY_ENVELOPES[(variant // 2) % len(ARRAY_ENVELOPES)]
    kinds = ["name", "string", "coerce", "enum"]
    ctx.rng.shuffle(kinds)
    copies: list[tuple[str, Any, str]] = []
    for kind in kinds * 2:  # a kind may serve twice (two manglers) when others do not apply
        if len(copies) == count:
            break
        spoilt = _spoil(ctx, tool, call, kind, variant + len(copies), env, names)
        if spoilt is None or any(dumps_key(spoilt) == dumps_key(c) for c in copies):
            continue
        one = wrap(spoilt[0], spoilt[1], "function" if as_tool_calls else env, "")
        if integrator(render(ctx, one), tools) is not None:
            continue  # D10.3: every copy must need its repair; another kind may
        copies.append(spoilt)
    if len(copies) < count:
        return None
    if as_tool_calls:
        body: Any = {
            "tool_calls": [
                {
                    "id": call_id(ctx.rng, "tool_calls"),
                    "type": "function",
                    "function": {"name": n, "arguments": a},
                }
                for n, a, _ in copies
            ]
        }
        shape = f"{count} entries of {ENVELOPE_NOTES['tool_calls']} (E2)"
    else:
        body = [wrap(n, a, env, call_id(ctx.rng, env)) for n, a, _ in copies]
        shape = f"a JSON array (E1) of {count} calls, each {ENVELOPE_NOTES[env]} (E2)"
    text = render(ctx, body)
    told = "; ".join(f"copy {i} {what}" for i, (_, _, what) in enumerate(copies, 1))
    why = (
        f"The call to {quote(call['name'])} was emitted as {shape}, and no copy is the call as "
        f"written: {told}. Each copy, repaired on its own under its rule, is the same call, so "
        "rule 10 (D10.1) collapses them to it; taking the first copy as written gets nothing "
        "(D10.3)."
    )
    rules = sorted({RULE_OF[k] for k in kinds if any(RULE_OF[k] in c[2] for c in copies)})
    rule = "; ".join(["rule 10 / D10.1, D10.3", *rules])
    return draft("multiple_calls", text, tools, call, rule, why)


def dumps_key(spoilt: tuple[str, Any, str]) -> str:
    """Two copies are the same copy when their name and arguments are canonically equal."""
    return canonical([spoilt[0], spoilt[1]])
