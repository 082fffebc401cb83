"""The named mutation rules: one per category, each turning a correct call into a case.

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator_text import ENVELOPES, STYLES, Style, call_id, dumps, wrap
from toolcall300.generator_values import (
    GenerationError,
    Pools,
    Prop,
    build_call,
    build_value,
    pool_list,
    props_of,
)
from toolcall300.rules import enum_matches, is_lossless, normalise_tool_name, tool_name_matches
from toolcall300.schema import is_valid

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


def _q(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def valid_call(ctx: Ctx, tool: Tool, force: tuple[str, ...] = (), fill: float = 0.5) -> Call:
    """A correct call; rebuilt until it validates, so the ground truth always conforms."""
    for _ in range(25):
        call = build_call(ctx.rng, tool, ctx.pools, force, fill)
        if is_valid(call["arguments"], tool_schema(tool)):
            return call
    raise GenerationError(
        f"tool {tool_name(tool)}: the pools yield no valid call (check patterns and bounds)"
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
    return copy.deepcopy(picked)


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


def _where(path: Path) -> str:
    return ".".join(path)


def draft(
    category: str, text: str, tools: list[Tool], expected: Call | None, rule: str, why: str
) -> Draft:
    return Draft(category, text, tools, copy.deepcopy(expected), rule, why)


# --------------------------------------------------------------------------- rule 3: names

_MANGLERS: tuple[Callable[[str], str], ...] = (
    lambda n: f"functions.{n}",
    lambda n: n.upper(),
    lambda n: n.replace("_", "-"),
    lambda n: f" {n}() ",
    lambda n: f"default_api:{n}",
    lambda n: " ".join(w.capitalize() for w in n.split("_")),
    lambda n: f"tools/{n.replace('_', ' ')}",
    lambda n: f"{n.title()}()",
)


def wrong_tool_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 3: the declared name written with namespace, case, separator or () noise."""
    name = tool_name(tool)
    tools = choose_tools(ctx, tool)
    names = [tool_name(t) for t in tools]
    for k in range(len(_MANGLERS)):
        mangled = _MANGLERS[(variant + k) % len(_MANGLERS)](name)
        if mangled != name and tool_name_matches(mangled, names) == [name]:
            break
    else:
        return None
    call = valid_call(ctx, tool)
    text = render_call(ctx, mangled, call["arguments"], variant)
    why = (
        f"The text calls {_q(mangled)}. Under rule 3 (D3.1: trim, drop a trailing (), drop the "
        f"namespace prefix, case-fold, unify - _ and space) it normalises to "
        f"{_q(normalise_tool_name(mangled))}, which exactly one of the {len(tools)} declared tools, "
        f"{_q(name)}, matches. The arguments were written valid and stay as written."
    )
    return draft("wrong_tool_name", text, tools, call, "rule 3 / D3.1", why)


