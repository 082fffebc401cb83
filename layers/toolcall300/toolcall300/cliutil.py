"""What every subcommand's CLI shell shares: exit codes and an argparse that never exits 2.

Exit code 2 means one thing only, "regression against the baseline", because the CI gate
has to tell a regression from a typo. argparse exits 2 on a bad flag; :class:`ArgParser`
raises :class:`UsageError` instead, which the dispatcher turns into exit 1.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

EXIT_OK = 0
EXIT_ERROR = 1  # usage or input error, one line on stderr
EXIT_REGRESSION = 2  # the baseline gate fired; nothing else may exit 2


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
