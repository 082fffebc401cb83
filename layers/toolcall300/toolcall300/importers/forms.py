"""The forms a tool catalog arrives in, how each is recognised and how each entry maps onto a
tools.json declaration (docs/catalog-import.md, one section per form).

A form is a container (what wraps the list of tools) and an entry shape (where the name and
the schema are). Recognising one reads keys only, never the schema's depth: the walks that
recurse run after ``catalog.json_depth`` has bounded each entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from toolcall300.importers.dialects import (
    BFCL,
    BFCL_ONLY_TYPES,
    GEMINI,
    GEMINI_TYPES,
    JSON_SCHEMA,
    Dialect,
    Note,
    Refused,
    normalise_schema,
)
from toolcall300.spec import no_parameters

Entry = dict[str, Any]
#: ``mapper(entry, note) -> declaration``: one foreign entry as a tools.json declaration.
Mapper = Callable[[Entry, Note], Entry]


@dataclass(frozen=True)
class Form:
    """One catalog form: its name, what it looks like (for the detection message) and how an
    entry of it maps onto tools.json."""

    name: str
    looks_like: str
    mapper: Mapper


def _declaration(
    name: Any, description: Any, parameters: Any, dialect: Dialect, note: Note
) -> Entry:
    fn: Entry = {"name": name}
    if description is not None:
        fn["description"] = description
    if parameters is None:
        parameters = no_parameters()
        note("parameters", "none declared: an object with no properties")
    fn["parameters"] = normalise_schema(parameters, dialect, note)
    return {"type": "function", "function": fn}


def _drop(
    entry: Entry, kept: set[str], note: Note, why: str = "the tools.json contract has no such field"
) -> None:
    for key in entry:
        if key not in kept and not (isinstance(key, str) and key.startswith("x-")):
            note(key, f"field {key!r} dropped ({why})")


def _pack_fields(entry: Entry, out: Entry) -> Entry:
    """``x-*`` fields a foreign entry carries are kept: tools.json allows them (pack-only)."""
    for key, value in entry.items():
        if isinstance(key, str) and key.startswith("x-"):
            out[key] = value
    return out


def _tools_json(entry: Entry, note: Note) -> Entry:
    """tools.json's own form (also OpenAI Chat Completions'): only the schema is rewritten."""
    fn = entry.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("parameters"), dict):
        return entry
    params = normalise_schema(fn["parameters"], JSON_SCHEMA, note, declare_required=False)
    if params == fn["parameters"]:
        return entry
    return {**entry, "function": {**fn, "parameters": params}}


def _openai(entry: Entry, note: Note) -> Entry:
    """Chat Completions ``{"type": "function", "function": {...}}`` or Responses' flat
    ``{"type": "function", "name", "description", "parameters", "strict"}``."""
    if isinstance(entry.get("function"), dict):
        return _tools_json(entry, note)
    if entry.get("type", "function") != "function":
        raise Refused(f"type {entry.get('type')!r} is not a function tool (a hosted tool)")
    _drop(entry, {"type", "name", "description", "parameters", "strict"}, note)
    out = _declaration(
        entry.get("name"), entry.get("description"), entry.get("parameters"), JSON_SCHEMA, note
    )
    if "strict" in entry:
        out["function"]["strict"] = entry["strict"]
    return _pack_fields(entry, out)


def _anthropic(entry: Entry, note: Note) -> Entry:
    """Anthropic Messages tools: ``{"name", "description", "input_schema"}``."""
    if "input_schema" not in entry:
        raise Refused(
            f"no input_schema (type {entry.get('type')!r}: a server tool, nothing to import)"
        )
    if entry.get("type", "custom") != "custom":
        raise Refused(f"type {entry['type']!r} is not a custom (client) tool")
    _drop(entry, {"name", "description", "input_schema", "type"}, note)
    if "type" in entry:
        note("type", "type 'custom' written as 'function'")
    out = _declaration(
        entry.get("name"), entry.get("description"), entry["input_schema"], JSON_SCHEMA, note
    )
    return _pack_fields(entry, out)


#: MCP tool annotations (``ToolAnnotations``) that say whether a call changes state.
_MUTATION_HINTS = ("readOnlyHint", "destructiveHint")


def _mcp_annotations(annotations: Any, out: Entry, note: Note) -> None:
    """``readOnlyHint: true`` -> ``x-mutates: false``; ``readOnlyHint: false`` or
    ``destructiveHint: true`` -> ``x-mutates: true``; the other hints have no tools.json field."""
    if not isinstance(annotations, dict):
        note("annotations", "annotations dropped (not an object)")
        return
    read_only = annotations.get("readOnlyHint")
    destructive = annotations.get("destructiveHint")
    if read_only is True:
        out["x-mutates"] = False
        note("annotations", "readOnlyHint true written as x-mutates false")
    elif read_only is False or destructive is True:
        out["x-mutates"] = True
        said = "readOnlyHint false" if read_only is False else "destructiveHint true"
        note("annotations", f"{said} written as x-mutates true")
    for key in annotations:
        if key not in _MUTATION_HINTS or (key == "destructiveHint" and read_only is not None):
            note(
                f"annotations/{key}",
                f"annotation {key} dropped (the tools.json contract has no such field)",
            )


def _mcp(entry: Entry, note: Note) -> Entry:
    """An MCP tool: ``{"name", "title", "description", "inputSchema", "annotations", ...}``."""
    _drop(entry, {"name", "description", "inputSchema", "annotations"}, note)
    out = _declaration(
        entry.get("name"), entry.get("description"), entry.get("inputSchema"), JSON_SCHEMA, note
    )
    if "annotations" in entry:
        _mcp_annotations(entry["annotations"], out, note)
    return _pack_fields(entry, out)


def _gemini(entry: Entry, note: Note) -> Entry:
    """A Gemini ``FunctionDeclaration``: ``parameters`` in Gemini's OpenAPI-style ``Schema``
    (upper-case types, ``nullable``) or ``parametersJsonSchema`` in plain JSON Schema."""
    json_key = next(
        (k for k in ("parametersJsonSchema", "parameters_json_schema") if k in entry), None
    )
    _drop(entry, {"name", "description", "parameters", json_key or "parameters"}, note)
    if json_key and "parameters" in entry:
        raise Refused(f"both parameters and {json_key} (Gemini accepts one)")
    if json_key:
        params, dialect = entry[json_key], JSON_SCHEMA
    else:
        params, dialect = entry.get("parameters"), GEMINI
    out = _declaration(entry.get("name"), entry.get("description"), params, dialect, note)
    return _pack_fields(entry, out)


def _bfcl(entry: Entry, note: Note) -> Entry:
    """A BFCL function doc: ``{"name", "description", "parameters"}`` in BFCL's dialect. A
    dotted name is sent with ``_`` for ``.``, as BFCL itself sends it to every function-calling
    model (``bfcl_eval.model_handler.utils.convert_to_tool``)."""
    _drop(entry, {"name", "description", "parameters"}, note)
    name = entry.get("name")
    if isinstance(name, str) and "." in name:
        renamed = name.replace(".", "_")
        note("name", f"name {name!r} written as {renamed!r} (BFCL sends models '_' for '.')")
        name = renamed
    out = _declaration(name, entry.get("description"), entry.get("parameters"), BFCL, note)
    return _pack_fields(entry, out)


FORMATS: dict[str, Form] = {
    f.name: f
    for f in (
        Form(
            "tools-json",
            'tools.json / OpenAI Chat Completions: [{"type": "function", "function": {...}}]',
            _tools_json,
        ),
        Form(
            "openai",
            'OpenAI Responses flat tools {"type": "function", "name", "parameters", "strict"} '
            "(Chat Completions entries may be mixed in)",
            _openai,
        ),
        Form(
            "anthropic",
            'Anthropic tools [{"name", "description", "input_schema"}] or {"tools": [...]}',
            _anthropic,
        ),
        Form(
            "mcp",
            'an MCP tools/list result {"tools": [{"name", "inputSchema", "annotations"}]} '
            "or an array of MCP tools",
            _mcp,
        ),
        Form(
            "gemini",
            'Gemini {"functionDeclarations": [...]}, {"tools": [{"functionDeclarations": '
            "[...]}]} or an array of declarations with upper-case types",
            _gemini,
        ),
        Form(
            "bfcl",
            'BFCL function docs [{"name", "description", "parameters": {"type": "dict"}}] or '
            'one BFCL case {"id", "question", "function": [...]}',
            _bfcl,
        ),
    )
}


# ------------------------------------------------------------------------------ detection


def _schema_types(schema: Any) -> Iterator[str]:
    """Every type name written in ``schema`` (iterative: it may be any depth)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            t = node.get("type")
            if isinstance(t, str):
                yield t
            elif isinstance(t, list):
                yield from (x for x in t if isinstance(x, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def entry_form(entry: Any) -> str | None:
    """The form one entry is written in, by its keys (and for a bare ``{"name",
    "parameters"}``, by the type names its schema uses), or ``None``."""
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("function"), dict):
        return "tools-json"
    if "inputSchema" in entry:
        return "mcp"
    if "input_schema" in entry:
        return "anthropic"
    if "parametersJsonSchema" in entry or "parameters_json_schema" in entry:
        return "gemini"
    if "name" not in entry:
        return None
    if entry.get("type") == "function" or "strict" in entry:
        return "openai"
    if "parameters" not in entry:
        return None
    types = set(_schema_types(entry["parameters"]))
    if types & BFCL_ONLY_TYPES:
        return "bfcl"
    if types & set(GEMINI_TYPES):
        return "gemini"
    return "openai"  # a bare JSON Schema declaration: Chat Completions' legacy ``functions``


def _flatten_gemini(tools: list[Any]) -> list[Any] | None:
    """Gemini ``Tool`` objects (``{"functionDeclarations": [...]}``) as one list, or None."""
    out: list[Any] = []
    found = False
    for tool in tools:
        decls = _declarations(tool)
        if decls is None:
            out.append(tool)
        else:
            found = True
            out += decls
    return out if found else None


def _declarations(value: Any) -> list[Any] | None:
    if isinstance(value, dict):
        for key in ("functionDeclarations", "function_declarations"):
            if isinstance(value.get(key), list):
                return list(value[key])
    return None


def unwrap(raw: Any) -> tuple[list[Any], str | None]:
    """The entries a file holds and the form its container implies, if any: a bare array, an
    MCP ``tools/list`` result (bare or as a JSON-RPC response), a request body's ``tools``,
    Gemini's ``functionDeclarations``, one BFCL case, or a single tool."""
    if isinstance(raw, dict) and isinstance(raw.get("result"), dict) and "tools" in raw["result"]:
        raw = raw["result"]  # a JSON-RPC response to tools/list
    decls = _declarations(raw)
    if decls is not None:
        return decls, "gemini"
    if isinstance(raw, dict):
        if isinstance(raw.get("tools"), list):
            raw = raw["tools"]
        elif isinstance(raw.get("function"), list) and "question" in raw:
            return list(raw["function"]), "bfcl"
        elif isinstance(raw.get("functions"), list):
            raw = raw["functions"]
        elif entry_form(raw) is not None:
            return [raw], None
    if isinstance(raw, list):
        flat = _flatten_gemini(raw)
        return (flat, "gemini") if flat is not None else (list(raw), None)
    return [], None


def describe(raw: Any) -> str:
    """What a value looks like, in a few words, for a message about it."""
    if isinstance(raw, dict):
        keys = ", ".join(repr(k) for k in list(raw)[:8])
        return f"an object with keys {keys}" + (" ..." if len(raw) > 8 else "") if raw else "{}"
    if isinstance(raw, list):
        if not raw:
            return "an empty array"
        return f"an array of {len(raw)} entries; the first is {describe(raw[0])}"
    return f"a JSON {type(raw).__name__.replace('str', 'string').replace('NoneType', 'null')}"


def looked_for() -> str:
    return "; ".join(f"{f.name}: {f.looks_like}" for f in FORMATS.values())


def detect(raw: Any) -> str:
    """The form of a parsed catalog file, or :class:`Refused` naming the forms looked for and
    what the file looks like."""
    entries, implied = unwrap(raw)
    if implied:
        return implied
    if isinstance(raw, list) and not raw:
        raise Refused("the catalog declares no tools (an empty array)")
    forms = {f for f in (entry_form(e) for e in entries) if f}
    if forms == {"tools-json"}:
        return "tools-json"
    if forms <= {"tools-json", "openai"} and forms:
        return "openai"
    if len(forms) == 1:
        return forms.pop()
    if forms:
        mixed = ", ".join(
            f"tools[{i}] {entry_form(e)}" for i, e in enumerate(entries) if entry_form(e)
        )
        raise Refused(f"the entries are written in several forms ({mixed}); give one form")
    raise Refused(
        f"cannot tell the catalog's form: the file is {describe(raw)}. Looked for {looked_for()}. "
        "Force one with --format NAME"
    )
