"""The named mutation rules of ten categories, and the helpers every rule shares.

Truncation lives in ``generator_truncation`` and the refusal mix in
``generator_unrecoverable``; ``generator.MAKERS`` maps each category to its rule.

Every rule starts from a correct call built by ``generator_values`` (the ground truth) and
derives the text from it; the expected answer is known by construction, never asked of a
parser or normaliser. Where a rule must avoid a text that would be ambiguous (an enum
spelling matching two members, a mangled name matching two tools) it filters candidate
texts with the shared predicates of ``rules``; the label itself never comes from them.
This module deliberately writes no files and runs no integrity checks.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.envelopes import ENVELOPES, STYLES, call_id, dumps, wrap
from toolcall300.generator.values import (
    GenerationError,
    Pools,
    Prop,
    build_call,
    build_value,
    pool_list,
    props_of,
)
from toolcall300.rules import enum_matches, normalise_tool_name, tool_name_matches
from toolcall300.schema import format_path, is_valid, iter_errors

Call = dict[str, Any]
Path = tuple[str, ...]
SCALARS = ("string", "integer", "number", "boolean")


@dataclass(frozen=True)
class Ctx:
    """What every rule needs: the one random source, the model-facing catalog, the pools."""

    rng: random.Random
    catalog: list[Tool]
    pools: Pools


@dataclass(frozen=True)
class Draft:
    """A case before it has an id."""

    category: str
    text: str
    tools: list[Tool]
    expected: Call | None
    rule: str
    rationale: str


Maker = Callable[[Ctx, Tool, int], Draft | None]

# --------------------------------------------------------------------------- shared helpers


def _pick(rng: random.Random, options: list[Any] | tuple[Any, ...]) -> Any:
    return options[rng.randrange(len(options))]


def quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def valid_call(ctx: Ctx, tool: Tool, force: tuple[str, ...] = (), fill: float = 0.5) -> Call:
    """A correct call; rebuilt until it validates, so the ground truth always conforms."""
    for _ in range(25):
        call = build_call(ctx.rng, tool, ctx.pools, force, fill)
        if is_valid(call["arguments"], tool_schema(tool)):
            return call
    errors = list(iter_errors(call["arguments"], tool_schema(tool)))
    where = f"{format_path(errors[0].instance_path)}: {errors[0].message}" if errors else "?"
    raise GenerationError(
        f"tool {tool_name(tool)}: the pools yield no valid call ({where}); add pool values that fit"
    )


def choose_tools(
    ctx: Ctx, anchor: Tool | None, must: tuple[Tool, ...] = (), avoid: tuple[str, ...] = ()
) -> list[Tool]:
    """The 3 to 6 tools a case declares: the anchor, its near namesakes first, then others.

    Tools that normalise like the anchor (rule 3) are left out unless ``must`` names them, so
    the anchor's own name stays unambiguous; tools that normalise to a key in ``avoid`` are
    always left out (a hallucinated name must match nothing).
    """
    rng = ctx.rng
    chosen = ([anchor] if anchor else []) + [t for t in must if t is not anchor]
    keys = {normalise_tool_name(tool_name(t)) for t in chosen}
    banned = set(avoid) | ({normalise_tool_name(tool_name(anchor))} if anchor else set())
    pool = [
        t
        for t in ctx.catalog
        if t not in chosen and normalise_tool_name(tool_name(t)) not in banned | keys
    ]
    tokens = set(normalise_tool_name(tool_name(anchor)).split("_")) if anchor else set()
    near = [t for t in pool if tokens & set(normalise_tool_name(tool_name(t)).split("_"))]
    rng.shuffle(near)
    rest = [t for t in pool if t not in near[:2]]
    rng.shuffle(rest)
    size = min(rng.randint(3, 6), len(chosen) + len(pool))
    picked = chosen + near[:2]
    picked += rest[: max(0, size - len(picked))]
    rng.shuffle(picked)
    return picked  # shared with the catalog: no rule ever mutates a tool


def render(ctx: Ctx, value: Any, indent_ok: bool = True) -> str:
    """The text of a JSON value in one of the spacing styles."""
    return dumps(value, _pick(ctx.rng, STYLES if indent_ok else STYLES[:2]))


def envelope_for(ctx: Ctx, variant: int) -> str:
    """Envelopes rotate with the case index, so every category uses every envelope."""
    return ENVELOPES[(variant + ctx.rng.randrange(2)) % len(ENVELOPES)]


def render_call(ctx: Ctx, name: str, arguments: Any, variant: int) -> str:
    env = envelope_for(ctx, variant)
    return render(ctx, wrap(name, arguments, env, call_id(ctx.rng, env)))


def get_in(obj: Any, path: Path) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def set_in(obj: dict[str, Any], path: Path, value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def leaf_paths(
    schema: dict[str, Any], want: Callable[[dict[str, Any]], bool]
) -> list[tuple[Path, dict[str, Any]]]:
    """Top-level properties, and properties one object down, whose schema ``want`` accepts."""
    out: list[tuple[Path, dict[str, Any]]] = []
    for key, sub in schema.get("properties", {}).items():
        if want(sub):
            out.append(((key,), sub))
        if value_type(sub) == "object":
            out += [((key, k), s) for k, s in sub.get("properties", {}).items() if want(s)]
    return out


def call_with_path(ctx: Ctx, tool: Tool, path: Path, sub: dict[str, Any]) -> Call:
    """A correct call that writes the property at ``path`` (one level down at most)."""
    call = valid_call(ctx, tool, force=(path[0],))
    if len(path) == 2 and path[1] not in call["arguments"][path[0]]:
        name = tool_name(tool)
        call["arguments"][path[0]][path[1]] = build_value(
            ctx.rng, sub, ctx.pools, name, ".".join(path)
        )
    return call


def dotted(path: Path) -> str:
    return ".".join(path)


def draft(
    category: str, text: str, tools: list[Tool], expected: Call | None, rule: str, why: str
) -> Draft:
    return Draft(category, text, tools, copy.deepcopy(expected), rule, why)


# --------------------------------------------------------------------------- rule 3: names

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


def wrong_tool_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 3: the declared name written with namespace, case, separator or () noise."""
    name = tool_name(tool)
    tools = choose_tools(ctx, tool)
    names = [tool_name(t) for t in tools]
    for k in range(len(MANGLERS)):
        index = (variant + k) % len(MANGLERS)
        mangled = MANGLERS[index](name)
        if mangled != name and tool_name_matches(mangled, names) == [name]:
            break
    else:
        return None
    call = valid_call(ctx, tool)
    text = render_call(ctx, mangled, call["arguments"], variant)
    why = (
        f"The text calls {quote(mangled)}: {quote(name)} with {MANGLER_NOISE[index]}. Under rule 3 "
        f"(D3.1: trim, drop a trailing (), drop the namespace prefix, case-fold, unify - _ and space) "
        f"it normalises to {quote(normalise_tool_name(mangled))}, which exactly one of the "
        f"{len(tools)} declared tools matches. The arguments were written valid and stay as written."
    )
    return draft("wrong_tool_name", text, tools, call, "rule 3 / D3.1", why)


