"""Rule 9: arguments delivered as a JSON string that only rule 9 turns back into an object.

How the corpus builds rule 9 (D9.2): the OpenAI family's own format carries arguments as a
JSON string (E3), which every client decodes once, so there the arguments are encoded twice
(or three times); the other envelopes carry an object, so there one encoding is already a
defect. Either way a client that decodes only what its format promises is left with a
string, and no case of this category passes the integrator control (C2).
"""

from __future__ import annotations

import json
from typing import Any

from toolcall300.catalog import Tool, tool_name
from toolcall300.generator.envelopes import ENVELOPE_NOTES, STRING_FORMAT, call_id, wrap
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


def string_times(envelope: str, variant: int) -> int:
    """D9.2: one more encoding than the envelope's own format carries, every third case one more."""
    base = 2 if envelope in STRING_FORMAT else 1
    return base + (1 if variant % 3 == 2 else 0)


def args_as_string(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 9 / D9.2: arguments as a JSON string encoded more than the envelope's format says."""
    call = valid_call(ctx, tool)
    env = ROTATION[variant % len(ROTATION)]
    times = string_times(env, variant)
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
        f"decodes it {'repeatedly ' if times > 1 else ''}until it is an object ({keys}), which is "
        "already the valid call as written, so nothing else changes. A client that decodes only "
        "what its envelope's format promises is left with a string (D9.2)."
    )
    return draft("args_as_string", text, choose_tools(ctx, tool), call, "rule 9 / D9.1, D9.2", why)
