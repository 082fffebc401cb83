"""Held-out vectors for tool-argument/v1 (tests/data/argcheck-heldout-vectors.json).

Written from the published criteria alone (tool-argument/v1 and the decisions ``toolcall300
criteria`` prints), before reading the checker's code, in the shape of the published
toolcall300-argument-vectors/v1 so the same harness runs them. They are a test file, not a
second pinned corpus: the criteria name one corpus (D21), and these stay out of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.argcheck import vectors as argcheck_corpus
from toolcall300.argcheck.check import REFUSAL_CODES
from toolcall300.canonical import canonical

HELDOUT = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "argcheck-heldout-vectors.json").read_text(
        "utf-8"
    )
)
SEED = json.loads(
    (Path(argcheck_corpus.__file__).parents[1] / "data" / "tool-argument-v1.seed.json").read_text(
        "utf-8"
    )
)


@pytest.mark.parametrize("vector", HELDOUT["vectors"], ids=[v["id"] for v in HELDOUT["vectors"]])
def test_heldout_vector(vector: dict[str, Any]) -> None:
    assert canonical(argcheck_corpus.outcome(argcheck_corpus.submit(vector))) == canonical(
        vector["expect"]
    )


def test_heldout_ids_are_unique_and_not_the_published_ones() -> None:
    ids = [v["id"] for v in HELDOUT["vectors"]]
    assert len(ids) == len(set(ids))
    assert not set(ids) & {v["id"] for v in argcheck_corpus.load_corpus()["vectors"]}
    assert HELDOUT["criteria_id"] == SEED["criteria_id"]


def test_heldout_vectors_reach_every_verdict_rule_defect_and_refusal() -> None:
    expects = [v["expect"] for v in HELDOUT["vectors"]]
    assert {e["verdict"] for e in expects if "verdict" in e} == {
        "VALID",
        "REPAIRED",
        "UNREPAIRABLE",
    }
    assert {d["rule"] for e in expects for d in e.get("diff", [])} == {
        f"R{i}" for i in range(1, 10)
    }
    assert {d[1] for e in expects for d in e.get("defects", [])} == set(SEED["defect_codes"])
    assert {e["refusal"] for e in expects if "refusal" in e} == set(REFUSAL_CODES)
