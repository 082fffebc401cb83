"""Real-world acceptance sweep: the generator on tool catalogs nobody here wrote.

For each catalog, as its ecosystem ships it (no hand conversion): import it (detected form,
docs/catalog-import.md), build a corpus with values from its schemas (no pools), re-run every
integrity check on the written files (what ``generate --check-only`` runs), then score on it:

- ``toolshim`` (the reference normaliser): exact passes, invented calls, schema-invalid returns.
  **In-sample**: toolshim and the generator share one rulebook, so this shows the labels are
  reachable and that toolshim never invents or returns an invalid call on them, not how a
  normaliser written from the contract alone would score.
- the two controls, naive (C1) and integrator (C2), graded by the scorer and compared with
  the per-category table the corpus's own ``discrimination`` check recorded: "agree" means the
  scorer and the corpus checks pass exactly the same cases of every category.

Sources: every catalog in tests/data/real-catalogs/ (the GitHub MCP server's snapshot, 12 MCP
reference servers' own ``tools/list`` answers over stdio, LangChain's ``convert_to_openai_tool``,
OpenAI's ``pydantic_function_tool`` and Gemini's ``from_callable`` outputs, Anthropic's and
OpenAI's examples, BYOB packs: bench/collect_real_catalogs.py regenerates the generated ones),
the tools.json contract's minimal example, and BFCL's function docs: each case line's ``function``
list is a catalog; distinct catalogs are swept once and weighted by the lines that use them.
BFCL comes from the ``bfcl-eval`` package (Apache-2.0) when ``--bfcl-data DIR`` names its
``bfcl_eval/data`` folder (``python3 -m venv /tmp/bfcl && /tmp/bfcl/bin/pip install --no-deps
bfcl-eval``), else from the 330-line sample vendored in tests/data/bfcl-sample/.

Prints shares, the reasons for the catalogs that produced no corpus, every tool left out of
a real catalog (at import or at build) with the rule that refuses it, and the scores; asserts
nothing. Run: .venv/bin/python bench/sweep_real_catalogs.py [--bfcl-data DIR] [--single]
[--jobs N] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import CatalogError
from toolcall300.controls import integrator, naive
from toolcall300.generator.build import Inputs, build, corpus_from_files
from toolcall300.generator.checks import run_checks
from toolcall300.generator.shape import DEFAULT_SHAPE
from toolcall300.generator.values import GenerationError
from toolcall300.importers import ImportRefused, catalog_bytes, import_file
from toolcall300.scoring.report import COUNT_FIELDS, score_cases
from toolcall300.spec import CATEGORIES
from toolcall300.toolshim import normalise

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real-catalogs"
BFCL_SAMPLE = ROOT / "tests" / "data" / "bfcl-sample"
SEED = 20261201

#: The tools.json contract's minimal example (docs/catalog.md), verbatim, as the tests read it.
MINIMAL_EXAMPLE = json.loads(
    (ROOT / "tests" / "data" / "seed-003-minimal-example.tools.json").read_text(encoding="utf-8")
)


def real_catalogs() -> Iterator[tuple[str, str, bytes, int]]:
    """``(group, name, bytes, weight)`` of the vendored real catalogs and the minimal example."""
    for path in sorted(REAL.glob("*.json")):
        yield "real-catalogs", path.name, path.read_bytes(), 1
    yield "contract examples", "minimal example", json.dumps(MINIMAL_EXAMPLE).encode(), 1


def bfcl_catalogs(data: Path, single: bool) -> Iterator[tuple[str, str, bytes, int]]:
    """Each distinct ``function`` list of BFCL's case files, weighted by the lines using it."""
    seen: dict[str, tuple[str, bytes, int, int]] = {}
    files = sorted(data.glob("BFCL_v4_*.json")) + sorted(data.glob("*.jsonl"))
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                functions = json.loads(line).get("function")
            except (ValueError, AttributeError):
                continue
            if not isinstance(functions, list) or not functions:
                continue
            if (len(functions) > 1) == single:
                continue
            key = canonical(functions)
            name, raw, weight, size = seen.get(key, (f"{path.name}:{n}", b"", 0, len(functions)))
            seen[key] = (name, raw or json.dumps(functions).encode(), weight + 1, size)
    group = "BFCL one-tool" if single else "BFCL multi-tool"
    for name, raw, weight, _ in seen.values():
        yield group, name, raw, weight


def _reason(text: str) -> str:
    """A failure's reason with its particulars (names, values, paths) masked, for counting."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "…", text.splitlines()[0])
    text = re.sub(r"tools\[\d+\]( \([^)]*\))?", "tools[…]", text)
    text = re.sub(r"tool [^\s:]+", "tool …", text)
    text = re.sub(r"tc300-\d+", "tc300-…", text)
    return text[:160]


def _controls_agree(cases: list[dict[str, Any]], manifest: dict[str, Any]) -> bool:
    """The scorer grades the controls exactly as the corpus's discrimination table says."""
    table = (manifest.get("discrimination") or {}).get("categories") or {}
    for name, run in (("naive", naive), ("integrator", integrator)):
        answers = {c["id"]: run(c["text"], c["tools"]) for c in cases}
        report = score_cases(cases, answers, adapter=name)
        for cat in CATEGORIES:
            scored = report["categories"].get(cat, {}).get("pass", 0)
            if (table.get(cat) or {}).get(name, 0) != scored:
                return False
    return True


