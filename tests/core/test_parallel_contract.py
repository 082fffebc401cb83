"""The parallel track's decisions (P1-P12), each with cases: a turn, a catalog and the one
expected list, followed by the reference normaliser ``toolshim.parallel.normalise_all``.

Written from the decisions' text; toolshim passing them is in-sample (same team), so they pin
the contract's reading, not a score. Every P id has at least one case here (a test says so).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from toolcall300.controls import integrator_all
from toolcall300.rules import declared_name_splits, repeat_matters
from toolcall300.spec import PARALLEL, decision_ids, render_spec
from toolcall300.toolshim.parallel import normalise_all


def tool(
    name: str, properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any
) -> dict[str, Any]:
    params = {"type": "object", "properties": properties, "required": list(required)}
    return {"type": "function", "function": {"name": name, "parameters": params, **extra}}


READ = tool("read_file", {"path": {"type": "string"}}, ("path",))
WRITE = tool(
    "write_file", {"path": {"type": "string"}, "mode": {"enum": ["append", "replace"]}}, ("path",)
)
COUNT = tool("count", {"n": {"type": "integer"}}, ("n",))
CHARGE = tool(
    "charge", {"amount": {"type": "integer"}}, ("amount",), annotations={"idempotentHint": False}
)
TOOLS = [READ, WRITE, COUNT, CHARGE]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def bare(*calls: dict[str, Any]) -> str:
    return json.dumps(list(calls))


def openai(*entries: dict[str, Any]) -> str:
    return json.dumps({"role": "assistant", "content": None, "tool_calls": list(entries)})


def entry(
    name: str | None, arguments: str, index: int | None = None, id: str = ""
) -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        fn["name"] = name
    out: dict[str, Any] = {"type": "function", "function": fn}
    if id:
        out["id"] = id
    if index is not None:
        out["index"] = index
    return out


#: (decision id, what the case shows, text, tools, the expected answer)
CASES: list[tuple[str, str, str, list[dict[str, Any]], list[Any]]] = [
    (
        "P1",
        "two distinct calls, each repaired on its own (rule 3, rule 5)",
        bare(
            {"name": "Read-File", "arguments": {"path": "a"}},
            {"name": "count", "arguments": {"n": "3"}},
        ),
        TOOLS,
        [call("read_file", path="a"), call("count", n=3)],
    ),
    (
        "P1",
        "Anthropic tool_use blocks, the second needing rule 4",
        json.dumps(
            [
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "x"}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "write_file",
                    "input": {"path": "y", "mode": "Replace"},
                },
            ]
        ),
        TOOLS,
        [call("read_file", path="x"), call("write_file", path="y", mode="replace")],
    ),
    ("P2", "an empty tool_calls array holds no call", openai(), TOOLS, []),
    ("P2", "an empty array holds no call", "[]", TOOLS, []),
    (
        "P2",
        "text that is not JSON is one call attempted and refused",
        "I will call read_file",
        TOOLS,
        [None],
    ),
    (
        "P2",
        "an item that is no call takes a slot and is refused",
        json.dumps([{"name": "read_file", "arguments": {"path": "a"}}, 7]),
        TOOLS,
        [call("read_file", path="a"), None],
    ),
    (
        "P3",
        "two documents in one arguments string are two calls with the envelope's name",
        openai(entry("read_file", '{"path": "a"}{"path": "b"}', id="call_1")),
        TOOLS,
        [call("read_file", path="a"), call("read_file", path="b")],
    ),
    (
        "P3",
        "whitespace between the documents is allowed; each is repaired on its own",
        openai(entry("count", '{"n": "1"}\n {"n": 2}')),
        TOOLS,
        [call("count", n=1), call("count", n=2)],
    ),
    (
        "P3",
        "identical documents collapse (P7)",
        openai(entry("read_file", '{"path": "a"}{"path": "a"}')),
        TOOLS,
        [call("read_file", path="a")],
    ),
    (
        "P3",
        "a last document cut inside a complete string is refused (D11.8)",
        openai(entry("read_file", '{"path": "a"}{"path": "b')),
        TOOLS,
        [call("read_file", path="a"), None],
    ),
    (
        "P3",
        "a string that is not JSON is one call, refused (D9.1)",
        openai(entry("read_file", '{"path": "a"} oops')),
        TOOLS,
        [None],
    ),
    (
        "P4",
        "a doubled name with two documents is two calls",
        openai(entry("write_filewrite_file", '{"path": "a"}{"path": "b"}')),
        TOOLS,
        [call("write_file", path="a"), call("write_file", path="b")],
    ),
    (
        "P4",
        "two different names concatenated, two documents: each name with its document",
        openai(entry("read_filecount", '{"path": "a"}{"n": 2}')),
        TOOLS,
        [call("read_file", path="a"), call("count", n=2)],
    ),
    (
        "P4",
        "a doubled name with one document is not split: refused by rule 3",
        openai(entry("write_filewrite_file", '{"path": "a"}')),
        TOOLS,
        [None],
    ),
    (
        "P4",
        "a doubled name with three documents is not split: three calls refused",
        openai(entry("write_filewrite_file", '{"path": "a"}{"path": "b"}{"path": "c"}')),
        TOOLS,
        [None, None, None],
    ),
    (
        "P5",
        "a call split across two entries (the second has no name) is joined",
        openai(entry("read_file", '{"path": "a.t', id="call_1"), entry(None, 'xt"}')),
        TOOLS,
        [call("read_file", path="a.txt")],
    ),
    (
        "P5",
        "the usual stream shape: name with an empty string, then the arguments",
        openai(entry("count", "", index=0), entry("", '{"n": 4}', index=0)),
        TOOLS,
        [call("count", n=4)],
    ),
    (
        "P5",
        "interleaved fragments are attributed by index, ordered by first appearance",
        openai(
            entry("read_file", '{"path":', index=0),
            entry("count", '{"n":', index=1),
            entry(None, ' "a"}', index=0),
            entry(None, " 5}", index=1),
        ),
        TOOLS,
        [call("read_file", path="a"), call("count", n=5)],
    ),
    (
        "P5",
        "a nameless entry with nothing open to continue is a call of its own, refused",
        openai(entry("read_file", '{"path": "a"}'), entry(None, '{"path": "b"}')),
        TOOLS,
        [call("read_file", path="a"), None],
    ),
    (
        "P5",
        "a call whose joined string is still open at the end of a complete text is refused",
        openai(entry("read_file", '{"path": "a'), entry(None, "b")),
        TOOLS,
        [None],
    ),
    (
        "P6",
        "two complete calls under a reused index are two calls",
        openai(
            entry("read_file", '{"path": "a"}', index=0, id="call_1"),
            entry("count", '{"n": 1}', index=0, id="call_2"),
        ),
        TOOLS,
        [call("read_file", path="a"), call("count", n=1)],
    ),
    (
        "P6",
        "a reused id merges nothing either",
        openai(
            entry("read_file", '{"path": "a"}', id="call_1"),
            entry("read_file", '{"path": "b"}', id="call_1"),
        ),
        TOOLS,
        [call("read_file", path="a"), call("read_file", path="b")],
    ),
    (
        "P7",
        "copies that agree after repair collapse, the first stands in its place",
        bare(
            {"name": "count", "arguments": {"n": "2"}},
            {"name": "read_file", "arguments": {"path": "a"}},
            {"name": "Count", "arguments": {"n": 2}},
        ),
        TOOLS,
        [call("count", n=2), call("read_file", path="a")],
    ),
    (
        "P7",
        "copies stand when the catalog says repeating matters (idempotentHint: false)",
        bare(
            {"name": "charge", "arguments": {"amount": 5}},
            {"name": "charge", "arguments": {"amount": "5"}},
        ),
        TOOLS,
        [call("charge", amount=5), call("charge", amount=5)],
    ),
    (
        "P7",
        "x-idempotent: false in tools.json says the same",
        bare({"name": "count", "arguments": {"n": 1}}, {"name": "count", "arguments": {"n": 1}}),
        [tool("count", {"n": {"type": "integer"}}, ("n",)) | {"x-idempotent": False}],
        [call("count", n=1), call("count", n=1)],
    ),
    (
        "P7",
        "x-mutates says nothing about repeating: copies collapse",
        bare({"name": "count", "arguments": {"n": 1}}, {"name": "count", "arguments": {"n": 1}}),
        [tool("count", {"n": {"type": "integer"}}, ("n",)) | {"x-mutates": True}],
        [call("count", n=1)],
    ),
    (
        "P7",
        "refused calls are copies of nothing",
        bare({"name": "nope", "arguments": {}}, {"name": "nope", "arguments": {}}),
        TOOLS,
        [None, None],
    ),
    (
        "P8",
        "a name that splits two ways into declared names is not split",
        openai(entry("abab", "{}{}")),
        [
            tool("a", {}),
            tool("ab", {}),
            tool("b", {}),
            tool("ba", {}),
            tool("aba", {}),
            tool("bab", {}),
        ],
        [None, None],
    ),
    (
        "P8",
        "interleaved fragments without index: two open calls could take them, none does",
        openai(
            entry("read_file", '{"path":'),
            entry("count", '{"n":'),
            entry(None, ' "a"}'),
            entry(None, " 5}"),
        ),
        TOOLS,
        [None, None],
    ),
    (
        "P9",
        "an undeclared tool among valid calls: its slot refused, the others stand",
        bare(
            {"name": "read_file", "arguments": {"path": "a"}},
            {"name": "delete_everything", "arguments": {}},
            {"name": "count", "arguments": {"n": "7"}},
        ),
        TOOLS,
        [call("read_file", path="a"), None, call("count", n=7)],
    ),
    (
        "P9",
        "an unrecoverable value (rule 5) among valid calls",
        bare(
            {"name": "count", "arguments": {"n": "seven"}},
            {"name": "read_file", "arguments": {"path": "a"}},
        ),
        TOOLS,
        [None, call("read_file", path="a")],
    ),
    (
        "P10",
        "a cut inside the last call: rule 11 on that call alone",
        '[{"name": "read_file", "arguments": {"path": "a"}}, {"name": "write_file", "arguments": {"path": "b", "mode": "app',
        TOOLS,
        [call("read_file", path="a"), call("write_file", path="b")],
    ),
    (
        "P10",
        "nothing begun after the last complete call adds no entry",
        '[{"name": "read_file", "arguments": {"path": "a"}}, ',
        TOOLS,
        [call("read_file", path="a")],
    ),
    (
        "P10",
        "a call begun and cut before its name is refused in its slot",
        '[{"name": "read_file", "arguments": {"path": "a"}}, {"na',
        TOOLS,
        [call("read_file", path="a"), None],
    ),
    (
        "P10",
        "a cut that loses a required property refuses that call only",
        '[{"name": "count", "arguments": {"n": 1}}, {"name": "read_file", "arguments": {"path": "a',
        TOOLS,
        [call("count", n=1), None],
    ),
    (
        "P11",
        "entries follow the text, never their index",
        openai(
            entry("count", '{"n": 1}', index=2),
            entry("read_file", '{"path": "a"}', index=0),
            entry("count", '{"n": 2}', index=1),
        ),
        TOOLS,
        [call("count", n=1), call("read_file", path="a"), call("count", n=2)],
    ),
    (
        "P12",
        "several documents one after another, each an envelope of E2",
        openai(entry("read_file", '{"path": "a"}'))
        + "\n"
        + json.dumps({"name": "count", "arguments": {"n": 3}}),
        TOOLS,
        [call("read_file", path="a"), call("count", n=3)],
    ),
]


@pytest.mark.parametrize(
    ("did", "why", "text", "tools", "expected"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_each_decision_reads_its_cases(
    did: str, why: str, text: str, tools: list[dict[str, Any]], expected: list[Any]
) -> None:
    assert normalise_all(text, tools) == expected, why


def test_every_parallel_decision_has_a_case_and_is_published() -> None:
    ids = [pid for pid, _ in PARALLEL]
    assert ids == [f"P{n}" for n in range(1, 13)]
    assert {c[0] for c in CASES} == set(ids)
    assert set(ids) <= set(decision_ids())
    spec = render_spec()
    for pid in ids:
        assert re.search(rf"^   {pid} ", spec, re.M), pid


def test_the_answer_is_always_a_list_of_calls_or_nulls() -> None:
    for _, _, text, tools, _ in CASES:
        for entry_ in normalise_all(text, tools):
            assert entry_ is None or set(entry_) == {"name", "arguments"}
    assert normalise_all(None, TOOLS) == [None]  # type: ignore[arg-type]


def test_the_integrator_control_repairs_nothing() -> None:
    """C3: each entry as C2 reads it; no fragment joined, no split, no collapse."""
    text = bare({"name": "count", "arguments": {"n": 2}}, {"name": "count", "arguments": {"n": 2}})
    assert integrator_all(text, TOOLS) == [call("count", n=2), call("count", n=2)]
    assert integrator_all(openai(entry("read_file", '{"path": "a"}{"path": "b"}')), TOOLS) == [None]
    assert integrator_all("not json", TOOLS) is None
    assert integrator_all(json.dumps([[{"name": "count", "arguments": {"n": 1}}]]), TOOLS) == [None]


def test_repeat_statements_are_explicit_only() -> None:
    assert repeat_matters({"annotations": {"idempotentHint": False}, "function": {"name": "f"}})
    assert not repeat_matters({"function": {"name": "f", "annotations": {"idempotentHint": True}}})
    assert not repeat_matters({"function": {"name": "f", "annotations": {"readOnlyHint": False}}})
    assert not repeat_matters({"function": {"name": "f", "x-idempotent": "false"}})
    assert not repeat_matters(None)


def test_name_splits_are_exact_and_counted() -> None:
    assert declared_name_splits("read_filecount", ["read_file", "count"], 2) == [
        ["read_file", "count"]
    ]
    assert declared_name_splits("read_filecount", ["read_file", "count"], 3) == []
    assert declared_name_splits("Read_Filecount", ["read_file", "count"], 2) == []
    assert len(declared_name_splits("abab", ["a", "ab", "b", "ba", "aba", "bab"], 2)) == 2


@pytest.mark.parametrize(
    ("arguments", "calls"),
    [
        ('{"path": "a"}{"path": "a"}', [call("read_file", path="a")]),
        ('{"path": "a"} {"path": "a"}', [call("read_file", path="a")]),
        ('{"path": "a"}{"path": "b"}', [call("read_file", path="a"), call("read_file", path="b")]),
        ('{"path": "a"}{"path": "b', [call("read_file", path="a"), None]),
    ],
)
def test_p3_agrees_with_the_single_call_reading_d9_4(arguments: str, calls: list[Any]) -> None:
    """D9.4 reads two documents in one arguments string as rule 10 reads several calls; P3
    reads the same documents as those calls: where D9.4 answers a call, P3's list is that one
    call, and where D9.4 refuses, P3 lists the calls (and a null for a refused one)."""
    from toolcall300.toolshim.pipeline import normalise

    text = openai(entry("read_file", arguments))
    single = normalise(text, TOOLS)
    assert normalise_all(text, TOOLS) == calls
    assert single == (calls[0] if len(calls) == 1 else None)
