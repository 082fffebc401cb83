"""The rationale file: one row per case citing a rule, every decision a case rests on
named (the reference normaliser's lone decisions and those real traffic reached),
and every cited decision one the contract holds (E2 for an envelope).
"""

from __future__ import annotations

from collections.abc import Iterator

from toolcall300.generator.checks.base import (
    Corpus,
    Result,
    check,
    cited,
    verdict,
)
from toolcall300.generator.envelopes import envelope_of
from toolcall300.generator.oracles import (
    decisions_rested_on,
)
from toolcall300.spec import decision_ids


@check(
    "rationale_rows",
    "rationale.jsonl has one {id, rule, rationale} row per case, in order, citing a rule",
)
def _rationale(corpus: Corpus) -> Iterator[Result]:
    ids = [c.get("id") for c in corpus.cases]
    yield verdict(
        [r.get("id") for r in corpus.rationale] == ids,
        None,
        "rationale ids do not match the cases one to one",
    )
    for r in corpus.rationale:
        good = (
            sorted(r) == ["id", "rationale", "rule"]
            and str(r.get("rule", "")).startswith("rule ")
            and len(str(r.get("rationale", ""))) >= 40
        )
        yield verdict(good, r, "rationale row lacks a rule or a specific rationale")


@check(
    "decisions_named",
    "a case whose answer rests on a decision the reference normaliser once took alone "
    "(D1.3, D7.4, D8.2, D10.4, D11.7, D11.8), or on one real traffic reached (D5.6, D8.4, "
    "D9.3, D9.4, E5, D7.9), names it in its rationale",
)
def _decisions_named(corpus: Corpus) -> Iterator[Result]:
    notes = {r.get("id"): f"{r.get('rule', '')} {r.get('rationale', '')}" for r in corpus.rationale}
    for c in corpus.cases:
        for did in decisions_rested_on(c):
            yield verdict(did in cited(notes.get(c.get("id"), "")), c, f"rests on {did} unnamed")


@check(
    "rationale_cites",
    "every decision a rationale cites exists in the contract, and every text written in an "
    "envelope names it (E2)",
)
def _rationale_cites(corpus: Corpus) -> Iterator[Result]:
    known = set(decision_ids())
    texts = {c.get("id"): str(c.get("text", "")) for c in corpus.cases}
    for r in corpus.rationale:
        ids = cited(f"{r.get('rule', '')} {r.get('rationale', '')}")
        yield verdict(ids <= known, r, f"cites {sorted(ids - known)}, not in the contract")
        envelope = envelope_of(texts.get(r.get("id"), ""))
        yield verdict(
            envelope is None or "E2" in ids, r, "does not say how its envelope is read (E2)"
        )
