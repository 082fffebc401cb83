"""Rule 7 / D7.1, D7.5, D7.6: a nested object's keys written one level up.

A site is a nested object and the object it sits in: the arguments themselves (D7.1), or a
declared object property, whose own properties are then its top level (D7.5). The nested
object is flattened whole into its container, or (D7.6) written with some of its keys while
the others are flattened beside it, one key sometimes written both ways with the same value.
The expected call is the correct call the text was derived from, whichever of these it took.
"""

from __future__ import annotations

from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    Path,
    catalog_offers,
    choose_tools,
    draft,
    get_in,
    quote,
    render_call,
    valid_call,
)
from toolcall300.generator.rules.lifted import beside_arguments, nested_once_more
from toolcall300.generator.values import build_value
from toolcall300.schema import is_valid


def _objects(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The properties of ``schema`` that are objects declaring properties of their own."""
    return {
        k: v
        for k, v in schema.get("properties", {}).items()
        if value_type(v) == "object" and v.get("properties")
    }


def _names_below(schema: dict[str, Any]) -> list[str]:
    """Every property name declared inside the nested objects of ``schema``, at any depth,
    once per place it is declared (a schema declaring properties counts, typed or not)."""
    out: list[str] = []
    for sub in schema.get("properties", {}).values():
        if isinstance(sub, dict) and isinstance(sub.get("properties"), dict):
            out += list(sub["properties"]) + _names_below(sub)
    return out


def _flattenable(container: dict[str, Any]) -> list[str]:
    """Nested objects of ``container`` whose keys belong to them alone, read relative to it
    (D7.3, D7.5), under a closed or required level (so the text is not valid as sent). A name
    that is empty or holds a dot is never flattened, nor is an object holding one: ``p.a.b``
    would not say whether ``a.b`` is one key or two (D7.1)."""
    props = container.get("properties", {})
    below = _names_below(container)
    closed = container.get("additionalProperties") is False
    return [
        k
        for k, sub in _objects(container).items()
        if all(below.count(x) == 1 and x not in props for x in sub["properties"])
        and (closed or k in container.get("required", []))
        and all(name and "." not in name for name in (k, *sub["properties"]))
    ]


def flatten_sites(tool: Tool) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    """The top-level sites (D7.1) and the sites one object down (D7.5) of a tool."""
    schema = tool_schema(tool)
    top: list[tuple[Path, str]] = [((), k) for k in _flattenable(schema)]
    inner: list[tuple[Path, str]] = [
        ((p,), k) for p, sub in _objects(schema).items() for k in _flattenable(sub)
    ]
    return top, inner


def _split(
    ctx: Ctx, inner: dict[str, Any], sub: dict[str, Any], closed: bool, variant: int
) -> tuple[list[str], list[str], str | None] | None:
    """D7.6: the keys written inside the object and the keys flattened beside it (both
    non-empty), plus one written key also flattened with its value (collapses), or ``None``.

    Under an open container the flattened half holds a required key of the object, so the
    written half alone is not a valid object and the text is not valid as sent."""
    keys = list(inner)
    if len(keys) < 2:
        return None
    ctx.rng.shuffle(keys)
    cut = ctx.rng.randint(1, len(keys) - 1)
    written, flat = keys[:cut], keys[cut:]
    if not closed:
        needed = [k for k in sub.get("required", []) if k in written]
        if not any(k in sub.get("required", []) for k in flat):
            if not needed or len(written) < 2:
                return None
            written.remove(needed[0])
            flat.append(needed[0])
    both = written[0] if variant % 8 in (2, 3) else None  # D7.6: an equal value collapses
    return written, flat, both


def _deep(tool: Tool) -> bool:
    return bool(flatten_sites(tool)[1])


def _flattens(tool: Tool) -> bool:
    return any(flatten_sites(tool))


def nested_flattened(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 7: a nested object's keys written one level up (bare or dotted, D7.1), inside a
    declared object on some variants (D7.5), merged with the object also written (D7.6); on
    one variant in eight the arguments nested once more (E5), on another a required property
    written beside them (D7.9)."""
    top, inner_sites = flatten_sites(tool)
    if variant % 12 == 2 and not inner_sites and catalog_offers(ctx.catalog, "deep", _deep):
        return None  # D7.5's turn: a tool of the catalog with an object inside an object
    # E5 and D7.9 share a category rule 7 feeds (never one of their own), and a tool with an
    # object inside an object keeps those turns for its own readings (D7.5)
    lifted = variant % 8 in (5, 6) and not inner_sites
    if lifted and catalog_offers(ctx.catalog, "flattens", _flattens):
        if variant % 8 == 5:
            return nested_once_more(ctx, tool, variant)
        return beside_arguments(ctx, tool, variant)
    # the variant picks the reading: a tool with a nested object inside an object re-nests
    # one level down (D7.5) on three variants in four (and on E5's turn), merged (D7.6) on two
    # of those; any other tool merges on half its variants
    deep = bool(inner_sites) and (variant % 4 != 1 or variant % 8 == 5)
    merging = variant % 4 in ((0, 3) if deep else (2, 3))
    sites = inner_sites if deep else top
    if not sites:
        return None
    where, parent = sites[variant % len(sites)]
    schema = tool_schema(tool)
    call = valid_call(ctx, tool, force=(where or (parent,))[:1], fill=0.9)
    args = call["arguments"]
    container: dict[str, Any] = get_in(args, where)
    container_schema = schema if not where else schema["properties"][where[0]]
    parent_schema = container_schema["properties"][parent]
    if parent not in container:  # an optional object inside the container: write it
        name = tool_name(tool)
        container[parent] = build_value(
            ctx.rng, parent_schema, ctx.pools, name, ".".join((*where, parent)), 0.9
        )
        if not is_valid(args, schema):
            return None
    inner = container[parent]
    if not inner:
        return None
    closed = container_schema.get("additionalProperties") is False
    merge = _split(ctx, inner, parent_schema, closed, variant) if merging else None
    written, flat, both = merge if merge else ([], list(inner), None)
    # a dotted key that a property of the container already declares ("a.b" beside a nested
    # "a") is that property, not a flattened one (rule 7: no owner at that level): write bare
    props = container_schema.get("properties", {})
    dotted = variant % 3 == 1 and not any(f"{parent}.{k}" in props for k in inner)
    loose = {
        (f"{parent}.{k}" if dotted else k): inner[k] for k in [*flat, *([both] if both else [])]
    }
    spelled = list(loose)
    rewritten: dict[str, Any] = {}
    for key, value in container.items():
        if key != parent:
            rewritten[key] = value
        elif written and variant % 3 == 2:  # the flattened keys first, then the object
            rewritten.update(loose)
            rewritten[parent] = {k: inner[k] for k in written}
        elif written:
            rewritten[parent] = {k: inner[k] for k in written}
            rewritten.update(loose)
        else:
            rewritten.update(loose)
    sent = {**args, where[0]: rewritten} if where else rewritten
    if is_valid(sent, schema):
        return None  # never a freebie: the text must need the repair
    text = render_call(ctx, tool_name(tool), sent, variant)
    return draft(
        "nested_flattened",
        text,
        choose_tools(ctx, tool),
        call,
        _rule(where, bool(written)),
        _why(where, parent, spelled, written, both),
    )


def _rule(where: Path, merged: bool) -> str:
    decisions = ["D7.5"] if where else ["D7.1"]
    return "rule 7 / " + ", ".join(decisions + (["D7.6"] if merged else []))


def _why(where: Path, parent: str, spelled: list[str], written: list[str], both: str | None) -> str:
    flat = ", ".join(quote(k) for k in spelled)
    home = ".".join((*where, parent))
    level = (
        f"Inside {quote(where[0])}, whose own properties are its top level (D7.5), the"
        if where
        else "The"
    )
    owner = f"one of its nested properties ({quote(parent)}) and to none of its own"
    if not where:
        owner = f"one declared nested property ({quote(parent)}) and to no top-level one"
    if not written:
        return (
            f"{level} object {quote(parent)} was flattened into {flat}. Each key belongs to exactly "
            f"{owner}, so rule 7 (D7.1, D7.3) re-nests them under {quote(home)}; nothing else "
            "changes."
        )
    kept = ", ".join(quote(k) for k in written)
    why = (
        f"{level} object {quote(parent)} was written with {kept}, and {flat} flattened beside it. "
        "Each "
        f"flattened key belongs to exactly {owner} (D7.1, D7.3), so it is re-nested under "
        f"{quote(home)} and merges into the written object (D7.6): a key the object lacks is "
        "added"
    )
    if both:
        why += f"; {quote(both)}, written both inside and flattened with the same value, collapses"
    return why + ". Nothing else changes."
