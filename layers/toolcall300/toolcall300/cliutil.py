"""What every subcommand's CLI shell shares: exit codes and an argparse that never exits 2.

Exit code 2 means one thing only, "regression against the baseline", because the CI gate
has to tell a regression from a typo. argparse exits 2 on a bad flag; :class:`ArgParser`
raises :class:`UsageError` instead, which the dispatcher turns into exit 1.
"""

from __future__ import annotations

import argparse
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
