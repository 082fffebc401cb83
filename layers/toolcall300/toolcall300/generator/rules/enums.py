"""Rule 4: an enum member spelt with noise that matches it alone."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema
from toolcall300.generator.rules import (
    Ctx,
    Draft,
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
from toolcall300.rules import EnumMembers

ENUM_SPELLINGS: tuple[Callable[[str], str], ...] = (
    str.upper,
    str.capitalize,
    lambda m: m.replace("_", "-"),
    lambda m: m.replace("_", " ").title(),
    lambda m: f" {m} ",
    str.lower,
    lambda m: m.replace("-", " "),
    lambda m: m.swapcase(),
)


def string_enum(sub: dict[str, Any]) -> bool:
    return isinstance(sub.get("enum"), list) and any(isinstance(m, str) for m in sub["enum"])


def respell(
    member: str, members: list[Any], start: int, index: EnumMembers | None = None
) -> str | None:
    """The first spelling of ``member`` from ``start`` that is no member and maps to it alone
    under rule 4 (D4.1), or None. ``index``: the enum's, when the caller holds one."""
    index = index or EnumMembers(members)
    for k in range(len(ENUM_SPELLINGS)):
        spelled = ENUM_SPELLINGS[(start + k) % len(ENUM_SPELLINGS)](member)
        if not index.has(spelled) and index.matches(spelled) == [member]:
            return spelled
    return None


def enum_violation(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 4: an enum member spelt with case, separator or whitespace noise matching it alone."""
    cands = leaf_paths(tool_schema(tool), string_enum)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    member = get_in(call["arguments"], path)
    members = sub["enum"]
    if not isinstance(member, str):
        return None  # D4.1: only string members take part
    spelled = respell(member, members, variant, ctx.enum_members(members))
    if spelled is None:
        return None
    sent = copy.deepcopy(call["arguments"])
    set_in(sent, path, spelled)
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"{dotted(path)} is {quote(spelled)}, not a member of {quote(members)}. Trimmed, case-folded and "
        f"with - and space read as _ (rule 4) it equals exactly one member, {quote(member)} (D4.1)."
    )
    return draft("enum_violation", text, choose_tools(ctx, tool), call, "rule 4 / D4.1", why)
