"""Catalog importers (toolcall300/importers, docs/catalog-import.md): each form is recognised,
each mapping is made and reported, what the contract cannot say is refused by name."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.schema_strategies import SCHEMAS as EVERY_KEYWORD

from toolcall300.catalog import MAX_SCHEMA_DEPTH, catalog_problems
from toolcall300.cli import dispatch
from toolcall300.importers import (
    Imported,
    ImportRefused,
    catalog_bytes,
    detect_format,
    import_catalog,
    import_file,
)

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real-catalogs"
SEED_MINIMAL = json.loads(
    (ROOT / "tests" / "data" / "seed-003-minimal-example.tools.json").read_text(encoding="utf-8")
)
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def whats(imported: Imported) -> list[str]:
    return [c.what for c in imported.changes]


def only_params(imported: Imported) -> dict[str, Any]:
    (tool,) = imported.tools
    params: dict[str, Any] = tool["function"]["parameters"]
    return params


# ----------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("raw", "form"),
    [
        (SEED_MINIMAL, "tools-json"),
        ({"tools": [{"name": "f", "inputSchema": SCHEMA}]}, "mcp"),
        ([{"name": "f", "inputSchema": SCHEMA}], "mcp"),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"tools": [{"name": "f", "inputSchema": SCHEMA}]},
            },
            "mcp",
        ),
        ([{"name": "f", "description": "d", "input_schema": SCHEMA}], "anthropic"),
        ({"model": "m", "tools": [{"name": "f", "input_schema": SCHEMA}]}, "anthropic"),
        ([{"type": "function", "name": "f", "parameters": SCHEMA, "strict": True}], "openai"),
        ([{"type": "function", "name": "f", "parameters": SCHEMA}, *SEED_MINIMAL], "openai"),
        ({"functionDeclarations": [{"name": "f", "parameters": SCHEMA}]}, "gemini"),
        ({"tools": [{"functionDeclarations": [{"name": "f", "parameters": SCHEMA}]}]}, "gemini"),
        ([{"name": "f", "parameters": {"type": "OBJECT", "properties": {}}}], "gemini"),
        ([{"name": "f", "parameters": {"type": "dict", "properties": {}}}], "bfcl"),
        (
            {"id": "simple_0", "question": [], "function": [{"name": "a.b", "parameters": {}}]},
            "bfcl",
        ),
        ({"name": "f", "inputSchema": SCHEMA}, "mcp"),  # a single tool
    ],
)
def test_each_form_is_recognised(raw: Any, form: str) -> None:
    assert detect_format(raw) == form
    assert import_catalog(raw).format == form


def test_a_file_of_no_known_form_says_what_was_looked_for_and_what_it_is() -> None:
    with pytest.raises(ImportRefused) as exc:
        detect_format({"servers": [1, 2]})
    (line,) = exc.value.problems
    assert "an object with keys 'servers'" in line
    for form in ("tools-json", "openai", "anthropic", "mcp", "gemini", "bfcl", "--format"):
        assert form in line


def test_an_empty_catalog_declares_no_tools() -> None:
    with pytest.raises(ImportRefused, match="declares no tools"):
        import_catalog([])
    with pytest.raises(ImportRefused, match="declares no tools"):
        import_catalog({"tools": []}, "mcp")


def test_entries_of_several_forms_are_refused_by_name() -> None:
    raw = [{"name": "f", "inputSchema": SCHEMA}, {"name": "g", "input_schema": SCHEMA}]
    with pytest.raises(
        ImportRefused, match=r"several forms \(tools\[0\] mcp, tools\[1\] anthropic\)"
    ):
        detect_format(raw)


def test_a_bfcl_data_file_of_many_cases_is_named() -> None:
    lines = b'{"id": "a", "function": []}\n{"id": "b", "function": []}\n'
    with pytest.raises(ImportRefused, match="one case a line"):
        import_file(lines)


def test_forcing_a_format_reads_the_entries_as_it() -> None:
    raw = [{"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "float"}}}}]
    assert detect_format(raw) == "bfcl"
    assert only_params(import_catalog(raw, "bfcl"))["properties"]["n"]["type"] == "number"
    with pytest.raises(ImportRefused, match="unknown format 'yaml'"):
        import_catalog(raw, "yaml")


# ------------------------------------------------------------------------- identity (tools.json)


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "corpus_private" / "inputs" / "tools.json",
        ROOT / "layers" / "toolcall300" / "toolcall300" / "data" / "demo_tools.json",
    ],
    ids=lambda p: p.name,
)
def test_a_seed_003_catalog_is_imported_as_itself_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    imported = import_file(data)
    assert imported.format == "tools-json" and imported.unchanged
    assert catalog_bytes(imported, data) == data


def test_the_seed_minimal_example_is_imported_unchanged() -> None:
    imported = import_catalog(SEED_MINIMAL)
    assert imported.unchanged and imported.tools == SEED_MINIMAL


UNION = {"type": "object", "properties": {"u": {"anyOf": [{"type": "object"}, {"enum": ["x"]}]}}}


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "function", "function": {"name": "g", "parameters": UNION}},  # Chat Completions
        {"type": "function", "name": "g", "parameters": UNION, "strict": False},  # Responses
        {"name": "g", "inputSchema": UNION},  # MCP
        {"name": "g", "input_schema": UNION},  # Anthropic
    ],
    ids=["chat-completions", "responses", "mcp", "anthropic"],
)
def test_one_unsupported_tool_in_any_array_form_is_left_out_by_name(entry: dict[str, Any]) -> None:
    """A real union refused a whole Chat Completions array, while the same tool as MCP was
    left out by name: every form now leaves that one tool out, with the rule refusing it."""
    good = SEED_MINIMAL[0] if "function" in entry else _same_form(entry)
    imported = import_catalog([good, entry])
    assert [t["function"]["name"] for t in imported.tools] == ["get_record"]
    (line,) = imported.left_out
    assert line.startswith("tools[1] (g): unsupported keyword 'anyOf' at parameters/properties/u")
    with pytest.raises(ImportRefused, match="unsupported keyword 'anyOf'"):
        import_catalog([good, entry], strict=True)


def _same_form(entry: dict[str, Any]) -> dict[str, Any]:
    schema = SEED_MINIMAL[0]["function"]["parameters"]
    key = next(k for k in ("inputSchema", "input_schema", "parameters") if k in entry)
    return {**entry, "name": "get_record", key: schema}


def test_an_openai_entry_among_chat_completions_entries_suggests_format_openai() -> None:
    imported = import_catalog([*SEED_MINIMAL, {"type": "web_search_preview"}])
    assert imported.format == "tools-json" and len(imported.tools) == 1
    assert imported.left_out[0].endswith("(read the file with --format openai)")
    assert len(import_catalog([*SEED_MINIMAL, {"type": "web_search_preview"}], "openai").tools) == 1


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        (
            {
                "type": "object",
                "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            },
            "the tools.json contract refuses anyOf, oneOf and not",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"type": "string"}},
            },
            "the tools.json contract's schema subset has no $ref or $defs",
        ),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "default": "ten"}}},
            "a default must validate against its own schema (D6.2)",
        ),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "default": None}}},
            "a default must validate against its own schema (D6.2)",
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
            },
            "outside the tools.json contract's schema subset as written",
        ),
    ],
    ids=["anyOf-null", "ref", "default-wrong-type", "default-null", "draft4-exclusive"],
)
def test_strict_refuses_what_seed_003_refuses_and_the_default_reports_the_rewrite(
    schema: dict[str, Any], rule: str, tmp_path: Path
) -> None:
    """--strict accepted anyOf, $ref and a default of the wrong type, rewritten silently."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    imported = import_catalog(tools)
    assert imported.changes and all(c.where.startswith("parameters") for c in imported.changes)
    with pytest.raises(ImportRefused) as refused:
        import_catalog(tools, strict=True)
    assert all(p.startswith("tools[0] (f): parameters") for p in refused.value.problems)
    assert rule in refused.value.problems[0]
    src = tmp_path / "tools.json"
    src.write_text(json.dumps(tools))
    code, out, err = cli("tools", "import", str(src))
    assert code == 0 and f"read as tools-json: 1 tools, {len(imported.changes)} changes" in err
    code, out, err = cli("tools", "import", str(src), "--strict")
    assert (code, out) == (1, "") and rule in err


