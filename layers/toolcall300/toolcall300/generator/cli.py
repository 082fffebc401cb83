"""``toolcall300 generate``: the CLI shell over :mod:`toolcall300.generator.build`.

The only generator code that touches files: it reads the inputs (given, default or recorded
in ``DIR/inputs``), runs the pure build or the integrity checks, and writes a corpus only
when every check held. It contains no labelling logic and does not score anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from toolcall300.canonical import loads_strict, loads_strict_file
from toolcall300.catalog import CatalogError
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError, read_limited
from toolcall300.generator.build import (
    DATA,
    DEFAULT_SEED,
    FILES,
    MANIFEST,
    RECIPE,
    Inputs,
    build,
    corpus_from_files,
    input_pin_failures,
)
from toolcall300.generator.checks import CHECKS, Report, run_checks
from toolcall300.generator.parallel import (
    CORPUS_FILE,
    MANIFEST_FILE,
    RATIONALE_FILE,
    SAMPLE_FILE,
    ParallelError,
    build_files,
    jsonl,
)
from toolcall300.generator.parallel import DEFAULT_SEED as PARALLEL_SEED
from toolcall300.generator.parallel_bfcl import KINDS as BFCL_KINDS
from toolcall300.generator.parallel_bfcl import convert as convert_bfcl
from toolcall300.generator.parallel_bfcl import question_file
from toolcall300.generator.parallel_checks import CHECKS as PARALLEL_CHECKS
from toolcall300.generator.parallel_checks import check_files
from toolcall300.generator.shape import DEFAULT_SHAPE, PER_CATEGORY, Shape
from toolcall300.generator.values import GenerationError, PoolsError
from toolcall300.importers import FORMATS, ImportRefused, catalog_bytes, import_file
from toolcall300.spec import CATEGORIES

#: What ``--track parallel --bfcl`` writes in ``--out``.
BFCL_FILE = "bfcl-parallel.jsonl"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(
        prog="toolcall300 generate", description="Build or check a TOOLCALL-300 corpus."
    )
    parser.add_argument("--out", help="corpus directory to write (or, with --check-only, to check)")
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--tools",
        help="tool catalog: tools.json or any form of docs/catalog-import.md, detected "
        "(default: the public demo catalog)",
    )
    parser.add_argument(
        "--format",
        choices=list(FORMATS),
        help="read --tools as this form instead of detecting it (docs/catalog-import.md)",
    )
    parser.add_argument(
        "--pools",
        help="value pools JSON (docs/pools.md), or 'demo' for the demo's pools; default: none, "
        "values come from each schema (the demo catalog alone uses the demo pools)",
    )
    parser.add_argument(
        "--categories",
        metavar="LIST",
        help="comma-separated categories to build, each optionally NAME=COUNT "
        "(default: all twelve; a category the catalog cannot feed is named, not built)",
    )
    parser.add_argument(
        "--per-category",
        type=int,
        metavar="N",
        help=f"cases per category (default {PER_CATEGORY})",
    )
    parser.add_argument(
        "--check-only", action="store_true", help="re-run every integrity check on --out"
    )
    parser.add_argument(
        "--list-checks", action="store_true", help="print the classes of integrity check"
    )
    parser.add_argument(
        "--rebuild", metavar="DIR", help="rebuild from the inputs recorded in DIR/inputs"
    )
    parser.add_argument(
        "--track",
        choices=("single", "parallel"),
        default="single",
        help="parallel: build (or --check-only) the parallel track's corpus from --from",
    )
    parser.add_argument(
        "--from",
        dest="main",
        metavar="CORPUS",
        help="--track parallel: the main corpus it is built from (default: OUT/../toolcall300.jsonl)",
    )
    parser.add_argument(
        "--bfcl",
        metavar="DATA_DIR",
        help="--track parallel: convert BFCL's parallel and parallel_multiple questions "
        "(bfcl_eval/data/) into OUT/bfcl-parallel.jsonl instead",
    )
    args = parser.parse_args(argv)
    if not args.list_checks and not args.out:
        raise UsageError("toolcall300 generate: --out DIR is required")
    args.asked = asked_shape(args.categories, args.per_category)
    return args


def asked_shape(categories: str | None, per_category: int | None) -> Shape:
    """The shape ``--categories`` and ``--per-category`` ask for (the seed's without them)."""
    if categories is None and per_category is None:
        return DEFAULT_SHAPE
    default = PER_CATEGORY if per_category is None else per_category
    if default < 1:
        raise UsageError("toolcall300 generate: --per-category must be at least 1")
    counts: dict[str, int] = {}
    for item in categories.split(",") if categories else list(CATEGORIES):
        name, _, count = item.strip().partition("=")
        if name not in CATEGORIES:
            raise UsageError(
                f"toolcall300 generate: unknown category {name!r} (one of {', '.join(CATEGORIES)})"
            )
        if count and (not count.isdigit() or int(count) < 1):
            raise UsageError(
                f"toolcall300 generate: {item.strip()!r}: COUNT must be a positive integer"
            )
        counts[name] = int(count) if count else default
    return Shape({c: counts[c] for c in CATEGORIES if c in counts})


def _recorded_inputs(directory: Path, *, with_licence: bool = True) -> Inputs:
    """The recipe's inputs; ``--check-only`` skips the licence (its manifest pin checks it)."""
    recipe_path = directory / RECIPE
    if not recipe_path.is_file():
        raise UsageError(
            f"toolcall300 generate: {directory} has no recorded inputs ({RECIPE} is missing): "
            "only a corpus built by toolcall300 generate (or downloaded with toolcall300 "
            "download) can be rebuilt or checked; a corpus written by hand has no recipe"
        )
    try:
        recipe = loads_strict_file(read_limited(recipe_path))
        tools, pools = directory / recipe["tools"], directory / recipe["pools"]
        licence = directory / recipe["licence"] if with_licence and "licence" in recipe else None
        reference = recipe.get("reference")
        return Inputs(
            tools.name,
            read_limited(tools),
            pools.name,
            read_limited(pools),
            int(recipe["seed"]),
            (licence.name, read_limited(licence)) if licence else None,
            str(reference) if reference is not None else None,
            full_shape_only=True,
        )
    except OSError as exc:  # a file the recipe names: its name and why, not an errno
        raise UsageError(
            f"toolcall300 generate: cannot read the recorded inputs in {directory}: "
            f"{exc.filename or ''} {exc.strerror or exc}".replace("  ", " ")
        ) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"toolcall300 generate: cannot read the recorded inputs in {directory}: {exc}"
        ) from exc


