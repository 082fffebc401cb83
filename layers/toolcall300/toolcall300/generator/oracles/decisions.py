"""The decisions a case rests on, read from its text: the ones the reference normaliser
once took alone and the ones real traffic reached (JSON text of a container D5.6, empty
arguments D9.3, several documents D9.4, arguments one level off E5 and D7.9), so a case's
rationale can be held to name them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import canonical, raw_decode_strict
from toolcall300.catalog import Tool, tool_schema, value_type
from toolcall300.generator.oracles.reading import (
    array_cut_calls,
    calls_of,
    decode_strings,
    parsed,
    tool_of,
)
from toolcall300.rules import (
    NotLossless,
    decode_container_text,
    reads_as_container,
)
from toolcall300.schema import declared_types
from toolcall300.spec import ARGUMENT_KEYS, CALLS_KEY, ENVELOPE_KEYS, FUNCTION_KEYS

_STRING_ARGUMENTS = re.compile(r'"(?:arguments|parameters|input)"\s*:\s*"')
_NUMBER_THEN_SPACE = re.compile(r"[0-9][ \t\r\n]+\Z")


def _free_form_keys(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` writes keys into an object schema without ``properties`` (D7.4)."""
    if isinstance(value, dict) and value_type(schema) == "object":
        props = schema.get("properties")
        if not isinstance(props, dict):
            return bool(value)
        return any(_free_form_keys(v, props[k]) for k, v in value.items() if k in props)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return any(_free_form_keys(v, items) for v in value)
    return False


def decisions_rested_on(case: dict[str, Any]) -> dict[str, str]:
    """The decisions the reference normaliser once took alone that a case's answer rests on,
    each with why, so its rationale can name them: D1.3 (a call without an arguments key),
    D7.4 (keys of a free-form object), D8.2 (an object wrapped into an array), D10.4 (an
    array of calls cut after a complete call), D11.7 (a number then whitespace at the cut)
    and D11.8 (a cut inside string-encoded arguments); and those real traffic reached (D5.6,
    D8.4, D9.3, D9.4, E5, D7.9, see :func:`_decisions_of_the_wild`).
    D6.3 cannot arise: the catalog checks require every tool to declare ``parameters``."""
    out: dict[str, str] = {}
    text = str(case.get("text", ""))
    expected = case.get("expected") if isinstance(case.get("expected"), dict) else None
    tool = tool_of(case, expected["name"]) if expected else None
    calls = calls_of(case) or []
    if any(c["arguments"] is None for c in calls):
        out["D1.3"] = "a complete call with no arguments key has the arguments {}"
    if expected and tool and _free_form_keys(expected["arguments"], tool_schema(tool)):
        out["D7.4"] = "an object schema without properties is free-form, so its keys are kept"
    sent = calls[0]["arguments"] if len(calls) == 1 else None
    if case.get("category") == "array_vs_scalar" and expected and isinstance(sent, dict):
        for key, value in expected["arguments"].items():
            one_object = isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)
            if one_object and canonical(sent.get(key)) == canonical(value[0]):
                out["D8.2"] = "rule 8 wraps an object too"
    out.update(_decisions_of_the_wild(case, tool, calls))
    if not parsed(case)[0]:
        if _NUMBER_THEN_SPACE.search(text):
            out["D11.7"] = "whitespace after a number at the cut is a delimiter"
        if _STRING_ARGUMENTS.search(text):
            out["D11.8"] = "arguments cut inside their JSON string are read as the cut arguments"
        if array_cut_calls(text):
            out["D10.4"] = "an array of calls cut after a complete call closes after it"
    return out


# --------------------------------------------------------------------------- corpus 4.0's decisions

_JSON_WS = " \t\n\r"


def container_held(value: str, schema: dict[str, Any]) -> tuple[bool, Any]:
    """D5.6: ``(True, container)`` when ``value`` is JSON text of exactly a container type
    ``schema`` declares, else ``(False, None)`` (D8.4: refused, never wrapped)."""
    try:
        return True, decode_container_text(value, declared_types(schema))
    except NotLossless:
        return False, None