def test_strict_accepts_what_seed_003_accepts_and_maps_only_the_envelope() -> None:
    assert import_catalog(SEED_MINIMAL, strict=True).unchanged
    schema = SEED_MINIMAL[0]["function"]["parameters"]
    imported = import_catalog(
        {"tools": [{"name": "f", "inputSchema": schema, "annotations": {"readOnlyHint": True}}]},
        strict=True,
    )
    assert imported.tools[0]["x-mutates"] is False


# ------------------------------------------------------------------------------ each form


def test_mcp_annotations_become_x_mutates_and_the_rest_is_reported() -> None:
    raw = {
        "tools": [
            {
                "name": "get_me",
                "title": "Get me",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": True, "title": "Get me"},
            },
            {
                "name": "delete_repo",
                "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}}},
                "annotations": {"readOnlyHint": False, "destructiveHint": True},
                "outputSchema": {"type": "object"},
            },
            {"name": "star", "inputSchema": SCHEMA, "annotations": {"destructiveHint": True}},
            {"name": "plain", "inputSchema": SCHEMA},
        ]
    }
    imported = import_catalog(raw)
    by_name = {t["function"]["name"]: t for t in imported.tools}
    assert by_name["get_me"]["x-mutates"] is False
    assert by_name["delete_repo"]["x-mutates"] is True
    assert by_name["star"]["x-mutates"] is True
    assert "x-mutates" not in by_name["plain"]
    lines = [c.line() for c in imported.changes]
    assert "get_me: annotations: readOnlyHint true written as x-mutates false" in lines
    assert any(line.startswith("get_me: title: field 'title' dropped") for line in lines)
    assert any(
        line.startswith("delete_repo: outputSchema: field 'outputSchema' dropped") for line in lines
    )
    assert catalog_problems(imported.tools) == []


