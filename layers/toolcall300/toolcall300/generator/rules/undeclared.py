"""Rule 7 / D7.2: undeclared keys added at the top level or one level down."""

from __future__ import annotations

from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    _pick,
    choose_tools,
    draft,
    quote,
    render_call,
    valid_call,
)
from toolcall300.generator.values import pool_list


def property_names(schema: dict[str, Any], depth: int = 0) -> set[str]:
    """Every property name declared at any depth (top level included)."""
    out: set[str] = set()
    for key, sub in schema.get("properties", {}).items():
        out.add(key)
        out |= property_names(sub, depth + 1)
    if isinstance(schema.get("items"), dict):
        out |= property_names(schema["items"], depth + 1)
    return out


def extra_undeclared_arg(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 7 / D7.2: undeclared keys (never any property's name) added at the top or one level down."""
    schema = tool_schema(tool)
    if schema.get("additionalProperties") is not False:
        return None  # with additionalProperties open the extra key would be valid as sent
    declared = property_names(schema)
    keys = [
        k for k in pool_list(ctx.pools, "undeclared_keys") if k not in declared and "." not in k
    ]
    values = pool_list(ctx.pools, "undeclared_values")
    if not keys:
        return None
    props = schema.get("properties", {})
    closed = [
        k
        for k, v in props.items()
        if value_type(v) == "object" and v.get("additionalProperties") is False
    ]
    # every third case puts the extra key inside a closed nested object (D7.2: every level)
    inside = variant % 3 == 2
    if inside and not closed:
        return None
    parent = closed[variant % len(closed)] if inside else None
    call = valid_call(ctx, tool, force=(parent,) if parent else ())
    if parent and not call["arguments"][parent]:
        return (
            None  # an object holding only the undeclared key would be left empty: avoid that label
        )
    count = 1 if parent else 1 + variant % 2
    extra = {k: _pick(ctx.rng, values) for k in ctx.rng.sample(keys, min(len(keys), count))}
    target = dict(call["arguments"][parent]) if parent else dict(call["arguments"])
    items = list(target.items())
    for key, value in extra.items():
        items.insert(ctx.rng.randint(0, len(items)), (key, value))
    sent = dict(call["arguments"])
    if parent:
        sent[parent] = dict(items)
    else:
        sent = dict(items)
    text = render_call(ctx, tool_name(tool), sent, variant)
    where = f"inside {quote(parent)}" if parent else "at the top level"
    why = (
        f"{', '.join(quote(k) for k in extra)} {'is' if len(extra) == 1 else 'are'} written {where} "
        f"but not declared there, and no property of {quote(tool_name(tool))} at any depth has that "
        f"name, so rule 7 (D7.2: at every level) drops {'it' if len(extra) == 1 else 'them'}; every "
        "declared property stays as written."
    )
    return draft("extra_undeclared_arg", text, choose_tools(ctx, tool), call, "rule 7 / D7.2", why)
