"""Rule 5: numbers and booleans written as strings that convert without loss."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    _pick,
    call_with_path,
    choose_tools,
    dotted,
    draft,
    get_in,
    leaf_paths,
    quote,
    render_call,
    set_in,
)
from toolcall300.schema import is_valid


def coercible(sub: dict[str, Any]) -> bool:
    return (
        "enum" not in sub
        and value_type(sub) in ("integer", "number", "boolean")
        and "null" not in sub.get("type", ())
    )


def as_text(rng: random.Random, value: Any) -> str:
    """The lossless string spelling of a value (D5.1): never "3.0" for an integer (D5.2)."""
    if isinstance(value, bool):
        word = "true" if value else "false"
        return str(_pick(rng, (word, word.capitalize(), word.upper())))
    return json.dumps(value)


def type_coercion(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 5: one or two numbers or booleans written as strings that convert without loss."""
    cands = leaf_paths(tool_schema(tool), coercible)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    if not is_valid(call["arguments"], tool_schema(tool)):
        return None
    # every other case also spells a second, top-level property, if the call wrote one
    second = [c for c in cands if c[0] != path and len(c[0]) == 1 and c[0][0] in call["arguments"]]
    targets = [(path, sub)] + (second[:1] if variant % 2 else [])
    sent = copy.deepcopy(call["arguments"])
    changed = []
    for where, schema in targets:
        value = get_in(call["arguments"], where)
        spelled = as_text(ctx.rng, value)
        set_in(sent, where, spelled)
        changed.append(
            f"{dotted(where)} = {quote(spelled)} -> {quote(value)} ({value_type(schema)})"
        )
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"Written as strings: {'; '.join(changed)}. Each is in the lossless syntax of its declared type "
        "(rule 5 / D5.1), so it converts and converts back unchanged; nothing else differs."
    )
    return draft("type_coercion", text, choose_tools(ctx, tool), call, "rule 5 / D5.1", why)
