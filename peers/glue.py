"""Shared glue for the peer adapters: the steps every integrator writes around a library.

Find the first call in the usual envelopes (the suite's own ``toolcall300.controls.first_call``,
so every peer unwraps exactly what the integrator control unwraps), read its arguments from
the key its envelope uses, look the tool up by its exact name, and hand back
``{"name", "arguments"}``. What the library itself does (repair, coerce, validate) is in each
peer's module; the glue repairs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolcall300.controls import CONFLICT, call_arguments, first_call
from toolcall300.spec import no_parameters

Parse = Callable[[str], Any]


def call_parts(value: Any) -> tuple[str, Any] | None:
    """``(name, raw arguments)`` of the first call in a parsed text, or None when there is none.

    The arguments are returned as the envelope carries them: an object, or a JSON string for
    the library to parse.
    """
    found = first_call(value)
    if found is None:
        return None
    call, _ = found
    arguments = call_arguments(call)
    return None if arguments is CONFLICT else (call["name"], arguments)


def tool_parameters(tools: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The declared ``parameters`` of the tool named exactly ``name``, or None if none is."""
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name") == name:
            params = fn["parameters"] if "parameters" in fn else no_parameters()
            return params if isinstance(params, dict) else None
    return None


def arguments_object(raw: Any, parse: Parse) -> dict[str, Any] | None:
    """The arguments as an object: a string is parsed once with the library's ``parse``."""
    if isinstance(raw, str):
        try:
            raw = parse(raw)
        except (ValueError, RecursionError):
            return None
    return raw if isinstance(raw, dict) else None


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def read_call(
    text: str, tools: list[dict[str, Any]], parse: Parse
) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """``(name, arguments, the tool's parameters)`` of the first call, the text and any string
    arguments read with the library's ``parse``; None when there is no call, the arguments are
    not an object, or no tool has that exact name."""
    try:
        parts = call_parts(parse(text))
    except (ValueError, RecursionError):
        return None
    if parts is None:
        return None
    name, raw = parts
    arguments = arguments_object(raw, parse)
    params = tool_parameters(tools, name)
    if arguments is None or params is None:
        return None
    return name, arguments, params
