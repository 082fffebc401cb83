"""What the controls pass, by category: the discrimination table the manifest records and
the checks recompute (rules 1 and 2).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from toolcall300.canonical import loads_strict
from toolcall300.controls import passes
from toolcall300.spec import CATEGORIES

Runner = Callable[[str, list[dict[str, Any]]], Any]


def pass_counts(
    cases: list[dict[str, Any]], runners: Mapping[str, Runner], *, trusted: tuple[str, ...] = ()
) -> dict[str, dict[str, int]]:
    """Category -> runner -> how many of its cases the runner passes (rules 1 and 2).

    A runner not named in ``trusted`` gets its own copy of each case's tools, so one that
    edits them cannot change the cases the checks read; the controls are trusted.
    """
    table = {cat: dict.fromkeys(runners, 0) for cat in CATEGORIES}
    for case in cases:
        for name, run in runners.items():
            tools = case["tools"] if name in trusted else loads_strict(json.dumps(case["tools"]))
            if case.get("category") in table and passes(case, run(case["text"], tools)):
                table[case["category"]][name] += 1
    return table
