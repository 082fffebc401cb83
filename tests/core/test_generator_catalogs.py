"""The generator on catalogs it was not written for: a corpus from whatever a catalog can feed
(generator.shape, D6.4), values from each schema unless pools are given (docs/pools.md), and
the catalogs that used to trip an internal check."""

from __future__ import annotations

import functools
import io
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.schema_strategies import HOSTILE_SCHEMAS, SCHEMAS

from toolcall300.catalog import CatalogError, catalog_problems
from toolcall300.cli import dispatch
from toolcall300.generator.build import DATA, FILES, MAKERS, MANIFEST, Inputs, build
from toolcall300.generator.shape import Shape
from toolcall300.generator.values import GenerationError, build_value, pools_problems
from toolcall300.schema import is_valid
from toolcall300.spec import CATEGORIES, decision_ids

#: The minimal example of the tools.json contract: one tool, one required string, no default.
MINIMAL = json.loads(
    (
        Path(__file__).resolve().parents[1] / "data" / "seed-003-minimal-example.tools.json"
    ).read_text(encoding="utf-8")
)

#: A user's catalog with an integer ``amount`` and a ``target_c`` string: the demo pools hold
#: ``amount`` and ``target_c`` numbers, which must not leak into it.
PAYMENTS = [
    {
        "type": "function",
        "function": {
            "name": "refund_payment",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "integer", "minimum": 1, "maximum": 5000},
                    "target_c": {"type": "string"},
                    "reason": {"type": "string", "enum": ["duplicate", "fraud", "requested"]},
                    "notify": {"type": "boolean"},
                },
                "required": ["amount", "reason"],
                "additionalProperties": False,
            },
        },
    }
]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["generate", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return str(path)


def cases_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / FILES[0]).read_text().splitlines()]