def test_anthropic_input_schema_is_the_parameters_and_server_tools_are_left_out() -> None:
    raw = [
        {
            "name": "f",
            "description": "d",
            "input_schema": SCHEMA,
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "web_search_20250305", "name": "web_search"},
    ]
    imported = import_catalog(raw)
    assert imported.tools == [
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": SCHEMA}}
    ]
    assert "field 'cache_control' dropped (the tools.json contract has no such field)" in whats(
        imported
    )
    assert imported.left_out == [
        "tools[1] (web_search): no input_schema (type 'web_search_20250305': a server tool, nothing to import)"
    ]


def test_openai_responses_flat_tools_keep_strict() -> None:
    raw = [
        {"type": "function", "name": "f", "description": "d", "parameters": SCHEMA, "strict": True}
    ]
    (tool,) = import_catalog(raw).tools
    assert tool == {
        "type": "function",
        "function": {"name": "f", "description": "d", "parameters": SCHEMA, "strict": True},
    }


def test_gemini_upper_case_types_nullable_and_string_counts_are_mapped() -> None:
    raw = {
        "functionDeclarations": [
            {
                "name": "f",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {
                        "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": "1"},
                        "note": {"type": "STRING", "nullable": True},
                    },
                    "propertyOrdering": ["tags", "note"],
                    "required": ["tags"],
                },
            }
        ]
    }
    imported = import_catalog(raw)
    assert only_params(imported) == {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "note": {"type": ["string", "null"]},
        },
        "required": ["tags"],
    }
    assert "type 'OBJECT' mapped to 'object' (Gemini)" in whats(imported)
    assert "nullable: true written as type null" in whats(imported)
    assert "minItems '1' read as the integer 1" in whats(imported)


