"""Rule 7 / D7.1: a nested object's keys written at the top level."""

from __future__ import annotations

from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    choose_tools,
    draft,
    quote,
    render_call,
    valid_call,
)


def _flattenable(tool: Tool) -> list[str]:
    """Nested objects whose keys belong to them alone (D7.3), under a closed top level."""
    schema = tool_schema(tool)
    props = schema.get("properties", {})
    nested = {
        k: list(v.get("properties", {})) for k, v in props.items() if value_type(v) == "object"
    }
    owners: dict[str, int] = {}
    for keys in nested.values():
        for key in keys:
            owners[key] = owners.get(key, 0) + 1
    closed = schema.get("additionalProperties") is False
    return [
        k
        for k, keys in nested.items()
        if keys
        and all(owners[x] == 1 and x not in props for x in keys)
        and (closed or k in schema.get("required", []))
    ]


def nested_flattened(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 7 / D7.1: a nested object's keys written at the top level (bare or dotted)."""
    cands = _flattenable(tool)
    if not cands:
        return None
    parent = cands[variant % len(cands)]
    call = valid_call(ctx, tool, force=(parent,), fill=0.9)
    inner = call["arguments"][parent]
    if not inner:
        return None
    # a dotted key that a top-level property already declares ("a.b" beside a nested "a") is
    # that property, not a flattened one (rule 7: no top-level owner): write the bare keys
    props = tool_schema(tool).get("properties", {})
    dotted = variant % 3 == 1 and not any(f"{parent}.{k}" in props for k in inner)
    sent: dict[str, Any] = {}
    for key, value in call["arguments"].items():
        if key == parent:
            sent.update({(f"{parent}.{k}" if dotted else k): v for k, v in inner.items()})
        else:
            sent[key] = value
    text = render_call(ctx, tool_name(tool), sent, variant)
    flat = ", ".join(quote(f"{parent}.{k}" if dotted else k) for k in inner)
    why = (
        f"The object {quote(parent)} was flattened into {flat}. Each key belongs to exactly one declared "
        f"nested property ({quote(parent)}) and to no top-level one, so rule 7 (D7.1, D7.3) re-nests "
        f"them under {quote(parent)}; nothing else changes."
    )
    return draft("nested_flattened", text, choose_tools(ctx, tool), call, "rule 7 / D7.1", why)