def test_a_one_tool_catalog_without_defaults_builds_what_it_feeds(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    code, stdout, err = cli("--tools", write(tmp_path, "t.json", MINIMAL), "--out", str(out))
    assert code == 0, err
    shape = json.loads((out / MANIFEST).read_text())["shape"]
    absent = {"type_coercion", "enum_violation", "nested_flattened", "truncated"}
    assert set(shape["absent"]) == absent
    for category in absent:
        assert f"not built: {category}: no tool in the catalog offers" in stdout
        assert shape["categories"][category] == 0
    cases = cases_of(out)
    assert len(cases) == 25 * (len(CATEGORIES) - len(absent))
    assert {c["category"] for c in cases} == set(CATEGORIES) - absent
    assert cli("--check-only", "--out", str(out))[0] == 0


def test_without_required_defaults_missing_required_arg_expects_a_refusal(tmp_path: Path) -> None:
    """D6.4: rule 6's other half (no default: refuse) feeds the category."""
    assert "D6.4" in decision_ids()
    out = tmp_path / "corpus"
    code, stdout, err = cli("--tools", write(tmp_path, "t.json", MINIMAL), "--out", str(out))
    assert code == 0, err
    assert "(D6.4)" in stdout
    missing = [c for c in cases_of(out) if c["category"] == "missing_required_arg"]
    assert len(missing) == 25
    assert all(c["expected_kind"] == "unrecoverable" and c["expected"] is None for c in missing)
    for case in missing:
        match = re.search(r'"(?:arguments|input|parameters)"\s*:\s*(\{[^{}]*\})', case["text"])
        assert match and "record_id" not in json.loads(match.group(1)), case["text"]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["shape"]["missing_required_arg_refused"] is True
    assert manifest["shape"]["refusal_cases"] == 75
    rules = [json.loads(r)["rule"] for r in (out / FILES[1]).read_text().splitlines()]
    assert rules.count("rule 6 / D6.4") == 25


def test_a_partial_corpus_is_still_checked_case_by_case(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    assert cli("--tools", write(tmp_path, "t.json", MINIMAL), "--out", str(out))[0] == 0
    # a D6.4 refusal turned into a value case is caught, not excused for the corpus being partial
    rows = cases_of(out)
    victim = next(c for c in rows if c["category"] == "missing_required_arg")
    victim["expected_kind"] = "value"
    victim["expected"] = {"name": "get_record", "arguments": {"record_id": "x"}}
    (out / FILES[0]).write_text("".join(json.dumps(c) + "\n" for c in rows))
    code, _, err = cli("--check-only", "--out", str(out))
    assert code == 1 and "refusals" in err and victim["id"] in err


def test_a_manifest_cannot_hide_a_category_without_a_reason(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    assert cli("--tools", write(tmp_path, "t.json", MINIMAL), "--out", str(out))[0] == 0
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["shape"]["absent"]["truncated"] = ""
    (out / MANIFEST).write_text(json.dumps(manifest))
    code, _, err = cli("--check-only", "--out", str(out))
    assert code == 1 and "category truncated is absent from the shape" in err


def test_categories_and_counts_can_be_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    tools = write(tmp_path, "t.json", PAYMENTS)
    code, stdout, err = cli(
        "--tools", tools, "--out", str(out), "--categories", "enum_violation=4,type_coercion",
        "--per-category", "6",
    )  # fmt: skip
    assert code == 0, err
    counts: dict[str, int] = {}
    for case in cases_of(out):
        counts[case["category"]] = counts.get(case["category"], 0) + 1
    assert counts == {"enum_violation": 4, "type_coercion": 6}
    assert "not built: truncated: not asked for" in stdout
    assert len((out / FILES[2]).read_text().splitlines()) == 10  # the whole corpus is < 30
    assert cli("--check-only", "--out", str(out))[0] == 0


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("nope", "unknown category 'nope'"),
        ("enum_violation=0", "COUNT must be a positive integer"),
        ("enum_violation=x", "COUNT must be a positive integer"),
    ],
)
def test_a_bad_categories_flag_is_a_usage_error(tmp_path: Path, flag: str, message: str) -> None:
    code, _, err = cli("--out", str(tmp_path / "o"), "--categories", flag)
    assert code == 1 and message in err


def test_a_catalog_that_feeds_nothing_is_one_clear_error(tmp_path: Path) -> None:
    # a lookahead is outside what the generator writes for a pattern: no value can be built
    catalog = json.loads(json.dumps(MINIMAL))
    catalog[0]["function"]["parameters"]["properties"]["record_id"]["pattern"] = "^(?=R)\\w+$"
    out = tmp_path / "corpus"
    code, _, err = cli("--tools", write(tmp_path, "t.json", catalog), "--out", str(out))
    assert code == 1
    # its one tool is left out by name before any category is tried (build.unbuildable)
    assert (
        err == "catalog: tool get_record: cannot write a string matching pattern '^(?=R)\\\\w+$'\n"
    )
    assert not out.exists()


def test_user_catalogs_take_values_from_their_schema_not_the_demo_pools(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    code, _, err = cli("--tools", write(tmp_path, "t.json", PAYMENTS), "--out", str(out))
    assert code == 0, err
    demo = json.loads((DATA / "demo_pools.json").read_text())
    demo_amounts = set(demo["numbers"]["amount"]) | set(demo["numbers"]["target_c"])
    amounts, targets = [], []
    for case in cases_of(out):
        args = (case["expected"] or {}).get("arguments", {})
        amounts += [args["amount"]] if "amount" in args else []
        targets += [args["target_c"]] if "target_c" in args else []
    assert amounts and all(type(a) is int and 1 <= a <= 5000 for a in amounts)
    assert not demo_amounts & set(amounts)
    assert targets and all(isinstance(t, str) for t in targets)
    assert json.loads((out / MANIFEST).read_text())["pools"] is None


def test_the_demo_pools_apply_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    tools = write(tmp_path, "t.json", PAYMENTS)
    code, _, err = cli("--tools", tools, "--out", str(out), "--pools", "demo")
    assert code == 1  # the demo's number pools do not fit an integer amount: said, not hidden
    assert "amount" in err


@pytest.mark.parametrize(
    ("pools", "problem"),
    [
        ([], "pools: the root must be a JSON object"),
        ({"colour": ["red"]}, "pools.colour: unknown key"),
        ({"numbers": {"amount": ["12"]}}, "pools.numbers.amount[0]: must be one of numbers"),
        ({"numbers": {"amount": [True]}}, "pools.numbers.amount[0]: must be one of numbers"),
        ({"properties": {"title": []}}, "pools.properties.title: must be a non-empty array"),
        ({"properties": ["a"]}, "pools.properties: must be an object"),
        ({"prose": ["", "hi"]}, "pools.prose[0]: must be one of non-empty strings"),
        ({"hallucinated_tools": "x"}, "pools.hallucinated_tools: must be a non-empty array"),
    ],
)
def test_a_bad_pools_file_is_refused_by_name(tmp_path: Path, pools: Any, problem: str) -> None:
    assert any(p.startswith(problem) for p in pools_problems(pools)), pools_problems(pools)
    code, _, err = cli("--out", str(tmp_path / "o"), "--pools", write(tmp_path, "p.json", pools))
    assert code == 1 and problem in err


def test_the_shipped_pools_follow_the_documented_format() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in (DATA / "demo_pools.json", root / "corpus_private" / "inputs" / "pools.json"):
        assert pools_problems(json.loads(path.read_text())) == [], path


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
        {"type": "string", "pattern": "^(EUR|USD|JPY)$"},
        {"type": "string", "pattern": "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$"},
        {"type": "string", "minLength": 40},
        {"type": "string", "maxLength": 3},
        {"type": "string", "format": "uuid", "pattern": "^[0-9a-f-]{36}$"},
        {"type": "integer", "maximum": -5},
        {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 2},
        {"type": "number", "minimum": 0.5, "maximum": 0.6},
        {"type": "number", "exclusiveMinimum": 1000},
        {"type": "string", "const": "v1"},
        {"type": "array", "items": {"type": "integer", "minimum": 3, "maximum": 3}, "maxItems": 1},
    ],
)
def test_values_come_from_the_schema(schema: dict[str, Any]) -> None:
    rng = random.Random(7)
    for _ in range(20):
        value = build_value(rng, schema, {}, "tool", "prop")
        assert is_valid(value, schema), (value, schema)


