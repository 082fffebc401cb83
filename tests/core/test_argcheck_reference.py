"""The argument checker's fast walk against the check written out plainly.

``argcheck.check`` repairs and gathers defects in one pass over per-schema nodes, skips what a
compiled test says conforms, reuses a node's errors and shares unchanged containers. The
reference below is the same tool-argument/v1 procedure with none of that: the engine's
interpreted ``is_valid`` at every node, a fresh container at every level, and the defects found
afterwards by ``iter_errors`` over the repaired blob and over each withdrawn repair (D8, D13,
D22). Both must give exactly the same answer, on a schema's first use (interpreted) and on
later ones (compiled, from the checker's cache).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.schema_strategies import SCHEMAS as EVERY_KEYWORD
from support.schema_strategies import VALUES
from test_argcheck_properties import RICH, requests

from toolcall300.argcheck import check as argcheck
from toolcall300.argcheck import repairs
from toolcall300.argcheck import text as text_reader
from toolcall300.argcheck.check import CRITERIA_ID, MAX_DEPTH, check
from toolcall300.schema import (
    Path,
    declared_types,
    format_path,
    is_valid,
    iter_errors,
    json_type_matches,
    node_errors,
)

SETTINGS = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

Repair = tuple[str, Any]


_NOT_JSON = object()


def _unwrapped(value: str, depth: int) -> Any:
    try:
        return text_reader.loads(value, MAX_DEPTH - depth)
    except text_reader.TextError:
        return _NOT_JSON


def _r5(value: Any, types: tuple[str, ...], depth: int) -> Repair | None:
    wanted = [t for t in ("object", "array") if t in types]
    if isinstance(value, str) and wanted:
        parsed = _unwrapped(value, depth)
        if parsed is not _NOT_JSON and any(json_type_matches(parsed, t) for t in wanted):
            return "R5", parsed
    return None


def _r7(value: Any, types: tuple[str, ...], depth: int) -> Repair | None:
    if "array" not in types or isinstance(value, list) or value is None:
        return None
    if isinstance(value, str) and isinstance(_unwrapped(value, depth), list):
        return None
    return "R7", [value]


def _own_repair(value: Any, schema: dict[str, Any], path: Path) -> Repair | None:
    depth = len(path)
    types = declared_types(schema) if "type" in schema else ()
    if types and not any(json_type_matches(value, t) for t in types):
        attempts: list[Callable[[], Repair | None]] = [
            lambda: repairs._r3_string_to_number(value, types),
            lambda: repairs._r4_string_to_boolean(value, types),
            lambda: _r5(value, types, depth),
            lambda: repairs._r6_scalar_to_string(value, types),
            lambda: _r7(value, types, depth),
        ]
        for attempt in attempts:
            found = attempt()
            if found is not None:
                return found
        return None
    if "enum" in schema and any(e.code == "enum_mismatch" for e in node_errors(value, schema)):
        return repairs._r9_enum_case_match(value, schema)
    return None


def _defects(
    value: Any, schema: dict[str, Any], path: Path, rule: str | None
) -> list[dict[str, Any]]:
    errors = list(iter_errors(value, schema, path))
    ordered = [e for e in errors if e.code == "missing_required"]
    ordered += [e for e in errors if e.code != "missing_required"]
    out = []
    for e in ordered:
        defect = {
            "path": format_path(e.instance_path),
            "code": e.code,
            "keyword": e.keyword,
            "message": e.message,
        }
        if rule is not None:
            defect["after_repair"] = rule
        out.append(defect)
    return out


def reference_check(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The verdict for a covered schema and an object blob, computed the plain way."""
    diff: list[dict[str, Any]] = []
    withdrawn: list[tuple[Path, str, Any, dict[str, Any]]] = []

    def node(value: Any, schema: dict[str, Any], path: Path) -> Any:
        if is_valid(value, schema):
            return value
        found = _own_repair(value, schema, path) if path else None
        if found is not None:
            rule, replacement = found
            mark, withdrawn_mark = len(diff), len(withdrawn)
            diff.append(repairs._entry(path, rule, "replace", value, replacement))
            repaired = children(replacement, schema, path)
            if is_valid(repaired, schema):
                return repaired
            del diff[mark:]
            del withdrawn[withdrawn_mark:]
            withdrawn.append((path, rule, repaired, schema))
        return children(value, schema, path)

    def children(value: Any, schema: dict[str, Any], path: Path) -> Any:
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            props = schema["properties"]
            out = {}
            for key, child in value.items():
                if key not in props:
                    out[key] = child
                elif (
                    child is None
                    and key not in schema.get("required", [])
                    and not is_valid(None, props[key])
                ):
                    diff.append(repairs._entry(path + (key,), "R8", "remove", None, None))
                else:
                    out[key] = node(child, props[key], path + (key,))
            return out
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [node(item, schema["items"], path + (i,)) for i, item in enumerate(value)]
        return value

    try:
        repaired = node(arguments, schema, ())
    except text_reader.TooDeep:
        return {"refusal": "arguments_too_deep"}
    if not is_valid(repaired, schema):
        defects = _defects(repaired, schema, (), None)
        for path, rule, value, sub in withdrawn:
            defects += _defects(value, sub, path, rule)
        return {"criteria_id": CRITERIA_ID, "verdict": "UNREPAIRABLE", "defects": defects}
    if not diff:
        return {
            "criteria_id": CRITERIA_ID,
            "verdict": "VALID",
            "repair_needed": False,
            "arguments": arguments,
        }
    return {"criteria_id": CRITERIA_ID, "verdict": "REPAIRED", "arguments": repaired, "diff": diff}


