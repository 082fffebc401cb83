"""The parallel track's corpus, by construction from the main corpus's labelled calls.

Every call of a turn is a call of the main corpus whose label its integrity checks already
prove: a value case's written call and its expected call, a refusal case's written call
(``null``), a truncated case's cut text. A turn puts 2 to 6 of them in one of the envelopes
the main corpus uses (P12), under the decision its category is built on (P3-P11), and its
expected list follows from the calls' labels and the decisions alone (P1, P7, P8). Pure:
the main corpus's cases and a seed in, cases, rationale and a manifest out; the same
arguments give byte-identical files. It never asks a normaliser what a turn means; the
checks (``generator.parallel_checks``) re-derive every label from the rationale's sources.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from toolcall300 import __version__
from toolcall300.canonical import canonical, loads_strict
from toolcall300.generator.envelopes import sent_calls
from toolcall300.generator.oracles import read_whole
from toolcall300.rules import declared_name_splits, resolve_tool_name, tool_name_matches
from toolcall300.spec import (
    PARALLEL_CATEGORIES,
    PARALLEL_CORPUS_VERSION,
    PARALLEL_SPEC_VERSION,
)

PER_CATEGORY = 25
DEFAULT_SEED = 20261207
CORPUS_FILE = "toolcall300-parallel.jsonl"
RATIONALE_FILE = "rationale.jsonl"
MANIFEST_FILE = "manifest.json"
#: The public slice (CC0, in the free kit): the first two turns of each category.
SAMPLE_FILE = "parallel-sample24.jsonl"
SAMPLE_PER_CATEGORY = 2
TRACK = "parallel"
#: What P7's explicit statement looks like in a turn's tools (MCP's wording, on ``function``).
NOT_IDEMPOTENT = {"idempotentHint": False}
#: The main corpus's categories whose calls a turn takes, by the role each plays.
VALUE_SOURCES = (
    "wrong_tool_name",
    "missing_required_arg",
    "extra_undeclared_arg",
    "type_coercion",
    "enum_violation",
    "nested_flattened",
    "array_vs_scalar",
    "args_as_string",
)
REFUSAL_SOURCES = ("hallucinated_tool", "unrecoverable")
ENVELOPES = ("openai", "anthropic", "bare")
#: The name a cut text wrote (its first ``"name"`` member; the cut falls after it).
CUT_NAME = re.compile(r'"name":\s*"((?:[^"\\]|\\.)*)"')


class ParallelError(ValueError):
    """The main corpus cannot feed a category (too few calls of a kind)."""


@dataclass(frozen=True)
class Source:
    """One labelled call of the main corpus: what was written, and what it means."""

    id: str
    category: str
    name: str  # as written
    arguments: Any  # as written (an object or a string)
    expected: dict[str, Any] | None  # None: a refusal
    tools: tuple[dict[str, Any], ...]
    cut_text: str | None = None  # a truncated case's text (its end is the cut)


@dataclass
class Slot:
    """One call of a turn: its source, how it is written, and its label."""

    source: Source
    role: str  # value, refusal, cut, copy, clean_copy, unsplit, ambiguous
    label: dict[str, Any] | None
    name: str = ""
    arguments: Any = None


@dataclass
class Turn:
    category: str
    envelope: str
    slots: list[Slot]
    text: str
    tools: list[dict[str, Any]]
    expected: list[dict[str, Any] | None]
    decisions: list[str]
    note: str
    repeat: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------- the sources


def sources_of(cases: list[dict[str, Any]]) -> dict[str, list[Source]]:
    """The main corpus's calls a turn may take, by role: ``value``, ``refusal``, ``cut``."""
    out: dict[str, list[Source]] = {"value": [], "refusal": [], "cut": []}
    for case in cases:
        tools = tuple(case["tools"])
        if case["category"] == "truncated":
            text = case["text"]
            written = CUT_NAME.search(text)
            if text.startswith("{") and not text.startswith('{"tool_calls') and written:
                name = loads_strict(f'"{written.group(1)}"')
                out["cut"].append(
                    Source(case["id"], "truncated", name, None, case["expected"], tools, text)
                )
            continue
        if case["category"] not in VALUE_SOURCES + REFUSAL_SOURCES:
            continue
        try:
            calls = sent_calls(loads_strict(case["text"]))
        except ValueError:
            continue
        if not calls or len(calls) != 1 or not isinstance(calls[0]["arguments"], (dict, str)):
            continue
        call = calls[0]
        if read_whole(case):
            continue  # D9.3, D9.4, D7.9: an answer that is no slot of a turn
        role = "value" if case["expected_kind"] == "value" else "refusal"
        out[role].append(
            Source(
                case["id"],
                case["category"],
                call["name"],
                call["arguments"],
                case["expected"],
                tools,
            )
        )
    return out


