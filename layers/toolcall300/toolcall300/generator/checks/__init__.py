"""The integrity checks: the classes of assertion that block a corpus from being written.

Each check class reads only the finished artefacts (cases, rationale, sample, manifest), so
``generate --check-only`` re-runs exactly what a build ran, on files anyone can hold. A
check yields one item per assertion: ``None`` when it held, a one-line message when it did
not. Checks verify labels with the shared predicates of ``schema`` and ``rules`` and with
independent readers of the text (``generator.oracles``); they never
produce a label. They deliberately do not score adapters or judge a normaliser.

One module per family, each saying what it guards; ``base`` holds what they share. The
families are imported here in a fixed order because :data:`CHECKS` keeps registration order
and the manifest records that list: a new family goes at the end, a new check at the end of
its family's module (or the manifest's ``checks`` list changes).
"""

from __future__ import annotations

# Registration order is the manifest's order of check classes: keep these imports as they are.
# isort: off
from toolcall300.generator.checks import form, labels, parsing, names, repairs  # noqa: F401
from toolcall300.generator.checks import readings, properties, difficulty  # noqa: F401
from toolcall300.generator.checks import citations, artefacts  # noqa: F401

# isort: on
from toolcall300.generator.checks.base import (
    CASE_KEYS,
    CHECKS,
    Check,
    Corpus,
    Report,
    Result,
    call_diffs,
    check,
    cited,
    leaves,
    of,
    property_names,
    run_checks,
    schema_at,
    walk,
)
from toolcall300.generator.checks.labels import format_breaks

#: The name the tests have always imported (a case's differing leaves against its label).
_diffs = call_diffs

__all__ = [
    "CASE_KEYS",
    "CHECKS",
    "Check",
    "Corpus",
    "Report",
    "Result",
    "call_diffs",
    "check",
    "cited",
    "format_breaks",
    "leaves",
    "of",
    "property_names",
    "run_checks",
    "schema_at",
    "walk",
]
