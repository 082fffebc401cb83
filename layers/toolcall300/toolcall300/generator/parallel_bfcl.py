"""BFCL's ``parallel`` and ``parallel_multiple`` questions as turns of the parallel track.

BFCL (the Berkeley Function Calling Leaderboard) asks a model for several calls at once and
accepts, per argument, a list of values (``""`` among them: the argument may be left out). A
question becomes a turn where its schemas allow: its functions import into tools.json
(``toolcall300.importers``, BFCL's dialect, dotted names sent with ``_`` as BFCL sends them),
and each ground-truth call takes every argument's first accepted value (left out when that is
``""``) and is valid under its imported schema. Anything else is skipped, and counted.

The turn's text is those calls as a serving layer delivers them, in a shape chosen by the
question's position (cycling): one of the track's envelopes (P12), or one of the failures
the track's decisions read (two documents in one arguments string, P3; a doubled name, P4;
a call split across entries, P5), falling back to an envelope where the calls do not allow
that failure. The expected list is the calls in order, copies collapsed (P7): the shapes
change nothing of what the calls mean. Pure: BFCL's lines in, cases out.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import canonical, loads_strict
from toolcall300.generator.oracles import undeclared_keys
from toolcall300.generator.parallel import entry, ident, turn_text, wire_string
from toolcall300.importers import ImportRefused, import_catalog
from toolcall300.rules import declared_name_splits, resolve_tool_name, tool_name_matches
from toolcall300.schema import is_valid

#: BFCL's data files this converter reads (``bfcl_eval/data/`` and its ``possible_answer/``).
KINDS = ("parallel", "parallel_multiple")
SHAPES = ("openai", "anthropic", "bare", "merged", "doubled", "split")
SEED = 20261207


def question_file(kind: str) -> str:
    return f"BFCL_v4_{kind}.json"


@dataclass
class Converted:
    """The turns made, and why each question left out was left out (id -> reason)."""

    cases: list[dict[str, Any]]
    skipped: dict[str, str]


def _lines(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.decode("utf-8").splitlines():
        if line.strip():
            yield loads_strict(line)


def _first(options: Any) -> Any:
    """BFCL's accepted values for one argument: the first, recursively for a nested object."""
    if isinstance(options, list) and options:
        value = options[0]
    else:
        raise ValueError("no accepted value")
    if isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if not _omitted(v)}
    return value


def _integral_floats(value: Any, schema: Any) -> bool:
    """Whether a float with no fraction sits where ``schema`` declares an integer (a
    normaliser writes that 3.0 as 3, D5.2: such a label would rest on the spelling)."""
    if not isinstance(schema, dict):
        return False
    if isinstance(value, float):
        types = schema.get("type")
        declared = types if isinstance(types, list) else [types]
        return value.is_integer() and "integer" in declared
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return any(_integral_floats(v, props.get(k)) for k, v in value.items())
    if isinstance(value, list):
        return any(_integral_floats(v, schema.get("items")) for v in value)
    return False


def _omitted(options: Any) -> bool:
    return isinstance(options, list) and bool(options) and options[0] == ""


def _calls(
    answer: dict[str, Any], tools: list[dict[str, Any]], renamed: dict[str, str]
) -> list[dict[str, Any]]:
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
    calls = []
    for item in answer["ground_truth"]:
        if not isinstance(item, dict) or len(item) != 1:
            raise ValueError("a ground-truth entry that is not one call")
        ((bfcl_name, params),) = item.items()
        name = renamed.get(bfcl_name, bfcl_name)
        if name not in schemas:
            raise ValueError(f"{bfcl_name!r} is not among the imported tools")
        arguments = {k: _first(v) for k, v in params.items() if not _omitted(v)}
        if not is_valid(arguments, schemas[name]):
            raise ValueError(
                f"{bfcl_name}: the first accepted values are not valid under its schema"
            )
        if next(undeclared_keys(arguments, schemas[name]), None) is not None:
            raise ValueError(
                f"{bfcl_name}: an accepted argument its schema does not declare (D7.2)"
            )
        if _integral_floats(arguments, schemas[name]):
            raise ValueError(f"{bfcl_name}: a value written as a float with no fraction (D5.2)")
        calls.append({"name": name, "arguments": arguments})
    return calls


