"""Generated values read by format checkers this project did not write: jsonschema's 2020-12
``FormatChecker`` (python-jsonschema, for the formats it checks without optional packages)
and jsonschema-rs (every format, ``validate_formats=True``). A corpus built from a catalog
naming all nine formats validates, formats enforced, against both; the suite's own predicates
(``toolcall300.schema.formats``) refuse nothing either checker accepts among the values built.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import pytest

from toolcall300.generator.build import Inputs, build, corpus_from_files
from toolcall300.generator.values import build_value
from toolcall300.schema.formats import FORMATS, satisfies_format

CATALOG = Path(__file__).resolve().parents[1] / "data" / "formats.tools.json"
#: What jsonschema's FormatChecker checks without its optional format packages: the formats
#: it cannot check (uri needs rfc3987, hostname fqdn) it passes silently, so they are not
#: counted here (jsonschema-rs checks them).
PY_CHECKED = {"date", "date-time", "email", "ipv4", "ipv6", "time", "uuid"}
#: ``url`` is no JSON Schema format (the suite reads it as ``uri``): checked as ``uri``.
AS_JSON_SCHEMA = {"url": "uri"}


def test_both_checkers_check_what_this_test_counts_on() -> None:
    assert set(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers) >= PY_CHECKED
    for fmt in FORMATS:  # jsonschema-rs refuses a plain non-value of every format
        schema = {"type": "string", "format": AS_JSON_SCHEMA.get(fmt, fmt)}
        assert not jsonschema_rs.is_valid(schema, "not a value ?", validate_formats=True), fmt


def _py_valid(schema: dict[str, Any], value: Any) -> bool:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER  # 2020-12 formats, not draft 3
    validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
    return validator.is_valid(value)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_value_built_for_a_format_passes_both_checkers(fmt: str) -> None:
    for seed in range(60):
        for bounds in ({}, {"minLength": 30}, {"maxLength": 12}):
            schema = {"type": "string", "format": fmt, **bounds}
            try:
                value = build_value(random.Random(seed), schema, {}, "t", "p")
            except ValueError:
                continue  # no string of the format fits the bounds (named, never built)
            schema["format"] = AS_JSON_SCHEMA.get(fmt, fmt)
            assert jsonschema_rs.is_valid(schema, value, validate_formats=True), (fmt, value)
            if fmt in PY_CHECKED:
                assert _py_valid(schema, value), (fmt, value)
            assert satisfies_format(value, fmt)


def test_a_corpus_naming_every_format_validates_with_formats_enforced() -> None:
    result = build(Inputs("formats.tools.json", CATALOG.read_bytes(), "", None, 5))
    assert result.report.ok
    corpus = corpus_from_files(result.files)
    values = [c for c in corpus.cases if c["expected_kind"] == "value"]
    assert len(values) == 250
    for case in values:
        tool = next(t for t in case["tools"] if t["function"]["name"] == case["expected"]["name"])
        schema, args = tool["function"]["parameters"], case["expected"]["arguments"]
        assert jsonschema_rs.validator_for(schema, validate_formats=True).is_valid(args), (
            case["id"],
            json.dumps(args),
        )
        assert _py_valid(schema, args), case["id"]
