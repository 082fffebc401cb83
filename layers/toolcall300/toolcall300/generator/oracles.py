"""Independent readers of a case's text: what the integrity checks compare labels against.

Each function re-derives, from the text and the declared tools alone, what a rule of the
grading contract says the text means: the calls as written in their envelopes, the
completely written prefix of a cut text (rule 11), the defaults a missing property takes
(rule 6), re-nesting (rule 7), and why a text holds no correct call. They verify labels made
by construction in ``generator.rules``; they never produce one, and they repair nothing.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import canonical, loads_strict, raw_decode_strict
from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.controls import passes
from toolcall300.generator.envelopes import sent_calls
from toolcall300.rules import (
    NotLossless,
    coerce_lossless,
    decode_container_text,
    enum_matches,
    reads_as_container,
    resolve_tool_name,
    takes_nothing,
    tool_name_matches,
)
from toolcall300.schema import declared_types, is_number, json_type_matches
from toolcall300.spec import ARGUMENT_KEYS, CALLS_KEY, CATEGORIES, ENVELOPE_KEYS, FUNCTION_KEYS

# --------------------------------------------------------------------------- readers


def parsed(case: dict[str, Any]) -> tuple[bool, Any]:
    """``(True, value)`` when the text is strict JSON, else ``(False, None)``."""
    try:
        return True, loads_strict(case["text"])
    except ValueError:
        return False, None


def calls_of(case: dict[str, Any]) -> list[dict[str, Any]] | None:
    ok, value = parsed(case)
    return sent_calls(value) if ok else None


def tool_of(case: dict[str, Any], name: str) -> Tool | None:
    return next((t for t in case["tools"] if tool_name(t) == name), None)


def names_of(case: dict[str, Any]) -> list[str]:
    return [tool_name(t) for t in case["tools"]]


def one_call(case: dict[str, Any]) -> dict[str, Any] | None:
    """The single call a text carries with object arguments, else ``None``."""
    calls = calls_of(case)
    if not calls or len(calls) != 1 or not isinstance(calls[0]["arguments"], dict):
        return None
    return calls[0]


def decode_strings(args: Any) -> tuple[Any, int]:
    """Rule 9: decode a string until it is no longer one; the value and how many decodes."""
    times = 0
    while isinstance(args, str):
        try:
            args = loads_strict(args)
        except ValueError:
            break
        times += 1
    return args, times


# --------------------------------------------------------------------------- rule 11 reader

_ARGS_OPEN = re.compile(r'"(?:arguments|parameters|input)"\s*:\s*\{')
NAME_FIELD = re.compile(r'"name"\s*:\s*("(?:[^"\\]|\\.)*")')
_NAME_CUT = re.compile(r'"name"\s*:\s*"(?:[^"\\]|\\.)*\Z')
_WS = " \t\r\n"
_DELIMITERS = ",}] \t\r\n"


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def completed_prefix(text: str) -> dict[str, Any] | None:
    """The top-level arguments whose values were completely written before a cut (D11.1-D11.4).

    An independent reader of cut text used to verify truncated labels: a value counts only
    if it decodes whole, and a number only if a delimiter follows it (D11.3). Containers that
    never closed fail to decode and are therefore dropped whole (D11.2, D11.4).
    """
    match = _ARGS_OPEN.search(text)
    if not match:
        return None
    pos = match.end()
    out: dict[str, Any] = {}
    while True:
        pos = _skip(text, pos)
        if pos >= len(text) or text[pos] != '"':
            return out
        try:
            key, pos = raw_decode_strict(text, pos)
        except ValueError:
            return out
        pos = _skip(text, pos)
        if pos >= len(text) or text[pos] != ":":
            return out
        pos = _skip(text, pos + 1)
        try:
            value, end = raw_decode_strict(text, pos)
        except ValueError:
            return out
        if is_number(value) and (end >= len(text) or text[end] not in _DELIMITERS):
            return out  # D11.3: a number with no delimiter after it may have had more digits
        out[key] = value
        pos = _skip(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        return out


_CALL_ARRAY = re.compile(r'\A[ \t\r\n]*(?:\[|\{[ \t\r\n]*"tool_calls"[ \t\r\n]*:[ \t\r\n]*\[)')


def cut_call_array(text: str) -> tuple[list[Any], str] | None:
    """A text cut inside its array of calls (E1's array, or the `tool_calls` message's), read
    after the calls it completed: those items as written, and what follows them (whitespace
    and one comma skipped). ``None`` when the text opens no such array, when the cut fell inside
    its first item (a rule 11 cut within one call), or when the array closed (no cut in it).

    An empty rest is D10.4's text (`[{...}` or `[{...},` at the cut: rule 11 closes the array,
    nothing was begun after the calls); a rest is a further item begun and cut (D10.2).
    """
    match = _CALL_ARRAY.match(text)
    if not match:
        return None
    pos, items = match.end(), []
    while True:
        pos = _skip(text, pos)
        try:
            item, end = raw_decode_strict(text, pos)
        except ValueError:
            break
        items.append(item)
        pos = _skip(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        break
    rest = text[_skip(text, pos) :]
    if not items or rest.startswith("]"):
        return None
    return items, rest


def array_cut_calls(text: str) -> list[dict[str, Any]] | None:
    """D10.4: the calls of a text whose only incomplete part is its array of calls, cut after
    the last complete one, read as E2 says (no repair); ``None`` for any other text, a second
    call begun and cut (D10.2) included."""
    cut = cut_call_array(text)
    if cut is None or cut[1]:
        return None
    items = cut[0]
    return sent_calls(items if text.lstrip().startswith("[") else {CALLS_KEY: items})


def required_defaults(
    schema: dict[str, Any], present: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Rule 6: defaults for missing required properties, and the missing ones without a default."""
    fill, lost = {}, []
    for key in schema.get("required", []):
        if key not in present:
            sub = schema.get("properties", {}).get(key, {})
            if "default" in sub:
                fill[key] = sub["default"]
            else:
                lost.append(key)
    return fill, lost