def test_a_dotted_property_beside_its_nested_namesake_is_a_valid_catalog(tmp_path: Path) -> None:
    """Rule 7: ``address.city`` is declared at the top level, so it is never a flattened key."""
    catalog = [
        {
            "type": "function",
            "function": {
                "name": "ship_parcel",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "address": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                            "required": ["city"],
                            "additionalProperties": False,
                        },
                        "address.city": {"type": "string"},
                        "weight_kg": {"type": "number", "minimum": 0, "maximum": 30},
                    },
                    "required": ["address", "weight_kg"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    out = tmp_path / "corpus"
    code, _, err = cli(
        "--tools", write(tmp_path, "t.json", catalog), "--out", str(out),
        "--categories", "nested_flattened",
    )  # fmt: skip
    assert code == 0, err
    flattened = cases_of(out)
    assert len(flattened) == 25 and all(c["category"] == "nested_flattened" for c in flattened)


def _wide_catalog(tools: int) -> list[dict[str, Any]]:
    params = {
        "type": "object",
        "properties": {
            "level": {"type": "string", "enum": ["low", "high"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
        },
        "required": ["level"],
        "additionalProperties": False,
    }
    return [
        {"type": "function", "function": {"name": f"tool_{i}_op", "parameters": params}}
        for i in range(tools)
    ]


def test_each_tool_name_is_normalised_once_per_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule-3 index per catalog: a case no longer re-normalises every name of the catalog
    (that made a build quadratic in the number of tools; bench/bench_generate.py times it)."""
    import toolcall300.generator.rules as shared
    from toolcall300.catalog import load_catalog
    from toolcall300.generator.build import make_cases

    calls = []
    real = shared.normalise_tool_name

    def counting(name: str) -> str:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(shared, "normalise_tool_name", counting)
    catalog = load_catalog(_wide_catalog(300))
    cases, _, _ = make_cases(catalog, {}, 3)
    assert len(cases) >= 250
    assert len(calls) <= 2 * len(catalog), len(calls)


def test_an_enum_is_indexed_once_not_once_per_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 4 through one index per enum: an enum of n members costs O(n), not O(n^2)."""
    import toolcall300.rules as rules
    from toolcall300.catalog import load_catalog
    from toolcall300.generator.build import make_cases

    members = 2000
    catalog = load_catalog(
        [
            {
                "function": {
                    "name": "pick_colour",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "colour": {
                                "type": "string",
                                "enum": [f"c_{i}" for i in range(members)],
                            },
                            "count": {"type": "integer", "minimum": 1, "maximum": 9},
                        },
                        "required": ["colour", "count"],
                        "additionalProperties": False,
                    },
                }
            }
        ]
    )
    calls = 0
    real = rules.normalise_enum_token

    def counting(value: str) -> str:
        nonlocal calls
        calls += 1
        return real(value)

    monkeypatch.setattr(rules, "normalise_enum_token", counting)
    if hasattr(rules, "_enum_index"):
        rules._enum_index.cache_clear()  # count this build's normalisations, not a cached one
    cases, _, _ = make_cases(catalog, {}, 3)
    assert any(c["category"] == "enum_violation" for c in cases)
    assert calls <= 20 * members, calls


def test_a_tool_no_call_can_be_built_for_is_left_out_by_name(tmp_path: Path) -> None:
    broken = {
        "type": "function",
        "function": {
            "name": "wolfram_alpha",
            "parameters": {"type": "object", "properties": {}, "required": ["query"]},
        },
    }
    out = tmp_path / "corpus"
    code, stdout, err = cli(
        "--tools", write(tmp_path, "t.json", [*PAYMENTS, broken]), "--out", str(out)
    )  # fmt: skip
    assert code == 0, err
    why = "tool wolfram_alpha: required property 'query' at $ is not declared in properties"
    assert f"left out: {why}" in stdout
    assert json.loads((out / MANIFEST).read_text())["tools_left_out"] == {"wolfram_alpha": why}
    assert all(
        c["expected"] is None or c["expected"]["name"] != "wolfram_alpha" for c in cases_of(out)
    )
    code, _, err = cli("--tools", write(tmp_path, "b.json", [broken]), "--out", str(out / "b"))
    assert code == 1 and f"catalog: {why}" in err


def test_properties_of_several_types_or_none_take_a_value_that_fits(tmp_path: Path) -> None:
    catalog = json.loads(json.dumps(PAYMENTS))
    props = catalog[0]["function"]["parameters"]["properties"]
    props["value"] = {"type": ["string", "number", "null"]}
    props["anything"] = {"description": "untyped: any value"}
    catalog[0]["function"]["parameters"]["required"] += ["value", "anything"]
    out = tmp_path / "corpus"
    code, _, err = cli("--tools", write(tmp_path, "t.json", catalog), "--out", str(out))
    assert code == 0, err
    values = [c["expected"]["arguments"]["value"] for c in cases_of(out) if c["expected"]]
    assert values and all(isinstance(v, str) for v in values)


def test_a_recorded_recipe_is_never_rebuilt_into_a_smaller_shape(tmp_path: Path) -> None:
    """The paid corpus keeps the seed's shape: --rebuild refuses rather than build less."""
    (tmp_path / "inputs").mkdir()
    write(tmp_path / "inputs", "tools.json", MINIMAL)
    write(tmp_path / "inputs", "pools.json", {})
    recipe = {"seed": 1, "tools": "inputs/tools.json", "pools": "inputs/pools.json"}
    write(tmp_path / "inputs", "recipe.json", recipe)
    code, _, err = cli("--rebuild", str(tmp_path), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "the recipe asks for the default shape, but the catalog does not feed" in err
    assert "enum_violation (no tool in the catalog offers a string enum property)" in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SCHEMAS, min_size=1, max_size=3), st.booleans())
def test_any_accepted_catalog_ends_in_a_checked_corpus_or_a_named_refusal(
    schemas: list[dict[str, Any]], closed: bool
) -> None:
    """Never a traceback, never "integrity checks failed" for a catalog the reader accepted."""
    ends_in_a_checked_corpus_or_a_named_refusal(schemas, closed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(HOSTILE_SCHEMAS, min_size=1, max_size=3), st.booleans())
def test_a_hostile_catalog_ends_in_a_checked_corpus_or_a_named_refusal(
    schemas: list[dict[str, Any]], closed: bool
) -> None:
    """The same with keyword values past every real catalog (huge lengths and counts, enum
    objects with undeclared keys, patterns against lengths): never built, never a traceback."""
    ends_in_a_checked_corpus_or_a_named_refusal(schemas, closed)


def ends_in_a_checked_corpus_or_a_named_refusal(
    schemas: list[dict[str, Any]], closed: bool
) -> None:
    params: dict[str, Any] = {
        "type": "object",
        "properties": {f"p{i}": s for i, s in enumerate(schemas)},
        "required": ["p0"],
    }
    if closed:
        params["additionalProperties"] = False
    other = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    catalog = [
        {"type": "function", "function": {"name": "do_it", "parameters": params}},
        {"type": "function", "function": {"name": "other_tool", "parameters": other}},
    ]
    assume(not catalog_problems(catalog))
    small = Shape(dict.fromkeys(CATEGORIES, 2))
    try:
        result = build(Inputs("t.json", json.dumps(catalog).encode(), "", None, 3, asked=small))
    except (CatalogError, GenerationError) as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert result.report.ok, (json.dumps(params), result.report.failures[:3])


# ------------------------------------------------------------ hostile and pathological catalogs


def with_other(schema: dict[str, Any], name: str = "hostile") -> list[dict[str, Any]]:
    """A catalog of one tool with a required property ``p`` of ``schema``, beside a plain one."""
    other = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    params = {"type": "object", "properties": {"p": schema}, "required": ["p"]}
    return [
        {"type": "function", "function": {"name": name, "parameters": params}},
        {"type": "function", "function": {"name": "other_tool", "parameters": other}},
    ]


def small_build(catalog: list[dict[str, Any]]) -> Any:
    small = Shape(dict.fromkeys(CATEGORIES, 2))
    return build(Inputs("t.json", json.dumps(catalog).encode(), "", None, 3, asked=small))


def expected_names(result: Any) -> set[str]:
    cases = [json.loads(line) for line in result.files[FILES[0]].decode().splitlines()]
    return {c["expected"]["name"] for c in cases if c["expected"]}


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        # a string of 10**12 characters was built (MemoryError, or the machine's memory)
        ({"type": "string", "minLength": 10**12}, "more than 100000 characters"),
        ({"type": "string", "minLength": 1e300}, "more than 100000 characters"),
        # 10**12 items were drawn one by one (a hang)
        ({"type": "array", "items": {"type": "integer"}, "minItems": 10**12}, "more than 100000"),
        ({"type": "string", "pattern": "^a{1000000000}$"}, "more than 100000"),
        # arrays of arrays 30 deep: up to 3 items a level, 3**30 values (a hang)
        (
            functools.reduce(lambda s, _: {"type": "array", "items": s}, range(30), {}),
            "more than 100000",
        ),
        # a 20 000-member enum repeated in every case that declares the tool (a hang)
        ({"enum": [f"value-{i}" for i in range(20_000)]}, "characters of JSON; the generator's"),
    ],
)
def test_a_call_or_declaration_past_the_generators_bounds_is_left_out_by_name(
    schema: dict[str, Any], needle: str
) -> None:
    """Never built: the tool is left out, named, and the rest of the catalog still builds."""
    result = small_build(with_other(schema))
    assert result.report.ok, result.report.failures[:3]
    assert list(result.left_out) == ["hostile"]
    assert needle in result.left_out["hostile"], result.left_out
    assert expected_names(result) == {"other_tool"}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a{2}$", "minLength": 5},
        {"type": "string", "pattern": "^[^\\s\\S]$"},
        {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 3},
        {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "uniqueItems": True},
    ],
)
def test_a_tool_no_valid_call_can_be_built_for_is_left_out_by_name(schema: dict[str, Any]) -> None:
    """It used to be offered in every case but silently never called: now it is named."""
    result = small_build(with_other(schema))
    assert result.report.ok, result.report.failures[:3]
    assert list(result.left_out) == ["hostile"], result.left_out


