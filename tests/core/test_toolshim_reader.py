"""The incremental reader: every prefix of valid JSON reads, and reports only what arrived."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples

from toolcall300.canonical import canonical
from toolcall300.toolshim.reader import (
    CutString,
    CutToken,
    Malformed,
    OpenArray,
    OpenObject,
    is_complete,
    read_values,
)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=15,
)


def agrees(partial: Any, original: Any) -> bool:
    """Whether what the reader reported of a prefix is consistent with the whole value."""
    if is_complete(partial):
        return canonical(partial) == canonical(original)
    if isinstance(partial, CutString):
        return isinstance(original, str) and original.startswith(partial.prefix)
    if isinstance(partial, CutToken):
        return json.dumps(original).startswith(partial.text)
    if isinstance(partial, OpenArray):
        return (
            isinstance(original, list)
            and len(partial.items) <= len(original)
            and all(agrees(p, o) for p, o in zip(partial.items, original, strict=False))
        )
    assert isinstance(partial, OpenObject)
    return (
        isinstance(original, dict)
        and all(k in original and agrees(v, original[k]) for k, v in partial.members.items())
        and (partial.cut_key is None or any(k.startswith(partial.cut_key) for k in original))
    )


@settings(max_examples=examples(150), deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 1]))
def test_every_prefix_of_valid_json_reads_and_agrees_with_the_whole(
    value: Any, indent: int | None
) -> None:
    text = json.dumps(value, indent=indent)
    for cut in range(len(text) + 1):
        docs = read_values(text[:cut])
        assert len(docs) <= 1
        if docs:
            assert agrees(docs[0], value), (text[:cut], docs[0])
    # A delimiter after the whole document makes even a bare number complete (D11.3).
    assert canonical(read_values(text + " ")) == canonical([value])


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(JSON_VALUES, min_size=1, max_size=4))
def test_documents_one_after_another(values: list[Any]) -> None:
    text = "\n".join(json.dumps(v) for v in values) + "\n"
    assert canonical(read_values(text)) == canonical(values)


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_reads_or_is_malformed(text: str) -> None:
    try:
        docs = read_values(text)
    except Malformed:
        return
    assert all(is_complete(d) for d in docs[:-1])  # only the last document can be cut


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1', OpenObject({"a": CutToken("1")})),
        ('{"a": 1 ', OpenObject({"a": 1})),
        ('{"a": 1,', OpenObject({"a": 1})),
        ('{"a": 1.', OpenObject({"a": CutToken("1.")})),
        ('{"a": -', OpenObject({"a": CutToken("-")})),
        ('{"a": 2e+', OpenObject({"a": CutToken("2e+")})),
        ('{"a": nu', OpenObject({"a": CutToken("nu")})),
        ('{"a": null', OpenObject({"a": None})),
        ('{"a": "x\\', OpenObject({"a": CutString("x")})),
        ('{"a": "x\\u00e', OpenObject({"a": CutString("x")})),
        ('{"a": "\\ud83d', OpenObject({"a": CutString("")})),
        ('{"a": "\\ud83d\\ude0', OpenObject({"a": CutString("")})),
        ('{"a": "\\ud83d\\ude00', OpenObject({"a": CutString("\U0001f600")})),
        ('{"a": [', OpenObject({"a": OpenArray([])})),
        ('{"a": [[1], {"b"', OpenObject({"a": OpenArray([[1], OpenObject({}, cut_key="b")])})),
        ('{"ke', OpenObject({}, cut_key="ke")),
        ('{"key" ', OpenObject({}, cut_key="key")),
        ("[1, 2", OpenArray([1, CutToken("2")])),
    ],
)
def test_cuts(text: str, expected: Any) -> None:
    assert read_values(text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1,}',
        "[1,]",
        "{'a': 1}",
        "NaN",
        "[Infinity]",
        '{"a": 01}',
        '{"a": 1.e3}',
        '{"a" 1}',
        '"\x01"',
        "tx",
        "1 x",
        '{"a": "\\x"}',
        "[1 2]",
        "+1",
        '{"a": 1e999}',
    ],
)
def test_malformed(text: str) -> None:
    with pytest.raises(Malformed):
        read_values(text)


def test_whitespace_only_is_no_document() -> None:
    assert read_values(" \n\t") == []