def union_tools(
    sources: list[Source], extra: tuple[dict[str, Any], ...] = ()
) -> list[dict[str, Any]] | None:
    """The turn's catalog: every source's tools, first declaration first; None when two
    declarations of one name differ."""
    seen: dict[str, dict[str, Any]] = {}
    for tool in [t for s in sources for t in s.tools] + list(extra):
        name = tool["function"]["name"]
        if name in seen:
            if canonical(seen[name]) != canonical(tool):
                return None
            continue
        seen[name] = tool
    return list(seen.values())


def label_stands(slot: Slot, names: list[str]) -> bool:
    """Whether a slot's label, proven on its source's catalog, holds under the turn's catalog:
    rule 3 resolves its written name as it did there (the rest of a label rests on the
    resolved tool's own schema, the same declaration in both)."""
    source = slot.source
    if slot.role in ("unsplit", "ambiguous"):
        return True
    own = [t["function"]["name"] for t in source.tools]
    name = slot.name or source.name
    if source.category == "hallucinated_tool":
        return resolve_tool_name(name, names) is None and not tool_name_matches(name, names)
    if source.expected is None:  # unrecoverable: its tool resolves as before
        before = resolve_tool_name(name, own)
        return before is not None and resolve_tool_name(name, names) == before
    return bool(resolve_tool_name(name, names) == source.expected["name"])


# ------------------------------------------------------------------------- rendering


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def wire_string(arguments: Any) -> str:
    """E3: the arguments as OpenAI's format carries them (a JSON string whose reading is the
    arguments as written: an object dumped, a string kept)."""
    return arguments if isinstance(arguments, str) else _json(arguments)


def entry(
    envelope: str, name: str | None, arguments: Any, ident: str, index: int | None = None
) -> dict[str, Any]:
    """One call in ``envelope``; ``name`` None writes no name (a fragment, P5)."""
    if envelope == "openai":
        fn: dict[str, Any] = {} if name is None else {"name": name}
        fn["arguments"] = wire_string(arguments)
        out: dict[str, Any] = {"id": ident, "type": "function", "function": fn}
        if index is not None:
            out = {"index": index, **out}
        return out
    if envelope == "anthropic":
        return {"type": "tool_use", "id": ident, "name": name, "input": arguments}
    return {"name": name, "arguments": arguments}


def turn_text(envelope: str, entries: list[dict[str, Any]]) -> str:
    if envelope == "openai":
        return _json({"role": "assistant", "content": None, "tool_calls": entries})
    return _json(entries)


def ident(rng: random.Random, envelope: str) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    body = "".join(rng.choice(alphabet) for _ in range(12))
    return ("toolu_" if envelope == "anthropic" else "call_") + body


# ----------------------------------------------------------------- the expected answer


def collapse(labels: list[dict[str, Any] | None], repeat: set[str]) -> list[dict[str, Any] | None]:
    """P7 on labels: a later identical call leaves no entry unless its tool says repeating
    matters; ``null`` never collapses."""
    seen: set[str] = set()
    out: list[dict[str, Any] | None] = []
    for label in labels:
        if label is not None:
            key = canonical(label)
            if key in seen and label["name"] not in repeat:
                continue
            seen.add(key)
        out.append(label)
    return out


# ------------------------------------------------------------------------ the builders


Builder = Callable[[random.Random, dict[str, list[Source]], str], Turn | None]


def _pick(
    rng: random.Random, pool: list[Source], n: int, exclude: Collection[str] = ()
) -> list[Source]:
    """``n`` sources drawn from ``pool`` (none in ``exclude``), no two with equal labels."""
    chosen: list[Source] = []
    labels: set[str] = set()
    for source in rng.sample(pool, len(pool)):
        if source.id in exclude:
            continue
        key = canonical(source.expected) if source.expected is not None else source.id
        if key in labels:
            continue  # two equal labels would collapse (P7) where no category asks for it
        chosen.append(source)
        labels.add(key)
        if len(chosen) == n:
            return chosen
    raise ParallelError("too few distinct calls")


