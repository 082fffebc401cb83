"""The compiled pass (``argcheck.compiled``) against the interpreted one, differentially.

A schema's first check walks it interpreted; from its second use the checker runs the code
generated for it. Both must give exactly the same response (key order included) on
hypothesis-drawn requests, on the pinned vectors, on the held-out vectors and on every
covered group of the official JSON-Schema-Test-Suite, whose ``valid`` the compiled admission
must also reproduce.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.schema_strategies import SCHEMAS as EVERY_KEYWORD
from support.schema_strategies import VALUES
from test_argcheck_properties import JSON, KEYS, RICH, requests

from toolcall300.argcheck import check as argcheck
from toolcall300.argcheck import vectors as argcheck_corpus
from toolcall300.argcheck.compiled import INVALID, UNKNOWN, VALID, compile_checker
from toolcall300.argcheck.repairs import Repairer
from toolcall300.schema import schema_problems

SETTINGS = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
DATA = Path(__file__).resolve().parents[1] / "data"
SUITE = DATA / "JSON-Schema-Test-Suite" / "draft2020-12"


def _text(response: dict[str, Any]) -> str:
    return json.dumps(response, ensure_ascii=False)


def interpreted_then_compiled(request: Any) -> tuple[str, str]:
    """The answer on a schema's first use (interpreted) and on its third (compiled, cached)."""
    argcheck._SCHEMA_FACTS.clear()
    argcheck._CHECKERS.clear()
    first = _text(argcheck.check(request))
    second = _text(argcheck.check(request))
    third = _text(argcheck.check(request))
    assert second == third
    return first, third


def _assert_same(request: Any) -> None:
    first, compiled = interpreted_then_compiled(request)
    assert compiled == first


@SETTINGS
@given(requests())
def test_compiled_answers_as_interpreted_on_damaged_requests(
    case: tuple[dict[str, Any], Any, Any],
) -> None:
    _assert_same(case[0])


@SETTINGS
@given(EVERY_KEYWORD, st.dictionaries(st.sampled_from(["a", "b", "c", "a.b", "x"]), VALUES))
def test_compiled_answers_as_interpreted_for_every_keyword(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    _assert_same({"schema": schema, "arguments": arguments})
    _assert_same({"schema": schema, "arguments_text": json.dumps(arguments)})


@SETTINGS
@given(RICH, st.dictionaries(KEYS, JSON, max_size=4))
def test_compiled_answers_as_interpreted_on_arbitrary_blobs(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    _assert_same({"schema": schema, "arguments": arguments})


def _vectors() -> list[Any]:
    heldout = json.loads((DATA / "argcheck-heldout-vectors.json").read_text("utf-8"))
    out = []
    for name, corpus in (("v1", argcheck_corpus.load_corpus()), ("heldout", heldout)):
        for vector in corpus["vectors"]:
            if isinstance(vector.get("request"), dict):
                out.append(pytest.param(vector, id=f"{name}:{vector['id']}"))
    return out


@pytest.mark.parametrize("vector", _vectors())
def test_compiled_answers_every_vector_as_pinned(vector: dict[str, Any]) -> None:
    expected = argcheck_corpus.outcome(argcheck.check(vector["request"]))
    first, compiled = interpreted_then_compiled(vector["request"])
    assert compiled == first
    assert argcheck_corpus.outcome(json.loads(compiled)) == expected
    assert json.dumps(expected, sort_keys=True) == json.dumps(vector["expect"], sort_keys=True)


def _suite_groups() -> list[Any]:
    out = []
    for path in sorted(SUITE.glob("*.json")):
        for gi, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            if not schema_problems(group["schema"]):
                out.append(pytest.param(group, id=f"{path.stem}[{gi}]"))
    return out


@pytest.mark.parametrize("group", _suite_groups())
def test_compiled_agrees_with_the_official_suite(group: dict[str, Any]) -> None:
    """Each instance under property ``v`` of an object schema (arguments are an object): the
    compiled admission answers the suite's ``valid``, and the whole check as interpreted."""
    schema = {"type": "object", "properties": {"v": group["schema"]}}
    checker = compile_checker(
        schema, max_depth=argcheck.MAX_DEPTH, is_json_value=argcheck._is_json_value
    )
    for test in group["tests"]:
        arguments = {"v": test["data"]}
        assert checker.admit(arguments) == (VALID if test["valid"] else INVALID), test
        _assert_same({"schema": schema, "arguments": arguments})
        # The root itself, where the instance is an object (the root is never replaced).
        if isinstance(test["data"], dict):
            root = compile_checker(
                group["schema"], max_depth=argcheck.MAX_DEPTH, is_json_value=argcheck._is_json_value
            )
            assert root.admit(test["data"]) == (VALID if test["valid"] else INVALID), test
            _assert_same({"schema": group["schema"], "arguments": test["data"]})


def test_the_second_use_runs_generated_code() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}}
    interpreted_then_compiled({"schema": schema, "arguments": {"n": "3"}})
    (checker,) = argcheck._CHECKERS.values()
    assert "def v0(x):" in checker.source and "_type_repair" in checker.source
    repairer = Repairer(argcheck.MAX_DEPTH)
    assert checker.run({"n": "3"}, repairer, True) == ({"n": 3}, [])
    assert [d["rule"] for d in repairer.diff] == ["R3"]


