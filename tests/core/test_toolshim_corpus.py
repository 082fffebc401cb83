"""toolshim on the full corpus, one test per case id, graded by rules 1 and 2.

IN-SAMPLE WARNING: toolshim and this corpus were written from the same rulebook, so a pass
here measures agreement with the rulebook, nothing more. The normaliser was written and
committed before it was run on the corpus;
it was run once, and the cases it missed are listed below as strict xfails with the reason,
never repaired after the fact (a silent fix and a new miss both show up). First and only
run (toolshim as of commit 33de1c8, corpus sha256 ce4b75bd66c6...): 300 / 300 exact, 0
invented calls, 0 schema-invalid returns, so the list is empty. The generator has since
regenerated the corpus (sha256 1502a5fde705...); toolshim, changed since only for speed and
robustness, still scores 300 / 300 there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.canonical import canonical
from toolcall300.toolshim.pipeline import normalise

CORPUS = Path(__file__).resolve().parents[2] / "corpus_private" / "toolcall300.jsonl"

#: case id -> why toolshim misses it (empty: it missed none on its one in-sample run).
KNOWN_MISSES: dict[str, str] = {}


def _cases() -> list[Any]:
    if not CORPUS.exists():
        return [
            pytest.param(
                None, marks=pytest.mark.skip(reason=f"{CORPUS} not present"), id="no-corpus"
            )
        ]
    out = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            marks = []
            if case["id"] in KNOWN_MISSES:
                marks.append(pytest.mark.xfail(reason=KNOWN_MISSES[case["id"]], strict=True))
            out.append(pytest.param(case, marks=marks, id=case["id"]))
    return out


@pytest.mark.parametrize("case", _cases())
def test_case(case: dict[str, Any]) -> None:
    got = normalise(case["text"], case["tools"])
    if case["expected_kind"] == "unrecoverable":
        assert got is None, "rule 2: the only passing answer is a refusal"
    else:
        assert got is not None, "a false refusal"
        # Rule 1: name and arguments compared canonically; extra top-level keys ignored.
        assert canonical({"name": got["name"], "arguments": got["arguments"]}) == canonical(
            case["expected"]
        )


def test_the_known_misses_are_real_case_ids() -> None:
    if not CORPUS.exists():
        pytest.skip("no corpus")
    ids = {
        json.loads(line)["id"]
        for line in CORPUS.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert set(KNOWN_MISSES) <= ids