def _value(source: Source) -> Slot:
    return Slot(source, "value", source.expected, source.name, source.arguments)


def _refusal(source: Source) -> Slot:
    return Slot(source, "refusal", None, source.name, source.arguments)


def _finish(
    rng: random.Random,
    category: str,
    envelope: str,
    slots: list[Slot],
    entries: list[dict[str, Any]] | None,
    decisions: list[str],
    note: str,
    *,
    text: str | None = None,
    repeat: Collection[str] = (),
    labels: list[dict[str, Any] | None] | None = None,
) -> Turn | None:
    tools = union_tools([s.source for s in slots])
    if tools is None:
        return None
    names = [t["function"]["name"] for t in tools]
    if not all(label_stands(s, names) for s in slots):
        return None
    if repeat:
        tools = [
            {**t, "function": {**t["function"], "annotations": dict(NOT_IDEMPOTENT)}}
            if t["function"]["name"] in repeat
            else t
            for t in tools
        ]
    if text is None:
        assert entries is not None
        text = turn_text(envelope, entries)
    expected = collapse([s.label for s in slots] if labels is None else labels, set(repeat))
    return Turn(category, envelope, slots, text, tools, expected, decisions, note, set(repeat))


def _plain_entries(rng: random.Random, envelope: str, slots: list[Slot]) -> list[dict[str, Any]]:
    return [entry(envelope, s.name, s.arguments, ident(rng, envelope)) for s in slots]


def build_distinct(
    rng: random.Random, pools: dict[str, list[Source]], envelope: str
) -> Turn | None:
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(2, 6))]
    return _finish(
        rng,
        "distinct_calls",
        envelope,
        slots,
        _plain_entries(rng, envelope, slots),
        ["P1", "P2"],
        "each call is repaired on its own; the answer lists them in the order emitted",
    )


def _same_tool_pair(rng: random.Random, pools: dict[str, list[Source]], n: int) -> list[Source]:
    by_tool: dict[str, list[Source]] = {}
    for s in pools["value"]:
        assert s.expected is not None
        by_tool.setdefault(s.expected["name"], []).append(s)
    tools = sorted(t for t, group in by_tool.items() if len(group) >= n)
    tool = rng.choice(tools)
    return _pick(rng, by_tool[tool], n)


def _merged_string(parts: list[Source]) -> str:
    return "".join(wire_string(s.arguments) for s in parts)