def try_catalog(group: str, name: str, raw: bytes, weight: int) -> dict[str, Any]:
    """Import, build, re-check and score one catalog; a dict of what happened."""
    out: dict[str, Any] = {"group": group, "name": name, "weight": weight, "built": False}
    try:
        imported = import_file(raw)
        catalog = catalog_bytes(imported, raw)
        result = build(Inputs(name, catalog, "", None, SEED))
    except ImportRefused as exc:
        return out | {"reason": "import: " + _reason(str(exc))}
    except CatalogError as exc:
        return out | {"reason": "catalog: " + _reason(exc.problems[0])}
    except GenerationError as exc:
        return out | {"reason": "generate: " + _reason(str(exc))}
    except Exception as exc:  # a crash is a finding, reported with its type
        return out | {"reason": f"crash: {type(exc).__name__}: {_reason(str(exc))}"}
    if not result.report.ok:
        check, message = result.report.failures[0]
        return out | {"reason": f"integrity {check}: {_reason(message)}"}
    files = result.files
    out["left_out"] = [f"import: {line}" for line in imported.left_out] + [
        f"build: {name}: {why}"
        for name, why in (json.loads(files["manifest.json"]).get("tools_left_out") or {}).items()
    ]
    corpus = corpus_from_files(files)
    if not run_checks(corpus).ok:
        return out | {"reason": "check-only fails on the written files"}
    answers = {c["id"]: normalise(c["text"], c["tools"]) for c in corpus.cases}
    report = score_cases(corpus.cases, answers, adapter="toolshim")
    shape = result.shape
    return out | {
        "built": True,
        "categories": sum(1 for c in CATEGORIES if shape.counts.get(c)),
        "absent": sorted(c for c in CATEGORIES if not shape.counts.get(c)),
        "default_shape": shape == DEFAULT_SHAPE,
        **{k: report[k] for k in COUNT_FIELDS},
        "agree": _controls_agree(corpus.cases, corpus.manifest or {}),
    }


def _run(job: tuple[str, str, bytes, int]) -> dict[str, Any]:
    return try_catalog(*job)


def summarise(group: str, rows: list[dict[str, Any]]) -> None:
    built = [r for r in rows if r["built"]]
    lines = sum(r["weight"] for r in rows)
    built_lines = sum(r["weight"] for r in built)
    print(
        f"\n== {group}: {len(built)} of {len(rows)} catalogs produce a corpus that passes "
        f"--check-only ({100 * len(built) / max(1, len(rows)):.1f}%)",
        end="",
    )
    if lines != len(rows):
        print(
            f"; weighted by case lines: {built_lines} of {lines} "
            f"({100 * built_lines / max(1, lines):.1f}%)"
        )
    else:
        print()
    reasons = Counter(r["reason"] for r in rows if not r["built"])
    for reason, count in reasons.most_common(8):
        print(f"   {count:>5}  {reason}")
    if not built:
        return
    cats = sorted(r["categories"] for r in built)
    absent = Counter(c for r in built for c in r["absent"])
    print(
        f"   categories built per corpus: median {cats[len(cats) // 2]} of 12 "
        f"(min {cats[0]}, max {cats[-1]}); full 12 x 25 shape: "
        f"{sum(r['default_shape'] for r in built)}"
    )
    print("   most often absent: " + ", ".join(f"{c} {n}" for c, n in absent.most_common(5)))
    total = {k: sum(r[k] for r in built) for k in COUNT_FIELDS}
    print(
        f"   toolshim (in-sample): exact {total['exact']} / {total['cases']} "
        f"({100 * total['exact'] / max(1, total['cases']):.1f}%), refused correctly "
        f"{total['refused_correctly']} / {total['refusal_cases']}, invented calls "
        f"{total['invented_calls']}, false refusals {total['false_refusals']}, "
        f"schema-invalid returns {total['schema_invalid_returns']}"
    )
    disagree = [r["name"] for r in built if not r["agree"]]
    print(
        f"   scorer and corpus checks agree on the controls: {len(built) - len(disagree)} of "
        f"{len(built)} corpora" + (f" (not: {', '.join(disagree[:5])})" if disagree else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bfcl-data", type=Path, help="bfcl_eval/data of the bfcl-eval package")
    parser.add_argument("--single", action="store_true", help="also sweep BFCL one-tool catalogs")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--limit", type=int, help="at most N catalogs per BFCL group")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    data = args.bfcl_data or BFCL_SAMPLE
    groups: dict[str, list[tuple[str, str, bytes, int]]] = {}
    for job in real_catalogs():
        groups.setdefault(job[0], []).append(job)
    for single in (False, True) if args.single else (False,):
        jobs = list(bfcl_catalogs(data, single))
        groups[jobs[0][0] if jobs else "BFCL"] = jobs[: args.limit] if args.limit else jobs
    print(f"command: .venv/bin/python bench/sweep_real_catalogs.py {' '.join(sys.argv[1:])}")
    print(f"BFCL data: {data}; seed {SEED}; values from each schema (no pools)")
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for group, jobs in groups.items():
            found = list(pool.map(_run, jobs, chunksize=4))
            rows += found
            summarise(group, found)
            if group in ("real-catalogs", "contract examples"):
                for r in found:
                    state = f"{r['categories']} categories" if r["built"] else r["reason"]
                    print(f"   {r['name']}: {state}")
                    for line in r.get("left_out", []):
                        print(f"      left out {line[:150]}")
                tools_out = sum(len(r.get("left_out", [])) for r in found)
                print(f"   tools left out across the group: {tools_out}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("\ntoolshim's figures are in-sample: it and the generator share one rulebook.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