# --------------------------------------------------------------------------- refusal reasons


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


# --------------------------------------------------------------------------- rule 7


def undeclared_keys(
    value: Any, schema: dict[str, Any], path: tuple[str | int, ...] = ()
) -> Iterator[tuple[str | int, ...]]:
    """Paths of object keys the schema does not declare, at every level."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key, sub in value.items():
            if key not in props:
                yield (*path, key)
            else:
                yield from undeclared_keys(sub, props[key], (*path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from undeclared_keys(item, schema["items"], (*path, i))


class _Unplaced(Exception):
    """A key with no single home (D7.3) or whose home holds another value (D7.6)."""

    def __init__(self, message: str, *, conflict: bool) -> None:
        super().__init__(message)
        self.conflict = conflict


@dataclass(frozen=True)
class Renested:
    """What rule 7 makes of written arguments: the re-nested arguments, or why there are none
    (``conflict``: a D7.6 conflict, which refuses the call; else a key with no single home),
    and the decisions the re-nesting used (D7.1 always; D7.5 inside a declared object; D7.6
    a flattened key merged into an object the text also wrote)."""

    arguments: dict[str, Any] | None
    decisions: frozenset[str] = frozenset()
    problem: str | None = None
    conflict: bool = False


def renested(args: dict[str, Any], schema: dict[str, Any]) -> Renested:
    """Rule 7 / D7.1, D7.3, D7.5, D7.6 read from the text alone: at every declared object,
    from the arguments down, each key the object does not declare goes to its one home (its
    dotted path, or the one place inside the object's nested objects that declares the bare
    name), merging into what the text wrote there; then each declared object is read the
    same way, its own properties being its top level."""
    used: set[str] = set()
    try:
        out = _renest_level(copy.deepcopy(args), schema, 0, used)
    except _Unplaced as exc:
        return Renested(None, frozenset(used), str(exc), exc.conflict)
    return Renested(out, frozenset(used))


def _homes(props: dict[str, Any], at: tuple[str, ...] = ()) -> dict[str, list[tuple[str, ...]]]:
    """Each name declared inside the nested objects of one level -> the paths declaring it
    (a schema declaring properties counts, typed or not: a name it declares is not unique)."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for name, sub in props.items():
        inner = sub.get("properties") if isinstance(sub, dict) else None
        if not isinstance(inner, dict):
            continue
        for leaf in inner:
            out.setdefault(leaf, []).append((*at, name, leaf))
        for leaf, paths in _homes(inner, (*at, name)).items():
            out.setdefault(leaf, []).extend(paths)
    return out


def _home(key: str, props: dict[str, Any]) -> tuple[str, ...] | None:
    """D7.1: a dotted path whose every step is declared, else D7.3: the bare name's one home."""
    steps = tuple(key.split("."))
    level: Any = props
    for step in steps[:-1]:
        sub = level.get(step) if isinstance(level, dict) else None
        level = sub.get("properties") if isinstance(sub, dict) else None
    if len(steps) > 1 and isinstance(level, dict) and steps[-1] in level:
        return steps
    homes = _homes(props).get(key, [])
    return homes[0] if len(homes) == 1 else None


