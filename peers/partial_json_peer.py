"""partial-json-parser (the streaming parser vLLM and SGLang use for tool calls) behind a
jsonschema gate: a cut stream is read as far as it goes, then the schema decides."""

from __future__ import annotations

from typing import Any

import partial_json_parser
from glue import call, read_call
from jsonschema import Draft202012Validator


def _loads(text: str) -> Any:
    try:
        return partial_json_parser.loads(text)
    except Exception as exc:  # the parser raises its own error types on text it cannot read
        raise ValueError(str(exc)) from exc


def gate(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    found = read_call(text, tools, _loads)
    if found is None:
        return None
    name, arguments, params = found
    return call(name, arguments) if Draft202012Validator(params).is_valid(arguments) else None