def hallucinated_tool(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rules 2 and 3: a call to a name no declared tool matches; the only answer is a refusal."""
    rng = ctx.rng
    pool = pool_list(ctx.pools, "hallucinated_tools")
    # every third case calls a real catalog tool this case does not declare
    absent = variant % 3 == 2
    name = tool_name(tool) if absent or not pool else _pick(rng, pool)
    key = normalise_tool_name(name)
    others = [t for t in ctx.catalog if normalise_tool_name(tool_name(t)) != key]
    anchor = _pick(rng, others) if absent and others else tool
    # a declared look-alike ("get_weather" for "getweather") makes the refusal a real test
    lookalikes = tuple(
        t for t in others if hallucination_note(name, [tool_name(t)]).startswith("it ")
    )
    tools = choose_tools(ctx, anchor, must=lookalikes[:1], avoid=(key,))
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


# --------------------------------------------------------------------------- rule 6: defaults


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


# --------------------------------------------------------------------------- rule 7: undeclared


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
    dotted = variant % 3 == 1
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


# --------------------------------------------------------------------------- rule 5: coercion


def coercible(sub: dict[str, Any]) -> bool:
    return (
        "enum" not in sub
        and value_type(sub) in ("integer", "number", "boolean")
        and "null" not in sub.get("type", ())
    )


def _as_text(rng: random.Random, value: Any) -> str:
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
        spelled = _as_text(ctx.rng, value)
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


# --------------------------------------------------------------------------- rule 4: enums

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
    for k in range(len(ENUM_SPELLINGS)):
        spelled = ENUM_SPELLINGS[(variant + k) % len(ENUM_SPELLINGS)](member)
        if spelled not in members and enum_matches(spelled, members) == [member]:
            break
    else:
        return None
    sent = copy.deepcopy(call["arguments"])
    set_in(sent, path, spelled)
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"{dotted(path)} is {quote(spelled)}, not a member of {quote(members)}. Trimmed, case-folded and "
        f"with - and space read as _ (rule 4) it equals exactly one member, {quote(member)} (D4.1)."
    )
    return draft("enum_violation", text, choose_tools(ctx, tool), call, "rule 4 / D4.1", why)


# --------------------------------------------------------------------------- rule 8: arrays


def _one_element_array(sub: dict[str, Any]) -> bool:
    items = sub.get("items")
    return (
        value_type(sub) == "array"
        and isinstance(items, dict)
        and (value_type(items) in SCALARS or "enum" in items)
        and sub.get("minItems", 0) <= 1
        and sub.get("maxItems", 1) >= 1
    )


def plain_scalar(sub: dict[str, Any]) -> bool:
    return value_type(sub) in SCALARS and "null" not in sub.get("type", ())


def array_vs_scalar(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 8 / D8.1: a lone scalar for a declared array, or a one-element array for a scalar."""
    props = props_of(tool)
    to_array = variant % 2 == 0
    cands = [
        p for p in props if (_one_element_array(p.schema) if to_array else plain_scalar(p.schema))
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
    if not is_valid(call["arguments"], tool_schema(tool)):
        return None
    sent = dict(call["arguments"])
    sent[prop.name] = sent_value
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"{quote(prop.name)} was written as {how} (rule 8 / D8.1: the one-element direction only)."
    )
    return draft("array_vs_scalar", text, choose_tools(ctx, tool), call, "rule 8 / D8.1", why)


# --------------------------------------------------------------------------- rule 9 and rule 10


def args_as_string(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 9: arguments delivered as a JSON string, encoded twice in every third case."""
    call = valid_call(ctx, tool)
    times = 2 if variant % 3 == 2 else 1
    encoded: Any = call["arguments"]
    for _ in range(times):
        encoded = json.dumps(
            encoded, ensure_ascii=False, separators=_pick(ctx.rng, ((",", ":"), (", ", ": ")))
        )
    env = ("tool_calls", "bare", "function", "typed")[variant % 4]
    text = render(ctx, wrap(tool_name(tool), encoded, env, call_id(ctx.rng, env)))
    keys = ", ".join(quote(k) for k in call["arguments"]) or "no properties"
    why = (
        f"The {env} envelope carries the arguments of {quote(tool_name(tool))} as a JSON string encoded "
        f"{'twice' if times == 2 else 'once'}; rule 9 (D9.1) decodes it "
        f"{'repeatedly ' if times == 2 else ''}until it is an object ({keys}), which is already the "
        "valid call as written, so nothing else changes."
    )
    return draft("args_as_string", text, choose_tools(ctx, tool), call, "rule 9 / D9.1", why)


def multiple_calls(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 10: the same call emitted two or three times, as a list or as several tool_calls."""
    call = valid_call(ctx, tool)
    copies = 2 + variant % 2
    if variant % 2:
        body: Any = {
            "tool_calls": [
                {
                    "id": call_id(ctx.rng, "tool_calls"),
                    "type": "function",
                    "function": copy.deepcopy(call),
                }
                for _ in range(copies)
            ]
        }
    else:
        env = ("bare", "typed", "input", "function")[(variant // 2) % 4]
        body = [
            wrap(call["name"], copy.deepcopy(call["arguments"]), env, call_id(ctx.rng, env))
            for _ in range(copies)
        ]
    text = render(ctx, body)
    shape = (
        f"{copies} tool_calls entries (their ids differ, which is not part of a call)"
        if variant % 2
        else f"a JSON array of {copies} {env} blocks"
    )
    why = (
        f"The same call to {quote(call['name'])} was emitted as {shape}, each with identical name and "
        "arguments; every copy canonicalises to the same value, so rule 10 (D10.1) collapses them "
        "to that one call. No single copy is the answer by position: it is the answer because all agree."
    )
    return draft("multiple_calls", text, choose_tools(ctx, tool), call, "rule 10 / D10.1", why)