def _renest_level(
    obj: dict[str, Any], schema: dict[str, Any], depth: int, used: set[str]
) -> dict[str, Any]:
    props = schema.get("properties", {})
    out = {k: v for k, v in obj.items() if k in props}
    made: set[int] = set()  # objects re-nesting created (not written by the text)
    for key, value in obj.items():
        if key in props:
            continue
        home = _home(key, props)
        if home is None:
            raise _Unplaced(f"{key!r} has no single home (D7.3)", conflict=False)
        used.add("D7.1")
        if depth:
            used.add("D7.5")
        level = out
        for step in home[:-1]:
            if step not in level:
                level[step] = {}
                made.add(id(level[step]))
            elif not isinstance(level[step], dict):
                raise _Unplaced(
                    f"{key!r} belongs inside {step!r}, written as no object (D7.6)", conflict=True
                )
            elif id(level[step]) not in made:
                used.add("D7.6")  # into an object the text wrote
            level = level[step]
        leaf = home[-1]
        if leaf in level:
            if canonical(level[leaf]) != canonical(value):
                raise _Unplaced(f"{key!r} differs from the written {leaf!r} (D7.6)", conflict=True)
            used.add("D7.6")  # the same value written twice collapses
        level[leaf] = value
    return {k: _renest_value(v, props[k], depth + 1, used) for k, v in out.items()}


def _renest_value(value: Any, schema: Any, depth: int, used: set[str]) -> Any:
    """D7.5: a declared object's value read like the arguments (array items too); a free-form
    object (D7.4) and anything else as written."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        return _renest_level(value, schema, depth, used)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_renest_value(v, schema["items"], depth, used) for v in value]
    return value


def strip_undeclared(value: Any, schema: dict[str, Any]) -> Any:
    """D7.2: the value with undeclared object keys removed at every level."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: strip_undeclared(v, props[k]) for k, v in value.items() if k in props}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [strip_undeclared(v, schema["items"]) for v in value]
    return value


# --------------------------------------------------------------------------- rule 10


def _is_member(value: Any, members: list[Any]) -> bool:
    """``value`` is a member as written (a string equals only an equal string: one C-level
    scan, where canonicalising every member of a large enum for each value would not be)."""
    if isinstance(value, str):
        return value in members
    written = canonical(value)
    return any(canonical(m) == written for m in members)


def repaired_copy(call: dict[str, Any], case: dict[str, Any]) -> dict[str, Any] | None:
    """One copy of a multiple_calls text read under the repairs D10.3 allows a copy (rule 3
    names, rule 9 strings, rule 5 coercion and rule 4 enums, top level), or ``None``."""
    name = resolve_tool_name(call["name"], names_of(case))
    tool = tool_of(case, name) if name else None
    args, _ = decode_strings(call["arguments"])
    if tool is None or not isinstance(args, dict):
        return None
    props = tool_schema(tool).get("properties", {})
    out: dict[str, Any] = {}
    for key, value in args.items():
        sub = props.get(key)
        if not isinstance(sub, dict):
            return None
        members = sub.get("enum")
        kind = value_type(sub)
        if isinstance(members, list) and not _is_member(value, members):
            hits = enum_matches(value, members)
            if len(hits) != 1:
                return None
            value = hits[0]
        elif isinstance(value, str) and kind in ("integer", "number", "boolean"):
            try:
                value = coerce_lossless(value, kind)
            except NotLossless:
                return None
        out[key] = value
    return {"name": name, "arguments": out}


# --------------------------------------------------------------------------- controls

Runner = Callable[[str, list[dict[str, Any]]], Any]


def pass_counts(
    cases: list[dict[str, Any]], runners: Mapping[str, Runner], *, trusted: tuple[str, ...] = ()
) -> dict[str, dict[str, int]]:
    """Category -> runner -> how many of its cases the runner passes (rules 1 and 2).

    A runner not named in ``trusted`` gets its own copy of each case's tools, so one that
    edits them cannot change the cases the checks read; the controls are trusted.
    """
    table = {cat: dict.fromkeys(runners, 0) for cat in CATEGORIES}
    for case in cases:
        for name, run in runners.items():
            tools = case["tools"] if name in trusted else loads_strict(json.dumps(case["tools"]))
            if case.get("category") in table and passes(case, run(case["text"], tools)):
                table[case["category"]][name] += 1
    return table


# --------------------------------------------------------------------------- decisions cases rest on

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
