"""Rule 8 / D8.1: a lone scalar for an array, or a one-element array for a scalar or (D8.3)
an object."""

from __future__ import annotations

from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.rules import (
    SCALARS,
    Ctx,
    Draft,
    catalog_offers,
    choose_tools,
    draft,
    quote,
    render_call,
    valid_call,
)
from toolcall300.generator.values import props_of
from toolcall300.schema import is_valid


def _one_element_array(sub: dict[str, Any]) -> bool:
    items = sub.get("items")
    return (
        value_type(sub) == "array"
        and isinstance(items, dict)
        and (value_type(items) in SCALARS or "enum" in items)
        and sub.get("minItems", 0) <= 1
        and sub.get("maxItems", 1) >= 1
    )


def _declares_an_object(tool: Tool) -> bool:
    return any(
        value_type(p.schema) == "object" and "null" not in p.schema.get("type", ())
        for p in props_of(tool)
    )


def plain_scalar(sub: dict[str, Any]) -> bool:
    return value_type(sub) in SCALARS and "null" not in sub.get("type", ())


def array_vs_scalar(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 8 / D8.1: a lone scalar for a declared array, or a one-element array for a scalar."""
    props = props_of(tool)
    to_array = variant % 2 == 0
    # D8.3: every third unwrapping case wraps an object, where the catalog declares one.
    objects = [
        p
        for p in props
        if value_type(p.schema) == "object" and "null" not in p.schema.get("type", ())
    ]
    if not to_array and (variant // 2) % 3 == 2 and objects:
        cands = objects
    elif (
        not to_array
        and (variant // 2) % 3 == 2
        and catalog_offers(ctx.catalog, "object property", _declares_an_object)
    ):
        return None  # D8.3's turn: another tool of the catalog writes it, not a scalar here
    else:
        cands = [
            p
            for p in props
            if (_one_element_array(p.schema) if to_array else plain_scalar(p.schema))
        ]
    if not cands:
        return None
    prop = cands[(variant // 2) % len(cands)]
    call = valid_call(ctx, tool, force=(prop.name,))
    value = call["arguments"][prop.name]
    if to_array:
        call["arguments"][prop.name] = value = value[:1]
        sent_value: Any = value[0]
        how = f"the scalar {quote(sent_value)} where an array is declared; the expected call wraps it as {quote(value)}"
    else:
        sent_value = [value]
        how = f"the one-element array {quote(sent_value)} where a {prop.type} is declared; the expected call unwraps it to {quote(value)}"
        if prop.type == "object":
            how += " (D8.3: objects unwrap as scalars do)"
    if not is_valid(call["arguments"], tool_schema(tool)):
        return None
    sent = dict(call["arguments"])
    sent[prop.name] = sent_value
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"{quote(prop.name)} was written as {how} (rule 8 / D8.1: the one-element direction only)."
    )
    rule = "rule 8 / D8.1, D8.3" if prop.type == "object" and not to_array else "rule 8 / D8.1"
    return draft("array_vs_scalar", text, choose_tools(ctx, tool), call, rule, why)