def build_merged(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    envelope = "openai"  # P3 is about one arguments string: OpenAI's wire form
    parts = _same_tool_pair(rng, pools, rng.choice((2, 2, 3)))
    others = [
        _value(s) for s in _pick(rng, pools["value"], rng.randint(0, 2) or 1, {p.id for p in parts})
    ]
    merged = [Slot(p, "value", p.expected, parts[0].name, p.arguments) for p in parts]
    at = rng.randint(0, len(others))
    entries = _plain_entries(rng, envelope, others)
    entries.insert(at, entry(envelope, parts[0].name, _merged_string(parts), ident(rng, envelope)))
    slots = others[:at] + merged + others[at:]
    if len({canonical(s.label) for s in slots}) != len(slots):
        return None
    return _finish(
        rng,
        "merged_arguments",
        envelope,
        slots,
        entries,
        ["P3", "P1"],
        f"one arguments string holds {len(parts)} JSON documents: {len(parts)} calls named "
        f"{parts[0].name!r}, each repaired on its own",
    )


def _plain_name(name: str) -> bool:
    return name.replace("_", "").isalnum()


def build_doubled(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    envelope = "openai"
    n = 2
    same = rng.random() < 0.5
    parts = _same_tool_pair(rng, pools, n) if same else _pick(rng, pools["value"], n)
    assert all(p.expected is not None for p in parts)
    names = [p.expected["name"] for p in parts]  # type: ignore[index]
    if not all(_plain_name(x) for x in names):
        return None
    doubled = "".join(names)
    others = [
        _value(s) for s in _pick(rng, pools["value"], rng.randint(1, 2), {p.id for p in parts})
    ]
    split = [
        Slot(p, "value", p.expected, name, p.arguments)
        for p, name in zip(parts, names, strict=True)
    ]
    slots = others[:1] + split + others[1:]
    union = union_tools([s.source for s in slots])
    if union is None:
        return None
    declared = [t["function"]["name"] for t in union]
    if resolve_tool_name(doubled, declared) is not None or tool_name_matches(doubled, declared):
        return None
    if len(declared_name_splits(doubled, declared, n)) != 1:
        return None
    if len({canonical(s.label) for s in slots}) != len(slots):
        return None
    entries = _plain_entries(rng, envelope, others[:1])
    entries.append(entry(envelope, doubled, _merged_string(parts), ident(rng, envelope)))
    entries += _plain_entries(rng, envelope, others[1:])
    return _finish(
        rng,
        "doubled_name",
        envelope,
        slots,
        entries,
        ["P4", "P3"],
        f"the name {doubled!r} is {n} declared names written one after another, one way "
        f"only, with {n} argument documents: {n} calls",
    )


def _cuts(rng: random.Random, text: str, pieces: int) -> list[str]:
    points = sorted(rng.sample(range(1, len(text)), pieces - 1))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def build_split(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    envelope = "openai"
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(2, 4))]
    which = rng.randrange(len(slots))
    pieces = _cuts(rng, wire_string(slots[which].arguments), rng.choice((2, 2, 3)))
    entries: list[dict[str, Any]] = []
    for i, slot in enumerate(slots):
        if i != which:
            entries.append(entry(envelope, slot.name, slot.arguments, ident(rng, envelope)))
            continue
        entries.append(entry(envelope, slot.name, pieces[0], ident(rng, envelope)))
        for piece in pieces[1:]:
            fragment = entry(envelope, None, piece, "")
            style = rng.randrange(3)
            if style == 1:
                fragment["function"] = {"name": "", "arguments": piece}
            if style == 2:
                fragment["function"] = {"name": None, "arguments": piece}
            entries.append(fragment)
    return _finish(
        rng,
        "split_call",
        envelope,
        slots,
        entries,
        ["P5"],
        f"call {which + 1}'s arguments string arrives in {len(pieces)} entries; the entries "
        "after the first have no name and one open call to continue",
    )


def build_interleaved(
    rng: random.Random, pools: dict[str, list[Source]], envelope: str
) -> Turn | None:
    envelope = "openai"
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(2, 4))]
    split = rng.sample(range(len(slots)), 2)
    pieces = {i: _cuts(rng, wire_string(slots[i].arguments), 2) for i in split}
    head: list[dict[str, Any]] = []
    tail: list[dict[str, Any]] = []
    for i, slot in enumerate(slots):
        if i in pieces:
            first = pieces[i][0] if rng.random() < 0.7 else ""
            rest = pieces[i][1] if first else pieces[i][0] + pieces[i][1]
            head.append(entry(envelope, slot.name, first, ident(rng, envelope), index=i))
            tail.append(entry(envelope, None, rest, "", index=i))
        else:
            head.append(entry(envelope, slot.name, slot.arguments, ident(rng, envelope), index=i))
    rng.shuffle(tail)
    return _finish(
        rng,
        "interleaved_fragments",
        envelope,
        slots,
        head + tail,
        ["P5", "P11"],
        "two calls' arguments arrive as fragments interleaved with each other; each "
        "fragment carries its call's index",
    )


def build_reused(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    envelope = "openai"
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(2, 5))]
    same_id = rng.random() < 0.3
    shared = ident(rng, envelope)
    entries = [
        entry(envelope, s.name, s.arguments, shared if same_id else ident(rng, envelope), index=0)
        for s in slots
    ]
    return _finish(
        rng,
        "reused_index",
        envelope,
        slots,
        entries,
        ["P6"],
        "every entry is a complete call sent under index 0" + (" and one id" if same_id else ""),
    )


def _with_copies(rng: random.Random, pools: dict[str, list[Source]]) -> tuple[list[Slot], Source]:
    base = [_value(s) for s in _pick(rng, pools["value"], rng.randint(1, 3))]
    copied = base[0].source
    copies = rng.randint(1, 3)
    slots = list(base)
    for _ in range(copies):
        assert copied.expected is not None
        if rng.random() < 0.5:  # the same writing again
            slot = Slot(copied, "copy", copied.expected, copied.name, copied.arguments)
        else:  # the call written as it should have been
            exp = copied.expected
            slot = Slot(copied, "clean_copy", exp, exp["name"], exp["arguments"])
        slots.insert(rng.randint(1, len(slots)), slot)
    return slots[:6], copied