def hallucinated_tool(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rules 2 and 3: a call to a name no declared tool matches; the only answer is a refusal."""
    rng = ctx.rng
    pool = pool_list(ctx.pools, "hallucinated_tools")
    absent = (
        variant % 3 == 2
    )  # every third case calls a real catalog tool this case does not declare
    name = tool_name(tool) if absent or not pool else _pick(rng, pool)
    key = normalise_tool_name(name)
    others = [t for t in ctx.catalog if normalise_tool_name(tool_name(t)) != key]
    anchor = _pick(rng, others) if absent and others else tool
    tools = choose_tools(ctx, anchor, avoid=(key,))
    if tool_name_matches(name, [tool_name(t) for t in tools]) or name in [
        tool_name(t) for t in tools
    ]:
        return None
    call = valid_call(ctx, tool)
    text = render_call(ctx, name, call["arguments"], variant)
    story = (
        f"{_q(name)} is a tool of the wider catalog that this case does not declare"
        if absent and name == tool_name(tool)
        else f"{_q(name)} was never declared"
    )
    why = (
        f"{story}; after rule-3 normalisation ({_q(normalise_tool_name(name))}) it matches none of "
        f"the {len(tools)} declared tools (D3.2: separators are not removable, camelCase is not split). "
        "Well-formed arguments do not make the call real: rule 2 / D2.1 expects a refusal."
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
        f"Required property {_q(prop.name)} was not written. Its schema declares default "
        f"{_q(prop.schema['default'])}, so rule 6 fills it from there and from nowhere else; "
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
    """Rule 7 / D7.2: one or two undeclared keys (never a nested property's name) are added."""
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
    call = valid_call(ctx, tool)
    extra = {
        k: _pick(ctx.rng, values) for k in ctx.rng.sample(keys, min(len(keys), 1 + variant % 2))
    }
    items = list(call["arguments"].items())
    for key, value in extra.items():
        items.insert(ctx.rng.randint(0, len(items)), (key, value))
    text = render_call(ctx, tool_name(tool), dict(items), variant)
    why = (
        f"{', '.join(_q(k) for k in extra)} {'is' if len(extra) == 1 else 'are'} not declared by "
        f"{_q(tool_name(tool))} and not the name of any nested property, so rule 7 (D7.2) drops "
        f"{'it' if len(extra) == 1 else 'them'}; every declared property stays as written."
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
    flat = ", ".join(_q(f"{parent}.{k}" if dotted else k) for k in inner)
    why = (
        f"The object {_q(parent)} was flattened into {flat}. Each key belongs to exactly one declared "
        f"nested property ({_q(parent)}) and to no top-level one, so rule 7 (D7.1, D7.3) re-nests "
        f"them under {_q(parent)}; nothing else changes."
    )
    return draft("nested_flattened", text, choose_tools(ctx, tool), call, "rule 7 / D7.1", why)


# --------------------------------------------------------------------------- rule 5: coercion


def _coercible(sub: dict[str, Any]) -> bool:
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
    cands = leaf_paths(tool_schema(tool), _coercible)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    if not is_valid(call["arguments"], tool_schema(tool)):
        return None
    sent = copy.deepcopy(call["arguments"])
    changed = []
    for p, s in [(path, sub)] + [
        c for c in cands if c[0] != path and variant % 2 and len(c[0]) == 1
    ][:1]:
        try:
            value = get_in(call["arguments"], p)
        except (KeyError, TypeError):
            continue
        spelled = _as_text(ctx.rng, value)
        set_in(sent, p, spelled)
        changed.append(f"{_where(p)} = {_q(spelled)} -> {_q(value)} ({value_type(s)})")
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"Written as strings: {'; '.join(changed)}. Each is in the lossless syntax of its declared type "
        "(rule 5 / D5.1), so it converts and converts back unchanged; nothing else differs."
    )
    return draft("type_coercion", text, choose_tools(ctx, tool), call, "rule 5 / D5.1", why)


# --------------------------------------------------------------------------- rule 4: enums

_ENUM_SPELLINGS: tuple[Callable[[str], str], ...] = (
    str.upper,
    str.capitalize,
    lambda m: m.replace("_", "-"),
    lambda m: m.replace("_", " ").title(),
    lambda m: f" {m} ",
    str.lower,
    lambda m: m.replace("-", " "),
    lambda m: m.swapcase(),
)


def _string_enum(sub: dict[str, Any]) -> bool:
    return isinstance(sub.get("enum"), list) and any(isinstance(m, str) for m in sub["enum"])


def enum_violation(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 4: an enum member spelt with case, separator or whitespace noise matching it alone."""
    cands = leaf_paths(tool_schema(tool), _string_enum)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    member = get_in(call["arguments"], path)
    members = sub["enum"]
    if not isinstance(member, str):
        return None  # D4.1: only string members take part
    for k in range(len(_ENUM_SPELLINGS)):
        spelled = _ENUM_SPELLINGS[(variant + k) % len(_ENUM_SPELLINGS)](member)
        if spelled not in members and enum_matches(spelled, members) == [member]:
            break
    else:
        return None
    sent = copy.deepcopy(call["arguments"])
    set_in(sent, path, spelled)
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"{_where(path)} is {_q(spelled)}, not a member of {_q(members)}. Trimmed, case-folded and "
        f"with - and space read as _ (rule 4) it equals exactly one member, {_q(member)} (D4.1)."
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


def _plain_scalar(sub: dict[str, Any]) -> bool:
    return value_type(sub) in SCALARS and "null" not in sub.get("type", ())


def array_vs_scalar(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 8 / D8.1: a lone scalar for a declared array, or a one-element array for a scalar."""
    props = props_of(tool)
    to_array = variant % 2 == 0
    cands = [
        p for p in props if (_one_element_array(p.schema) if to_array else _plain_scalar(p.schema))
    ]
    if not cands:
        return None
    prop = cands[(variant // 2) % len(cands)]
    call = valid_call(ctx, tool, force=(prop.name,))
    value = call["arguments"][prop.name]
    if to_array:
        call["arguments"][prop.name] = value = value[:1]
        sent_value: Any = value[0]
        how = f"the scalar {_q(sent_value)} where an array is declared; the expected call wraps it as {_q(value)}"
    else:
        sent_value = [value]
        how = f"the one-element array {_q(sent_value)} where a {prop.type} is declared; the expected call unwraps it to {_q(value)}"
    if not is_valid(call["arguments"], tool_schema(tool)):
        return None
    sent = dict(call["arguments"])
    sent[prop.name] = sent_value
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = f"{_q(prop.name)} was written as {how} (rule 8 / D8.1: the one-element direction only)."
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
    why = (
        f"arguments arrived as a JSON string encoded {'twice' if times == 2 else 'once'}; rule 9 (D9.1) "
        f"decodes it {'repeatedly ' if times == 2 else ''}until it is an object, which is the call as written."
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
    why = (
        f"The same call to {_q(call['name'])} was emitted {copies} times with identical name and "
        "arguments; every copy canonicalises to the same value, so rule 10 (D10.1) collapses them to one."
    )
    return draft("multiple_calls", text, choose_tools(ctx, tool), call, "rule 10 / D10.1", why)


# --------------------------------------------------------------------------- rule 11: truncation

_SENTINEL = "\x00ARGS\x00"
CUT_KINDS = ("string", "number", "array_open", "nested", "between", "literal")
#: The decision each kind of cut exercises.
CUT_DECISIONS = {
    "string": "D11.1",
    "number": "D11.3",
    "array_open": "D11.4",
    "nested": "D11.2",
    "between": "D11.1",
    "literal": "D11.1",
}


@dataclass(frozen=True)
class Span:
    """Where one top-level argument sits in the serialised text."""

    key: str
    key_start: int
    value_start: int
    value_end: int


def serialise_with_spans(
    envelope_value: Any, arguments: dict[str, Any], style: Style
) -> tuple[str, list[Span], int]:
    """The text, each top-level argument's span, and where the arguments object ends."""
    outer = dumps(envelope_value, style)
    marker = dumps(_SENTINEL, style)
    head, tail = outer.split(marker, 1)
    parts, spans, pos = [], [], len(head) + 1
    for i, (key, value) in enumerate(arguments.items()):
        if i:
            pos += len(style.item_sep)
        k, v = dumps(key, style), dumps(value, style)
        spans.append(
            Span(
                key,
                pos,
                pos + len(k) + len(style.key_sep),
                pos + len(k) + len(style.key_sep) + len(v),
            )
        )
        parts.append(k + style.key_sep + v)
        pos = spans[-1].value_end
    body = "{" + style.item_sep.join(parts) + "}"
    return head + body + tail, spans, len(head) + len(body) - 1


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def completed(span: Span, value: Any, cut: int) -> bool:
    """D11.1: the value's last character arrived; a number also needs the delimiter after it (D11.3)."""
    return span.value_end < cut if _is_number(value) else span.value_end <= cut


def _cuts(
    kind: str, spans: list[Span], args: dict[str, Any], style: Style
) -> list[tuple[Span, int]]:
    """Every cut position of ``kind``, paired with the property it falls in or before."""
    out: list[tuple[Span, int]] = []
    for i, s in enumerate(spans):
        v = args[s.key]
        if kind == "string" and isinstance(v, str) and s.value_end - s.value_start >= 3:
            out += [
                (s, c) for c in range(s.value_start + 1, s.value_end)
            ]  # before the closing quote
        elif kind == "number" and _is_number(v):
            out += [
                (s, c) for c in range(s.value_start + 1, s.value_end + 1)
            ]  # D11.3: no delimiter yet
        elif kind == "array_open" and isinstance(v, list) and v:
            first = len(dumps(v[0], style))
            out += [(s, c) for c in range(s.value_start + 1, s.value_start + 1 + first)]  # D11.4
        elif kind == "nested" and isinstance(v, (list, dict)) and v:
            member = v[0] if isinstance(v, list) else next(iter(v.items()))
            text = (
                dumps(member, style)
                if isinstance(v, list)
                else dumps(member[0], style) + style.key_sep + dumps(member[1], style)
            )
            after = (
                s.value_start + 1 + len(text)
            )  # D11.2: one complete member, container still open
            out += [(s, c) for c in (after, after + len(style.item_sep)) if c < s.value_end]
        elif kind == "literal" and (isinstance(v, bool) or v is None):
            out += [(s, c) for c in range(s.value_start + 1, s.value_end)]
        elif kind == "between" and i:
            out += [(s, c) for c in range(spans[i - 1].value_end, s.value_start + 1)]
    return out


def _drop_reason(span: Span, value: Any, cut: int) -> str:
    if span.key_start >= cut or span.value_start >= cut:
        return "its value was never started"
    if _is_number(value):
        return "a number at the cut could have had more digits (D11.3)"
    if isinstance(value, str):
        return "the string's closing quote never arrived (D11.1)"
    if isinstance(value, (list, dict)):
        return "its container was never closed, so it is dropped whole (D11.2, D11.4: no empty container invented)"
    return "the literal was cut mid-way (D11.1)"


def _usable_cut(
    cut: int, spans: list[Span], args: dict[str, Any], props: dict[str, Prop], args_end: int
) -> bool:
    """A cut inside the arguments that keeps something and loses no required, defaultless property.

    A required property with a default is never cut once its key has started: rule 6 would
    fill the default while the text shows the model writing another value (``"units":
    "fahr``), a label the rules do not settle. Such a property is lost only if never begun.
    """
    kept = {s.key for s in spans if completed(s, args[s.key], cut)}
    lost = [k for k in args if k not in kept and props[k].required and not props[k].has_default]
    begun = [
        s.key for s in spans if s.key not in kept and props[s.key].required and s.key_start < cut
    ]
    return bool(kept) and not lost and not begun and cut <= args_end


def truncated(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 11: the serialised call cut inside the arguments; keep only what was completed."""
    rng = ctx.rng
    kind = CUT_KINDS[variant % len(CUT_KINDS)]
    props = {p.name: p for p in props_of(tool)}
    call = valid_call(ctx, tool, fill=0.85)
    args = call["arguments"]
    # required properties without a default are written first: losing one would make the case
    # unrecoverable (rule 11), which is the other category's job
    order = [k for k in args if props[k].required and not props[k].has_default]
    order += [k for k in args if k not in order]
    args = {k: args[k] for k in order}
    style = STYLES[rng.randrange(2)]
    env = ("bare", "function", "typed", "tool_calls", "parameters", "input")[variant % 6]
    text, spans, args_end = serialise_with_spans(
        wrap(call["name"], _SENTINEL, env, call_id(rng, env)), args, style
    )
    cuts = _cuts(kind, spans, args, style)
    rng.shuffle(cuts)
    chosen = next((c for c in cuts[:40] if _usable_cut(c[1], spans, args, props, args_end)), None)
    if chosen is None:
        return None
    span, cut = chosen
    kept = {s.key: args[s.key] for s in spans if completed(s, args[s.key], cut)}
    expected = dict(kept)
    filled = {
        k: copy.deepcopy(p.schema["default"])
        for k, p in props.items()
        if p.required and p.has_default and k not in kept
    }
    expected.update(filled)
    notes = [
        f"{_q(s.key)} kept (complete before the cut)"
        if s.key in kept
        else f"{_q(s.key)} dropped: {_drop_reason(s, args[s.key], cut)}"
        for s in spans
    ]
    if filled:
        notes.append(
            "required default(s) filled by rule 6: "
            + ", ".join(f"{_q(k)} = {_q(v)}" for k, v in filled.items())
        )
    why = (
        f"The stream stopped at character {cut} of {len(text)} ({kind} cut, near {_q(span.key)}); "
        f"the text ends {_q(text[max(0, cut - 24) : cut])}. Strict rule 11: "
        + "; ".join(notes)
        + "."
    )
    rule = f"rule 11 / {CUT_DECISIONS[kind]}"
    return draft(
        "truncated",
        text[:cut],
        choose_tools(ctx, tool),
        {"name": call["name"], "arguments": expected},
        rule,
        why,
    )


# --------------------------------------------------------------------------- unrecoverable

UNRECOVERABLE_KINDS = (
    "missing_required",
    "enum_no_match",
    "lossy_coercion",
    "ambiguous_name",
    "conflicting_calls",
    "multi_element_scalar",
    "cut_in_name",
    "prose",
    "enum_two_members",
)


def _refuse(tools: list[Tool], text: str, rule: str, why: str) -> Draft:
    return draft(
        "unrecoverable",
        text,
        tools,
        None,
        rule,
        why + " No correct call exists, so the only passing answer is a refusal (rule 2).",
    )


def _u_missing_required(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = [p for p in props_of(tool) if p.required and not p.has_default]
    if not cands:
        return None
    prop = cands[variant % len(cands)]
    call = valid_call(ctx, tool)
    sent = {k: v for k, v in call["arguments"].items() if k != prop.name}
    why = f"Required property {_q(prop.name)} is missing and its schema declares no default; rule 6 allows no other source."
    return _refuse(
        choose_tools(ctx, tool), render_call(ctx, tool_name(tool), sent, variant), "rule 6", why
    )


def _misspellings(member: str) -> Iterator[str]:
    """Close-looking strings that are not the member (rule 4: never the closest-looking one)."""
    if len(member) > 3:
        yield member[: len(member) // 2 + 1]
        yield member[0] + member[2] + member[1] + member[3:]
    yield member + "s"
    yield member + "_" + "x"


def _u_enum_no_match(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = leaf_paths(tool_schema(tool), _string_enum)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    member = get_in(call["arguments"], path)
    if not isinstance(member, str):
        return None
    wrong = next((w for w in _misspellings(member) if not enum_matches(w, sub["enum"])), None)
    if wrong is None:
        return None
    set_in(call["arguments"], path, wrong)
    why = f"{_where(path)} is {_q(wrong)}, which matches no member of {_q(sub['enum'])} even after rule-4 normalisation; the closest-looking member ({_q(member)}) is never guessed."
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 4 / D4.1",
        why,
    )


def _u_enum_two(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    for path, sub in leaf_paths(tool_schema(tool), _string_enum):
        for member in sub["enum"]:
            if not isinstance(member, str):
                continue
            for spell in _ENUM_SPELLINGS:
                spelled = spell(member)
                hits = enum_matches(spelled, sub["enum"])
                if spelled not in sub["enum"] and len(hits) >= 2:
                    call = call_with_path(ctx, tool, path, sub)
                    set_in(call["arguments"], path, spelled)
                    why = f"{_where(path)} is {_q(spelled)}, which after rule-4 normalisation equals two members, {_q(hits)}; D4.1 refuses an ambiguous value like one matching none."
                    return _refuse(
                        choose_tools(ctx, tool),
                        render_call(ctx, tool_name(tool), call["arguments"], variant),
                        "rule 4 / D4.1",
                        why,
                    )
    return None


_LOSSY: dict[str, tuple[Any, ...]] = {
    "integer": ("4.5", "03", "+3", " 3", "1e3", "three", "3.0"),
    "number": ("12,5", "twelve", "12.5 EUR", "1/2"),
    "boolean": ("yes", "1", "on", "no", 1, 0, "Y"),
}


def _u_lossy(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = leaf_paths(tool_schema(tool), _coercible)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    kind = str(value_type(sub))
    spelled = _LOSSY[kind][variant % len(_LOSSY[kind])]
    if is_lossless(spelled, kind):
        return None
    call = call_with_path(ctx, tool, path, sub)
    set_in(call["arguments"], path, spelled)
    why = f"{_where(path)} is declared {kind} but was written {_q(spelled)}; that conversion would be a guess, not lossless and reversible (rule 5 / D5.1)."
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 5 / D5.1",
        why,
    )


def _u_ambiguous_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    key = normalise_tool_name(tool_name(tool))
    twins = [t for t in ctx.catalog if t is not tool and normalise_tool_name(tool_name(t)) == key]
    if not twins:
        return None
    tools = choose_tools(ctx, tool, must=(twins[0],))
    names = [tool_name(t) for t in tools]
    for k in range(len(_MANGLERS)):
        mangled = _MANGLERS[(variant + k) % len(_MANGLERS)](key)
        if mangled not in names and len(tool_name_matches(mangled, names)) >= 2:
            break
    else:
        return None
    call = valid_call(ctx, tool)
    why = f"The text calls {_q(mangled)}, which normalises (rule 3) to {_q(key)}: both {_q(tool_name(tool))} and {_q(tool_name(twins[0]))} are declared and match, so the name resolves to no single tool."
    return _refuse(
        tools, render_call(ctx, mangled, call["arguments"], variant), "rule 3 / D3.1", why
    )


def _u_conflicting(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    first = valid_call(ctx, tool, fill=0.7)
    for _ in range(10):
        second = valid_call(ctx, tool, fill=0.7)
        if json.dumps(second, sort_keys=True) != json.dumps(first, sort_keys=True):
            break
    else:
        return None
    body = {
        "tool_calls": [
            {"id": call_id(ctx.rng, "tool_calls"), "type": "function", "function": c}
            for c in (first, second)
        ]
    }
    diff = sorted(
        k
        for k in set(first["arguments"]) | set(second["arguments"])
        if first["arguments"].get(k) != second["arguments"].get(k)
    )
    why = f"Two calls to {_q(tool_name(tool))} differ in {', '.join(_q(k) for k in diff)}; rule 10 (D10.1) collapses copies only when they are identical, and picking one would be a guess."
    return _refuse(choose_tools(ctx, tool), render(ctx, body), "rule 10 / D10.1", why)


def _u_multi_element(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    cands = [p for p in props_of(tool) if _plain_scalar(p.schema)]
    if not cands:
        return None
    prop = cands[variant % len(cands)]
    call = valid_call(ctx, tool, force=(prop.name,))
    first = call["arguments"][prop.name]
    other = next(
        (
            build_value(ctx.rng, prop.schema, ctx.pools, tool_name(tool), prop.name)
            for _ in range(6)
        ),
        first,
    )
    for _ in range(6):
        if other != first:
            break
        other = build_value(ctx.rng, prop.schema, ctx.pools, tool_name(tool), prop.name)
    if other == first:
        return None
    call["arguments"][prop.name] = [first, other]
    why = f"{_q(prop.name)} is a {prop.type} but two values were written, {_q([first, other])}; rule 8 (D8.1) repairs only the one-element direction, and choosing one would be a guess."
    return _refuse(
        choose_tools(ctx, tool),
        render_call(ctx, tool_name(tool), call["arguments"], variant),
        "rule 8 / D8.1",
        why,
    )


def _u_cut_in_name(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    name = tool_name(tool)
    if len(name) < 3:
        return None
    call = valid_call(ctx, tool)
    env = ("bare", "function", "typed", "tool_calls")[variant % 4]
    text = dumps(wrap(name, call["arguments"], env, call_id(ctx.rng, env)), STYLES[variant % 2])
    at = text.index('"name"')
    start = text.index('"', at + 6) + 1
    cut = start + ctx.rng.randint(1, len(name) - 1)
    why = f"The stream stopped inside the tool name, after {_q(text[start:cut])} of what may have been any tool (D11.5): no call was written."
    return _refuse(choose_tools(ctx, tool), text[:cut], "rule 11 / D11.5", why)


def _u_prose(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    prose = pool_list(ctx.pools, "prose")
    if not prose:
        return None
    text = prose[variant % len(prose)]
    why = "The model answered in prose and emitted no call at all; inventing one (even with empty arguments) is the failure rule 2 measures."
    return _refuse(choose_tools(ctx, tool), text, "rule 2 / D2.1", why)


_UNRECOVERABLE: dict[str, Maker] = {
    "missing_required": _u_missing_required,
    "enum_no_match": _u_enum_no_match,
    "lossy_coercion": _u_lossy,
    "ambiguous_name": _u_ambiguous_name,
    "conflicting_calls": _u_conflicting,
    "multi_element_scalar": _u_multi_element,
    "cut_in_name": _u_cut_in_name,
    "prose": _u_prose,
    "enum_two_members": _u_enum_two,
}


def unrecoverable(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 2: a mix of texts with no correct call in them; the kind rotates with the index."""
    return _UNRECOVERABLE[UNRECOVERABLE_KINDS[variant % len(UNRECOVERABLE_KINDS)]](
        ctx, tool, variant
    )


#: The twelve categories (DESIGN.md order) and the rule that makes each.
MAKERS: dict[str, Maker] = {
    "wrong_tool_name": wrong_tool_name,
    "missing_required_arg": missing_required_arg,
    "extra_undeclared_arg": extra_undeclared_arg,
    "type_coercion": type_coercion,
    "enum_violation": enum_violation,
    "nested_flattened": nested_flattened,
    "array_vs_scalar": array_vs_scalar,
    "args_as_string": args_as_string,
    "multiple_calls": multiple_calls,
    "hallucinated_tool": hallucinated_tool,
    "truncated": truncated,
    "unrecoverable": unrecoverable,
}
