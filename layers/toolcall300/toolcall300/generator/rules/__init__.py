"""The generator's mutation rules, one module per category, and the helpers every rule shares.

Each category's rule lives in its own module: ``names`` (rule 3), ``hallucinated`` (rules 2
and 3), ``defaults`` (rule 6), ``undeclared`` and ``nesting`` (rule 7), ``coercion`` (rule 5),
``enums`` (rule 4), ``arrays`` (rule 8), ``strings`` (rule 9), ``multiple`` (rule 10),
``truncated`` (rule 11) and ``unrecoverable`` (the refusal mix); ``generator.build.MAKERS``
maps each category to its rule. This package module holds what they share.

Every rule starts from a correct call built by ``generator.values`` (the ground truth) and
derives the text from it; the expected answer is known by construction, never asked of a
parser or normaliser. Where a rule must avoid a text that would be ambiguous (an enum
spelling matching two members, a mangled name matching two tools) it filters candidate
texts with the shared predicates of ``rules``; the label itself never comes from them.
The rules deliberately write no files and run no integrity checks.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.envelopes import ENVELOPES, STYLES, call_id, dumps, wrap
from toolcall300.generator.values import (
    GenerationError,
    Pools,
    build_call,
    build_value,
)
from toolcall300.rules import EnumMembers, normalise_tool_name
from toolcall300.schema import format_path, is_valid, iter_errors

Call = dict[str, Any]
Path = tuple[str, ...]
SCALARS = ("string", "integer", "number", "boolean")


class CatalogIndex:
    """Each tool's rule-3 key and name tokens, computed once per catalog: the rules ask for
    them on every case (the tools a case declares, a twin name, a look-alike), and asking the
    whole catalog each time made a build quadratic in the number of tools."""

    def __init__(self, catalog: list[Tool]) -> None:
        self._key = {id(t): normalise_tool_name(tool_name(t)) for t in catalog}
        self._tokens = {i: frozenset(k.split("_")) for i, k in self._key.items()}
        self.by_key: dict[str, list[Tool]] = {}
        for t in catalog:
            self.by_key.setdefault(self._key[id(t)], []).append(t)

    def key(self, tool: Tool) -> str:
        """The tool's name under rule 3."""
        found = self._key.get(id(tool))
        return found if found is not None else normalise_tool_name(tool_name(tool))

    def tokens(self, tool: Tool) -> frozenset[str]:
        found = self._tokens.get(id(tool))
        return found if found is not None else frozenset(self.key(tool).split("_"))

    def twins(self, tool: Tool) -> list[Tool]:
        """The other tools whose names normalise like this one's (rule 3: ambiguous)."""
        return [t for t in self.by_key.get(self.key(tool), ()) if t is not tool]


@dataclass(frozen=True)
class Ctx:
    """What every rule needs: the one random source, the model-facing catalog, the pools."""

    rng: random.Random
    catalog: list[Tool]
    pools: Pools

    @cached_property
    def index(self) -> CatalogIndex:
        """The catalog's rule-3 index, built the first time a rule asks."""
        return CatalogIndex(self.catalog)

    @cached_property
    def _enums(self) -> dict[int, tuple[list[Any], EnumMembers]]:
        return {}

    def enum_members(self, members: list[Any]) -> EnumMembers:
        """Rule 4's index of one enum of the catalog, built once per build (no rule mutates a
        tool, so an enum list is the same list for the whole build)."""
        held = self._enums.get(id(members))
        if held is None or held[0] is not members:
            held = self._enums[id(members)] = (members, EnumMembers(members))
        return held[1]


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
    rng, index = ctx.rng, ctx.index
    chosen = ([anchor] if anchor else []) + [t for t in must if t is not anchor]
    excluded = {index.key(t) for t in chosen} | set(avoid)
    taken = {id(t) for t in chosen}
    pool = [t for t in ctx.catalog if id(t) not in taken and index.key(t) not in excluded]
    tokens = index.tokens(anchor) if anchor else frozenset()
    near = [t for t in pool if tokens & index.tokens(t)]
    rng.shuffle(near)
    first = {id(t) for t in near[:2]}
    rest = [t for t in pool if id(t) not in first]
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


#: (id(catalog), what) -> (the catalog, whether a tool of it offers it): asked by a rule on
#: every turn it keeps for a reading only some tools feed; a catalog is one list per build.
_OFFERS: dict[tuple[int, str], tuple[list[Tool], bool]] = {}


def catalog_offers(catalog: list[Tool], what: str, test: Callable[[Tool], bool]) -> bool:
    """Whether some tool of ``catalog`` passes ``test`` (``what`` names the test), computed
    once per catalog: a rule keeps a turn for a reading (D5.6, D7.5, D8.3, D9.3...) only when
    the catalog can feed it, and otherwise makes its usual case there."""
    held = _OFFERS.get((id(catalog), what))
    if held is None or held[0] is not catalog:
        if len(_OFFERS) > 256:
            _OFFERS.clear()
        held = _OFFERS[(id(catalog), what)] = (catalog, any(map(test, catalog)))
    return held[1]


def draft(
    category: str, text: str, tools: list[Tool], expected: Call | None, rule: str, why: str
) -> Draft:
    return Draft(category, text, tools, copy.deepcopy(expected), rule, why)