def test_an_enum_of_objects_with_undeclared_keys_is_never_an_expected_value() -> None:
    """D7.2: an expected call holds only declared keys, so such members are not picked, and
    a const of one leaves its tool out (it made "integrity checks failed")."""
    result = small_build(with_other({"const": {"a": [1, {"b": None}]}}))
    assert result.report.ok, result.report.failures[:3]
    assert "holds object keys its schema does not declare" in result.left_out["hostile"]
    nested = small_build(with_other({"const": [[[1]], [2]]}))  # lists hold no keys: built
    assert nested.report.ok and not nested.left_out, nested.left_out
    mixed = {"enum": [{"a": 1}, [1, 2], "plain"]}
    result = small_build(with_other(mixed))
    assert result.report.ok, result.report.failures[:3]
    assert not result.left_out and "hostile" in expected_names(result)


def test_integral_float_lengths_and_counts_build() -> None:
    """``20.0`` is an integer to JSON Schema; ``"x" * 15.0`` was a TypeError traceback."""
    schema = {"type": "string", "minLength": 20.0, "maxLength": 30.0}
    result = small_build(with_other(schema))
    assert result.report.ok and not result.left_out, result.report.failures[:3]
    arrays = {"type": "array", "items": {"type": "integer"}, "minItems": 2.0, "maxItems": 2.0}
    result = small_build(with_other(arrays))
    assert result.report.ok and not result.left_out, result.report.failures[:3]


