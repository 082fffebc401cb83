"""Build a TOOLCALL-300 corpus from a tool catalog: the pure core of ``toolcall300 generate``.

The build is a pure function of (catalog, pools, seed): one ``random.Random(seed)`` is
passed down, 25 cases per category are made by the named mutation rules of
``generator.rules``, ids are assigned after a seeded shuffle, and every integrity check
of ``generator.checks`` must pass before anything is written (same inputs, byte-identical
files). The CLI shell is ``generator.cli``, the only generator code that touches files.
This module contains no labelling logic of its own and does not score anything.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from toolcall300 import __version__
from toolcall300.canonical import (
    jsonl_bytes,
    loads_strict,
    loads_strict_file,
    pretty_bytes,
    sha256_hex,
)
from toolcall300.catalog import (
    CatalogError,
    Tool,
    generation_problems,
    load_catalog,
    tool_name,
    tool_schema,
)
from toolcall300.cliutil import UsageError
from toolcall300.controls import integrator, naive
from toolcall300.generator.checks import (
    CHECKS,
    Corpus,
    Report,
    run_checks,
)
from toolcall300.generator.envelopes import ENVELOPE_NOTES, envelope_of
from toolcall300.generator.oracles import Runner, decisions_rested_on, pass_counts
from toolcall300.generator.rules import Ctx, Draft, Maker
from toolcall300.generator.rules.arrays import array_vs_scalar
from toolcall300.generator.rules.coercion import type_coercion
from toolcall300.generator.rules.defaults import (
    missing_required_arg,
    missing_required_refused,
    offers_required_default,
)
from toolcall300.generator.rules.enums import enum_violation
from toolcall300.generator.rules.hallucinated import hallucinated_tool
from toolcall300.generator.rules.multiple import multiple_calls
from toolcall300.generator.rules.names import wrong_tool_name
from toolcall300.generator.rules.nesting import nested_flattened
from toolcall300.generator.rules.strings import args_as_string
from toolcall300.generator.rules.truncated import truncated
from toolcall300.generator.rules.undeclared import extra_undeclared_arg
from toolcall300.generator.rules.unrecoverable import unrecoverable
from toolcall300.generator.shape import DEFAULT_SHAPE, PER_CATEGORY, Shape
from toolcall300.generator.values import (
    GenerationError,
    Pools,
    PoolsError,
    build_call,
    pools_problems,
)
from toolcall300.schema import is_valid
from toolcall300.spec import CATEGORIES, CORPUS_VERSION, SPEC_VERSION

DEFAULT_SEED = 20261130
DATA = Path(__file__).resolve().parents[1] / "data"
FILES = ("toolcall300.jsonl", "rationale.jsonl", "sample30.jsonl")
MANIFEST = "manifest.json"
RECIPE = "inputs/recipe.json"


#: The twelve categories (report order, docs/case-format.md) and the mutation rule that makes each.
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
assert tuple(MAKERS) == CATEGORIES

#: What each rule needs from a catalog, for the error when no tool offers it.
NEEDS: dict[str, str] = {
    "wrong_tool_name": "a name that stays unambiguous when mangled",
    "missing_required_arg": "a required property with a default",
    "extra_undeclared_arg": "additionalProperties: false at the top level",
    "type_coercion": "an integer, number or boolean property",
    "enum_violation": "a string enum property",
    "nested_flattened": "a nested object whose keys no other property uses, under a closed or "
    "required top level",
    "array_vs_scalar": "an array of scalars or a scalar property",
    "args_as_string": "any valid call",
    "multiple_calls": "any valid call",
    "hallucinated_tool": "room for a name that matches no declared tool",
    "truncated": "calls with at least two properties to cut between (optional ones help)",
    "unrecoverable": "any of the refusal mix's needs (required without default, enums, typed scalars)",
    "missing_required_arg_refused": "a required property, with or without a default (D6.4)",
}


@dataclass(frozen=True)
class Inputs:
    """Everything a build depends on, as bytes, so the manifest can pin them."""

    catalog_name: str
    catalog_bytes: bytes
    pools_name: str
    #: ``None``: no pools; every value comes from its schema (docs/pools.md).
    pools_bytes: bytes | None
    seed: int
    #: ``(name, bytes)`` of the licence that governs the corpus, written beside it and pinned
    #: like its other files (the recipe's ``licence``), so ``download`` delivers it with them.
    licence: tuple[str, bytes] | None = None
    #: ``module:callable`` of a reference normaliser whose per-category passes the manifest
    #: records beside the controls' (in-sample: it was written against these labels).
    reference: str | None = None
    #: The categories and counts asked for (``generate --categories``); the seed's by default.
    asked: Shape = DEFAULT_SHAPE
    #: Refuse rather than build a smaller shape (a recorded recipe: the paid corpus).
    full_shape_only: bool = False


@dataclass(frozen=True)
class Build:
    """A finished, checked corpus: the file bytes and the check report."""

    files: dict[str, bytes]
    report: Report
    shape: Shape = DEFAULT_SHAPE
    #: tools no call can be built for (``catalog.generation_problems``), with why
    left_out: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- the pure core


#: How many tools a category tries with one variant before the next (see make_category).
STRIDE = 64


class CategoryUnfed(GenerationError):
    """The catalog cannot feed one category; the message is the reason the manifest states."""


def maker_for(ctx: Ctx, category: str) -> tuple[Maker, bool]:
    """The rule that makes ``category`` for this catalog, and whether it is D6.4's reading."""
    if category == "missing_required_arg" and not offers_required_default(ctx.catalog):
        return missing_required_refused, True
    return MAKERS[category], False