def build_copies(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    slots, copied = _with_copies(rng, pools)
    return _finish(
        rng,
        "identical_copies",
        envelope,
        slots,
        _plain_entries(rng, envelope, slots),
        ["P7"],
        f"{copied.id}'s call is written more than once; after repair the copies are identical "
        "and the catalog says nothing about repeating it, so they collapse into the first",
    )


def build_repeat(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    slots, copied = _with_copies(rng, pools)
    assert copied.expected is not None
    repeat = {copied.expected["name"]}
    return _finish(
        rng,
        "repeat_matters",
        envelope,
        slots,
        _plain_entries(rng, envelope, slots),
        ["P7"],
        f"{copied.id}'s call is written more than once and its tool states "
        "annotations.idempotentHint: false, so every copy stands",
        repeat=repeat,
    )


def build_ambiguous(
    rng: random.Random, pools: dict[str, list[Source]], envelope: str
) -> Turn | None:
    envelope = "openai"
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(3, 5))]
    split = sorted(rng.sample(range(len(slots)), 2))
    pieces = {i: _cuts(rng, wire_string(slots[i].arguments), 2) for i in split}
    head: list[dict[str, Any]] = []
    for i, slot in enumerate(slots):
        args = pieces[i][0] if i in pieces else slot.arguments
        head.append(entry(envelope, slot.name, args, ident(rng, envelope)))
    tail = [entry(envelope, None, pieces[i][1], "") for i in split]
    for i in split:
        slots[i] = Slot(slots[i].source, "ambiguous", None, slots[i].name, slots[i].arguments)
    return _finish(
        rng,
        "ambiguous_split",
        envelope,
        slots,
        head + tail,
        ["P8", "P5"],
        "two calls are left open and their fragments carry no index: either could take "
        "either fragment, so neither is joined and both open calls are refused",
    )


def build_partial(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    values = [_value(s) for s in _pick(rng, pools["value"], rng.randint(1, 4))]
    refusals = [_refusal(s) for s in _pick(rng, pools["refusal"], rng.randint(1, 2))]
    slots = list(values)
    for r in refusals:
        slots.insert(rng.randint(0, len(slots)), r)
    return _finish(
        rng,
        "partial_refusal",
        envelope,
        slots,
        _plain_entries(rng, envelope, slots),
        ["P9"],
        "one or two calls must be refused (their sources' reasons); the others stand",
    )


def build_cut(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    if envelope == "openai":
        envelope = "bare"
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(1, 4))]
    cut = rng.choice(pools["cut"])
    assert cut.cut_text is not None
    entries = _plain_entries(rng, envelope, slots)
    text = turn_text(envelope, entries)[:-1] + ", " + cut.cut_text
    slots.append(Slot(cut, "cut", cut.expected, cut.name, None))
    if len({canonical(s.label) for s in slots}) != len(slots):
        return None
    return _finish(
        rng,
        "cut_turn",
        envelope,
        slots,
        None,
        ["P10"],
        f"the text ends inside its last call ({cut.id}'s cut text); rule 11 reads that call "
        "alone and the calls before it stand",
        text=text,
    )


def build_order(rng: random.Random, pools: dict[str, list[Source]], envelope: str) -> Turn | None:
    envelope = "openai"
    slots = [_value(s) for s in _pick(rng, pools["value"], rng.randint(3, 6))]
    order = list(range(len(slots)))
    while order == sorted(order):
        rng.shuffle(order)
    entries = [
        entry(envelope, s.name, s.arguments, ident(rng, envelope), index=i)
        for s, i in zip(slots, order, strict=True)
    ]
    return _finish(
        rng,
        "emission_order",
        envelope,
        slots,
        entries,
        ["P11"],
        f"the entries carry indexes {order}; the answer follows the text",
    )