def test_a_file_with_a_lone_surrogate_is_one_named_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = json.dumps(MINIMAL).replace('"name": "', '"name": "\\ud800', 1)
    path.write_text(text)
    code, _, err = cli("--tools", str(path), "--out", str(tmp_path / "out"))
    assert code == 1
    assert err == "catalog: the file holds the lone surrogate escape \\ud800: not Unicode text\n"


def test_a_category_no_tool_feeds_costs_one_turn_of_a_large_catalog() -> None:
    """Every tool once and then eleven strides, not twelve turns of the catalog: the 50 MB,
    10 000-tool catalog spent most of its build on categories nothing could feed."""
    from toolcall300.catalog import load_catalog
    from toolcall300.generator.build import STRIDE, make_category
    from toolcall300.generator.rules import Ctx

    catalog = load_catalog(_wide_catalog(1000))
    tried = []

    def never(ctx: Ctx, tool: Any, variant: int) -> None:
        tried.append(variant)

    ctx = Ctx(random.Random(3), catalog, {})
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(MAKERS, "enum_violation", never)
        with pytest.raises(GenerationError, match="no tool in the catalog offers"):
            make_category(ctx, "enum_violation", 1)
    assert len(tried) == len(catalog) + 11 * STRIDE


@pytest.mark.parametrize("name", ["a.b", ""])
def test_an_object_holding_a_dotted_or_empty_name_is_never_flattened(name: str) -> None:
    """``p.a.b`` would not say whether ``a.b`` is one key or two (D7.1): flattening such an
    object made a case whose re-nesting disagreed with its label (integrity checks failed)."""
    schema = {"type": "object", "additionalProperties": False, "properties": {name: {}}}
    result = small_build(with_other(schema))
    assert result.report.ok, result.report.failures[:3]
    assert "nested_flattened" in result.shape.absent


def test_an_integral_float_in_an_integer_const_is_labelled_as_the_integer() -> None:
    """``2.0`` is an integer to JSON Schema; a label of ``2.0`` was no lossless integer for its
    coerced text (lossless_roundtrip and multiple_agree failed). An integer enum holding one
    leaves its tool out by name (rule 4 matches members as written)."""
    result = small_build(with_other({"type": "integer", "const": 2.0}))
    assert result.report.ok, result.report.failures[:3]
    cases = [json.loads(line) for line in result.files[FILES[0]].decode().splitlines()]
    values = [
        c["expected"]["arguments"]["p"]
        for c in cases
        if c["expected"] and "p" in c["expected"]["arguments"]
    ]
    assert values and all(type(v) is int for v in values), values
    result = small_build(with_other({"type": "integer", "enum": [1, 2.0]}))
    assert result.report.ok, result.report.failures[:3]
    assert "holds 2.0, a float" in result.left_out["hostile"]