def make_category(
    ctx: Ctx, category: str, count: int = PER_CATEGORY, seen: set[str] | None = None
) -> list[Draft]:
    """``count`` drafts of one category with texts unique in the corpus (``seen``: the texts
    of the categories made before); tools rotate in a seeded order.

    Raises :class:`CategoryUnfed` naming what the catalog lacks when fewer than ``count``
    distinct cases can be made; a tool whose values cannot be built is skipped, and named in
    the reason if no tool fed the category.
    """
    maker, _ = maker_for(ctx, category)
    order = list(ctx.catalog)
    ctx.rng.shuffle(order)
    out: list[Draft] = []
    seen = set() if seen is None else seen
    tool_errors: dict[str, str] = {}
    # the variant moves on after a full turn of the tools, or after STRIDE of them in a large
    # catalog: a variant no tool can make (a repeated prose answer) must not cost a turn of
    # thousands of tools per case, which made a build quadratic in the catalog's size
    stride = min(len(order), STRIDE)
    # every tool once, then eleven strides more: a category no tool feeds costs one turn of a
    # large catalog, not twelve (a 10 000-tool catalog took minutes); the same in a small one
    attempts = min(len(order) * 12, len(order) + 11 * STRIDE)
    for i in range(count):
        for attempt in range(attempts):
            tool = order[(i + attempt) % len(order)]
            try:
                made = maker(ctx, tool, i + attempt // stride)
            except GenerationError as exc:
                tool_errors.setdefault(tool_name(tool), str(exc))
                continue
            if made is not None and made.text not in seen:
                seen.add(made.text)
                out.append(made)
                break
        else:
            need = NEEDS[
                "missing_required_arg_refused" if maker is missing_required_refused else category
            ]
            reason = f"no tool in the catalog offers {need}"
            if out:
                reason = f"only {len(out)} distinct cases of {count}: {reason} in more ways"
            if tool_errors:
                first = next(iter(tool_errors.items()))
                reason += f" (tool {first[0]}: {first[1]})"
            raise CategoryUnfed(reason)
    return out


def envelope_note(text: str, rationale: str) -> str:
    """The rationale, saying how the text's envelope is read (E2) unless it already does."""
    env = envelope_of(text)
    if env is None or "(E2)" in rationale:
        return rationale
    array = " in a JSON array (E1)" if text.lstrip().startswith("[") else ""
    return f"{rationale} The text is read as {ENVELOPE_NOTES[env]}{array} (E2)."


def decision_notes(case: dict[str, Any], rationale: str) -> str:
    """The rationale, naming each decision the case rests on that its rule did not name."""
    extra = [
        f"{why} ({did})" for did, why in decisions_rested_on(case).items() if did not in rationale
    ]
    return f"{rationale} It also rests on: {'; '.join(extra)}." if extra else rationale


def make_cases(
    catalog: list[dict[str, Any]], pools: Pools, seed: int, asked: Shape = DEFAULT_SHAPE
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Shape]:
    """The cases and their rationale rows, ids assigned after a seeded shuffle, and the shape
    built: each category ``asked`` for that the catalog can feed, the rest named with why."""
    ctx = Ctx(random.Random(seed), catalog, pools)
    drafts: list[Draft] = []
    counts: dict[str, int] = {}
    absent = dict(asked.absent)
    refused = False
    seen: set[str] = set()
    for category in CATEGORIES:
        count = asked.counts.get(category, 0)
        if not count:
            absent.setdefault(category, "not asked for (generate --categories)")
            continue
        try:
            made = make_category(ctx, category, count, set(seen))
        except CategoryUnfed as exc:
            absent[category] = str(exc)
            continue
        drafts += made
        seen |= {d.text for d in made}
        counts[category] = count
        refused = refused or maker_for(ctx, category)[1]
    if not drafts:
        raise GenerationError(
            "the catalog feeds no category: "
            + "; ".join(f"{cat}: {why}" for cat, why in absent.items())
        )
    ctx.rng.shuffle(drafts)  # ids must not reveal the category
    cases, rationale = [], []
    for n, d in enumerate(drafts, 1):
        cid = f"tc300-{n:04d}"
        cases.append(
            {
                "id": cid,
                "category": d.category,
                "text": d.text,
                "tools": d.tools,
                "expected_kind": "value" if d.expected is not None else "unrecoverable",
                "expected": d.expected,
            }
        )
        why = decision_notes(cases[-1], envelope_note(d.text, d.rationale))
        rationale.append({"id": cid, "rule": d.rule, "rationale": why})
    built = (
        DEFAULT_SHAPE
        if counts == DEFAULT_SHAPE.counts and not refused
        else Shape(counts, absent, refused)
    )
    return cases, rationale, built


def make_sample(
    cases: list[dict[str, Any]], seed: int, shape: Shape = DEFAULT_SHAPE
) -> list[dict[str, Any]]:
    """The stratified public slice, id order: 2 cases of each category and 3 of six seeded
    ones for the default shape; the same split of 30 (or of every case, when fewer) over the
    categories a smaller shape holds."""
    rng = random.Random(f"sample30:{seed}")
    built = [c for c in CATEGORIES if shape.counts.get(c)]
    base, extras = shape.sample_quota()
    spare = shape.sample_extras_from()
    extra = set(rng.sample(spare, min(extras, len(spare))))
    picked: list[dict[str, Any]] = []
    for cat in built:
        pool = [c for c in cases if c["category"] == cat]
        picked += rng.sample(pool, min(len(pool), base + 1 if cat in extra else base))
    return sorted(picked, key=lambda c: str(c["id"]))


def load_reference(spec: str) -> Runner:
    """The ``module:callable`` a recipe names as its reference normaliser."""
    module, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise GenerationError(f"reference {spec!r} cannot be loaded: {exc}") from exc
    if not callable(target):
        raise GenerationError(f"reference {spec!r} is not callable")
    return cast(Runner, target)


#: The runners of the table that are the suite's own controls (C1, C2): they edit nothing.
CONTROLS = ("naive", "integrator")


def discrimination(cases: list[dict[str, Any]], reference: str | None) -> dict[str, Any]:
    """How many cases of each category each control passes (rules 1 and 2), and the
    reference normaliser when the recipe names one, marked in-sample."""
    runners: dict[str, Runner] = {"naive": naive, "integrator": integrator}  # CONTROLS
    if reference:
        runners["reference"] = load_reference(reference)
    table = pass_counts(cases, runners, trusted=CONTROLS)
    out: dict[str, Any] = {
        "controls": {"naive": "C1", "integrator": "C2"},
        "categories": table,
        "total": {name: sum(row[name] for row in table.values()) for name in runners},
    }
    if reference:
        out["reference"] = {
            "adapter": reference,
            "warning": "in-sample: the reference normaliser was written against these labels, "
            "so its row shows the labels are reachable, not how a normaliser written from the "
            "contract alone would score",
        }
    return out


def manifest_for(
    inputs: Inputs,
    files: dict[str, bytes],
    report: Report | None,
    table: dict[str, Any] | None = None,
    shape: Shape = DEFAULT_SHAPE,
    left_out: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Version, seed, input pins, file pins, the discrimination table and how many
    assertions the build ran."""
    return (
        {
            "version": CORPUS_VERSION,
            "generator_version": __version__,
            "spec_version": SPEC_VERSION,
            "seed": inputs.seed,
            "catalog": {"name": inputs.catalog_name, "sha256": sha256_hex(inputs.catalog_bytes)},
            "pools": (
                {"name": inputs.pools_name, "sha256": sha256_hex(inputs.pools_bytes)}
                if inputs.pools_bytes is not None
                else None
            ),
            "files": {
                f: {
                    "sha256": sha256_hex(files[f]),
                    "bytes": len(files[f]),
                    "count": files[f].count(b"\n"),
                }
                for f in files
                if f != MANIFEST
            },
            "assertions": report.assertions if report else None,
            "checks": list(CHECKS),
            "discrimination": table,
        }
        | ({"shape": entry} if (entry := shape.manifest_entry()) else {})
        | ({"tools_left_out": dict(sorted(left_out.items()))} if left_out else {})
    )


#: How many calls a tool is tried with before it is left out as one no valid call is built for.
PROBE_CALLS = 8


def unbuildable(tool: Tool, pools: Pools) -> str | None:
    """Why no valid call can be built for ``tool``, or ``None``: a schema every value of which
    the reader could not rule out (a pattern against ``minLength``, ``minProperties`` past the
    declared names, ``uniqueItems`` with too few values) is found by trying, with an RNG of its
    own so the build's draws are untouched."""
    rng = random.Random(f"probe:{tool_name(tool)}")
    why = "no call built for it validates against its schema"
    for _ in range(PROBE_CALLS):
        try:
            call = build_call(rng, tool, pools)
        except GenerationError as exc:
            why = str(exc)
            continue
        if is_valid(call["arguments"], tool_schema(tool)):
            return None
    return f"tool {tool_name(tool)[:80]}: {why}"


def buildable_tools(
    catalog: list[Tool], pools: Pools | None = None
) -> tuple[list[Tool], dict[str, str]]:
    """The tools a build can make calls for, and each other one with why it is left out
    (``catalog.generation_problems``, then :func:`unbuildable`); a catalog with none left is
    refused whole."""
    left_out: dict[str, str] = {}
    for tool in catalog:
        problems = generation_problems([tool])
        why = problems[0] if problems else unbuildable(tool, pools or {})
        if why:
            left_out[tool_name(tool)] = why
    if len(left_out) == len(catalog):
        raise CatalogError([left_out[tool_name(t)] for t in catalog])
    return [t for t in catalog if tool_name(t) not in left_out], left_out


def read_pools(inputs: Inputs) -> Pools:
    """The pools a build uses: none unless given (values then come from each schema), and
    a given pools file must follow docs/pools.md (:class:`PoolsError` names each break)."""
    if inputs.pools_bytes is None:
        return {}
    try:
        raw = loads_strict_file(inputs.pools_bytes)
    except RecursionError:
        raise PoolsError(["the file nests deeper than the JSON reader allows"]) from None
    problems = pools_problems(raw)
    if problems:
        raise PoolsError(problems)
    return cast(Pools, raw)


def build(inputs: Inputs) -> Build:
    """Generate and check a corpus; raises ``CatalogError`` or ``GenerationError`` on bad inputs."""
    raw = loads_strict_file(inputs.catalog_bytes)
    tools = load_catalog(raw)
    pools = read_pools(inputs)
    catalog, left_out = buildable_tools(tools, pools)
    cases, rationale, shape = make_cases(catalog, pools, inputs.seed, inputs.asked)
    if inputs.full_shape_only and not shape.is_default:
        raise GenerationError(
            "the recipe asks for the default shape, but the catalog does not feed "
            + "; ".join(f"{cat} ({why})" for cat, why in shape.absent.items())
        )
    sample = make_sample(cases, inputs.seed, shape)
    files = {
        "toolcall300.jsonl": jsonl_bytes(cases),
        "rationale.jsonl": jsonl_bytes(rationale),
        "sample30.jsonl": jsonl_bytes(sample),
    }
    if inputs.licence is not None:
        files[inputs.licence[0]] = inputs.licence[1]
    table = discrimination(cases, inputs.reference)
    manifest = manifest_for(inputs, files, None, table, shape, left_out)
    corpus = Corpus(cases, rationale, sample, manifest, dict(files))
    report = run_checks(corpus)
    files[MANIFEST] = pretty_bytes(manifest_for(inputs, files, report, table, shape, left_out))
    return Build(files, report, shape, left_out)


def read_jsonl(name: str, data: bytes) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file; a malformed line is named by its number."""
    rows = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not UTF-8 ({exc.reason})") from exc
    for n, line in enumerate(text.splitlines(), 1):
        try:
            row = loads_strict(line)
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"{name} line {n}: not JSON ({exc})") from exc
        if not isinstance(row, dict):
            raise UsageError(f"{name} line {n}: not a JSON object")
        rows.append(row)
    return rows


def corpus_from_files(files: dict[str, bytes]) -> Corpus:
    """The artefacts of an existing corpus directory, for ``--check-only``."""
    try:
        manifest = loads_strict(files[MANIFEST]) if MANIFEST in files else None
    except (ValueError, RecursionError) as exc:  # not UTF-8 or JSON, or nested past the stack
        raise UsageError(f"{MANIFEST}: not JSON ({exc})") from exc
    return Corpus(
        read_jsonl(FILES[0], files.get(FILES[0], b"")),
        read_jsonl(FILES[1], files.get(FILES[1], b"")),
        read_jsonl(FILES[2], files.get(FILES[2], b"")),
        manifest if isinstance(manifest, dict) else None,
        {k: v for k, v in files.items() if k != MANIFEST},
    )


def input_pin_failures(
    manifest: dict[str, Any] | None, recorded: dict[str, bytes | None]
) -> list[str]:
    """The recorded inputs beside a corpus must be the ones its manifest pins."""
    out = []
    for key in ("catalog", "pools"):
        pin = (manifest or {}).get(key) or {}
        data = recorded.get(key)
        if data is not None and sha256_hex(data) != pin.get("sha256"):
            out.append(f"manifest_pins: recorded {key} does not match the manifest's sha256")
    return out
