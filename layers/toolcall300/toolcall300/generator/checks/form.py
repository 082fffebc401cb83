"""The corpus's shape and each case's form.

These guard what every later family assumes: the categories and their counts (the
manifest's shape when it records a smaller one), ids and texts in order and unique, the
fields of docs/case-format.md, and which cases expect a refusal (D2.1, D6.4). They read
no text and re-derive no label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from toolcall300.generator.checks.base import (
    CASE_KEYS,
    Corpus,
    Result,
    check,
    verdict,
)
from toolcall300.generator.shape import shape_of
from toolcall300.spec import CATEGORIES


@check(
    "categories",
    "exactly 25 cases in each of the 12 categories and no other category (or, in a corpus "
    "whose manifest records a smaller shape, its counts, each absent category named with why)",
)
def _categories(corpus: Corpus) -> Iterator[Result]:
    shape = shape_of(corpus.manifest)
    counts = Counter(c.get("category") for c in corpus.cases)
    for cat in CATEGORIES:
        want = shape.counts.get(cat, 0)
        if want or shape.is_default:
            yield verdict(
                counts[cat] == want, None, f"category {cat} has {counts[cat]} cases, not {want}"
            )
        else:
            yield verdict(
                counts[cat] == 0 and bool(shape.absent.get(cat)),
                None,
                f"category {cat} is absent from the shape but has {counts[cat]} cases or no reason",
            )
    extra = sorted(str(k) for k in counts if k not in CATEGORIES)
    yield verdict(not extra, None, f"unknown categories {extra}")


@check("ids_sequential", "ids are tc300-0001 .. tc300-0300 (the shape's total) in file order")
def _ids_sequential(corpus: Corpus) -> Iterator[Result]:
    total = shape_of(corpus.manifest).total
    want = [f"tc300-{i:04d}" for i in range(1, total + 1)]
    got = [c.get("id") for c in corpus.cases]
    yield verdict(got == want, None, f"ids are not tc300-0001..tc300-{total:04d} in order")


@check("ids_unique", "all 300 ids are unique")
def _ids_unique(corpus: Corpus) -> Iterator[Result]:
    dupes = [k for k, n in Counter(c.get("id") for c in corpus.cases).items() if n > 1]
    yield verdict(not dupes, None, f"duplicate ids {dupes[:5]}")


@check("texts_unique", "all 300 input texts are unique")
def _texts_unique(corpus: Corpus) -> Iterator[Result]:
    seen: dict[str, str] = {}
    for c in corpus.cases:
        yield verdict(
            c.get("text") not in seen, c, f"text duplicates {seen.get(c.get('text', ''))}"
        )
        seen.setdefault(c.get("text", ""), str(c.get("id")))


@check(
    "case_shape",
    "each case has exactly the docs/case-format.md fields; expected_kind and expected agree",
)
def _case_shape(corpus: Corpus) -> Iterator[Result]:
    for c in corpus.cases:
        yield verdict(tuple(sorted(c)) == CASE_KEYS, c, f"fields {sorted(c)}")
        yield verdict(
            isinstance(c.get("text"), str) and bool(c.get("text")),
            c,
            "text must be a non-empty string",
        )
        exp, kind = c.get("expected"), c.get("expected_kind")
        if kind == "value":
            good = (
                isinstance(exp, dict)
                and sorted(exp) == ["arguments", "name"]
                and isinstance(exp["name"], str)
                and isinstance(exp["arguments"], dict)
            )
            yield verdict(good, c, "a value case needs expected {name, arguments(object)}")
        else:
            yield verdict(
                kind == "unrecoverable" and exp is None,
                c,
                "an unrecoverable case needs expected null",
            )


@check(
    "refusals",
    "the 50 hallucinated_tool and unrecoverable cases, and only they, expect a refusal (D2.1; "
    "with D6.4's reading, missing_required_arg's too)",
)
def _refusals(corpus: Corpus) -> Iterator[Result]:
    shape = shape_of(corpus.manifest)
    for c in corpus.cases:
        refuse = shape.expects_refusal(c.get("category"))
        yield verdict(
            (c.get("expected_kind") == "unrecoverable") == refuse,
            c,
            "expected_kind disagrees with its category",
        )
    count = sum(1 for c in corpus.cases if c.get("expected_kind") == "unrecoverable")
    want = shape.refusal_cases
    yield verdict(count == want, None, f"{count} refusal cases, not {want}")
