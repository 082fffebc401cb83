"""Invariants of the tool-argument/v1 checker, by property-based testing.

The generator builds a covered schema, a value that conforms to it, and then damages the value
only in ways the whitelist undoes (a number as a string, a scalar for a one-element array, an
object as JSON text, a null on an optional property, a wrong-cased enum entry, a truncated or
comma-trailed text), so REPAIRED verdicts are common, not lucky.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples

from toolcall300.argcheck import text as tr
from toolcall300.argcheck.check import check, check_body, precheck
from toolcall300.argcheck.repairs import apply_diff
from toolcall300.canonical import canonical, json_equal
from toolcall300.schema import is_valid, iter_errors

SETTINGS = settings(
    max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

KEYS = st.text(alphabet='abcdefgh_ ."', min_size=1, max_size=4)
ENUM_WORDS = st.lists(
    st.text(alphabet="abcXYZ", min_size=1, max_size=4), min_size=1, max_size=4, unique=True
)

LEAVES = st.one_of(
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": "string"}),
    st.just({"type": ["string", "null"]}),
    ENUM_WORDS.map(lambda words: {"type": "string", "enum": words}),
)


def _object(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        props = draw(st.dictionaries(KEYS, children, max_size=4))
        required = [k for k in props if draw(st.booleans())]
        schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
        if draw(st.booleans()):
            schema["additionalProperties"] = False
        return schema

    return build()


SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        _object(children), children.map(lambda items: {"type": "array", "items": items})
    ),
    max_leaves=10,
)
ROOTS = _object(SCHEMAS)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
JSON = st.recursive(
    SCALARS,
    lambda c: st.one_of(
        st.lists(c, max_size=4), st.dictionaries(st.text(max_size=4), c, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def conforming(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A value that conforms to ``schema`` (one of the generated shapes)."""
    t = schema["type"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if t == "integer":
        return draw(st.integers(-1000, 1000))
    if t == "number":
        return draw(st.one_of(st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False)))
    if t == "boolean":
        return draw(st.booleans())
    if t == "string":
        return draw(st.one_of(st.text(max_size=5), st.integers(-999, 999).map(str)))
    if t == ["string", "null"]:
        return draw(st.one_of(st.none(), st.text(max_size=5)))
    if t == "array":
        return [draw(conforming(schema["items"])) for _ in range(draw(st.integers(0, 3)))]
    out = {}
    for key, sub in schema["properties"].items():
        if key in schema["required"] or draw(st.booleans()):
            out[key] = draw(conforming(sub))
    return out


def _wrappable(item: Any) -> bool:
    """Whether R7 would wrap ``item`` back (D5, D9: not an array, null, or array-holding string)."""
    if item is None or isinstance(item, list):
        return False
    if isinstance(item, str):
        try:
            return not isinstance(json.loads(item), list)
        except ValueError:
            return True
    return True


