"""Rule 9: arguments delivered as a JSON string that only rule 9 turns back into an object.

How the corpus builds rule 9 (D9.2): integrators decode a string of arguments once, whatever
the envelope (control C2), so every case encodes the arguments twice (or three times) in
every envelope. A client that decodes once is left with a string, so no case of this
category passes C2; only decoding repeatedly, as rule 9 says, gets the call.
"""

from __future__ import annotations

import json
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema
from toolcall300.generator.envelopes import ENVELOPE_NOTES, STRING_FORMAT, call_id, wrap
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    _pick,
    catalog_offers,
    choose_tools,
    draft,
    quote,
    render,
    valid_call,
)
from toolcall300.rules import takes_nothing

#: Every envelope takes part, so the category measures rule 9 in each of them.
ROTATION = ("tool_calls", "bare", "function", "input", "typed", "parameters")
TIMES = {1: "once", 2: "twice", 3: "three times"}


def encode(ctx: Ctx, value: Any, times: int) -> Any:
    """``value`` as a JSON string ``times`` over, in one of two spacings per level."""
    for _ in range(times):
        value = json.dumps(
            value, ensure_ascii=False, separators=_pick(ctx.rng, ((",", ":"), (", ", ": ")))
        )
    return value


def string_times(variant: int) -> int:
    """D9.2: more encodings than one decode undoes (two), every third case three."""
    return 2 + (1 if variant % 3 == 2 else 0)


#: D9.3's empty arguments texts, as serving layers send them.
EMPTY_TEXTS = ("", " ", "\n")


def _takes_nothing(tool: Tool) -> bool:
    return takes_nothing(tool_schema(tool))


def empty_text(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 9 / D9.3: empty arguments text, in a complete call to a tool that declares no
    property: the call is ``{}``, the only one that tool can receive."""
    if not takes_nothing(tool_schema(tool)):
        return None
    turn = variant // 12
    env = ("tool_calls", "typed", "bare", "function")[turn % 4]
    blank = EMPTY_TEXTS[turn % len(EMPTY_TEXTS)]
    text = render(ctx, wrap(tool_name(tool), blank, env, call_id(ctx.rng, env)))
    why = (
        f"The text is {ENVELOPE_NOTES[env]} (E2) whose arguments are the empty text "
        f"{quote(blank)}, in a complete call: {quote(tool_name(tool))} declares no property, so "
        "`{}` is the only call it can receive and nothing is invented (rule 9 / D9.3). A "
        "client that decodes the string once gets no JSON at all (D9.2)."
    )
    call = {"name": tool_name(tool), "arguments": {}}
    return draft("args_as_string", text, choose_tools(ctx, tool), call, "rule 9 / D9.3", why)


def args_as_string(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 9 / D9.2: arguments as a JSON string encoded more than one decode undoes; on one
    variant in twelve, empty arguments text for a tool that declares no property (D9.3)."""
    if variant % 12 == 11 and catalog_offers(ctx.catalog, "takes nothing", _takes_nothing):
        return empty_text(ctx, tool, variant)
    call = valid_call(ctx, tool)
    env = ROTATION[variant % len(ROTATION)]
    times = string_times(variant)
    encoded = encode(ctx, call["arguments"], times)
    text = render(ctx, wrap(tool_name(tool), encoded, env, call_id(ctx.rng, env)))
    keys = ", ".join(quote(k) for k in call["arguments"]) or "no properties"
    native = (
        "whose own format carries the arguments as a JSON string encoded once (E3)"
        if env in STRING_FORMAT
        else "whose own format carries the arguments as an object (E3)"
    )
    why = (
        f"The text is {ENVELOPE_NOTES[env]} (E2), {native}; the arguments of "
        f"{quote(tool_name(tool))} arrive as a JSON string encoded {TIMES[times]}. Rule 9 (D9.1) "
        f"decodes it repeatedly until it is an object ({keys}), which is already the valid call "
        "as written, so nothing else changes. A client that decodes once is left with a "
        "string (D9.2)."
    )
    return draft("args_as_string", text, choose_tools(ctx, tool), call, "rule 9 / D9.1, D9.2", why)
