"""The schema engine against the official JSON-Schema-Test-Suite (draft 2020-12).

Every test group whose schema is inside the subset must agree with the suite on every
instance, through ``is_valid`` and through the compiled check (``compile_validator``). A group
whose schema uses something outside the subset (``$ref``, boolean schemas, ``prefixItems``...)
must be *refused* by ``schema_problems``, never validated partially: those groups are
collected too, and asserted refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.schema import ENFORCED, compile_validator, is_valid, schema_problems

#: Vendored in the repository (see its README.md for the upstream commit, LICENSE for terms).
SUITE = Path(__file__).resolve().parents[1] / "data" / "JSON-Schema-Test-Suite" / "draft2020-12"


def _cases() -> list[Any]:
    out = []
    for path in sorted(SUITE.glob("*.json")):
        for gi, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            out.append(pytest.param(group, id=f"{path.stem}[{gi}] {group['description']}"))
    return out


CASES = _cases()


def test_suite_is_present_and_covers_every_enforced_keyword() -> None:
    files = {p.stem for p in SUITE.glob("*.json")}
    assert set(ENFORCED) <= files, set(ENFORCED) - files


@pytest.mark.parametrize("group", CASES)
def test_official_group(group: dict[str, Any]) -> None:
    problems = schema_problems(group["schema"])
    if problems:
        # Outside the subset: refused as a whole, and only for coverage, never as malformed.
        assert all(p.kind == "not_covered" for p in problems), problems
        return
    compiled = compile_validator(group["schema"])
    for test in group["tests"]:
        assert is_valid(test["data"], group["schema"]) is test["valid"], test["description"]
        assert compiled(test["data"]) is test["valid"], f"compiled: {test['description']}"


def test_most_groups_are_inside_the_subset() -> None:
    covered = sum(1 for c in CASES if not schema_problems(c.values[0]["schema"]))
    # A silent regression that refuses everything would otherwise pass the test above.
    assert covered >= 0.7 * len(CASES), (covered, len(CASES))
