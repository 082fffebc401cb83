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


def offers_required_default(catalog: list[Tool]) -> bool:
    """Whether any tool has a required property with a default (else D6.4 applies)."""
    return any(p.required and p.has_default for tool in catalog for p in props_of(tool))


def missing_required_refused(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D6.4: in a catalog where no required property has a default, ``missing_required_arg``
    leaves out a required property with no default; rule 6 allows no other source: refuse."""
    cands = [p for p in props_of(tool) if p.required and not p.has_default]
    if not cands:
        return None
    prop: Prop = cands[variant % len(cands)]
    call = valid_call(ctx, tool)
    sent = {k: v for k, v in call["arguments"].items() if k != prop.name}
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"Required property {quote(prop.name)} was not written and its schema declares no "
        "default; rule 6 fills a missing required property from its own default and from "
        "nowhere else, so no correct call exists (D6.4: this catalog declares no required "
        "default, so its missing_required_arg cases expect a refusal). No correct call "
        "exists, so the only passing answer is a refusal (rule 2)."
    )
    return draft(
        "missing_required_arg", text, [*choose_tools(ctx, tool)], None, "rule 6 / D6.4", why
    )