@st.composite
def damaged(draw: st.DrawFn, value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with some nodes damaged the way R3..R9 can undo."""
    t = schema["type"]
    if t == "array":
        items = [draw(damaged(v, schema["items"])) for v in value]
        if len(items) == 1 and _wrappable(items[0]) and draw(st.booleans()):
            return items[0]  # R7
        if draw(st.integers(0, 4)) == 0:
            return json.dumps(items)  # R5 (array)
        return items
    if t == "object":
        out: dict[str, Any] = {}
        for key, v in value.items():
            out[key] = draw(damaged(v, schema["properties"][key]))
        for key, sub in schema["properties"].items():
            absent_optional = key not in out and key not in schema["required"]
            if (
                absent_optional
                and sub["type"] != ["string", "null"]
                and draw(st.integers(0, 3)) == 0
            ):
                out[key] = None  # R8
        if draw(st.integers(0, 4)) == 0:
            return json.dumps(out)  # R5 (object)
        return out
    roll = draw(st.integers(0, 2))
    if roll == 0:
        return value
    if "enum" in schema:
        return value.swapcase() if roll == 1 else value  # R9 (may be ambiguous: then a defect)
    if t in ("integer", "number") and isinstance(value, int):
        return json.dumps(value)  # R3
    if t == "boolean":
        return json.dumps(value)  # R4
    if t == "string" and re.fullmatch("0|-?[1-9][0-9]{0,4}", value):
        return int(value)  # R6 (only where the spelling round-trips)
    return value


@st.composite
def requests(draw: st.DrawFn) -> tuple[dict[str, Any], Any, Any]:
    """(request, the submitted blob, the original conforming value)."""
    schema = draw(ROOTS)
    value = draw(conforming(schema))
    broken = draw(damaged(value, schema))
    if isinstance(broken, str):  # the root is never unwrapped
        broken = value
    if draw(st.booleans()):
        text = _damage_text(draw, json.dumps(broken))
        return {"schema": schema, "arguments_text": text}, text, value
    return {"schema": schema, "arguments": broken}, broken, value


def _damage_text(draw: st.DrawFn, text: str) -> str:
    """Trailing commas before closers (R2) and cut closers (R1), both outside strings."""
    tokens = tr.lex(text)
    if draw(st.booleans()):
        spots = [
            t.start
            for i, t in enumerate(tokens)
            if t.kind in "]}" and i and tokens[i - 1].kind not in "[{"
        ]
        for off in sorted(draw(st.sets(st.sampled_from(spots))) if spots else (), reverse=True):
            text = text[:off] + "," + text[off:]
    if draw(st.booleans()):
        stripped = text.rstrip("]}")  # the text ends with its root's closer, outside any string
        if stripped and not stripped[-1].isdigit():
            text = stripped
    return text


@SETTINGS
@given(requests())
def test_apply_diff_reproduces_every_repaired_blob(case: tuple[dict[str, Any], Any, Any]) -> None:
    request, submitted, _ = case
    response = check(request)
    assert "refusal" not in response
    if response["verdict"] == "REPAIRED":
        replayed = apply_diff(submitted, response["diff"])
        assert canonical(replayed) == canonical(response["arguments"])
        assert list(replayed) == list(response["arguments"])  # key order too


@SETTINGS
@given(requests())
def test_a_repaired_blob_rechecks_valid(case: tuple[dict[str, Any], Any, Any]) -> None:
    request, _, _ = case
    response = check(request)
    if response["verdict"] == "REPAIRED":
        again = check({"schema": request["schema"], "arguments": response["arguments"]})
        assert again["verdict"] == "VALID"
        assert is_valid(response["arguments"], request["schema"])


@SETTINGS
@given(requests())
def test_verdicts_are_consistent_with_validation(case: tuple[dict[str, Any], Any, Any]) -> None:
    request, _, _ = case
    response = check(request)
    verdict = response["verdict"]
    if verdict == "VALID":
        assert "diff" not in response and is_valid(response["arguments"], request["schema"])
    elif verdict == "UNREPAIRABLE":
        assert "arguments" not in response and response["defects"]
    else:
        assert response["diff"] and all(
            e["rule"] in {f"R{i}" for i in range(1, 10)} for e in response["diff"]
        )


@SETTINGS
@given(requests())
def test_damage_of_only_unambiguous_kinds_is_mostly_repaired(
    case: tuple[dict[str, Any], Any, Any],
) -> None:
    # The original value conforms: whenever the checker repairs, it recovers exactly it, so a
    # repair never invents or alters a value (R6 and R3 round-trip by construction here).
    request, _, original = case
    response = check(request)
    if response["verdict"] in ("VALID", "REPAIRED"):
        assert canonical(response["arguments"]) == canonical(original)


@SETTINGS
@given(requests())
def test_the_same_request_twice_gives_the_identical_response(
    case: tuple[dict[str, Any], Any, Any],
) -> None:
    request, _, _ = case
    assert canonical(check(request)) == canonical(check(request))
    body = json.dumps(request).encode()
    assert check_body(body) == check(json.loads(body))


@SETTINGS
@given(
    st.one_of(
        JSON, st.dictionaries(st.sampled_from(["schema", "arguments", "arguments_text", "x"]), JSON)
    )
)
def test_check_never_raises_on_arbitrary_json(request: Any) -> None:
    for response in (check(request), precheck(request)):
        assert ("refusal" in response) != ("verdict" in response or "assessable" in response)
        json.dumps(response, allow_nan=False).encode("utf-8")


@SETTINGS
@given(ROOTS, JSON)
def test_check_never_raises_on_arbitrary_arguments(schema: dict[str, Any], arguments: Any) -> None:
    response = check({"schema": schema, "arguments": arguments})
    json.dumps(response, allow_nan=False).encode("utf-8")
    codes = [d["code"] for d in response.get("defects", [])]
    assert codes == sorted(codes, key=lambda c: c != "missing_required")  # missing_required first
    if response.get("verdict") == "REPAIRED":
        assert canonical(apply_diff(arguments, response["diff"])) == canonical(
            response["arguments"]
        )


@SETTINGS
@given(
    ROOTS,
    st.text(alphabet='{}[]:,"0123456789.-eEtruefalsn \\\nab', max_size=30) | st.text(max_size=20),
)
def test_check_never_raises_on_arbitrary_text(schema: dict[str, Any], text: str) -> None:
    response = check({"schema": schema, "arguments_text": text})
    json.dumps(response, allow_nan=False).encode("utf-8")
    if response.get("verdict") == "REPAIRED":
        assert canonical(apply_diff(text, response["diff"])) == canonical(response["arguments"])


@SETTINGS
@given(st.binary(max_size=64))
def test_check_body_never_raises_on_arbitrary_bytes(body: bytes) -> None:
    assert "refusal" in check_body(body) or "verdict" in check_body(body)


@SETTINGS
@given(JSON, JSON)
def test_arbitrary_schemas_never_raise(schema: Any, arguments: Any) -> None:
    for sch in (schema, {"type": "array", "items": schema}):
        response = check({"schema": sch, "arguments": arguments})
        if "arguments" in response:  # D13: whatever the schema, the arguments stay an object
            assert isinstance(response["arguments"], dict)


def _pairwise_first_equal(items: list[Any]) -> tuple[int, int] | None:
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if json_equal(items[i], items[j]):
                return i, j
    return None


@SETTINGS
@given(st.lists(st.one_of(JSON, st.sampled_from([0, 0.0, 1, 1.0, True, False, -0.0])), max_size=8))
def test_unique_items_agrees_with_the_pairwise_definition(items: list[Any]) -> None:
    # schema.py's linear uniqueItems (changed for argcheck) must name what a pairwise scan names.
    errors = list(iter_errors(items, {"uniqueItems": True}))
    pair = _pairwise_first_equal(items)
    if pair is None:
        assert errors == []
    else:
        assert [e.message for e in errors] == [f"items {pair[0]} and {pair[1]} are equal"]


def test_unique_items_on_a_body_sized_array_is_linear() -> None:
    # 20k distinct items then one repeat: a pairwise scan would need ~2e8 comparisons.
    items: list[Any] = [{"k": i} for i in range(20_000)] + [{"k": 7}]
    schema = {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}
    response = check({"schema": schema, "arguments": {"a": items}})
    assert response["defects"][0]["code"] == "items_not_unique"


RICH_LEAVES = st.one_of(
    LEAVES,
    st.lists(
        st.sampled_from(["integer", "string", "boolean", "array", "object", "null"]),
        min_size=1,
        max_size=3,
        unique=True,
    ).map(lambda ts: {"type": ts}),
    st.just({"type": "integer", "minimum": 0, "maximum": 5}),
    st.just({"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^[a-c]+$"}),
    st.just({"const": "x"}),
    st.just({"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "minItems": 1}),
)
RICH = _object(
    st.recursive(
        RICH_LEAVES,
        lambda c: st.one_of(_object(c), c.map(lambda items: {"type": "array", "items": items})),
        max_leaves=8,
    )
)


def _resolve(blob: Any, parts: list[Any]) -> bool:
    for part in parts:
        in_object = isinstance(blob, dict) and isinstance(part, str) and part in blob
        in_array = isinstance(blob, list) and isinstance(part, int) and 0 <= part < len(blob)
        if not (in_object or in_array):
            return False
        blob = blob[part]
    return True


@SETTINGS
@given(RICH, st.dictionaries(KEYS, JSON, max_size=4))
def test_every_defect_path_names_a_location_in_the_submitted_blob_or_under_a_withdrawn_repair(
    schema: dict[str, Any], args: Any
) -> None:
    from toolcall300.schema import parse_path

    response = check({"schema": schema, "arguments": args})
    defects = response.get("defects", [])
    # D22: a defect a withdrawn repair would leave sits at or below a node named as submitted
    # with the type or enum failure that repair answered.
    withdrawn_at = [
        parse_path(d["path"])
        for d in defects
        if "after_repair" not in d and d["code"] in ("type_mismatch", "enum_mismatch")
    ]
    for defect in defects:
        parts = parse_path(defect["path"])
        if "after_repair" in defect:
            assert any(parts[: len(w)] == w for w in withdrawn_at), defect
            assert defect["after_repair"] in ("R3", "R4", "R5", "R6", "R7", "R9")
        elif defect["code"] == "missing_required":
            assert _resolve(args, parts[:-1]) and not _resolve(args, parts)
        else:
            assert _resolve(args, parts), defect
    if response.get("verdict") == "REPAIRED":
        assert canonical(apply_diff(args, response["diff"])) == canonical(response["arguments"])
        assert check({"schema": schema, "arguments": response["arguments"]})["verdict"] == "VALID"


@SETTINGS
@given(RICH, st.dictionaries(KEYS, JSON, max_size=4))
def test_the_schema_cache_never_changes_an_answer(schema: dict[str, Any], args: Any) -> None:
    """The checker keeps what a schema's content decides (its refusal, compiled validators);
    a warm cache and a cold one answer alike, and the caller's later edits are not kept."""
    from toolcall300.argcheck import check as argcheck

    request = {"schema": schema, "arguments": args}
    warm = check(request)
    argcheck._SCHEMA_FACTS.clear()
    assert canonical(check(request)) == canonical(warm)
    assert canonical(check(request)) == canonical(warm)


def test_editing_a_schema_after_a_check_is_seen_by_the_next_check() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for _ in range(3):  # from the second use on, compiled from the checker's private copy
        assert check({"schema": schema, "arguments": {"n": 1}})["verdict"] == "VALID"
        assert check({"schema": schema, "arguments": {"n": "1"}})["verdict"] == "REPAIRED"
    schema["properties"]["n"]["maximum"] = 0
    assert check({"schema": schema, "arguments": {"n": 1}})["verdict"] == "UNREPAIRABLE"
    schema["properties"]["n"] = {"type": "string"}
    assert check({"schema": schema, "arguments": {"n": 1}})["verdict"] == "REPAIRED"
