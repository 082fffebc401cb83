"""Rule 9: arguments delivered as a JSON string."""

from __future__ import annotations

import json
from typing import Any

from toolcall300.catalog import Tool, tool_name
from toolcall300.generator.envelopes import call_id, wrap
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    _pick,
    choose_tools,
    draft,
    quote,
    render,
    valid_call,
)


def args_as_string(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 9: arguments delivered as a JSON string, encoded twice in every third case."""
    call = valid_call(ctx, tool)
    times = 2 if variant % 3 == 2 else 1
    encoded: Any = call["arguments"]
    for _ in range(times):
        encoded = json.dumps(
            encoded, ensure_ascii=False, separators=_pick(ctx.rng, ((",", ":"), (", ", ": ")))
        )
    env = ("tool_calls", "bare", "function", "typed")[variant % 4]
    text = render(ctx, wrap(tool_name(tool), encoded, env, call_id(ctx.rng, env)))
    keys = ", ".join(quote(k) for k in call["arguments"]) or "no properties"
    why = (
        f"The {env} envelope carries the arguments of {quote(tool_name(tool))} as a JSON string encoded "
        f"{'twice' if times == 2 else 'once'}; rule 9 (D9.1) decodes it "
        f"{'repeatedly ' if times == 2 else ''}until it is an object ({keys}), which is already the "
        "valid call as written, so nothing else changes."
    )
    return draft("args_as_string", text, choose_tools(ctx, tool), call, "rule 9 / D9.1", why)
