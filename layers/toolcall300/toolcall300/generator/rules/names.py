"""Rule 3: the declared tool name written with namespace, case, separator or () noise."""

from __future__ import annotations

from collections.abc import Callable

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
from toolcall300.rules import normalise_tool_name, tool_name_matches

MANGLERS: tuple[Callable[[str], str], ...] = (
    lambda n: f"functions.{n}",
    lambda n: n.upper(),
    lambda n: n.replace("_", "-"),
    lambda n: f" {n}() ",
    lambda n: f"default_api:{n}",
    lambda n: " ".join(w.capitalize() for w in n.split("_")),
    lambda n: f"tools/{n.replace('_', ' ')}",
    lambda n: f"{n.title()}()",
)
#: What each mangler adds, in the same order, for the rationale (rule 3 / D3.1).
MANGLER_NOISE = (
    "a `functions.` namespace prefix",
    "upper case",
    "`-` in place of `_`",
    "surrounding spaces and a trailing ()",
    "a `default_api:` namespace prefix",
    "capitalised words separated by spaces",
    "a `tools/` prefix and spaces for `_`",
    "title case and a trailing ()",
)


def mangle(name: str, names: list[str], start: int) -> tuple[str, int] | None:
    """The first mangling of ``name`` from ``start`` that differs from it and resolves to it
    alone among ``names`` (rule 3 / D3.1), with the mangler's index; or None."""
    for k in range(len(MANGLERS)):
        index = (start + k) % len(MANGLERS)
        mangled = MANGLERS[index](name)
        if mangled != name and tool_name_matches(mangled, names) == [name]:
            return mangled, index
    return None


def wrong_tool_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 3: the declared name written with namespace, case, separator or () noise."""
    name = tool_name(tool)
    tools = choose_tools(ctx, tool)
    names = [tool_name(t) for t in tools]
    found = mangle(name, names, variant)
    if found is None:
        return None
    mangled, index = found
    call = valid_call(ctx, tool)
    text = render_call(ctx, mangled, call["arguments"], variant)
    why = (
        f"The text calls {quote(mangled)}: {quote(name)} with {MANGLER_NOISE[index]}. Under rule 3 "
        f"(D3.1: trim, drop a trailing (), drop the namespace prefix, case-fold, unify - _ and space) "
        f"it normalises to {quote(normalise_tool_name(mangled))}, which exactly one of the "
        f"{len(tools)} declared tools matches. The arguments were written valid and stay as written."
    )
    return draft("wrong_tool_name", text, tools, call, "rule 3 / D3.1", why)
