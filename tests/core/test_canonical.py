"""Canonical JSON: deterministic, idempotent, and the equality the grader uses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.canonical import canonical, json_equal, jsonl_bytes, loads_strict, sha256_hex

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@given(JSON)
def test_canonicalising_twice_changes_nothing(value: object) -> None:
    once = canonical(value)
    assert canonical(json.loads(once)) == once


@given(JSON)
def test_canonical_agrees_with_the_seed_comparison(value: object) -> None:
    seed_form = json.dumps(value, sort_keys=True, separators=(",", ":"))
    assert json.loads(canonical(value)) == json.loads(seed_form)


def test_key_order_does_not_matter_but_number_spelling_does() -> None:
    assert canonical({"b": 1, "a": 2}) == canonical({"a": 2, "b": 1})
    assert canonical({"n": 3}) != canonical({"n": 3.0})  # D1.2


def test_nan_is_not_json() -> None:
    with pytest.raises(ValueError):
        canonical(float("nan"))
    with pytest.raises(ValueError):
        loads_strict("NaN")
    with pytest.raises(ValueError):
        loads_strict('{"a": Infinity}')


def test_json_equal_tells_booleans_from_numbers() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal([0], [False])
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_jsonl_is_utf8_with_newlines_and_stable_hash() -> None:
    data = jsonl_bytes([{"é": 1}, [2]])
    assert data == '{"é":1}\n[2]\n'.encode()
    assert sha256_hex(data) == sha256_hex(jsonl_bytes([{"é": 1}, [2]]))
