"""Rules 2 and 3: a call to a name no declared tool matches, whose only answer is a refusal."""

from __future__ import annotations

from toolcall300.catalog import Tool, tool_name
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
from toolcall300.rules import normalise_tool_name, tool_name_matches


def _squash(name: str) -> str:
    return "".join(ch for ch in normalise_tool_name(name) if ch != "_")


def hallucination_note(name: str, declared: list[str]) -> str:
    """Why a hallucinated name matches nothing, naming the declared tool it resembles if any."""
    squashed = [d for d in declared if _squash(d) == _squash(name)]
    if squashed:
        return (
            f"it differs from the declared {quote(squashed[0])} only by separators it dropped; "
            "separators are interchangeable, not removable (D3.2)"
        )
    key = normalise_tool_name(name)
    near = [d for d in declared if normalise_tool_name(d) in key or key in normalise_tool_name(d)]
    if near:
        return (
            f"it contains or is contained in the declared {quote(near[0])}, but rule 3 matches "
            "whole normalised names only, never the closest one"
        )
    return "no declared tool has that name in any spelling"


def hallucinated_tool(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rules 2 and 3: a call to a name no declared tool matches; the only answer is a refusal."""
    rng = ctx.rng
    pool = pool_list(ctx.pools, "hallucinated_tools")
    # every third case calls a real catalog tool this case does not declare
    absent = variant % 3 == 2
    name = tool_name(tool) if absent or not pool else _pick(rng, pool)
    key = normalise_tool_name(name)
    others = [t for t in ctx.catalog if ctx.index.key(t) != key]
    anchor = _pick(rng, others) if absent and others else tool
    # a declared look-alike ("get_weather" for "getweather") makes the refusal a real test
    squashed = key.replace("_", "")
    lookalike = next(
        (
            t
            for t in others
            if (k := ctx.index.key(t)).replace("_", "") == squashed or k in key or key in k
        ),
        None,
    )
    tools = choose_tools(ctx, anchor, must=(lookalike,) if lookalike else (), avoid=(key,))
    if tool_name_matches(name, [tool_name(t) for t in tools]) or name in [
        tool_name(t) for t in tools
    ]:
        return None
    call = valid_call(ctx, tool)
    text = render_call(ctx, name, call["arguments"], variant)
    story = (
        f"{quote(name)} is a tool of the wider catalog that this case does not declare"
        if absent and name == tool_name(tool)
        else f"{quote(name)} was never declared"
    )
    declared = [tool_name(t) for t in tools]
    why = (
        f"{story}. After rule-3 normalisation ({quote(key)}) it matches none of the "
        f"{len(tools)} declared tools: {hallucination_note(name, declared)}. Well-formed arguments "
        "do not make the call real: rule 2 / D2.1 expects a refusal."
    )
    return draft("hallucinated_tool", text, tools, None, "rule 2 / D2.1, rule 3 / D3.2", why)