DEMO_TOOLS = DATA / "demo_tools.json"
DEMO_POOLS = DATA / "demo_pools.json"


def _imported_catalog(
    path: Path, data: bytes, fmt: str | None, stderr: TextIO
) -> tuple[str, bytes]:
    """The catalog a build uses: the file itself when it is a tools.json catalog the import
    leaves unchanged, else the import of it (what changed is summed up on stderr; ``toolcall300
    tools import`` prints every change)."""
    imported = import_file(data, fmt)
    if imported.unchanged and imported.format == "tools-json":
        return path.name, data
    for line in imported.left_out:
        stderr.write(f"import: left out {line}\n")
    stderr.write(
        f"import: read {path.name} as {imported.format}: {len(imported.tools)} tools, "
        f"{len(imported.changes)} changes, {len(imported.left_out)} left out "
        f"(toolcall300 tools import {path.name} lists them)\n"
    )
    return f"{path.stem}.imported.json", catalog_bytes(imported, data)


def _cli_inputs(args: argparse.Namespace, stderr: TextIO) -> Inputs:
    """The inputs the flags name. Without ``--pools`` values come from each schema; the
    demo's pools apply to the demo catalog alone (its bytes), or when asked (docs/pools.md).
    A ``--tools`` file is read through its importer (docs/catalog-import.md)."""
    if args.rebuild:
        return _recorded_inputs(Path(args.rebuild))
    tools = Path(args.tools) if args.tools else DEMO_TOOLS
    try:
        name, catalog = tools.name, read_limited(tools)
        if args.tools:
            name, catalog = _imported_catalog(tools, catalog, args.format, stderr)
        if args.pools == "demo" or (args.pools is None and catalog == DEMO_TOOLS.read_bytes()):
            pools: Path | None = DEMO_POOLS
        else:
            pools = Path(args.pools) if args.pools else None
        return Inputs(
            name,
            catalog,
            pools.name if pools else "",
            read_limited(pools) if pools else None,
            args.seed,
            asked=args.asked,
        )
    except OSError as exc:
        raise UsageError(f"toolcall300 generate: {exc}") from exc


def _report(report: Report, stdout: TextIO, stderr: TextIO, extra: list[str]) -> int:
    for name, message in report.failures:
        stderr.write(f"FAIL {name}: {message}\n")
    for line in extra:
        stderr.write(f"FAIL {line}\n")
    failed = len(report.failures) + len(extra)
    stdout.write(
        f"{report.assertions} assertions in {len(CHECKS)} check classes, {failed} failed\n"
    )
    return EXIT_OK if not failed else EXIT_ERROR