def test_bfcl_dialect_is_mapped_as_bfcl_sends_it() -> None:
    case = {
        "id": "multiple_0",
        "question": [],
        "function": [
            {
                "name": "triangle_properties.get",
                "description": "d",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "side": {"type": "float"},
                        "pair": {"type": "tuple", "items": {"type": "integer"}},
                        "anything": {"type": "any"},
                        "untyped": {"description": "no type"},
                        "flag": {"type": "boolean", "default": True, "optional": True},
                        "unit": {"type": "string", "enum": ["cm", "m"], "default": "dontcare"},
                        "when": {"type": "string", "default": None},
                    },
                    "required": ["side"],
                },
            }
        ],
    }
    imported = import_catalog(case)
    (tool,) = imported.tools
    assert tool["function"]["name"] == "triangle_properties_get"
    props = tool["function"]["parameters"]["properties"]
    assert tool["function"]["parameters"]["type"] == "object"
    assert props["side"] == {"type": "number"}
    assert props["pair"] == {"type": "array", "items": {"type": "integer"}}
    assert props["anything"] == {"type": "string"}
    assert props["untyped"] == {"description": "no type", "type": "string"}
    assert props["flag"] == {"type": "boolean", "default": True}
    assert props["unit"] == {"type": "string", "enum": ["cm", "m"]}
    assert props["when"] == {"type": "string"}
    said = whats(imported)
    assert (
        "name 'triangle_properties.get' written as 'triangle_properties_get' (BFCL sends models '_' for '.')"
        in said
    )
    assert "'optional' dropped (BFCL's optional repeats what required says)" in said
    assert "default 'dontcare' dropped (it fails its schema)" in said
    assert "default null dropped (the schema does not allow null)" in said


def test_bfcl_names_that_clash_once_rewritten_are_refused() -> None:
    fns = [
        {"name": n, "parameters": {"type": "dict", "properties": {}}} for n in ("a.b_c", "a_b.c")
    ]
    with pytest.raises(ImportRefused, match="duplicate name 'a_b_c'"):
        import_catalog(fns)


# ---------------------------------------------------------------------------- schema rewrites


def params_of(schema: dict[str, Any]) -> Imported:
    return import_catalog([{"name": "f", "inputSchema": schema}], "mcp")


def test_local_refs_and_defs_are_inlined_and_reported() -> None:
    schema = {
        "type": "object",
        "$defs": {"Color": {"type": "string", "enum": ["red", "blue"]}},
        "definitions": {"Size": {"type": "integer", "minimum": 1}},
        "properties": {
            "color": {"$ref": "#/$defs/Color", "description": "which"},
            "size": {"$ref": "#/definitions/Size"},
            "sizes": {"type": "array", "items": {"$ref": "#/definitions/Size"}},
        },
    }
    imported = params_of(schema)
    assert only_params(imported) == {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": ["red", "blue"], "description": "which"},
            "size": {"type": "integer", "minimum": 1},
            "sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        },
    }
    said = whats(imported)
    assert "$ref #/$defs/Color inlined" in said
    assert "$defs removed (what they define is inlined where used)" in said


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        (
            {
                "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
                "properties": {"n": {"$ref": "#/$defs/N"}},
            },
            "$ref '#/$defs/N' is recursive",
        ),
        ({"properties": {"n": {"$ref": "https://example.com/s.json"}}}, "is not a local pointer"),
        ({"properties": {"n": {"$ref": "#anchor"}}}, "is not a local pointer"),
        (
            {"properties": {"n": {"type": "object", "properties": {"m": {"$ref": "#"}}}}},
            "$ref '#' is recursive",
        ),
        ({"properties": {"n": {"$ref": "#/$defs/Missing"}}}, "names nothing"),
        (
            {
                "properties": {
                    "n": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]}
                }
            },
            "unsupported keyword 'anyOf'",
        ),
        (
            {
                "properties": {
                    "n": {"oneOf": [{"type": "string", "minLength": 2}, {"type": "integer"}]}
                }
            },
            "unsupported keyword 'oneOf'",
        ),
        ({"properties": {"n": {"not": {"type": "string"}}}}, "unsupported keyword 'not'"),
    ],
)
def test_what_the_subset_cannot_say_is_refused_by_name(schema: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImportRefused) as exc:
        params_of(schema)
    assert needle in "\n".join(exc.value.problems)
    assert "f" in exc.value.problems[-1]


