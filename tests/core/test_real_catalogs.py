"""Acceptance on real catalogs, as their ecosystems ship them (tests/data/real-catalogs/, the
tools.json contract's minimal example, and a stride of BFCL's multi-tool function docs from
tests/data/bfcl-sample/): each produces a corpus that passes ``generate --check-only`` with
no hand conversion; toolshim on it invents no call and returns no schema-invalid call (an
in-sample figure: toolshim and the generator share one rulebook); and the scorer grades the
two controls exactly as the corpus's own discrimination check recorded.

bench/sweep_real_catalogs.py runs the same over every BFCL catalog and prints the shares.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.cli import dispatch
from toolcall300.controls import integrator, naive
from toolcall300.generator.build import FILES, MANIFEST
from toolcall300.scoring.report import score_cases
from toolcall300.spec import CATEGORIES
from toolcall300.toolshim import normalise

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = sorted((DATA / "real-catalogs").glob("*.json"))
#: Every 30th line of the vendored BFCL sample: eleven multi-tool catalogs of both BFCL sets.
BFCL_LINES = (DATA / "bfcl-sample" / "BFCL_v4_multi_tool.sample.jsonl").read_text().splitlines()
BFCL = {json.loads(line)["id"]: json.loads(line)["function"] for line in BFCL_LINES[::30]}

MINIMAL = json.loads((DATA / "seed-003-minimal-example.tools.json").read_text(encoding="utf-8"))


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["generate", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def accept(tools: Path, out: Path) -> list[dict[str, Any]]:
    """Generate from ``tools`` as shipped, check the written corpus, and score it."""
    code, _, err = cli("--tools", str(tools), "--out", str(out), "--seed", "11")
    assert code == 0, err
    code, _, err = cli("--check-only", "--out", str(out))
    assert code == 0, err
    cases = [json.loads(line) for line in (out / FILES[0]).read_text().splitlines()]
    report = score_cases(cases, {c["id"]: normalise(c["text"], c["tools"]) for c in cases})
    assert report["invented_calls"] == 0
    assert report["schema_invalid_returns"] == 0
    table = json.loads((out / MANIFEST).read_text())["discrimination"]["categories"]
    for name, control in (("naive", naive), ("integrator", integrator)):
        graded = score_cases(cases, {c["id"]: control(c["text"], c["tools"]) for c in cases})
        for category in CATEGORIES:
            scored = graded["categories"].get(category, {}).get("pass", 0)
            assert table[category][name] == scored, (name, category)
    return cases


def test_the_sweep_covers_every_vendored_catalog() -> None:
    names = {p.name for p in REAL}
    assert (
        "byob-tiny-oracle-pack.tools.json" in names and "mcp-github-server.tools-list.json" in names
    )
    assert len([n for n in names if n.startswith("mcp-")]) >= 12  # servers listed over stdio
    assert {
        "langchain-convert-to-openai-tool.tools.json",
        "gemini-from-callable.tools.json",
    } < names
    assert len(BFCL) == 11 and all(len(functions) > 1 for functions in BFCL.values())


#: Catalogs too small to feed eight categories, and why (each absent category is named with
#: its reason in the manifest, which the categories check holds).
FEW_CATEGORIES = {"mcp-time.tools-list.json": 7}  # two tools, no enum, no nested object


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_every_real_catalog_produces_a_checked_corpus(path: Path, tmp_path: Path) -> None:
    cases = accept(path, tmp_path / "corpus")
    assert len({c["category"] for c in cases}) >= FEW_CATEGORIES.get(path.name, 8)
    # every tool the import kept is built from: the build leaves none out
    manifest = json.loads((tmp_path / "corpus" / MANIFEST).read_text())
    assert "tools_left_out" not in manifest, manifest.get("tools_left_out")


def test_the_contract_minimal_example_produces_a_checked_corpus(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(MINIMAL))
    accept(tmp_path / "tools.json", tmp_path / "corpus")


@pytest.mark.parametrize("case_id", sorted(BFCL))
def test_bfcl_multi_tool_catalogs_as_shipped_produce_a_checked_corpus(
    case_id: str, tmp_path: Path
) -> None:
    (tmp_path / "functions.json").write_text(json.dumps(BFCL[case_id]))
    accept(tmp_path / "functions.json", tmp_path / "corpus")
