"""D25: the grammar of diff and defect paths, which callers need to replay a diff."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.schema import format_path, parse_path

_PATH_PARTS = st.lists(
    st.one_of(st.text(max_size=8), st.integers(min_value=0, max_value=10**6)), max_size=6
)


@given(_PATH_PARTS)
def test_every_diff_path_reads_back_to_exactly_its_location(parts: list[str | int]) -> None:
    text = format_path(tuple(parts))
    assert parse_path(text) == parts


@pytest.mark.parametrize(
    ("parts", "text"),
    [
        (("a", 0, "b_c-d"), "$.a[0].b_c-d"),
        (("città",), '$["città"]'),
        (("a.b", ""), '$["a.b"][""]'),
        (('q"\\\n',), '$["q\\"\\\\\\n"]'),
        (("1a",), '$["1a"]'),
    ],
)
def test_diff_paths_follow_the_published_grammar(parts: tuple[str | int, ...], text: str) -> None:
    """D25, as published in the criteria: callers replay diffs, so they must know the quoting."""
    assert format_path(parts) == text


@pytest.mark.parametrize("text", ["a", "$.", "$[01]", "$[-1]", "$[ 1]", "$.1a", '$["a"', "$[x]"])
def test_a_path_outside_the_grammar_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_path(text)