def test_a_ref_chain_that_doubles_at_every_step_is_refused_not_expanded() -> None:
    defs = {
        f"D{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/D{i + 1}"}, "b": {"$ref": f"#/$defs/D{i + 1}"}},
        }
        for i in range(20)
    }
    defs["D20"] = {"type": "string"}
    with pytest.raises(ImportRefused, match="beyond 20000 nodes"):
        params_of({"$defs": defs, "properties": {"x": {"$ref": "#/$defs/D0"}}})


def test_optional_written_as_anyof_with_null_becomes_a_type_list() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "default": None},
            "b": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "c": {"oneOf": [{"type": "null"}, {"enum": ["x", "y"], "type": "string"}]},
        },
    }
    props = only_params(params_of(schema))["properties"]
    assert props["a"] == {"type": ["string", "null"], "minLength": 1, "default": None}
    assert props["b"] == {"type": ["integer", "string"]}
    assert props["c"] == {"type": ["string", "null"], "enum": ["x", "y", None]}


def test_a_combinator_of_one_schema_is_that_schema() -> None:
    schema = {
        "type": "object",
        "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}},
        "properties": {
            "unit": {"allOf": [{"$ref": "#/$defs/Unit"}], "description": "which unit"},
            "n": {"anyOf": [{"type": "integer", "minimum": 1}], "default": 2},
        },
    }
    imported = params_of(schema)
    assert only_params(imported)["properties"] == {
        "unit": {"type": "string", "enum": ["c", "f"], "description": "which unit"},
        "n": {"type": "integer", "minimum": 1, "default": 2},
    }
    assert "allOf of one schema written as that schema" in whats(imported)


def test_draft4_boolean_exclusive_bounds_become_numbers() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            "b": {"type": "number", "maximum": 9, "exclusiveMaximum": False},
        },
    }
    imported = params_of(schema)
    props = only_params(imported)["properties"]
    assert props == {
        "a": {"type": "number", "exclusiveMinimum": 0},
        "b": {"type": "number", "maximum": 9},
    }
    assert "exclusiveMinimum: true beside minimum written as exclusiveMinimum 0" in whats(imported)


# ---------------------------------------------------------------------------- hostile input


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize("levels", [MAX_SCHEMA_DEPTH + 1, 250, 450])
def test_a_deep_schema_is_one_line_not_a_recursion_error(levels: int) -> None:
    data = json.dumps([{"name": "f", "inputSchema": nested(levels)}]).encode()
    with pytest.raises(ImportRefused) as exc:
        import_file(data)
    (line,) = exc.value.problems  # nothing imported, and why, in one line
    assert line.startswith("no tool could be imported: tools[0]") and "deep" in line


def test_json_deeper_than_the_reader_is_one_line() -> None:
    with pytest.raises(ImportRefused, match="nests deeper than the JSON reader allows"):
        import_file(b"[" * 100_000 + b"]" * 100_000)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "type",
                    "function",
                    "parameters",
                    "inputSchema",
                    "input_schema",
                    "properties",
                    "items",
                    "required",
                    "enum",
                    "$ref",
                    "$defs",
                    "anyOf",
                    "nullable",
                    "tools",
                    "functionDeclarations",
                    "default",
                    "minimum",
                    "maximum",
                    "x-mutates",
                    "annotations",
                    "a",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)
TYPE_NAMES = st.sampled_from(
    [
        "string",
        "integer",
        "number",
        "boolean",
        "dict",
        "float",
        "any",
        "STRING",
        "OBJECT",
        "object",
        "array",
    ]
)


