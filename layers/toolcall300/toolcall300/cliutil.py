"""What every subcommand's CLI shell shares: exit codes and an argparse that never exits 2.

Exit code 2 means one thing only, "regression against the baseline", because the CI gate
has to tell a regression from a typo. argparse exits 2 on a bad flag; :class:`ArgParser`
raises :class:`UsageError` instead, which the dispatcher turns into exit 1.
"""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path
from typing import NoReturn

EXIT_OK = 0
EXIT_ERROR = 1  # usage or input error, one line on stderr
EXIT_REGRESSION = 2  # the baseline gate fired; nothing else may exit 2


#: C0 controls but tab and newline, DEL and the C1 controls: what a terminal (or a CI log
#: viewer) reads as commands (ESC [ ... moves the cursor, ESC ] 0; retitles, 0x9b is CSI).
_TERMINAL_CONTROLS = {c: "?" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


def terminal_safe(text: str) -> str:
    r"""``text`` with every control character but tab and newline shown as ``?``.

    What a CLI prints can hold text it did not write (a corpus's case ids, an adapter's
    stderr or exception message): printed raw, an escape sequence there rewrites the user's
    terminal or CI log (hides lines, fakes a "PASS"). Every CLI line carrying such text goes
    through here.

    >>> terminal_safe("ok\x1b[2J done\n")
    'ok?[2J done\n'
    """
    return text.translate(_TERMINAL_CONTROLS)


#: The most bytes a CLI reads from one file the user names (a corpus, a baseline, a catalog,
#: pools, a saved report): 128 MiB, about 150 times the 300-case corpus and 700 times the
#: largest real catalog here. ``/dev/zero`` or a runaway file is then one line, never
#: unbounded memory.
MAX_INPUT_BYTES = 128 * 1024 * 1024


def read_limited(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of ``path``, read no further than ``limit`` (:data:`MAX_INPUT_BYTES`) + 1.

    A larger file raises ``OSError(EFBIG)`` whose ``strerror`` names the limit, so every
    caller's existing "cannot read" line reports it as it reports a missing file.
    """
    limit = MAX_INPUT_BYTES if limit is None else limit
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than the {limit}-byte limit", str(path))
    return data


class UsageError(Exception):
    """Bad flags or bad input: reported in one line, exit 1."""


class ArgParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors raise :class:`UsageError` instead of exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def install_line(extra: str) -> str:
    """How to install this package's ``extra`` (``local``, ``verify``) where a user stands.

    No package index carries ``toolcall300`` (docs/hosted-scoring.md), so a hint naming
    ``pip install 'toolcall300[extra]'`` fails: from a checkout, the line names the checkout's
    own folder; from the kit or a wheel, it says how to get one.
    """
    from toolcall300 import __version__

    root = Path(__file__).resolve().parents[3]  # <root>/layers/toolcall300/toolcall300/
    if (root / "pyproject.toml").is_file() and (root / "layers").is_dir():
        return f"pip install '{root}[{extra}]'"
    return (
        f"pip install '/path/to/checkout[{extra}]' from a checkout of the toolcall300 "
        f"repository, or pip install 'toolcall300-{__version__}-py3-none-any.whl[{extra}]' "
        "with a wheel built in one (python3 -m pip wheel --no-deps .); "
        "no package index carries toolcall300"
    )
