"""``format`` drives generated values: every expected string satisfies the format its schema
names (uri, uuid, email, hostname, ipv4, ipv6, date, date-time, time), and the
``expected_formats`` integrity check holds every corpus to it (docs/pools.md).

An independent checker (jsonschema's FormatChecker and jsonschema-rs) reads the same values in
tests/unit/test_formats_independent.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall300.generator.build import FILES, Inputs, build, corpus_from_files
from toolcall300.generator.checks import format_breaks, run_checks
from toolcall300.generator.values import GenerationError, build_value
from toolcall300.schema import is_valid
from toolcall300.schema.formats import FORMATS, format_value, satisfies_format

CATALOG = Path(__file__).resolve().parents[1] / "data" / "formats.tools.json"

GOOD = {
    "date": ["2026-12-09", "2024-02-29"],
    "date-time": ["2026-12-09T09:30:00Z", "2026-12-09t09:30:00.25+01:00"],
    "time": ["09:30:00Z", "23:59:60Z", "09:30:00.5-05:00"],
    "email": ["ana@example.com", "o.okafor+tag@mail.example.org"],
    "hostname": ["example.com", "host-1.example.com", "localhost"],
    "ipv4": ["192.0.2.1", "0.0.0.0"],
    "ipv6": ["2001:db8::1", "::1", "::ffff:192.0.2.1"],
    "uri": ["https://example.com/a?b=1#c", "urn:isbn:0451450523", "mailto:ana@example.com"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000"],
}
BAD = {
    "date": ["2026-02-30", "2026-1-09", "09/12/2026", "2026-12-09T00:00:00Z"],
    "date-time": ["2026-12-09 09:30:00Z", "2026-12-09T09:30:00", "2026-12-09"],
    "time": ["09:30:00", "24:00:00Z", "09:60:00Z", "12:59:60Z"],
    "email": ["email-417", "@example.com", "ana@", "ana@-bad-.com", "a b@example.com"],
    "hostname": ["host_name", "-lead.example.com", "a..b", "x" * 64 + ".com", ""],
    "ipv4": ["256.1.1.1", "192.0.2", "01.2.3.4", "192.0.2.1 "],
    "ipv6": ["2001:db8:::1", "fe80::1%eth0", "192.0.2.1"],
    "uri": ["url-657", "/relative/path", "https://exa mple.com", "1http://x"],
    "uuid": [
        "uuid-203",
        "123e4567e89b12d3a456426614174000",
        "123e4567-e89b-12d3-a456-42661417400g",
    ],
}


@pytest.mark.parametrize("fmt", sorted(GOOD))
def test_the_format_predicates_accept_and_refuse_as_the_rfcs_say(fmt: str) -> None:
    assert all(satisfies_format(v, fmt) for v in GOOD[fmt]), fmt
    assert not any(satisfies_format(v, fmt) for v in BAD[fmt]), [
        v for v in BAD[fmt] if satisfies_format(v, fmt)
    ]


def test_an_unknown_format_and_a_non_string_constrain_nothing() -> None:
    assert satisfies_format("anything", "x-colour") and satisfies_format(3, "uri")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_value_built_for_a_format_satisfies_it(fmt: str) -> None:
    # the old generator wrote "url-657" for a uri and "request_id-203" for most uuids
    schema = {"type": "string", "format": fmt}
    for seed in range(40):
        value = build_value(random.Random(seed), schema, {}, "t", "prop")
        assert satisfies_format(value, fmt), value


@given(
    st.sampled_from(sorted(FORMATS)),
    st.integers(0, 70),
    st.one_of(st.none(), st.integers(0, 80)),
    st.integers(0, 2**32),
)
def test_a_built_format_value_satisfies_format_and_lengths_or_is_refused(
    fmt: str, low: int, high: int | None, seed: int
) -> None:
    schema: dict[str, Any] = {"type": "string", "format": fmt, "minLength": low}
    if high is not None:
        schema["maxLength"] = high
    try:
        value = build_value(random.Random(seed), schema, {}, "t", "prop")
    except GenerationError as exc:
        # refused only when no string of the format fits: never a value that breaks it
        assert format_value(random.Random(seed), fmt, low, high) is None, exc
        return
    assert satisfies_format(value, fmt) and is_valid(value, schema), (value, schema)


def test_a_pattern_and_a_format_are_both_followed() -> None:
    schema = {"type": "string", "format": "uri", "pattern": "^ftp://[a-z]{3,8}\\.example$"}
    for seed in range(10):
        value = build_value(random.Random(seed), schema, {}, "t", "mirror")
        assert value.startswith("ftp://") and satisfies_format(value, "uri")


def test_a_pattern_no_format_value_can_match_is_refused_by_name() -> None:
    schema = {"type": "string", "format": "ipv4", "pattern": "^[a-z]+$"}
    with pytest.raises(GenerationError, match="format 'ipv4'"):
        build_value(random.Random(1), schema, {}, "t", "addr")


def test_a_string_pool_offers_only_the_values_that_satisfy_the_format() -> None:
    pools = {"properties": {"url": ["not a url", "https://example.org/kept"]}}
    schema = {"type": "string", "format": "uri"}
    got = {build_value(random.Random(s), schema, pools, "t", "url") for s in range(20)}
    assert got == {"https://example.org/kept"}


def test_format_breaks_names_the_path_and_spares_what_the_schema_dictates() -> None:
    schema = {
        "type": "object",
        "properties": {
            "site": {"type": "string", "format": "uri", "default": "none"},
            "hosts": {"type": "array", "items": {"type": "string", "format": "hostname"}},
        },
    }
    args = {"site": "none", "hosts": ["ok.example", "not_ok"]}
    assert list(format_breaks(args, schema)) == ["$.hosts[1] 'not_ok' is not a 'hostname'"]


def test_a_corpus_built_from_every_format_passes_the_check(tmp_path: Path) -> None:
    result = build(Inputs("formats.tools.json", CATALOG.read_bytes(), "", None, 5))
    assert result.report.ok, result.report.failures[:3]
    corpus = corpus_from_files(result.files)
    checked = 0
    for case in corpus.cases:
        if case["expected_kind"] != "value":
            continue
        tool = next(t for t in case["tools"] if t["function"]["name"] == case["expected"]["name"])
        assert (
            list(format_breaks(case["expected"]["arguments"], tool["function"]["parameters"])) == []
        )
        checked += 1
    assert checked == 250
    # the written files hold no string that breaks its format, and the check says so
    rows = [json.loads(line) for line in result.files[FILES[0]].decode().splitlines()]
    assert len(rows) == 300 and run_checks(corpus, only=("expected_formats",)).ok


def test_the_format_module_examples_hold() -> None:
    import doctest

    from toolcall300.schema import formats

    assert doctest.testmod(formats).failed == 0