@st.composite
def toolish(draw: st.DrawFn) -> Any:
    """A catalog-shaped value: a known container around entries with names and schemas."""
    schema = draw(
        st.fixed_dictionaries(
            {"type": TYPE_NAMES},
            optional={
                "properties": st.dictionaries(st.text(min_size=1, max_size=4), JSON, max_size=3),
                "required": JSON,
            },
        )
    )
    entry = draw(st.sampled_from(["inputSchema", "input_schema", "parameters"]))
    tools = [
        {"name": draw(st.text(min_size=1, max_size=6)), entry: schema}
        for _ in range(draw(st.integers(1, 3)))
    ]
    return draw(st.sampled_from([tools, {"tools": tools}, {"functionDeclarations": tools}]))


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(JSON, toolish()))
@example([{"name": "0", "inputSchema": {"properties": {"0": {"enum": None, "default": None}}}}])
def test_importing_never_crashes(raw: Any) -> None:
    """Any JSON is a tools.json catalog the reader accepts, or a refusal in named lines."""
    try:
        imported = import_catalog(raw)
    except ImportRefused as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        return
    assert catalog_problems(imported.tools) == []
    again = import_catalog(imported.tools)
    assert again.tools == imported.tools and not again.changes  # an import is a fixed point


@settings(max_examples=examples(100), deadline=None)
@given(toolish())
def test_an_imported_catalog_imports_as_itself(raw: Any) -> None:
    try:
        imported = import_catalog(raw)
    except ImportRefused:
        return
    data = json.dumps(imported.tools).encode()
    assert catalog_bytes(import_file(data), data) == data


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(EVERY_KEYWORD, min_size=1, max_size=3), st.booleans())
def test_a_catalog_the_reader_accepts_imports_as_itself(schemas: list[Any], closed: bool) -> None:
    """Every keyword of the subset, in catalogs the reader accepts: the import is the identity
    (the same objects, no change reported, the file's own bytes)."""
    raw = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "parameters": {
                    "type": "object",
                    "properties": {"p": schema},
                    "additionalProperties": not closed,
                },
            },
        }
        for i, schema in enumerate(schemas)
    ]
    assume(catalog_problems(raw) == [])
    imported = import_catalog(raw)
    assert imported.format == "tools-json" and imported.unchanged and imported.tools is raw
    data = json.dumps(raw, indent=1).encode()
    assert catalog_bytes(import_file(data), data) == data


# ------------------------------------------------------------------------------------- CLI


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_tools_import_prints_the_catalog_and_reports_every_change(tmp_path: Path) -> None:
    src = tmp_path / "mcp.json"
    src.write_text(
        json.dumps(
            {"tools": [{"name": "f", "inputSchema": SCHEMA, "annotations": {"readOnlyHint": True}}]}
        )
    )
    code, out, err = cli("tools", "import", str(src))
    assert code == 0
    assert json.loads(out)[0]["x-mutates"] is False
    assert "f: annotations: readOnlyHint true written as x-mutates false" in err
    assert err.splitlines()[-1] == "read as mcp: 1 tools, 1 changes, 0 tools left out"
    code, _, _ = cli(
        "tools",
        "import",
        str(src),
        "--out",
        str(tmp_path / "t.json"),
        "--report",
        str(tmp_path / "r.txt"),
    )
    assert code == 0 and json.loads((tmp_path / "t.json").read_text())[0]["function"]["name"] == "f"
    assert "x-mutates" in (tmp_path / "r.txt").read_text()


def test_tools_import_refuses_in_one_line_and_exits_1(tmp_path: Path) -> None:
    src = tmp_path / "deep.json"
    src.write_text(
        json.dumps([{"type": "function", "function": {"name": "f", "parameters": nested(250)}}])
    )
    code, out, err = cli("tools", "import", str(src))
    assert (code, out) == (1, "")
    assert (
        err.count("\n") == 1
        and "levels deep; the limit is" in err
        and "32 schema levels" in err
        and "Traceback" not in err
    )


def test_tools_import_strict_refuses_what_it_would_leave_out(tmp_path: Path) -> None:
    src = tmp_path / "a.json"
    src.write_text(
        json.dumps(
            [{"name": "f", "input_schema": SCHEMA}, {"name": "g", "input_schema": {"not": {}}}]
        )
    )
    assert cli("tools", "import", str(src))[0] == 0
    code, _, err = cli("tools", "import", str(src), "--strict")
    assert code == 1 and "unsupported keyword 'not'" in err


