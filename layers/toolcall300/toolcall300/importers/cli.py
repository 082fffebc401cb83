"""``toolcall300 tools import FILE``: the ``tools.json`` a build would use, and what changed.

The catalog goes to stdout (or ``--out``), the change report to stderr (or ``--report``): one
line per change, one per tool left out, a summary last. A refusal is one line per reason on
stderr and exit 1, never a traceback.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError, read_limited
from toolcall300.importers import FORMATS, ImportRefused, catalog_bytes, import_file


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(
        prog="toolcall300 tools",
        description="Tool catalogs: import one written in any known form as tools.json.",
    )
    commands = parser.add_subparsers(dest="command", metavar="import")
    imp = commands.add_parser(
        "import",
        help="print the tools.json a build would use and report every change",
        description="Read FILE (tools.json, OpenAI, Anthropic, MCP tools/list, Gemini "
        "or BFCL; docs/catalog-import.md) and print it as tools.json.",
    )
    imp.add_argument("file", metavar="FILE", help="the catalog file")
    imp.add_argument("--format", choices=list(FORMATS), help="read FILE as this form")
    imp.add_argument("--out", help="write the tools.json here instead of stdout")
    imp.add_argument("--report", help="write the change report here instead of stderr")
    imp.add_argument(
        "--strict",
        action="store_true",
        help="read the tools.json contract exactly: refuse the catalog if any tool cannot be imported or any "
        "schema would be rewritten (anyOf, $ref, a default of the wrong type, ...); default: "
        "leave such a tool out and report every rewrite",
    )
    args = parser.parse_args(argv)
    if args.command is None:
        raise UsageError("toolcall300 tools: a subcommand is required (import)")
    return args


#: What to do instead, for the JSON Schema that common generators (pydantic, zod) write and
#: tool-argument/v1 does not cover (docs/catalog.md): (a problem's text, the way forward).
WAYS_FORWARD = (
    (
        "schema-valued additionalProperties",
        "a map (pydantic dict[str, T], zod record) is not checked key by key: declare its keys "
        "as properties (a model), or take the map as a JSON string",
    ),
    (
        "'prefixItems'",
        "a tuple (pydantic tuple[A, B]) is not covered: declare a list of one type with "
        "minItems/maxItems, or an object with named fields",
    ),
    (
        ("'oneOf'", "'anyOf'", "'discriminator'", "'$ref'", "'$defs'"),
        "a union (pydantic Union, a discriminated union, a model referenced through $defs) is "
        "not covered: declare one tool per variant, or one object whose variant fields are "
        "optional and whose kind is an enum (pydantic: model_json_schema() with the union "
        "flattened); Optional[T] of one type reads as a nullable T",
    ),
)


def ways_forward(problems: list[str]) -> list[str]:
    """The way forward for each kind of refusal (or tool left out) in ``problems`` that has
    one, once each.

    >>> ways_forward(["t: unsupported keyword 'prefixItems' at parameters/x/prefixItems: ..."])[0][:29]
    'a tuple (pydantic tuple[A, B]'
    """
    out = []
    for needles, advice in WAYS_FORWARD:
        wanted = (needles,) if isinstance(needles, str) else needles
        if any(n in p for p in problems for n in wanted):
            out.append(advice)
    return out


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    path = Path(args.file)
    try:
        data = read_limited(path)
    except OSError as exc:
        stderr.write(f"toolcall300 tools import: {exc}\n")
        return EXIT_ERROR
    try:
        imported = import_file(data, args.format, strict=args.strict)
    except ImportRefused as exc:
        for problem in exc.problems:
            stderr.write(f"toolcall300 tools import: {path.name}: {problem}\n")
        for advice in ways_forward(exc.problems):
            stderr.write(f"toolcall300 tools import: way forward: {advice}\n")
        return EXIT_ERROR
    catalog = catalog_bytes(imported, data)
    lines = imported.report() + [f"way forward: {a}" for a in ways_forward(imported.left_out)]
    report = "".join(f"{line}\n" for line in lines)
    try:
        if args.out:
            Path(args.out).write_bytes(catalog)
        else:
            stdout.write(catalog.decode("utf-8"))
        if args.report:
            Path(args.report).write_text(report, encoding="utf-8")
        else:
            stderr.write(report)
    except OSError as exc:
        stderr.write(f"toolcall300 tools import: {exc}\n")
        return EXIT_ERROR
    return EXIT_OK
