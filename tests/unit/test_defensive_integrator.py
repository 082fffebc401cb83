"""Corpus v3: no repairable case is a freebie for a defensive integrator written apart from
the suite (issue: honest scores, round 3).

The integrator here is the kind many agent frameworks carry, written with third-party parts
and none of the suite's: parse; unwrap the usual envelopes; take the first call; look the tool
up by its exact name; decode string arguments once wherever they appear; validate with
``jsonschema``; refuse if invalid. On corpus v2 it passed 9 repairable cases (8
``args_as_string`` cases encoded once outside the OpenAI family, 1 ``multiple_calls`` case);
on v3 it passes none. With ``json_repair`` in front it may pass ``truncated`` cases (that is
repair work, and fair) and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json_repair
import pytest
from jsonschema import Draft202012Validator

CORPUS = Path(__file__).resolve().parents[2] / "corpus_private" / "toolcall300.jsonl"


def _first_call(value: Any) -> dict[str, Any] | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"][0] if value["tool_calls"] else None
    if isinstance(value, dict):
        for key in ("function", "function_call"):
            if isinstance(value.get(key), dict):
                value = value[key]
                break
    return value if isinstance(value, dict) and isinstance(value.get("name"), str) else None


def defensive(parse: Callable[[str], Any]) -> Callable[[str, list[dict[str, Any]]], Any]:
    def adapter(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
        try:
            call = _first_call(parse(text))
        except ValueError:
            return None
        if call is None:
            return None
        arguments = next((call[k] for k in ("arguments", "parameters", "input") if k in call), {})
        if isinstance(arguments, str):  # decoded once, whatever the envelope
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return None
        if not isinstance(arguments, dict):
            return None
        for tool in tools:
            fn = tool["function"]
            if fn["name"] == call["name"]:
                schema = fn.get("parameters", {"type": "object", "properties": {}})
                if Draft202012Validator(schema).is_valid(arguments):
                    return {"name": call["name"], "arguments": arguments}
                return None
        return None

    return adapter


def _passed(adapter: Callable[[str, list[dict[str, Any]]], Any]) -> list[tuple[str, str]]:
    """(id, category) of every repairable case the adapter passes."""
    out = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["expected_kind"] != "value":
            continue
        got = adapter(case["text"], case["tools"])
        if got is not None and json.dumps(got, sort_keys=True) == json.dumps(
            case["expected"], sort_keys=True
        ):
            out.append((case["id"], case["category"]))
    return out


@pytest.mark.skipif(not CORPUS.is_file(), reason="corpus_private/ not in this checkout")
def test_a_defensive_integrator_passes_no_repairable_case() -> None:
    assert _passed(defensive(json.loads)) == []


@pytest.mark.skipif(not CORPUS.is_file(), reason="corpus_private/ not in this checkout")
def test_with_json_repair_in_front_it_passes_only_truncated_cases() -> None:
    passed = _passed(defensive(json_repair.loads))
    assert {category for _, category in passed} <= {"truncated"}, passed
