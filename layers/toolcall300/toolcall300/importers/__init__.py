"""Catalog importers: a tool catalog in the form its ecosystem writes it, in the
``tools.json`` form (docs/catalog.md), with a report of every change (docs/catalog-import.md).

The forms (``forms.py``): tools.json / OpenAI Chat Completions, OpenAI Responses, Anthropic, MCP
``tools/list``, Gemini function declarations and BFCL function docs, recognised by their keys
or forced by name. Each entry is mapped onto a declaration, its schema brought into the subset
by rewrites that keep its meaning (``dialects.py``), and then read by the catalog reader: the
reader's refusals are the importer's. A tools.json catalog the reader accepts comes back
unchanged, byte for byte (:func:`catalog_bytes`).

Policy on a tool the contract cannot express (``anyOf`` of real alternatives, a map, a
recursive ``$ref``, an unsatisfiable schema): in every form, the tools.json / Chat Completions
array included, that tool is left out and named with the rule that refuses it; the rest is
imported. A catalog with nothing left, or whose names clash, is refused. ``strict`` reads seed
003 exactly: a tool left out, or a schema rewrite (each is something the tools.json contract's reader
refuses: ``anyOf``, ``$ref``, a default of the wrong type, ...), refuses the whole catalog.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import loads_strict_file, pretty_bytes
from toolcall300.catalog import (
    MAX_JSON_DEPTH,
    MAX_SCHEMA_DEPTH,
    catalog_problems,
    declaration_problems,
    json_depth,
)
from toolcall300.importers.dialects import Refused
from toolcall300.importers.forms import FORMATS, describe, detect, entry_form, unwrap

__all__ = [
    "FORMATS",
    "Change",
    "ImportRefused",
    "Imported",
    "catalog_bytes",
    "detect_format",
    "import_catalog",
    "import_file",
    "read_catalog_file",
]


class ImportRefused(ValueError):
    """Nothing can be imported; ``problems`` holds one line per reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Change:
    """One change an import made: to which tool, where in it, and what."""

    tool: str
    where: str
    what: str

    def line(self) -> str:
        return (
            f"{self.tool}: {self.where}: {self.what}" if self.where else f"{self.tool}: {self.what}"
        )


@dataclass(frozen=True)
class Imported:
    """A catalog in the tools.json form, the form it was read as, and every change made."""

    format: str
    tools: list[dict[str, Any]]
    changes: list[Change] = field(default_factory=list)
    #: one line per tool left out, naming it and why
    left_out: list[str] = field(default_factory=list)

    @property
    def unchanged(self) -> bool:
        return not self.changes and not self.left_out

    def report(self) -> list[str]:
        """The change report: every change, every tool left out, then a summary line."""
        lines = [c.line() for c in self.changes]
        lines += [f"left out {line}" for line in self.left_out]
        lines.append(
            f"read as {self.format}: {len(self.tools)} tools, {len(self.changes)} changes, "
            f"{len(self.left_out)} tools left out"
        )
        return lines


def read_catalog_file(data: bytes) -> Any:
    """A catalog file's JSON, or :class:`ImportRefused` in one line (never a traceback)."""
    try:
        raw = loads_strict_file(data)
        json.dumps(raw, ensure_ascii=False).encode("utf-8")  # a lone surrogate escape
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode()
        return _refuse(f"the file holds the lone surrogate escape {bad}: not Unicode text")
    except RecursionError:
        return _refuse("the file nests deeper than the JSON reader allows")
    except UnicodeDecodeError as exc:
        return _refuse(f"the file is not UTF-8 ({exc.reason})")
    except ValueError as exc:
        hint = ""
        if "Extra data" in str(exc):
            hint = " (several JSON documents: a BFCL data file holds one case a line; give one)"
        return _refuse(f"the file is not JSON: {exc}{hint}")
    return raw


def _one_line(problems: list[str]) -> str:
    """A tool's problems on one line, its label said once."""
    label = problems[0].split(": ", 1)[0] + ": "
    rest = [p.removeprefix(label) for p in problems[1:]]
    return "; ".join([problems[0], *rest])


def _refuse(problem: str) -> Any:
    raise ImportRefused([problem])


def detect_format(raw: Any) -> str:
    """The form :func:`import_catalog` would read ``raw`` as (``ImportRefused`` if none)."""
    try:
        return detect(raw)
    except Refused as exc:
        raise ImportRefused([str(exc)]) from None


def _label(entry: Any, index: int) -> str:
    name = entry.get("name") if isinstance(entry, dict) else None
    if name is None and isinstance(entry, dict) and isinstance(entry.get("function"), dict):
        name = entry["function"].get("name")
    return f"tools[{index}] ({name})" if isinstance(name, str) else f"tools[{index}]"