BUILDERS: dict[str, Builder] = {
    "distinct_calls": build_distinct,
    "merged_arguments": build_merged,
    "doubled_name": build_doubled,
    "split_call": build_split,
    "interleaved_fragments": build_interleaved,
    "reused_index": build_reused,
    "identical_copies": build_copies,
    "repeat_matters": build_repeat,
    "ambiguous_split": build_ambiguous,
    "partial_refusal": build_partial,
    "cut_turn": build_cut,
    "emission_order": build_order,
}


# ---------------------------------------------------------------------------- the build


def attempted(turn: Turn) -> int:
    return len(turn.slots)


def make_turns(
    cases: list[dict[str, Any]], seed: int = DEFAULT_SEED, per_category: int = PER_CATEGORY
) -> list[Turn]:
    """Every category's turns, in category order (a drawn turn a builder cannot make, or one
    whose text is already in the corpus, is drawn again)."""
    pools = sources_of(cases)
    rng = random.Random(seed)
    turns: list[Turn] = []
    for category in PARALLEL_CATEGORIES:
        made = 0
        tries = 0
        texts = {t.text for t in turns}
        while made < per_category:
            tries += 1
            if tries > 200 * per_category:
                raise ParallelError(f"{category}: the main corpus cannot feed {per_category} turns")
            envelope = ENVELOPES[(made + tries) % len(ENVELOPES)]
            try:
                turn = BUILDERS[category](rng, pools, envelope)
            except ParallelError:
                continue
            if turn is None or not 2 <= attempted(turn) <= 6 or turn.text in texts:
                continue
            texts.add(turn.text)
            turns.append(turn)
            made += 1
    return turns


def _slot_record(slot: Slot) -> dict[str, Any]:
    return {"source": slot.source.id, "role": slot.role, "name": slot.name, "expected": slot.label}


def case_of(turn: Turn, number: int) -> dict[str, Any]:
    return {
        "id": f"tcp-{number:04d}",
        "track": TRACK,
        "category": turn.category,
        "text": turn.text,
        "tools": turn.tools,
        "expected": turn.expected,
    }


def rationale_of(turn: Turn, number: int) -> dict[str, Any]:
    return {
        "id": f"tcp-{number:04d}",
        "rule": ", ".join(turn.decisions),
        "rationale": f"{turn.note} ({', '.join(turn.decisions)}). Envelope: {turn.envelope} (P12).",
        "calls": [_slot_record(s) for s in turn.slots],
        "repeat": sorted(turn.repeat),
    }


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(canonical(r).encode("utf-8") + b"\n" for r in rows)


def per_category_of(cases: list[dict[str, Any]]) -> int:
    """Turns per category (the corpus holds the same number of each, in category order)."""
    return len(cases) // max(1, len({c["category"] for c in cases}))


def build_files(main_corpus: bytes, seed: int = DEFAULT_SEED) -> dict[str, bytes]:
    """The track's corpus, rationale and manifest from the main corpus's bytes."""
    cases = [
        loads_strict(line) for line in main_corpus.decode("utf-8").splitlines() if line.strip()
    ]
    turns = make_turns(cases, seed)
    cases_ = [case_of(t, i) for i, t in enumerate(turns, 1)]
    corpus = jsonl(cases_)
    rationale = jsonl([rationale_of(t, i) for i, t in enumerate(turns, 1)])
    per = per_category_of(cases_)
    sample = jsonl([c for i, c in enumerate(cases_) if i % per < SAMPLE_PER_CATEGORY])
    manifest = {
        "track": TRACK,
        "generator_version": __version__,
        "version": PARALLEL_CORPUS_VERSION,
        "spec_version": PARALLEL_SPEC_VERSION,
        "seed": seed,
        "source": {"name": "toolcall300.jsonl", "sha256": hashlib.sha256(main_corpus).hexdigest()},
        "files": {
            CORPUS_FILE: {"sha256": hashlib.sha256(corpus).hexdigest(), "count": len(turns)},
            RATIONALE_FILE: {"sha256": hashlib.sha256(rationale).hexdigest(), "count": len(turns)},
            SAMPLE_FILE: {
                "sha256": hashlib.sha256(sample).hexdigest(),
                "count": len(sample.splitlines()),
            },
        },
    }
    return {
        CORPUS_FILE: corpus,
        RATIONALE_FILE: rationale,
        SAMPLE_FILE: sample,
        MANIFEST_FILE: json.dumps(manifest, indent=2, sort_keys=True).encode("utf-8") + b"\n",
    }