def _collapse(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for call in calls:
        if canonical(call) not in seen:  # P7: BFCL states nothing about repeating
            seen.add(canonical(call))
            out.append(call)
    return out


def _text(
    shape: str, calls: list[dict[str, Any]], names: list[str], rng: random.Random
) -> tuple[str, str]:
    """The turn's text in ``shape`` (or an envelope, when the calls do not allow it)."""
    if shape == "merged":
        first = calls[0]["name"]
        same = [c for c in calls if c["name"] == first]
        if len(same) >= 2 and all(c["name"] == first for c in calls):
            merged = "".join(wire_string(c["arguments"]) for c in calls)
            return "merged", turn_text(
                "openai", [entry("openai", first, merged, ident(rng, "openai"))]
            )
    if shape == "doubled" and len(calls) == 2:
        doubled = calls[0]["name"] + calls[1]["name"]
        plain = resolve_tool_name(doubled, names) is None and not tool_name_matches(doubled, names)
        if plain and len(declared_name_splits(doubled, names, 2)) == 1:
            merged = "".join(wire_string(c["arguments"]) for c in calls)
            return "doubled", turn_text(
                "openai", [entry("openai", doubled, merged, ident(rng, "openai"))]
            )
    if shape == "split":
        which = rng.randrange(len(calls))
        text = wire_string(calls[which]["arguments"])
        if len(text) >= 2:
            cut = rng.randrange(1, len(text))
            entries = []
            for i, c in enumerate(calls):
                if i == which:
                    entries.append(entry("openai", c["name"], text[:cut], ident(rng, "openai")))
                    entries.append(entry("openai", None, text[cut:], ""))
                else:
                    entries.append(entry("openai", c["name"], c["arguments"], ident(rng, "openai")))
            return "split", turn_text("openai", entries)
    envelope = shape if shape in ("openai", "anthropic", "bare") else "openai"
    return envelope, turn_text(
        envelope, [entry(envelope, c["name"], c["arguments"], ident(rng, envelope)) for c in calls]
    )


def convert(questions: dict[str, bytes], answers: dict[str, bytes], seed: int = SEED) -> Converted:
    """``questions`` and ``answers``: kind -> that kind's BFCL file (one question a line)."""
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for kind in KINDS:
        if kind not in questions:
            continue
        truth = {a["id"]: a for a in _lines(answers[kind])}
        for number, question in enumerate(_lines(questions[kind])):
            qid = question["id"]
            try:
                imported = import_catalog(question["function"], "bfcl")
                if imported.left_out:
                    raise ValueError(
                        f"a function the catalog contract cannot express: {imported.left_out[0]}"
                    )
                tools = imported.tools
                renamed = {
                    f["name"]: t["function"]["name"]
                    for f, t in zip(question["function"], tools, strict=True)
                }
                calls = _calls(truth[qid], tools, renamed)
            except (ImportRefused, ValueError, KeyError) as exc:
                skipped[qid] = str(exc).splitlines()[0][:200]
                continue
            if len(calls) < 2:
                skipped[qid] = "fewer than two calls"
                continue
            names = [t["function"]["name"] for t in tools]
            shape, text = _text(SHAPES[number % len(SHAPES)], calls, names, rng)
            cases.append(
                {
                    "id": f"bfcl-{qid}",
                    "track": "parallel",
                    "category": f"bfcl_{kind}_{shape}",
                    "text": text,
                    "tools": tools,
                    "expected": _collapse(calls),
                }
            )
    return Converted(cases, skipped)