def _import_entry(
    fmt: str, index: int, entry: Any, changes: list[Change]
) -> tuple[dict[str, Any] | None, list[str]]:
    """One entry as a declaration and the reader's problems with it (empty: accepted)."""
    label = _label(entry, index)
    if not isinstance(entry, dict):
        return None, [f"{label}: not an object but {describe(entry)}"]
    if json_depth(entry) > MAX_JSON_DEPTH:
        return None, [
            f"{label}: nested more than {MAX_JSON_DEPTH} JSON levels deep; the limit is "
            f"{MAX_JSON_DEPTH} (and {MAX_SCHEMA_DEPTH} schema levels)"
        ]
    notes: list[tuple[str, str]] = []
    try:
        declaration = FORMATS[fmt].mapper(entry, lambda where, what: notes.append((where, what)))
    except Refused as exc:
        return None, [f"{label}: {exc}"]
    fn = declaration.get("function")
    name = fn.get("name") if isinstance(fn, dict) else None
    tool = name if isinstance(name, str) else label
    problems = declaration_problems(index, declaration)
    if not problems:
        changes += [Change(tool, where, what) for where, what in notes]
    elif fmt == "tools-json" and not isinstance(fn, dict) and entry_form(entry) != "tools-json":
        # an entry of OpenAI's other forms among Chat Completions entries: --format openai
        # reads both (a hosted tool is then left out as such, a flat function imported)
        problems = [*problems[:-1], f"{problems[-1]} (read the file with --format openai)"]
    return declaration, problems


#: Why the tools.json contract refuses a schema the default import rewrites, by the rewrite's kind (the first
#: word of its report line that names one); the fallback covers the dialects' own spellings.
_SEED_003_RULES = (
    (
        ("$ref", "$defs", "definitions"),
        "the tools.json contract's schema subset has no $ref or $defs",
    ),
    (
        ("anyOf", "oneOf", "allOf"),
        "the tools.json contract refuses anyOf, oneOf and not (ambiguous constructs)",
    ),
    (("default",), "a default must validate against its own schema (D6.2)"),
    (("none declared",), "the tools.json contract requires function.parameters"),
    (("not declared",), "the tools.json contract: declare every required field's property"),
)


def _seed_003_rule(what: str) -> str:
    for words, rule in _SEED_003_RULES:
        if any(word in what for word in words):
            return rule
    return "outside the tools.json contract's schema subset as written"


def _rewrites(changes: list[Change]) -> list[Change]:
    """The changes made to a schema (not to the envelope around it: a form's field names)."""
    return [c for c in changes if c.where == "parameters" or c.where.startswith("parameters/")]


def import_catalog(raw: Any, fmt: str | None = None, *, strict: bool = False) -> Imported:
    """``raw`` (a parsed file) as a tools.json catalog; ``fmt`` forces a form (else detected).

    A tool that cannot be imported is left out and named in ``left_out`` with the rule that
    refuses it, whatever the form. ``strict`` reads the tools.json contract exactly: the catalog is refused,
    one line per reason naming its rule, when any tool would be left out or any schema
    rewritten (the envelope's own mapping, such as MCP's ``inputSchema``, is no rewrite).
    """
    if fmt is not None and fmt not in FORMATS:
        raise ImportRefused([f"unknown format {fmt!r} (one of {', '.join(FORMATS)})"])
    fmt = fmt or detect_format(raw)
    entries, _ = unwrap(raw)
    if not entries:
        raise ImportRefused([f"the file declares no tools: it is {describe(raw)}"])
    tools: list[dict[str, Any]] = []
    changes: list[Change] = []
    left_out: list[str] = []
    refused: list[str] = []
    for index, entry in enumerate(entries):
        before = len(changes)
        declaration, problems = _import_entry(fmt, index, entry, changes)
        if not problems and declaration is not None:
            tools.append(declaration)
        elif strict:
            refused += problems
        else:
            left_out.append(_one_line(problems))
        if strict:
            label = _label(entry, index)
            refused += [
                f"{label}: {c.where}: {c.what}: {_seed_003_rule(c.what)} (the default "
                "import makes this rewrite and reports it)"
                for c in _rewrites(changes[before:])
            ]
    if refused:
        raise ImportRefused(refused)
    if not tools:
        first, *rest = left_out  # the first reason on the refusal's own line
        raise ImportRefused(
            [f"no tool could be imported: {first}", *(f"left out {p}" for p in rest)]
        )
    problems = catalog_problems(tools)  # across tools: duplicate names (after any rewrite)
    if problems:
        raise ImportRefused(problems)
    if fmt == "tools-json" and not changes and raw == tools:
        tools = raw  # the very same catalog: catalog_bytes keeps the file's bytes
    return Imported(fmt, tools, changes, left_out)


def catalog_bytes(imported: Imported, original: bytes) -> bytes:
    """The ``tools.json`` bytes a build uses: the file itself when the import changed nothing
    (a tools.json catalog builds the same corpus as before), else the imported catalog."""
    return (
        original
        if imported.unchanged and imported.format == "tools-json"
        else pretty_bytes(imported.tools)
    )


def import_file(data: bytes, fmt: str | None = None, *, strict: bool = False) -> Imported:
    """:func:`import_catalog` of a file's bytes."""
    return import_catalog(read_catalog_file(data), fmt, strict=strict)
