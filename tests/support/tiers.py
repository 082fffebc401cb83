"""A test tier that cannot run on this machine: skipped here, a failure in CI.

On a developer's machine a tier whose tools are missing skips, saying what to install. In CI
(``CI=true``, which ``.ci/run`` sets and every hosted CI sets) the same skip would let a
build pass that never ran the tier: python3-seccomp was once missing from ``.ci/run`` and the
whole container tier skipped quietly. There it fails instead, with the same reason.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it under CI."""
    if in_ci():
        pytest.fail(f"CI is set and this tier cannot run: {reason}", pytrace=False)
    pytest.skip(reason)
