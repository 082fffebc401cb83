"""Messages that used to stop short (README, "Score your own code"): a corpus folder is scored
by its one corpus file, and a hand-written corpus asked to rebuild says why it cannot."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from toolcall300.cli import dispatch

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_score_takes_a_corpus_folder(tmp_path: Path) -> None:
    shutil.copy(SAMPLE, tmp_path / "cases.jsonl")
    (tmp_path / "rationale.jsonl").write_text("{}\n")  # never taken for the corpus
    code, out, err = run("score", "--corpus", str(tmp_path), "--adapter", "naive")
    assert code == 0 and "exact match             0 / 30" in out, err
    # the private corpus folder: its rationale and sample beside it are not the corpus
    code, out, _ = run("score", "--corpus", str(ROOT / "corpus_private"), "--adapter", "naive")
    assert code == 0 and "cases                   300" in out


def test_a_folder_with_no_or_several_corpora_names_them(tmp_path: Path) -> None:
    code, _, err = run("score", "--corpus", str(tmp_path), "--adapter", "naive")
    assert code == 1 and "holds no corpus file (*.jsonl): name the file" in err
    shutil.copy(SAMPLE, tmp_path / "a.jsonl")
    shutil.copy(SAMPLE, tmp_path / "b.jsonl")
    code, _, err = run("score", "--corpus", str(tmp_path), "--adapter", "naive")
    assert code == 1 and "several corpus files (a.jsonl, b.jsonl): name one" in err


def test_rebuilding_a_hand_written_corpus_says_why_not_an_errno(tmp_path: Path) -> None:
    shutil.copy(SAMPLE, tmp_path / "cases.jsonl")
    code, _, err = run("generate", "--rebuild", str(tmp_path), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "has no recorded inputs (inputs/recipe.json is missing)" in err
    assert "a corpus written by hand has no recipe" in err and "Errno" not in err


def pydantic_like_catalog() -> list[dict[str, object]]:
    """What pydantic writes for dict[str, str], tuple[int, int] and a discriminated union."""
    union = {
        "discriminator": {"mapping": {"a": "#/$defs/A"}, "propertyName": "kind"},
        "oneOf": [{"$ref": "#/$defs/A"}],
    }
    fields = {
        "tags": {"additionalProperties": {"type": "string"}, "type": "object"},
        "pair": {
            "maxItems": 2,
            "minItems": 2,
            "prefixItems": [{"type": "integer"}] * 2,
            "type": "array",
        },
        "pet": union,
    }
    tools: list[dict[str, object]] = [
        {
            "type": "function",
            "function": {"name": "ok", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    for name, schema in fields.items():
        params: dict[str, object] = {
            "type": "object",
            "properties": {name: schema},
            "required": [name],
        }
        if name == "pet":  # pydantic puts the variants under $defs
            variant = {"kind": {"const": "a", "type": "string"}, "x": {"type": "integer"}}
            params["$defs"] = {"A": {"type": "object", "properties": variant, "required": ["kind"]}}
        tools.append({"type": "function", "function": {"name": name, "parameters": params}})
    return tools


def test_an_uncovered_pydantic_form_says_the_way_forward(tmp_path: Path) -> None:
    import json

    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(pydantic_like_catalog()))
    # by default the tools it cannot import are left out, each with the way forward
    code, out, err = run("tools", "import", str(catalog))
    assert code == 0 and [t["function"]["name"] for t in json.loads(out)] == ["ok"]
    ways = [line for line in err.splitlines() if line.startswith("way forward:")]
    assert len(ways) == 3
    assert (
        "dict[str, T]" in ways[0] and "tuple[A, B]" in ways[1] and "discriminated union" in ways[2]
    )
    # --strict refuses the catalog, and says the same way forward
    code, _, err = run("tools", "import", "--strict", str(catalog))
    assert code == 1
    assert len([line for line in err.splitlines() if "way forward:" in line]) == 3


def test_the_controls_figures_in_the_docs_are_what_score_prints_today() -> None:
    """docs/adapter-protocols.md quotes the controls on the private corpus: held to the code."""
    import re

    text = (ROOT / "docs/adapter-protocols.md").read_text()
    said = re.search(
        r"private corpus \(version ([\d.]+)\) `naive` passes (\d+) of 300 cases.*?`integrator` (\d+)",
        text,
        re.S,
    )
    assert said is not None
    corpus = str(ROOT / "corpus_private/toolcall300.jsonl")
    for name, figure in (("naive", said.group(2)), ("integrator", said.group(3))):
        _, out, _ = run("score", "--corpus", corpus, "--adapter", name)
        assert f"exact match             {figure} / 300" in out, (name, out[:300])
    from toolcall300.spec import CORPUS_VERSION

    assert said.group(1) == CORPUS_VERSION


def test_case_format_states_d9_2_as_the_contract_does() -> None:
    from toolcall300.spec import RULES

    d92 = next(text for _, _, _, ds in RULES for did, text in ds if did == "D9.2")
    assert "at least twice, in every envelope" in d92
    assert (
        "encoded at least twice, in every envelope (D9.2"
        in (ROOT / "docs/case-format.md").read_text()
    )
