"""Rule 6: a required property with a schema default left out."""

from __future__ import annotations

import copy

from toolcall300.catalog import Tool, tool_name
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    choose_tools,
    draft,
    quote,
    render_call,
    valid_call,
)
from toolcall300.generator.values import Prop, props_of


def missing_required_arg(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 6: a required property with a schema default is left out; the default fills it."""
    cands = [p for p in props_of(tool) if p.required and p.has_default]
    if not cands:
        return None
    prop: Prop = cands[variant % len(cands)]
    call = valid_call(ctx, tool)
    call["arguments"][prop.name] = copy.deepcopy(prop.schema["default"])
    sent = {k: v for k, v in call["arguments"].items() if k != prop.name}
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"Required property {quote(prop.name)} was not written. Its schema declares default "
        f"{quote(prop.schema['default'])}, so rule 6 fills it from there and from nowhere else; "
        "optional properties with defaults that were not written stay out (D6.1)."
    )
    return draft(
        "missing_required_arg", text, [*choose_tools(ctx, tool)], call, "rule 6 / D6.1", why
    )
