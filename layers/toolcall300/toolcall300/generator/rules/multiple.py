"""Rule 10: the same call emitted several times."""

from __future__ import annotations

import copy
from typing import Any

from toolcall300.catalog import Tool
from toolcall300.generator.envelopes import call_id, wrap
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    choose_tools,
    draft,
    quote,
    render,
    valid_call,
)


def multiple_calls(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 10: the same call emitted two or three times, as a list or as several tool_calls."""
    call = valid_call(ctx, tool)
    copies = 2 + variant % 2
    if variant % 2:
        body: Any = {
            "tool_calls": [
                {
                    "id": call_id(ctx.rng, "tool_calls"),
                    "type": "function",
                    "function": copy.deepcopy(call),
                }
                for _ in range(copies)
            ]
        }
    else:
        env = ("bare", "typed", "input", "function")[(variant // 2) % 4]
        body = [
            wrap(call["name"], copy.deepcopy(call["arguments"]), env, call_id(ctx.rng, env))
            for _ in range(copies)
        ]
    text = render(ctx, body)
    shape = (
        f"{copies} tool_calls entries (their ids differ, which is not part of a call)"
        if variant % 2
        else f"a JSON array of {copies} {env} blocks"
    )
    why = (
        f"The same call to {quote(call['name'])} was emitted as {shape}, each with identical name and "
        "arguments; every copy canonicalises to the same value, so rule 10 (D10.1) collapses them "
        "to that one call. No single copy is the answer by position: it is the answer because all agree."
    )
    return draft("multiple_calls", text, choose_tools(ctx, tool), call, "rule 10 / D10.1", why)
