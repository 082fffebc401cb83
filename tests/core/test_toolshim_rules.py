"""toolshim against each grading rule and each refusal reason, one small case at a time."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolcall300 import spec
from toolcall300.toolshim.pipeline import Reason, normalise, normalise_explained


def tool(
    name: str, properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required:
        params["required"] = required
    return {"type": "function", "function": {"name": name, "parameters": params}}


WEATHER = tool(
    "get_weather",
    {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "count": {"type": "integer", "minimum": 1},
        "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "detailed": {"type": "boolean", "default": False},
        "ratio": {"type": "number"},
    },
    ["city", "units"],
)
ORDER = tool(
    "create_order",
    {
        "sku": {"type": "string"},
        "status": {"type": "string", "enum": ["in_progress", "done", "On Hold"]},
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["street"],
        },
        "billing": {
            "type": "object",
            "properties": {"zip": {"type": "string"}, "vat": {"type": "string"}},
        },
    },
    ["sku"],
)
SEARCH = tool("search_files", {"query": {"type": "string"}}, ["query"])
TOOLS = [WEATHER, ORDER, SEARCH]


def call(name: str, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def refusal(text: str, tools: list[dict[str, Any]] = TOOLS) -> Reason | None:
    explained = normalise_explained(text, tools)
    assert (explained.call is None) == (explained.refusal is not None)
    return explained.refusal


# ---------------------------------------------------------------------------- rule 3


@pytest.mark.parametrize(
    "written",
    [
        "get_weather",
        "  get_weather ",
        "get_weather()",
        "functions.get_weather",
        "default_api:Get-Weather",
        "tools::GET WEATHER",
        "ns/get__weather",
        "Get_Weather",
    ],
)
def test_rule3_name_noise_resolves(written: str) -> None:
    assert normalise(call(written, {"city": "Paris"}), TOOLS) == {
        "name": "get_weather",
        "arguments": {"city": "Paris", "units": "metric"},
    }


@pytest.mark.parametrize(
    "written", ["getweather", "GetWeather", "get_weathers", "weather", "", "()"]
)
def test_rule3_unmatched_names_are_unknown(written: str) -> None:
    # D3.2: separators are interchangeable, not removable; camelCase is not split.
    assert refusal(call(written, {"city": "Paris"})) is Reason.UNKNOWN_TOOL


def test_rule3_a_name_matching_two_tools_is_ambiguous() -> None:
    tools = [SEARCH, tool("Search-Files", {"query": {"type": "string"}})]
    assert refusal(call("SEARCH FILES", {"query": "x"}), tools) is Reason.AMBIGUOUS_TOOL
    # D3.1: an exact match always wins.
    assert normalise(call("search_files", {"query": "x"}), tools) == {
        "name": "search_files",
        "arguments": {"query": "x"},
    }


def test_rule3_two_tools_declared_under_one_name_are_ambiguous() -> None:
    assert refusal(call("search_files", {"query": "x"}), [SEARCH, SEARCH]) is Reason.AMBIGUOUS_TOOL


def test_rule3_a_name_that_is_not_a_string_is_invalid() -> None:
    assert refusal(json.dumps({"name": 3, "arguments": {}})) is Reason.INVALID_NAME


# ---------------------------------------------------------------------------- rule 4


@pytest.mark.parametrize(
    ("written", "member"),
    [
        (" IN-PROGRESS ", "in_progress"),
        ("Done", "done"),
        ("on hold", "On Hold"),
        ("on-hold", "On Hold"),
    ],
)
def test_rule4_enum_members_match_after_folding(written: str, member: str) -> None:
    result = normalise(call("create_order", {"sku": "a", "status": written}), TOOLS)
    assert result is not None and result["arguments"]["status"] == member


@pytest.mark.parametrize("written", ["inprogress", "progress", "finished", "in progress!", 1])
def test_rule4_never_the_closest_member(written: Any) -> None:
    reason = refusal(call("create_order", {"sku": "a", "status": written}))
    assert reason is (Reason.ENUM_NO_MATCH if isinstance(written, str) else Reason.LOSSY_COERCION)


def test_rule4_a_value_matching_two_members_is_ambiguous() -> None:
    tools = [tool("t", {"s": {"type": "string", "enum": ["a-b", "A_B"]}})]
    assert refusal(call("t", {"s": "a b"}), tools) is Reason.ENUM_AMBIGUOUS


def test_rule4_exact_member_is_kept_even_when_folding_would_be_ambiguous() -> None:
    tools = [tool("t", {"s": {"type": "string", "enum": ["a-b", "A_B"]}})]
    assert normalise(call("t", {"s": "A_B"}), tools) == {"name": "t", "arguments": {"s": "A_B"}}


# ---------------------------------------------------------------------------- rule 5


@pytest.mark.parametrize(
    ("key", "written", "value"),
    [
        ("days", "3", 3),
        ("days", "-12", -12),
        ("days", 3.0, 3),
        ("ratio", "12.5", 12.5),
        ("ratio", "1e3", 1000.0),
        ("ratio", "-3", -3),
        ("detailed", "true", True),
        ("detailed", "False", False),
        ("detailed", "TRUE", True),
    ],
)
def test_rule5_lossless_coercions(key: str, written: Any, value: Any) -> None:
    result = normalise(call("get_weather", {"city": "x", key: written}), TOOLS)
    assert result is not None
    assert json.dumps(result["arguments"][key]) == json.dumps(value)


@pytest.mark.parametrize(
    ("key", "written"),
    [
        ("days", "03"),
        ("days", " 3"),
        ("days", "+3"),
        ("days", "4.5"),
        ("days", "3.0"),
        ("days", "1e3"),
        ("days", 4.5),
        ("days", True),
        ("detailed", "yes"),
        ("detailed", "1"),
        ("detailed", 1),
        ("detailed", "on"),
        ("city", 42),
        ("city", True),
        ("city", None),
        ("ratio", "twelve"),
        ("city", {"a": 1}),
    ],
)
def test_rule5_anything_lossy_is_refused(key: str, written: Any) -> None:
    assert refusal(call("get_weather", {"city": "x", key: written})) is Reason.LOSSY_COERCION


def test_rule5_integral_float_declared_integer_is_written_as_integer() -> None:
    # D5.2 (and D1.2: 3 and 3.0 differ canonically).
    result = normalise(call("get_weather", {"city": "x", "days": 3.0}), TOOLS)
    assert result is not None and json.dumps(result["arguments"]["days"]) == "3"


def test_rule5_float_declared_number_is_left_alone() -> None:
    result = normalise(call("get_weather", {"city": "x", "ratio": 3.0}), TOOLS)
    assert result is not None and json.dumps(result["arguments"]["ratio"]) == "3.0"


# ---------------------------------------------------------------------------- rule 6


def test_rule6_required_property_filled_from_its_own_default() -> None:
    assert normalise(call("get_weather", {"city": "x"}), TOOLS) == {
        "name": "get_weather",
        "arguments": {"city": "x", "units": "metric"},
    }


def test_rule6_optional_defaults_are_never_filled() -> None:
    # D6.1: `detailed` has a default but is optional.
    result = normalise(call("get_weather", {"city": "x"}), TOOLS)
    assert result is not None and "detailed" not in result["arguments"]


def test_rule6_falsy_default_used_as_declared() -> None:
    tools = [
        tool(
            "t",
            {"tags": {"type": "array", "default": []}, "n": {"type": "integer", "default": 0}},
            ["tags", "n"],
        )
    ]
    assert normalise(call("t", {}), tools) == {"name": "t", "arguments": {"tags": [], "n": 0}}


def test_rule6_missing_required_without_default_is_refused() -> None:
    assert refusal(call("get_weather", {"units": "metric"})) is Reason.MISSING_REQUIRED
    assert (
        refusal(call("create_order", {"sku": "a", "address": {"zip": "1"}}))
        is Reason.MISSING_REQUIRED
    )


def test_rule6_a_required_name_not_declared_is_missing() -> None:
    tools = [tool("t", {}, ["ghost"])]
    assert refusal(call("t", {}), tools) is Reason.MISSING_REQUIRED


# ---------------------------------------------------------------------------- rule 7


def test_rule7_undeclared_dropped_at_every_level() -> None:
    # D7.2: whether or not additionalProperties is false.
    text = call("create_order", {"sku": "a", "note": "x", "address": {"street": "s", "floor": 3}})
    assert normalise(text, TOOLS) == {
        "name": "create_order",
        "arguments": {"sku": "a", "address": {"street": "s"}},
    }


@pytest.mark.parametrize(
    "args",
    [
        {"sku": "a", "street": "s"},
        {"sku": "a", "address.street": "s"},
        {"sku": "a", "address": {}, "street": "s"},
    ],
)
def test_rule7_flattened_keys_are_re_nested(args: dict[str, Any]) -> None:
    # D7.1: the bare name or the dotted path.
    assert normalise(call("create_order", args), TOOLS) == {
        "name": "create_order",
        "arguments": {"sku": "a", "address": {"street": "s"}},
    }


def test_rule7_a_key_of_two_nested_objects_is_not_re_nested() -> None:
    # D7.3: `zip` belongs to address and billing: it stays top-level, undeclared, dropped.
    result = normalise(call("create_order", {"sku": "a", "zip": "1", "vat": "v"}), TOOLS)
    assert result == {"name": "create_order", "arguments": {"sku": "a", "billing": {"vat": "v"}}}


def test_rule7_a_key_that_is_also_top_level_is_judged_there() -> None:
    tools = [
        tool(
            "t",
            {
                "id": {"type": "string"},
                "owner": {"type": "object", "properties": {"id": {"type": "string"}}},
            },
        )
    ]
    assert normalise(call("t", {"id": "x"}), tools) == {"name": "t", "arguments": {"id": "x"}}


def test_rule7_the_dotted_path_of_a_property_of_two_objects_is_re_nested() -> None:
    result = normalise(call("create_order", {"sku": "a", "billing.zip": "9"}), TOOLS)
    assert result == {"name": "create_order", "arguments": {"sku": "a", "billing": {"zip": "9"}}}


def test_rule7_a_flattened_key_disagreeing_with_the_nested_one_is_refused() -> None:
    text = call("create_order", {"sku": "a", "address": {"street": "s"}, "address.street": "t"})
    assert refusal(text) is Reason.CONFLICTING_VALUES
    text = call("create_order", {"sku": "a", "address": "s", "street": "t"})
    assert refusal(text) is Reason.CONFLICTING_VALUES


def test_rule7_a_schema_without_properties_keeps_free_form_keys() -> None:
    tools = [tool("t", {"meta": {"type": "object"}})]
    assert normalise(call("t", {"meta": {"k": 1}}), tools) == {
        "name": "t",
        "arguments": {"meta": {"k": 1}},
    }


# ---------------------------------------------------------------------------- rule 8


def test_rule8_scalar_becomes_one_element_array() -> None:
    result = normalise(call("get_weather", {"city": "x", "tags": "a"}), TOOLS)
    assert result is not None and result["arguments"]["tags"] == ["a"]


def test_rule8_one_element_array_becomes_its_element_then_coerced() -> None:
    result = normalise(call("get_weather", {"city": ["x"], "days": ["3"]}), TOOLS)
    assert result == {
        "name": "get_weather",
        "arguments": {"city": "x", "days": 3, "units": "metric"},
    }


def test_rule8_two_elements_for_a_scalar_is_refused() -> None:
    assert refusal(call("get_weather", {"city": ["x", "y"]})) is Reason.ARRAY_TOO_LONG_FOR_SCALAR


def test_rule8_no_element_for_a_scalar_is_refused() -> None:
    assert refusal(call("get_weather", {"city": []})) is Reason.EMPTY_ARRAY_FOR_SCALAR


# ---------------------------------------------------------------------------- rule 9


@pytest.mark.parametrize("times", [1, 2, 3])
def test_rule9_string_arguments_decoded_repeatedly(times: int) -> None:
    args: Any = {"city": "x", "units": "metric"}
    for _ in range(times):
        args = json.dumps(args)
    assert normalise(call("get_weather", args), TOOLS) == {
        "name": "get_weather",
        "arguments": {"city": "x", "units": "metric"},
    }


@pytest.mark.parametrize("args", ["[1]", "3", "not json", "", json.dumps("[1]")])
def test_rule9_a_string_not_decoding_to_an_object_is_refused(args: str) -> None:
    # D9.1.
    assert refusal(call("get_weather", args)) is Reason.INVALID_ARGUMENTS


@pytest.mark.parametrize("args", [[1], 3, None, True])
def test_arguments_that_are_not_an_object_are_refused(args: Any) -> None:
    assert refusal(call("get_weather", args)) is Reason.NOT_AN_OBJECT


# ---------------------------------------------------------------------------- rule 10


def test_rule10_identical_copies_collapse() -> None:
    one = call("get_weather", {"city": "x"})
    assert normalise(one + one + "\n" + one, TOOLS) is not None
    assert normalise(f"[{one}, {one}]", TOOLS) is not None


def test_rule10_copies_equal_only_after_normalising_collapse() -> None:
    # D10.1: each copy is normalised on its own first.
    a = call("get_weather", {"city": "x", "days": "2"})
    b = call("Get-Weather", {"city": "x", "days": 2, "units": "metric"})
    assert normalise(a + "\n" + b, TOOLS) == {
        "name": "get_weather",
        "arguments": {"city": "x", "days": 2, "units": "metric"},
    }


def test_rule10_differing_copies_are_refused() -> None:
    a = call("get_weather", {"city": "x"})
    b = call("get_weather", {"city": "y"})
    assert refusal(a + b) is Reason.CONFLICTING_CALLS
    assert (
        refusal(
            json.dumps({"tool_calls": [{"function": json.loads(a)}, {"function": json.loads(b)}]})
        )
        is Reason.CONFLICTING_CALLS
    )


def test_rule10_a_copy_that_must_be_refused_refuses_the_whole() -> None:
    a = call("get_weather", {"city": "x"})
    assert refusal(a + call("nope", {})) is Reason.CONFLICTING_CALLS
    assert refusal(a + " 42") is Reason.CONFLICTING_CALLS


# ---------------------------------------------------------------------------- rule 11


def test_rule11_complete_properties_kept_and_containers_closed() -> None:
    text = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "tags": ["a"], "detailed": true'
    assert normalise(text, TOOLS) == {
        "name": "get_weather",
        "arguments": {
            "city": "Paris",
            "days": 3,
            "tags": ["a"],
            "detailed": True,
            "units": "metric",
        },
    }


@pytest.mark.parametrize(
    "tail",
    [
        '"tags": [',
        '"tags": ["a"',
        '"tags": ["a", "b',
        '"tags": ["a"]',
        '"days": 1',
        '"days": 12',
        '"detailed": tr',
        '"ratio": 1.',
        '"ratio": 1.5e',
        '"tags',
        '"tags"',
        '"tags":',
        '"units": "imp',
    ],
)
def test_rule11_an_incomplete_property_is_dropped(tail: str) -> None:
    # D11.1-D11.4: strict reading; `"tags": ["a"]` is complete, but cut before the next
    # delimiter the arguments object still closes around it.
    text = '{"name": "get_weather", "arguments": {"city": "Paris", ' + tail
    result = normalise(text, TOOLS)
    assert result is not None
    args = result["arguments"]
    if tail == '"tags": ["a"]':
        assert args["tags"] == ["a"]
    else:
        assert set(args) == {"city", "units"}
        assert args["units"] == "metric"


def test_rule11_strict_reading_drops_a_never_closed_array_with_complete_elements() -> None:
    # The strict reading of rule 11 (D11.2), not the generous one: "tags": ["a" drops tags.
    explained = normalise_explained(
        '{"name": "get_weather", "arguments": {"city": "P", "tags": ["a"', TOOLS
    )
    assert explained.call is not None and "tags" not in explained.call["arguments"]
    assert any(r.path == "$.arguments.tags" and r.rule == "11 D11.2" for r in explained.repairs)


def test_rule11_never_invents_an_empty_container() -> None:
    # D11.4.
    explained = normalise_explained(
        '{"name": "get_weather", "arguments": {"city": "P", "tags": [', TOOLS
    )
    assert explained.call is not None and "tags" not in explained.call["arguments"]
    assert any(r.rule == "11 D11.4" for r in explained.repairs)


def test_rule11_a_number_at_the_cut_is_dropped_but_a_delimited_one_kept() -> None:
    # D11.3.
    head = '{"name": "get_weather", "arguments": {"city": "P", "days": 1'
    result = normalise(head, TOOLS)
    assert result is not None and "days" not in result["arguments"]
    for delimited in (head + ",", head + " ", head + "}"):
        result = normalise(delimited, TOOLS)
        assert result is not None and result["arguments"]["days"] == 1


def test_rule11_a_lost_required_property_without_default_is_refused() -> None:
    assert refusal('{"name": "get_weather", "arguments": {"city": "Par') is Reason.MISSING_REQUIRED
    assert (
        refusal('{"name": "create_order", "arguments": {"sku": "a", "address": {"street": "s"')
        is None
    )


def test_rule11_a_lost_nested_object_is_dropped_whole() -> None:
    result = normalise(
        '{"name": "create_order", "arguments": {"sku": "a", "address": {"street": "s"', TOOLS
    )
    assert result == {"name": "create_order", "arguments": {"sku": "a"}}


@pytest.mark.parametrize(
    "text",
    ['{"name": "get_wea', '{"name": "get_weather', '{"tool_calls": [{"function": {"name": "get'],
)
def test_rule11_a_cut_inside_the_name_is_refused(text: str) -> None:
    # D11.5.
    assert refusal(text) is Reason.TRUNCATED_NAME


@pytest.mark.parametrize("text", ["{", '{"na', '{"name"', '{"name": ', "[", '{"tool_calls": [', ""])
def test_rule11_a_cut_before_any_name_leaves_no_call(text: str) -> None:
    assert refusal(text) is Reason.NO_CALL


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_weather"',
        '{"name": "get_weather", "argu',
        '{"name": "get_weather", "arguments": ',
    ],
)
def test_rule11_a_cut_before_the_arguments_began_is_refused(text: str) -> None:
    assert refusal(text) is Reason.TRUNCATED_ARGUMENTS


def test_rule11_cut_inside_string_encoded_arguments() -> None:
    inner = json.dumps({"city": "Paris", "days": 12})
    text = json.dumps({"name": "get_weather", "arguments": inner})
    cut = text[: text.index("12") + 1]  # ...\"days\": 1
    assert normalise(cut, TOOLS) == {
        "name": "get_weather",
        "arguments": {"city": "Paris", "units": "metric"},
    }


def test_rule11_an_empty_arguments_object_that_was_opened_is_closed() -> None:
    assert normalise(
        '{"name": "search_files", "arguments": {', [tool("search_files", {"q": {"type": "string"}})]
    ) == {
        "name": "search_files",
        "arguments": {},
    }


# ---------------------------------------------------------------------------- envelopes and the rest


@pytest.mark.parametrize(
    "text",
    [
        '{"function": {"name": "search_files", "arguments": {"query": "q"}}}',
        '{"type": "function", "function": {"name": "search_files", "arguments": "{\\"query\\": \\"q\\"}"}}',
        '{"tool_calls": [{"id": "1", "type": "function", "function": {"name": "search_files", "arguments": {"query": "q"}}}]}',
        '{"function_call": {"name": "search_files", "arguments": "{\\"query\\": \\"q\\"}"}}',
        '[{"name": "search_files", "arguments": {"query": "q"}}]',
        '{"name": "search_files", "parameters": {"query": "q"}}',
        '{"type": "tool_use", "id": "x", "name": "search_files", "input": {"query": "q"}}',
        '\n {"name": "search_files", "arguments": {"query": "q"}} \n',
    ],
)
def test_envelopes(text: str) -> None:
    assert normalise(text, TOOLS) == {"name": "search_files", "arguments": {"query": "q"}}


def test_a_tool_without_type_is_accepted() -> None:
    assert normalise(
        call("s", {"q": "x"}),
        [{"name": "s", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
    ) == {
        "name": "s",
        "arguments": {"q": "x"},
    }


def test_argument_keys_that_disagree_are_refused() -> None:
    text = json.dumps(
        {"name": "search_files", "arguments": {"query": "a"}, "input": {"query": "b"}}
    )
    assert refusal(text) is Reason.AMBIGUOUS_ARGUMENTS


def test_a_complete_call_without_arguments_has_empty_arguments() -> None:
    tools = [tool("ping", {})]
    assert normalise('{"name": "ping"}', tools) == {"name": "ping", "arguments": {}}
    assert refusal('{"name": "search_files"}') is Reason.MISSING_REQUIRED


@pytest.mark.parametrize(
    "text", ["hello", "```json\n{}\n```", '{"a": 1,}', "{'name': 'x'}", "NaN", '{"a": 1} trailing']
)
def test_text_that_is_not_json_is_refused(text: str) -> None:
    assert refusal(text) is Reason.NOT_JSON


@pytest.mark.parametrize(
    "text", ["{}", "[]", '{"tool_calls": []}', "42", '"get_weather"', '{"arguments": {}}']
)
def test_json_without_a_call_is_refused(text: str) -> None:
    assert refusal(text) is Reason.NO_CALL


def test_a_schema_outside_the_subset_is_refused() -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "t", "parameters": {"type": "object", "anyOf": []}},
        }
    ]
    assert refusal(call("t", {}), tools) is Reason.UNUSABLE_SCHEMA


def test_a_value_no_rule_may_repair_that_breaks_its_schema_is_refused() -> None:
    assert refusal(call("get_weather", {"city": "x", "count": 0})) is Reason.SCHEMA_VIOLATION


def test_unknown_tool_is_refused() -> None:
    assert refusal(call("delete_everything", {})) is Reason.UNKNOWN_TOOL


def test_a_value_json_cannot_carry_is_refused_not_a_crash() -> None:
    tools = [tool("t", {"x": {"type": "number", "default": float("nan")}}, ["x"])]
    assert refusal(call("t", {}), tools) is Reason.UNREPRESENTABLE


def test_an_integer_string_too_long_for_int_is_lossy() -> None:
    assert refusal(call("get_weather", {"city": "x", "days": "9" * 5000})) is Reason.LOSSY_COERCION
    assert (
        refusal('{"name": "get_weather", "arguments": {"city": "x", "days": ' + "9" * 5000 + "}}")
        is Reason.NOT_JSON
    )


# ---------------------------------------------------------------------------- the repair log


def test_anything_not_in_the_repair_log_did_not_change() -> None:
    text = call("get_weather", {"city": "x", "days": 2})
    explained = normalise_explained(text, TOOLS)
    assert [r.as_dict() for r in explained.repairs] == [
        {
            "path": "$.arguments.units",
            "rule": "6 D6.2",
            "change": "fill_required_default",
            "after": "metric",
        }
    ]


def test_repairs_name_path_rule_before_and_after() -> None:
    explained = normalise_explained(
        call("Get-Weather", {"city": "x", "days": "2", "junk": 1, "units": "METRIC"}), TOOLS
    )
    logged = {(r.path, r.rule, r.change) for r in explained.repairs}
    assert ("$.name", "3 D3.1", "resolve_tool_name") in logged
    assert ("$.arguments.days", "5 D5.1", "coerce") in logged
    assert ("$.arguments.junk", "7 D7.2", "drop_undeclared") in logged
    assert ("$.arguments.units", "4", "match_enum") in logged
    coerce = next(r for r in explained.repairs if r.change == "coerce")
    assert (coerce.before, coerce.after) == ("2", 2)


# ---------------------------------------------------------------------------- meta


REASON_TESTS = {
    Reason.NO_CALL: test_json_without_a_call_is_refused,
    Reason.NOT_JSON: test_text_that_is_not_json_is_refused,
    Reason.INVALID_NAME: test_rule3_a_name_that_is_not_a_string_is_invalid,
    Reason.TRUNCATED_NAME: test_rule11_a_cut_inside_the_name_is_refused,
    Reason.UNKNOWN_TOOL: test_unknown_tool_is_refused,
    Reason.AMBIGUOUS_TOOL: test_rule3_a_name_matching_two_tools_is_ambiguous,
    Reason.TRUNCATED_ARGUMENTS: test_rule11_a_cut_before_the_arguments_began_is_refused,
    Reason.AMBIGUOUS_ARGUMENTS: test_argument_keys_that_disagree_are_refused,
    Reason.INVALID_ARGUMENTS: test_rule9_a_string_not_decoding_to_an_object_is_refused,
    Reason.NOT_AN_OBJECT: test_arguments_that_are_not_an_object_are_refused,
    Reason.MISSING_REQUIRED: test_rule6_missing_required_without_default_is_refused,
    Reason.ENUM_NO_MATCH: test_rule4_never_the_closest_member,
    Reason.ENUM_AMBIGUOUS: test_rule4_a_value_matching_two_members_is_ambiguous,
    Reason.LOSSY_COERCION: test_rule5_anything_lossy_is_refused,
    Reason.ARRAY_TOO_LONG_FOR_SCALAR: test_rule8_two_elements_for_a_scalar_is_refused,
    Reason.EMPTY_ARRAY_FOR_SCALAR: test_rule8_no_element_for_a_scalar_is_refused,
    Reason.CONFLICTING_VALUES: test_rule7_a_flattened_key_disagreeing_with_the_nested_one_is_refused,
    Reason.CONFLICTING_CALLS: test_rule10_differing_copies_are_refused,
    Reason.UNUSABLE_SCHEMA: test_a_schema_outside_the_subset_is_refused,
    Reason.SCHEMA_VIOLATION: test_a_value_no_rule_may_repair_that_breaks_its_schema_is_refused,
    Reason.UNREPRESENTABLE: test_a_value_json_cannot_carry_is_refused_not_a_crash,
}


def test_every_refusal_reason_has_a_test() -> None:
    assert set(REASON_TESTS) == set(Reason)


def test_code_cites_only_real_decisions() -> None:
    import re
    from pathlib import Path

    import toolcall300

    ids = set(spec.decision_ids())
    package = Path(toolcall300.__file__).parent
    for path in (package / "toolshim").glob("*.py"):
        for cited in re.findall(r"\bD\d+\.\d+\b", path.read_text(encoding="utf-8")):
            assert cited in ids, f"{path.name} cites {cited}, which spec.py does not define"


# ---------------------------------------------------------------------------- caches


def test_a_tool_list_changed_between_calls_is_read_again() -> None:
    """The catalog is cached per list; adding, replacing or removing a tool is seen at once."""
    tools = [SEARCH]
    assert normalise(call("search_files", {"query": "x"}), tools) is not None
    assert normalise(call("get_weather", {"city": "x"}), tools) is None
    tools.append(WEATHER)
    assert normalise(call("get_weather", {"city": "x"}), tools) == {
        "name": "get_weather",
        "arguments": {"city": "x", "units": "metric"},
    }
    tools[1] = tool("get_weather", {"city": {"type": "integer"}}, ["city"])
    assert normalise(call("get_weather", {"city": "x"}), tools) is None
    tools.pop()
    assert normalise(call("get_weather", {"city": 3}), tools) is None


def test_equal_catalogs_in_new_objects_get_the_same_answers() -> None:
    """A caller that parses its tools afresh for every call (the scorer's stream does) gets
    the same answers as one that keeps them."""
    text = call("Get-Weather", {"city": "Oslo", "days": "3", "tags": "x"})
    kept = normalise_explained(text, TOOLS).as_dict()
    for _ in range(3):
        assert normalise_explained(text, json.loads(json.dumps(TOOLS))).as_dict() == kept


def test_a_changed_schema_in_a_new_object_is_compiled_again() -> None:
    """Compiled schemas are shared between equal schemas, never between different ones."""
    before = tool("t", {"n": {"type": "integer", "maximum": 5}}, ["n"])
    assert normalise(call("t", {"n": 4}), [before]) == {"name": "t", "arguments": {"n": 4}}
    after = json.loads(json.dumps(before))
    after["function"]["parameters"]["properties"]["n"]["maximum"] = 3
    assert normalise(call("t", {"n": 4}), [after]) is None
    again = json.loads(json.dumps(before))
    assert normalise(call("t", {"n": 4}), [again]) == {"name": "t", "arguments": {"n": 4}}
    as_float = json.loads(json.dumps(before).replace('"maximum": 5', '"maximum": 5.0'))
    assert normalise(call("t", {"n": 5}), [as_float]) == {"name": "t", "arguments": {"n": 5}}


def test_a_fresh_list_whose_call_names_a_tool_exactly_builds_no_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh list (no cache keyed on objects knows it) whose call writes a declared name
    exactly is answered from the tools declared under that name, found in one pass: the whole
    name -> schemas index is not built. A doubled name is still ambiguous, and a name that is
    not written exactly still goes through rule 3's index."""
    from toolcall300.toolshim import pipeline

    kept = normalise(call("search_files", {"query": "x"}), TOOLS)
    built = pipeline._schemas_by_name

    def refuse(tools: Any) -> Any:
        raise AssertionError("the whole index was built")

    monkeypatch.setattr(pipeline, "_schemas_by_name", refuse)
    for _ in range(3):
        assert (
            normalise(call("search_files", {"query": "x"}), json.loads(json.dumps(TOOLS))) == kept
        )
    doubled = json.loads(json.dumps([SEARCH, WEATHER, SEARCH]))
    assert refusal(call("search_files", {"query": "x"}), doubled) is Reason.AMBIGUOUS_TOOL
    monkeypatch.setattr(pipeline, "_schemas_by_name", built)
    text = call("Search-Files", {"query": "x"})
    assert normalise(text, json.loads(json.dumps(TOOLS))) == normalise(text, TOOLS) == kept


def test_a_fresh_schema_is_found_by_its_current_marshal_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh copy of a schema seen before is found by its text in marshal's current format
    (cheaper to write than format 2's); that text is exact, so contents that differ only in a
    number's type, a key's order or which objects are shared are never confused."""
    from toolcall300.toolshim import pipeline

    base = tool("t", {"n": {"type": "integer", "maximum": 5}}, ["n"])
    text = json.dumps(base)
    assert normalise(call("t", {"n": 4}), [json.loads(text)]) == {
        "name": "t",
        "arguments": {"n": 4},
    }

    class NoLookups(dict):  # type: ignore[type-arg]
        def get(self, *args: Any) -> Any:
            raise AssertionError("looked up in format 2")

    monkeypatch.setattr(pipeline, "_BY_CONTENT", NoLookups())
    for _ in range(3):
        found = normalise(call("t", {"n": 4}), [json.loads(text)])
        assert found == {"name": "t", "arguments": {"n": 4}}
    monkeypatch.undo()
    variants = {
        "5.0": {"name": "t", "arguments": {"n": 5}},
        "true": None,  # a boolean maximum is malformed: the schema is unusable
        "4": None,
    }
    for bound, expected in variants.items():
        for _ in range(2):
            fresh = json.loads(text.replace('"maximum": 5', f'"maximum": {bound}'))
            assert normalise(call("t", {"n": 5}), [fresh]) == expected
    shared_sub = {"type": "string", "enum": ["a", "b"]}
    shared = tool("s", {"x": shared_sub, "y": shared_sub}, ["x"])
    unshared = json.loads(json.dumps(shared))
    reordered = tool("s", {"y": dict(shared_sub), "x": dict(shared_sub)}, ["x"])
    arguments = {"y": "B", "x": "A"}
    for tools in ([shared], [unshared], [reordered], [unshared], [shared]):
        explained = normalise_explained(call("s", arguments), tools)
        assert explained.call == {"name": "s", "arguments": {"y": "b", "x": "a"}}