def _pinned_names(manifest: bytes | None) -> list[str]:
    """Plain file names a manifest pins (a path is never read from a manifest)."""
    try:
        doc = loads_strict(manifest or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nesting past the stack
        return []
    pinned = doc.get("files") if isinstance(doc, dict) else None
    return [n for n in pinned or {} if isinstance(n, str) and Path(n).name == n]


def corpus_files(directory: Path) -> dict[str, bytes]:
    """The corpus files present in ``directory``: the three JSON Lines files, the manifest and
    every other file the manifest pins (the licence), as ``--check-only`` reads them."""
    files = {
        name: read_limited(directory / name)
        for name in (*FILES, MANIFEST)
        if (directory / name).is_file()
    }
    for name in _pinned_names(files.get(MANIFEST)):
        if name not in files and (directory / name).is_file():
            files[name] = read_limited(directory / name)
    return files


def _check_only(out: Path, stdout: TextIO, stderr: TextIO) -> int:
    files = corpus_files(out)
    missing = [name for name in (*FILES, MANIFEST) if name not in files]
    if missing:
        stderr.write(f"toolcall300 generate: {out} lacks {', '.join(missing)}\n")
        return EXIT_ERROR
    corpus = corpus_from_files(files)
    extra = []
    if (out / RECIPE).is_file():
        inputs = _recorded_inputs(out, with_licence=False)
        extra = input_pin_failures(
            corpus.manifest, {"catalog": inputs.catalog_bytes, "pools": inputs.pools_bytes}
        )
        if corpus.manifest and corpus.manifest.get("seed") != inputs.seed:
            extra.append("manifest_pins: recorded seed differs from the manifest's")
    return _report(run_checks(corpus), stdout, stderr, extra)


def _parallel(out: Path, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """The parallel track's corpus: built from the main corpus, checked, written only when
    every check holds (P1-P12; ``generator.parallel``); ``--check-only`` checks what is there."""
    if args.bfcl:
        return _bfcl(Path(args.bfcl), out, stdout)
    main_path = Path(args.main) if args.main else out.parent / "toolcall300.jsonl"
    try:
        main = read_limited(main_path)
        if args.check_only:
            names = (CORPUS_FILE, RATIONALE_FILE, SAMPLE_FILE, MANIFEST_FILE)
            files = {n: read_limited(out / n) for n in names}
        else:
            files = build_files(main, args.seed if args.seed != DEFAULT_SEED else PARALLEL_SEED)
    except OSError as exc:
        raise UsageError(f"toolcall300 generate: {exc}") from exc
    except (ParallelError, ValueError) as exc:
        stderr.write(f"toolcall300 generate: {exc}\n")
        return EXIT_ERROR
    failures = check_files(files, main)
    for line in failures:
        stderr.write(f"FAIL {line}\n")
    if failures:
        if not args.check_only:
            stderr.write("toolcall300 generate: integrity checks failed; nothing was written\n")
        return EXIT_ERROR
    if not args.check_only:
        out.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (out / name).write_bytes(data)
        stdout.write(f"wrote {len(files[CORPUS_FILE].splitlines())} turns to {out}\n")
    stdout.write(f"parallel track: {len(PARALLEL_CHECKS)} check classes, 0 failed\n")
    return EXIT_OK


def _bfcl(data: Path, out: Path, stdout: TextIO) -> int:
    """BFCL's parallel questions as turns of the parallel track (``generator.parallel_bfcl``)."""
    try:
        questions = {k: read_limited(data / question_file(k)) for k in BFCL_KINDS}
        answers = {k: read_limited(data / "possible_answer" / question_file(k)) for k in BFCL_KINDS}
    except OSError as exc:
        raise UsageError(f"toolcall300 generate: --bfcl {data}: {exc}") from exc
    try:
        result = convert_bfcl(questions, answers)
    except (ValueError, KeyError) as exc:
        raise UsageError(f"toolcall300 generate: --bfcl {data}: not BFCL's data ({exc})") from exc
    out.mkdir(parents=True, exist_ok=True)
    (out / BFCL_FILE).write_bytes(jsonl(result.cases))
    stdout.write(f"wrote {len(result.cases)} turns to {out / BFCL_FILE}\n")
    for qid, why in result.skipped.items():
        stdout.write(f"skipped {qid}: {why}\n")
    return EXIT_OK


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if args.list_checks:
        for name, (description, _) in CHECKS.items():
            stdout.write(f"{name:<28} {description}\n")
        stdout.write(f"{len(CHECKS)} classes of check\n")
        return EXIT_OK
    out = Path(args.out)
    if args.track == "parallel":
        return _parallel(out, args, stdout, stderr)
    if args.check_only:
        return _check_only(out, stdout, stderr)
    try:
        result = build(_cli_inputs(args, stderr))
    except (CatalogError, ImportRefused) as exc:
        for problem in exc.problems:
            stderr.write(f"catalog: {problem}\n")
        return EXIT_ERROR
    except PoolsError as exc:
        for problem in exc.problems:
            stderr.write(f"{problem}\n")
        return EXIT_ERROR
    except (GenerationError, ValueError) as exc:
        stderr.write(f"toolcall300 generate: {exc}\n")
        return EXIT_ERROR
    if not result.report.ok:
        _report(result.report, stdout, stderr, [])
        stderr.write("toolcall300 generate: integrity checks failed; nothing was written\n")
        return EXIT_ERROR
    out.mkdir(parents=True, exist_ok=True)
    for name, data in result.files.items():
        (out / name).write_bytes(data)
    shape = result.shape
    built = sum(1 for c in CATEGORIES if shape.counts.get(c))
    stdout.write(
        f"wrote {shape.total} cases ({built} of {len(CATEGORIES)} categories, "
        f"{shape.refusal_cases} expecting a refusal) to {out}\n"
    )
    for category, why in shape.absent.items():
        stdout.write(f"not built: {category}: {why}\n")
    for why in result.left_out.values():
        stdout.write(f"left out: {why}\n")
    if shape.missing_refused:
        stdout.write(
            "missing_required_arg: no required property has a default, so its cases "
            "leave out one without and expect a refusal (D6.4)\n"
        )
    return _report(result.report, stdout, stderr, [])