def test_admission_is_the_request_checks_rule() -> None:
    """VALID or INVALID only for an exact-typed JSON object within the depth limit (D17);
    anything else is left to the request checks and the interpreter."""
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "s": {}}}
    checker = compile_checker(
        schema, max_depth=argcheck.MAX_DEPTH, is_json_value=argcheck._is_json_value
    )

    class Sub(dict):  # type: ignore[type-arg]
        pass

    deep: Any = 1
    for _ in range(argcheck.MAX_DEPTH):
        deep = [deep]
    assert checker.admit({"n": 1, "s": [1, {"a": "b"}]}) == VALID
    assert checker.admit({"n": "1"}) == INVALID
    for unknown in (
        {"n": float("nan")},
        {"n": 10**400},
        {"s": "\ud800"},
        {"\ud800": 1},
        {"s": {1: 2}},
        {"s": (1,)},
        Sub(n=1),
        {"s": deep},
        [],
    ):
        assert checker.admit(unknown) == UNKNOWN, unknown
        _assert_same({"schema": schema, "arguments": unknown})


def _bodies(request: dict[str, Any]) -> list[bytes]:
    """The request's body as clients write it (the schema first, spaced or compact), and
    hostile variants around a schema text the checker knows."""
    first = {"schema": request["schema"], **request}
    spaced = json.dumps(first).encode()
    compact = json.dumps(first, separators=(",", ":")).encode()
    schema_text = json.dumps(request["schema"]).encode()
    rest = json.dumps({k: v for k, v in request.items() if k != "schema"}).encode()
    return [
        spaced,
        compact,
        b' \n{ "schema" :' + schema_text + b" ," + rest[1:],
        spaced[:-1] + b', "schema": {}}',  # a duplicate member: refused as the whole is
        spaced[:-1] + b"garbage",
        b'{"schema": ' + schema_text + b"1, " + spaced[1:],  # the text is not the whole value
        b'{"schema": ' + schema_text + b"}",
        b'{"schema": ' + schema_text + b",}",  # a trailing comma
        b'{"schema": ' + schema_text + b', "schema": ' + schema_text + b"}",
    ]


def _body_answers(body: bytes) -> tuple[str, str]:
    argcheck._SCHEMA_FACTS.clear()
    argcheck._CHECKERS.clear()
    argcheck._SCHEMA_TEXTS.clear()
    first = _text(argcheck.check_body(body))
    for _ in range(3):
        later = _text(argcheck.check_body(body))
    return first, later


@SETTINGS
@given(requests())
def test_a_schema_found_from_its_text_answers_as_the_body_read_whole(
    case: tuple[dict[str, Any], Any, Any],
) -> None:
    for body in _bodies(case[0]):
        first, later = _body_answers(body)
        assert later == first, body


def test_a_known_schema_text_is_found_before_the_body_is_parsed() -> None:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer", "maximum": 9}, "label": {"type": "string"}},
    }
    body = json.dumps({"schema": schema, "arguments": {"count": "3"}}).encode()
    _body_answers(body)
    found = argcheck._known_schema(body)
    assert found is not None and body[found[0] : found[1]] == json.dumps(schema).encode()
    other = json.dumps({"schema": schema, "arguments_text": '{"count": 4}'}).encode()
    assert argcheck._known_schema(other) is not None
    assert argcheck.check_body(other)["verdict"] == "VALID"
    # Not found: another member first, another spelling of the same content, a longer value.
    for unknown in (
        json.dumps({"arguments": {}, "schema": schema}).encode(),
        json.dumps({"schema": schema}, indent=1).encode(),
        body.replace(b'"integer"', b'"int\\u0065ger"'),
    ):
        assert argcheck._known_schema(unknown) is None


