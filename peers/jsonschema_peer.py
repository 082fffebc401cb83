"""jsonschema alone as a strict gate: parse with ``json``, validate, refuse on any error."""

from __future__ import annotations

import json
from typing import Any

from glue import call, read_call
from jsonschema import Draft202012Validator


def gate(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    found = read_call(text, tools, json.loads)
    if found is None:
        return None
    name, arguments, params = found
    return call(name, arguments) if Draft202012Validator(params).is_valid(arguments) else None
