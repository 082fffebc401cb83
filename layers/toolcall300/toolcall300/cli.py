"""The ``toolcall300`` command: a dispatcher over the subcommands' own CLI shells.

Each subcommand module exposes ``parse_args(argv) -> Namespace`` and
``run(args, stdout, stderr) -> int``; only :func:`main` calls ``sys.exit``. Subcommand
modules are imported on demand, so the suite's commands never import service code.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn, TextIO

from toolcall300 import __version__
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, UsageError, install_line

#: name -> (module, one-line help). Core commands first; service commands need the extras.
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("toolcall300.generator.cli", "build or check a corpus from a tool catalog"),
    "tools": (
        "toolcall300.importers.cli",
        "import a tool catalog from MCP, OpenAI, Anthropic, Gemini or BFCL form",
    ),
    "score": (
        "toolcall300.scoring.cli",
        "score an adapter against a corpus (exit 2 on regression)",
    ),
    "toolshim": (
        "toolcall300.toolshim.cli",
        "the reference normaliser as an --adapter-cmd program",
    ),
    "check": (
        "toolcall300.argcheck.cli",
        "tool-argument/v1: check one arguments blob against a schema",
    ),
    "criteria": ("toolcall300.argcheck.criteria", "print the tool-argument/v1 criteria document"),
    "serve": (
        "toolcall300.service.local.stack",
        "run the service locally (SQLite state + local gateway + worker)",
    ),
    "dev": ("toolcall300.client.dev", "developer helpers for a local stack (test purchases)"),
    "admin": ("toolcall300.service.admin", "operator commands: manage licences by hand"),
    "download": ("toolcall300.client.download", "download the licensed corpus and verify its pins"),
    "ci": ("toolcall300.client.ci", "submit a hosted scoring run from CI and gate on it"),
    "team": (
        "toolcall300.client.team",
        "a team's member keys and badge: team keys ...|team badge on|off",
    ),
}


def usage() -> str:
    lines = [
        f"toolcall300 {__version__}",
        "",
        "usage: toolcall300 COMMAND [options]",
        "",
        "commands:",
    ]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "toolcall300 COMMAND --help for a command's options."]
    return "\n".join(lines)


def dispatch(argv: list[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run one subcommand and return its exit code."""
    if not argv or argv[0] in ("-h", "--help"):
        stdout.write(usage() + "\n")
        return EXIT_OK
    if argv[0] == "--version":
        stdout.write(f"toolcall300 {__version__}\n")
        return EXIT_OK
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        stderr.write(f"toolcall300: unknown command {name!r} (try --help)\n")
        return EXIT_ERROR
    try:
        module = importlib.import_module(COMMANDS[name][0])
    except ImportError as exc:
        stderr.write(
            f"toolcall300 {name}: needs the service extras ({install_line('local')}): {exc}\n"
        )
        return EXIT_ERROR
    try:
        args = module.parse_args(rest)
        return int(module.run(args, stdout, stderr))
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return EXIT_ERROR
    except SystemExit as exc:  # --help from argparse, or a refusal that says why
        if isinstance(exc.code, int) or exc.code is None:
            return int(exc.code or 0)
        stderr.write(f"{exc.code}\n")  # the reason, never swallowed (serve on a /usr folder)
        return EXIT_ERROR


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point: the only place that calls ``sys.exit``."""
    sys.exit(dispatch(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr))