@SETTINGS
@given(requests())
def test_a_kept_schema_check_answers_as_check(case: tuple[dict[str, Any], Any, Any]) -> None:
    request = case[0]
    fields = {k: v for k, v in request.items() if k != "schema"}
    kept = argcheck.SchemaCheck(request["schema"])
    for _ in range(2):
        assert _text(kept.check(fields)) == _text(argcheck.check(request))
    assert _text(kept.check({**fields, "other": 1})) == _text(
        argcheck.check({**request, "other": 1})
    )


def test_a_kept_schema_check_keeps_the_schema_as_it_was() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    kept = argcheck.SchemaCheck(schema)
    schema["properties"]["n"]["maximum"] = 0
    assert kept.check({"arguments": {"n": 1}})["verdict"] == "VALID"
    assert argcheck.check({"schema": schema, "arguments": {"n": 1}})["verdict"] == "UNREPAIRABLE"
    refused = argcheck.SchemaCheck({"type": "object", "$ref": "#"})
    assert refused.check({"arguments": {}})["refusal"]["code"] == "schema_not_covered"
    assert refused.check({})["refusal"]["code"] == "schema_not_covered"
    assert argcheck.SchemaCheck(schema).check([])["refusal"]["code"] == "invalid_request_body"


def test_a_schema_sent_again_is_found_however_its_objects_are_referenced() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"enum": ["a"]}}}
    argcheck._SCHEMA_FACTS.clear()
    held = []
    for _ in range(4):
        argcheck.check({"schema": schema, "arguments": {"n": 1}})
        held.append(schema["properties"]["s"])  # another reference to a part of it
    assert len(argcheck._SCHEMA_FACTS) == 1 and len(argcheck._CHECKERS) >= 1


def test_generated_repairs_call_only_the_rules_that_can_apply() -> None:
    """A node declaring a scalar type calls the rules its type serves (R3 for a number, R4
    for a boolean, R6 for a string) instead of trying the whole whitelist; one declaring a
    container type calls ``type_repair`` (R5 and R7 read what a string holds)."""
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "b": {"type": "boolean"},
            "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "number"}},
        },
    }
    checker = compile_checker(
        schema, max_depth=argcheck.MAX_DEPTH, is_json_value=argcheck._is_json_value
    )
    assert "found = _r3(x, T1)" in checker.source
    assert "found = _r4(x, T2)" in checker.source
    assert "found = _r6(x, T3)" in checker.source
    assert "found = _type_repair(x, T4, len(p), c.max_depth)" in checker.source  # l
    assert "found = _r3(x, T5)" in checker.source  # its items
    # a failing node's errors: its keywords tested inline, a keyword's check called on failure
    assert "def E1(x, p):" in checker.source
    _assert_same({"schema": schema, "arguments": {"n": "3", "b": "true", "s": 4, "l": "2"}})


WIDE = {
    "type": "object",
    "properties": {
        **{f"k{i}": {"type": "integer", "maximum": 9} for i in range(8)},
        **{f"s{i}": {"type": "string", "enum": ["a", "B"]} for i in range(4)},
        "req": {"type": "number"},
        "arr": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        "any": {},
    },
    "required": ["req", "k0"],
    "additionalProperties": False,
}


@SETTINGS
@given(
    st.sampled_from([WIDE, {**WIDE, "properties": dict(list(WIDE["properties"].items())[:5])}]),
    st.dictionaries(
        st.sampled_from([*WIDE["properties"], "other"]),
        st.one_of(
            st.none(),
            st.sampled_from(["3", "12", "b", "A", "x", "4.5", "true", 2.0, 1e300, True]),
            st.integers(-3, 12),
            st.lists(st.one_of(st.integers(-2, 2), st.sampled_from(["1", None])), max_size=4),
        ),
    ),
)
def test_wide_schemas_answer_as_interpreted(schema: dict[str, Any], arguments: Any) -> None:
    """Members told apart by an ``if`` chain (up to twelve declared) and by a table (more),
    with R8 removals and repairs side by side, copied only when one changes."""
    _assert_same({"schema": schema, "arguments": arguments})
    request = {"arguments": arguments}
    assert _text(argcheck.SchemaCheck(schema).check(request)) == _text(
        argcheck.check({"schema": schema, **request})
    )