def container_texts(
    args: Any, schema: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """Every string written where its schema declares an array or object (and no string) that
    reads as a container (D5.6), with its path and schema; object properties are walked."""
    if not isinstance(args, dict):
        return
    for key, value in args.items():
        sub = schema.get("properties", {}).get(key)
        if not isinstance(sub, dict):
            continue
        types = declared_types(sub)
        if (
            reads_as_container(value)
            and "string" not in types
            and ({"array", "object"} & set(types))
        ):
            yield (*path, key), value, sub
        elif isinstance(value, dict):
            yield from container_texts(value, sub, (*path, key))


def is_empty_text(value: Any) -> bool:
    """D9.3: arguments text of JSON whitespace only."""
    return isinstance(value, str) and not value.strip(_JSON_WS)


def argument_documents(value: Any) -> list[Any] | None:
    """D9.4: the two or more complete JSON documents an arguments string holds one after
    another (JSON whitespace between them), or ``None``."""
    if not isinstance(value, str):
        return None
    out, pos = [], len(value) - len(value.lstrip(_JSON_WS))
    while pos < len(value):
        try:
            document, pos = raw_decode_strict(value, pos)
        except ValueError:
            return None
        out.append(document)
        pos = len(value) - len(value[pos:].lstrip(_JSON_WS))
    return out if len(out) > 1 else None


def call_object(case: dict[str, Any]) -> dict[str, Any] | None:
    """The one object holding a text's call (E2: under ``tool_calls``' one entry, and under
    ``function`` or ``function_call``), as written; ``None`` for any other text."""
    ok, value = parsed(case)
    if not ok or not isinstance(value, dict):
        return None
    entries = value.get(CALLS_KEY)
    if isinstance(entries, list):
        if len(entries) != 1 or not isinstance(entries[0], dict):
            return None
        value = entries[0]
    inner = next((value[k] for k in FUNCTION_KEYS if isinstance(value.get(k), dict)), None)
    value = inner if inner is not None else value
    return value if isinstance(value.get("name"), str) else None


@dataclass(frozen=True)
class Enveloped:
    """What E5 and D7.9 make of one call's arguments: the arguments (``None`` when a lifted
    key conflicts), and the decisions used."""

    arguments: Any
    decisions: frozenset[str] = frozenset()


def enveloped_arguments(case: dict[str, Any]) -> Enveloped | None:
    """E5 and D7.9 read from the text alone: the arguments decoded (rule 9), unwrapped while
    they are an object whose only key is an undeclared E2 argument key, then each declared
    top-level property written beside the arguments key lifted into them (an equal value
    collapses, another is a conflict: D7.6). ``None`` when the text holds no one call."""
    obj = call_object(case)
    tool = tool_of(case, obj["name"]) if obj else None
    if obj is None or tool is None:
        return None
    schema = tool_schema(tool)
    props = schema.get("properties")
    declared = set(props) if isinstance(props, dict) else None
    key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    args, _ = decode_strings(obj[key] if key else {})
    used: set[str] = set()
    while (
        declared is not None
        and isinstance(args, dict)
        and len(args) == 1
        and next(iter(args)) in ARGUMENT_KEYS
        and next(iter(args)) not in declared
    ):
        args, _ = decode_strings(next(iter(args.values())))
        used.add("E5")
    if not isinstance(args, dict):
        return Enveloped(args, frozenset(used))
    out = dict(args)
    for name, value in obj.items():
        if name in ENVELOPE_KEYS or declared is None or name not in declared:
            continue
        used.add("D7.9")
        if name in out and canonical(out[name]) != canonical(value):
            return Enveloped(None, frozenset(used))
        out[name] = value
    return Enveloped(out, frozenset(used))


def _decisions_of_the_wild(
    case: dict[str, Any], tool: Tool | None, calls: list[dict[str, Any]]
) -> dict[str, str]:
    """The decisions corpus 4.0 builds cases on that a case's answer rests on, read from its
    text: JSON text where a container is declared (D5.6, and D8.4 when it is no JSON of that
    type), empty arguments text (D9.3), several documents in one arguments string (D9.4), an
    envelope written twice (E5) and a declared property beside the arguments (D7.9)."""
    out: dict[str, str] = {}
    if len(calls) != 1:
        return out
    tool = tool or tool_of(case, calls[0]["name"])
    if tool is None:
        return out
    schema = tool_schema(tool)
    args, _ = decode_strings(calls[0]["arguments"])
    if is_empty_text(args):
        out["D9.3"] = "empty arguments text is {} only for a tool that declares no property"
    documents = argument_documents(args)
    if documents is not None:
        out["D9.4"] = "several documents in one arguments string are one call only if they agree"
        args = documents[0]
    lifted = enveloped_arguments(case)
    if lifted is not None:
        for did in sorted(lifted.decisions):
            out[did] = (
                "arguments nested once more under an argument key are the arguments"
                if did == "E5"
                else "a declared property written beside the arguments is lifted into them"
            )
        if lifted.arguments is not None and "E5" in lifted.decisions:
            args = lifted.arguments
    for _, value, sub in container_texts(args, schema):
        out["D5.6"] = "JSON text of a declared array or object is decoded (rule 5)"
        if not container_held(value, sub)[0]:
            out["D8.4"] = "a string reading as a JSON container is never wrapped"
    return out


def read_whole(case: dict[str, Any]) -> bool:
    """Whether a case's answer rests on how the single-call track reads its whole call object:
    empty arguments text (D9.3), several documents in one arguments string (D9.4, which the
    parallel track reads as several calls) or a declared property beside the arguments (D7.9,
    which the written arguments alone do not carry). The tracks built from the main corpus's
    calls (deltas, parallel) take no such case: its arguments are not one call's text."""
    calls = calls_of(case) or []
    if len(calls) != 1:
        return False
    args, _ = decode_strings(calls[0]["arguments"])
    lifted = enveloped_arguments(case)
    return (
        is_empty_text(args)
        or argument_documents(args) is not None
        or (lifted is not None and "D7.9" in lifted.decisions)
    )
