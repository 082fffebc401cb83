"""Why a text holds no correct call: the named reasons a refusal's label must rest on (a
value no declared type, enum member or lossless conversion reaches, a required property with
no default, a tool name cut or resolving to none or several, a call cut after a complete one,
prose, copies or documents that disagree, a conflicting re-nesting). Used to verify
refusals, never to label them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import canonical
from toolcall300.catalog import tool_schema, value_type
from toolcall300.generator.envelopes import sent_calls
from toolcall300.generator.oracles.copies import repaired_copy
from toolcall300.generator.oracles.decisions import (
    argument_documents,
    container_held,
    is_empty_text,
)
from toolcall300.generator.oracles.nesting import renested
from toolcall300.generator.oracles.reading import (
    cut_call_array,
    decode_strings,
    names_of,
    parsed,
    required_defaults,
    tool_of,
)
from toolcall300.rules import (
    NotLossless,
    coerce_lossless,
    enum_matches,
    reads_as_container,
    resolve_tool_name,
    takes_nothing,
    tool_name_matches,
)
from toolcall300.schema import declared_types, json_type_matches

_NAME_CUT = re.compile(r'"name"\s*:\s*"(?:[^"\\]|\\.)*\Z')


def _value_reasons(value: Any, schema: dict[str, Any], where: str) -> Iterator[str]:
    types = declared_types(schema)
    if reads_as_container(value) and "string" not in types and {"array", "object"} & set(types):
        ok, held = container_held(value, schema)
        if not ok:
            yield f"JSON text at {where} is no {' or '.join(types)} (D5.6, D8.4)"
            return
        value = held  # D5.6: decoded, then judged like any written value
    if "enum" in schema and not any(canonical(value) == canonical(m) for m in schema["enum"]):
        if len(enum_matches(value, schema["enum"])) != 1:
            yield f"enum value at {where} matches no single member (rule 4)"
        return
    kind = value_type(schema)
    if kind is None:
        return
    if any(json_type_matches(value, t) for t in declared_types(schema)):
        if kind == "object" and isinstance(value, dict):
            yield from _object_reasons(value, schema, where)
        return
    if isinstance(value, list) and kind != "array":
        if len(value) != 1:
            yield f"{len(value)} values at {where} for a scalar (rule 8)"
        return
    if kind in ("integer", "number", "boolean"):
        try:
            coerce_lossless(value, kind)
        except NotLossless:
            yield f"value at {where} is not losslessly a {kind} (rule 5)"
    elif kind == "string":
        yield f"a non-string at {where} where a string is declared (rule 5)"


def _object_reasons(args: dict[str, Any], schema: dict[str, Any], where: str) -> Iterator[str]:
    _, lost = required_defaults(schema, args)
    for key in lost:
        yield f"required {where}.{key} is missing with no default (rule 6)"
    for key, value in args.items():
        sub = schema.get("properties", {}).get(key)
        if isinstance(sub, dict):
            yield from _value_reasons(value, sub, f"{where}.{key}")


def refusal_reasons(case: dict[str, Any]) -> list[str]:
    """Why a case's text holds no correct call: used to verify, never to label, refusals."""
    ok, value = parsed(case)
    text = case["text"]
    if not ok:
        cut = cut_call_array(text)
        if cut is not None and cut[1].startswith("{"):
            return ["a call begun and cut after a complete one (D10.2)"]
        if _NAME_CUT.search(text) or ('"name"' not in text and text.lstrip().startswith("{")):
            return ["cut inside the tool name (D11.5)"]
        return ["prose, no call"] if "{" not in text else []
    calls = sent_calls(value)
    if not calls:
        return ["no call in the text"]
    if len({canonical(c) for c in calls}) > 1:
        return ["several calls that differ (rule 10)"]
    call = calls[0]
    names = names_of(case)
    matches = tool_name_matches(call["name"], names)
    resolved = resolve_tool_name(call["name"], names)
    if resolved is None:
        return [f"name matches {len(matches)} declared tools (rule 3)"]
    args, _ = decode_strings(call["arguments"])
    tool = tool_of(case, resolved)
    if is_empty_text(args):
        if tool is not None and takes_nothing(tool_schema(tool)):
            return []
        return ["empty arguments text for a tool that declares properties (D9.3)"]
    documents = argument_documents(args)
    if documents is not None:
        copies = [repaired_copy({"name": call["name"], "arguments": d}, case) for d in documents]
        if any(c is None for c in copies):
            return ["a document of the arguments string must be refused (D9.4)"]
        if len({canonical(c) for c in copies}) > 1:
            return ["the documents of the arguments string differ (D9.4)"]
        return []
    if isinstance(args, str):
        return ["arguments string does not decode (rule 9)"]
    if not isinstance(args, dict):
        return ["arguments are not an object"]
    if tool is None:
        return ["tool missing"]
    back = renested(args, tool_schema(tool))
    conflict = [f"a flattened key conflicts: {back.problem}"] if back.conflict else []
    return conflict + list(_object_reasons(args, tool_schema(tool), "$"))