def test_generate_reads_a_foreign_catalog_through_its_importer(tmp_path: Path) -> None:
    src = tmp_path / "gemini.json"
    src.write_text(
        json.dumps(
            {
                "functionDeclarations": [
                    {
                        "name": "f",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {"x": {"type": "NUMBER", "minimum": 3, "maximum": 1}},
                        },
                    }
                ]
            }
        )
    )
    code, _, err = cli("generate", "--tools", str(src), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "minimum 3 > maximum 1" in err and "Traceback" not in err


# ------------------------------------------------------------------------- real catalogs


REAL_FILES = sorted(REAL.glob("*.json"))
BFCL_SAMPLE = ROOT / "tests" / "data" / "bfcl-sample" / "BFCL_v4_multi_tool.sample.jsonl"
#: What each real catalog is read as, and the tools the contract cannot say (left out, named).
REAL_EXPECTED = {
    "anthropic-cookbook.tools.json": ("anthropic", ["batch_tool"]),
    "byob-banking-vn-oracle-pack.tools.json": ("tools-json", []),
    "byob-sqa-hotel-booking.tools.json": ("tools-json", []),
    "byob-tiny-oracle-pack.tools.json": ("tools-json", []),
    "gemini-from-callable-json-schema.tools.json": ("gemini", []),
    "gemini-from-callable.tools.json": ("gemini", []),
    "langchain-convert-to-openai-tool.tools.json": ("tools-json", ["Pay", "Tag"]),
    "mcp-brave-search.tools-list.json": ("mcp", []),
    "mcp-everything.tools-list.json": ("mcp", []),
    "mcp-fetch.tools-list.json": ("mcp", []),
    "mcp-filesystem.tools-list.json": ("mcp", []),
    "mcp-git.tools-list.json": ("mcp", []),
    "mcp-github-server.tools-list.json": (
        "mcp",
        ["projects_write", "update_issue_assignees", "update_issue_labels"],
    ),
    "mcp-github.tools-list.json": ("mcp", ["create_pull_request_review"]),
    "mcp-gitlab.tools-list.json": ("mcp", []),
    "mcp-google-maps.tools-list.json": ("mcp", []),
    "mcp-memory.tools-list.json": ("mcp", []),
    "mcp-sequential-thinking.tools-list.json": ("mcp", []),
    "mcp-slack.tools-list.json": ("mcp", []),
    "mcp-time.tools-list.json": ("mcp", []),
    "openai-pydantic-function-tool.tools.json": ("tools-json", ["Pay", "Tag"]),
    "openai-python-examples.tools.json": ("openai", ["Query"]),
}
#: The rules a real tool is left out by: a real union or a map, the shapes tools.json cannot
#: say. One exception, named: the cookbook's batch_tool misspells ``type`` as ``types``.
UNION_OR_MAP = re.compile(
    r"unsupported keyword '(anyOf|oneOf)' at |"
    r"unsupported keyword 'additionalProperties' at .*schema-valued additionalProperties"
)
MISSPELT = {"batch_tool": "unsupported keyword 'types'"}


def test_every_real_catalog_is_vendored_with_its_licences() -> None:
    assert {p.name for p in REAL_FILES} == set(REAL_EXPECTED)
    readme = (REAL / "README.md").read_text()
    for name in REAL_EXPECTED:
        assert name.split(".")[0].removeprefix("byob-")[:10] in readme or "byob-" in readme
    assert {p.name for p in REAL.glob("LICENSE-*")} == {
        "LICENSE-Apache-2.0.txt",
        "LICENSE-MIT-anthropic-cookbook.txt",
        "LICENSE-MIT-github-mcp-server.txt",
        "LICENSE-MIT-modelcontextprotocol-servers.txt",
    }
    sources = json.loads((REAL / "SOURCES.json.txt").read_text())
    for name, source in sources.items():  # every generated fixture names package and version
        assert name in REAL_EXPECTED and source["package"] in readme and source["version"]


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_each_real_catalog_imports_with_no_hand_conversion(path: Path) -> None:
    form, left_out = REAL_EXPECTED[path.name]
    imported = import_file(path.read_bytes())
    assert imported.format == form
    assert [line.split("(", 1)[1].split(")", 1)[0] for line in imported.left_out] == left_out
    assert catalog_problems(imported.tools) == []
    if path.name.startswith("byob-"):
        assert imported.unchanged


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_the_only_real_tools_left_out_are_unions_and_maps_named_by_rule(path: Path) -> None:
    for line in import_file(path.read_bytes()).left_out:
        name = line.split("(", 1)[1].split(")", 1)[0]
        assert UNION_OR_MAP.search(line) or MISSPELT.get(name, "\0") in line, line


def test_a_required_name_left_undeclared_is_declared_with_no_constraint() -> None:
    """The cookbook's wolfram_alpha requires 'query' but declares 'search_query': the schema
    lets 'query' hold any value, so declaring it {} keeps its meaning and lets a call be built
    (it was left out of every build)."""
    imported = import_file((REAL / "anthropic-cookbook.tools.json").read_bytes())
    (tool,) = [t for t in imported.tools if t["function"]["name"] == "wolfram_alpha"]
    assert tool["function"]["parameters"]["properties"]["query"] == {}
    assert "wolfram_alpha: parameters: required 'query' not declared" in "\n".join(
        imported.report()
    )
    closed = {"type": "object", "properties": {}, "required": ["q"], "additionalProperties": False}
    refused = import_catalog(
        [{"name": "f", "inputSchema": closed}, {"name": "g", "inputSchema": {}}]
    )
    # a closed object cannot hold it: the reader names it, and the tool is left out
    assert "required 'q' is neither declared nor allowed" in refused.left_out[0]
    open_ = {"type": "object", "properties": {}, "required": ["q"]}
    with pytest.raises(
        ImportRefused,
        match=re.escape("the tools.json contract: declare every required field's property"),
    ):
        import_catalog([{"name": "f", "inputSchema": open_}], strict=True)
    # a tools.json catalog the reader accepts comes back as itself: no rewrite there
    tools_json = [{"type": "function", "function": {"name": "f", "parameters": open_}}]
    assert import_catalog(tools_json).unchanged


def test_the_mcp_server_catalog_keeps_its_mutation_hints() -> None:
    imported = import_file((REAL / "mcp-github-server.tools-list.json").read_bytes())
    mutates = {t["function"]["name"]: t.get("x-mutates") for t in imported.tools}
    assert mutates["get_me"] is False and mutates["create_issue"] is True


def test_every_bfcl_sample_case_imports_as_bfcl_ships_it() -> None:
    cases = [json.loads(line) for line in BFCL_SAMPLE.read_text().splitlines()]
    assert len(cases) == 330 and all(len(c["function"]) > 1 for c in cases)
    partial = 0
    for case in cases:
        imported = import_catalog(case)
        assert imported.format == "bfcl"
        assert catalog_problems(imported.tools) == []
        partial += bool(imported.left_out)
    assert partial <= len(cases) // 20  # a tool left out (named) in at most 5 % of catalogs


def test_generate_builds_a_checked_corpus_from_a_bfcl_case_as_shipped(tmp_path: Path) -> None:
    line = BFCL_SAMPLE.read_text().splitlines()[0]
    src = tmp_path / "case.json"
    src.write_text(line)
    imported = import_file(line.encode())
    out = tmp_path / "corpus"
    code, _, err = cli("generate", "--tools", str(src), "--out", str(out))
    assert code == 0, err
    assert "import: read case.json as bfcl" in err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["catalog"]["name"] == "case.imported.json"
    pinned = catalog_bytes(imported, line.encode())
    assert manifest["catalog"]["sha256"] == hashlib.sha256(pinned).hexdigest()
    assert cli("generate", "--check-only", "--out", str(out))[0] == 0


def test_a_long_chain_of_refs_is_refused_not_a_recursion_error() -> None:
    """Each ``$ref`` to a ``$ref`` took a stack frame: 5000 of them were a RecursionError."""
    defs: dict[str, Any] = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(5000)}
    defs["D5000"] = {"type": "string"}
    with pytest.raises(ImportRefused, match=r"a chain of more than \d+ \$ref"):
        params_of({"$defs": defs, "properties": {"x": {"$ref": "#/$defs/D0"}}})