def _text(response: dict[str, Any]) -> str:
    """Exactly the answer, key order included (``refusal`` reduced to its code)."""
    if "refusal" in response and isinstance(response["refusal"], dict):
        response = {"refusal": response["refusal"]["code"]}
    return json.dumps(response, ensure_ascii=False)


def _assert_every_use_matches(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    expected = _text(reference_check(schema, arguments))
    argcheck._SCHEMA_FACTS.clear()
    for use in ("first use, interpreted", "second use, compiled", "third use, cached"):
        answer = _text(check({"schema": schema, "arguments": arguments}))
        assert answer == expected, use


@SETTINGS
@given(EVERY_KEYWORD, st.dictionaries(st.sampled_from(["a", "b", "c", "a.b", "x"]), VALUES))
def test_the_fast_walk_answers_as_the_plain_one_for_every_keyword(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    _assert_every_use_matches(schema, arguments)


@SETTINGS
@given(requests())
def test_the_fast_walk_answers_as_the_plain_one_on_repairable_damage(
    case: tuple[dict[str, Any], Any, Any],
) -> None:
    request, submitted, _ = case
    if "arguments" in request:
        _assert_every_use_matches(request["schema"], submitted)


@SETTINGS
@given(RICH, st.dictionaries(st.text(alphabet="abcdefgh_ .", max_size=4), VALUES, max_size=4))
def test_the_fast_walk_answers_as_the_plain_one_on_arbitrary_blobs(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    _assert_every_use_matches(schema, arguments)


def test_the_reference_is_not_vacuous() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 100}}}
    assert reference_check(schema, {"n": "7"})["verdict"] == "REPAIRED"
    defects = reference_check(schema, {"n": "120"})["defects"]
    assert [(d["code"], d.get("after_repair")) for d in defects] == [
        ("type_mismatch", None),
        ("maximum_violation", "R3"),
    ]


#: Containers whose own keywords judge what their children become: a repair or an R8 removal
#: beneath them changes their own errors, which the walk must then compute afresh.
_RECHECKED = [
    (
        {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
            },
        },
        {"ids": ["1", 1]},
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "minProperties": 2,
        },
        {"a": "1", "b": None},
    ),
    (
        {
            "type": "object",
            "properties": {
                "o": {
                    "type": "object",
                    "enum": [{"n": 1}],
                    "properties": {"n": {"type": "integer"}},
                }
            },
        },
        {"o": {"n": "1"}},
    ),
    (
        {
            "type": "object",
            "properties": {
                "o": {"type": "object", "const": {"n": 2}, "properties": {"n": {"type": "integer"}}}
            },
        },
        {"o": {"n": "1"}},
    ),
]


def test_a_container_is_judged_again_after_its_children_change() -> None:
    verdicts = []
    for schema, arguments in _RECHECKED:
        _assert_every_use_matches(schema, arguments)
        verdicts.append(check({"schema": schema, "arguments": arguments})["verdict"])
    assert verdicts == ["UNREPAIRABLE", "UNREPAIRABLE", "REPAIRED", "UNREPAIRABLE"]
