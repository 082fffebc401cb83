"""The integrator control (spec C2): what code that follows its SDK's documentation gets.

A report is read against two controls that repair nothing. The naive control (C1) trusts
the model; this one does what every integrator's own code already does: parse, unwrap the
documented envelopes (E2), take the first call, look the tool up by its exact name, decode
string arguments once whatever the envelope, and validate them with the suite's own schema
engine, refusing when they are invalid. It lives in the
foundation because two suites need the same steps: the scorer runs it as
``--adapter integrator``, and the generator's integrity check ``integrator_fails`` proves no
repairable case passes it.
"""

from __future__ import annotations

from typing import Any

from toolcall300.canonical import canonical, loads_strict
from toolcall300.schema import is_valid
from toolcall300.spec import ARGUMENT_KEYS, CALLS_KEY, FUNCTION_KEYS, no_parameters

#: What :func:`call_arguments` answers for a call whose argument keys disagree (E2: refused).
CONFLICT = object()


def first_call(value: Any) -> tuple[dict[str, Any], bool] | None:
    """E2: the first call object in a parsed text, and whether its envelope is in the
    OpenAI family (E3: arguments carried as a JSON string); ``None`` when there is none.

    >>> first_call({"tool_calls": [{"type": "function", "function": {"name": "f"}}]})
    ({'name': 'f'}, True)
    >>> first_call([{"name": "f", "input": {}}, {"name": "g"}])
    ({'name': 'f', 'input': {}}, False)
    """
    items = value if isinstance(value, list) else [value]  # E1: a JSON array of calls
    for item in items:
        openai = isinstance(item, dict) and isinstance(item.get(CALLS_KEY), list)
        entries = item[CALLS_KEY] if openai else [item]
        if not entries:
            continue  # an empty tool_calls message holds no call: the first call comes later
        call = entries[0]  # an entry that is itself an array is no call (E4)
        if isinstance(call, dict):
            inner = next((call[k] for k in FUNCTION_KEYS if isinstance(call.get(k), dict)), None)
            if inner is not None:
                call, openai = inner, True
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return None  # E4: an unknown envelope is not a call
        return call, openai
    return None


def call_arguments(call: dict[str, Any]) -> Any:
    """E2: a call object's arguments, under the first of E2's keys it writes; ``{}`` when it
    writes none (D1.3); :data:`CONFLICT` when two are written and differ canonically.

    >>> call_arguments({"name": "f", "input": {"n": 1}})
    {'n': 1}
    >>> call_arguments({"name": "f", "arguments": {}, "input": {"n": 1}}) is CONFLICT
    True
    """
    present = [call[k] for k in ARGUMENT_KEYS if k in call]
    if not present:
        return {}
    try:
        if any(canonical(other) != canonical(present[0]) for other in present[1:]):
            return CONFLICT
    except (TypeError, ValueError, RecursionError):
        return CONFLICT
    return present[0]


def integrator(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """C2: the integrator control; ``None`` is a refusal (rule 12).

    >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {
    ...     "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    >>> integrator('{"function": {"name": "f", "arguments": "{\\\\"n\\\\": 1}"}}', tools)
    {'name': 'f', 'arguments': {'n': 1}}
    >>> integrator('{"name": "f", "arguments": "{\\\\"n\\\\": 1}"}', tools)
    {'name': 'f', 'arguments': {'n': 1}}
    >>> integrator('{"name": "f", "arguments": "\\\\"{}\\\\""}', tools) is None
    True
    >>> integrator('{"name": "F", "arguments": {"n": 1}}', tools) is None
    True
    """
    try:
        found = first_call(loads_strict(text))
    except (ValueError, RecursionError):
        return None
    if found is None:
        return None
    call, _openai = found
    name = call["name"]
    arguments = call_arguments(call)
    if isinstance(arguments, str):  # once, whatever the envelope (C2)
        try:
            arguments = loads_strict(arguments)
        except (ValueError, RecursionError):
            return None
    if not isinstance(arguments, dict):
        return None
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name") == name:
            schema = fn["parameters"] if "parameters" in fn else no_parameters()  # D6.3
            try:
                valid = isinstance(schema, dict) and is_valid(arguments, schema)
            except (TypeError, ValueError, RecursionError):
                return None
            return {"name": name, "arguments": arguments} if valid else None
    return None


def _entries(value: Any) -> list[Any]:
    """E1, E2: every entry where calls are in a parsed text, in order (C3)."""
    out: list[Any] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and isinstance(item.get(CALLS_KEY), list):
            out.extend(item[CALLS_KEY])
        else:
            out.append(item)
    return out


def integrator_all(text: str, tools: list[dict[str, Any]]) -> list[dict[str, Any] | None] | None:
    """C3, the parallel track's integrator control: C2 for every entry of the turn; ``None``
    when the text does not parse (the turn refused whole, P2).

    >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {
    ...     "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    >>> integrator_all('[{"name": "f", "arguments": {"n": 1}}, {"name": "F", "arguments": {}}]', tools)
    [{'name': 'f', 'arguments': {'n': 1}}, None]
    """
    try:
        parsed = loads_strict(text)
    except (ValueError, RecursionError):
        return None
    out: list[dict[str, Any] | None] = []
    for entry in _entries(parsed):
        ok = isinstance(entry, dict) and _canonical_ok(entry)  # E4: an array entry is no call
        out.append(integrator(canonical(entry), tools) if ok else None)
    return out


def _canonical_ok(value: Any) -> bool:
    try:
        canonical(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def naive(text: str, tools: list[dict[str, Any]]) -> Any:
    """C1, the naive control: trust the model. Parse the text and pass the value on; refuse
    if it won't parse.

    Whatever parses is returned as is, so a list, a string or a call with undeclared
    arguments is graded as a failed, schema-invalid return (D1.1).

    >>> naive('{"name": "f", "arguments": {}}', [])
    {'name': 'f', 'arguments': {}}
    >>> naive('{"name": "f", "argu', []) is None
    True
    """
    try:
        return loads_strict(text)
    except (ValueError, RecursionError):
        return None


def passes(case: dict[str, Any], returned: Any) -> bool:
    """Rules 1 and 2 for a table of controls: a refusal passes a case expecting one; a call
    passes when its name and arguments are canonically the expected ones (other top-level
    keys ignored). The scorer's report says more (why a case failed); this says only whether.

    >>> passes({"expected_kind": "unrecoverable", "expected": None}, None)
    True
    >>> passes({"expected_kind": "value", "expected": {"name": "f", "arguments": {"n": 3}}},
    ...        {"id": "x", "name": "f", "arguments": {"n": 3.0}})
    False
    """
    if returned is None or case.get("expected_kind") == "unrecoverable":
        return returned is None and case.get("expected_kind") == "unrecoverable"
    if not isinstance(returned, dict) or "name" not in returned or "arguments" not in returned:
        return False
    try:
        got = canonical({"name": returned["name"], "arguments": returned["arguments"]})
    except (TypeError, ValueError, RecursionError):
        return False
    return got == canonical(case.get("expected"))
