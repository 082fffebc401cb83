"""How many examples a Hypothesis property draws under the profile this run loaded.

``tests/conftest.py`` loads one of two profiles (chosen by the environment, see there):
``ci``, the full budget, and ``dev``, a tenth of it for a developer's loop. A property that
names its own budget (``@settings(max_examples=examples(300))``) is scaled the same way, so
the profile decides for every property, not only for those that keep Hypothesis's default.
"""

from __future__ import annotations

from hypothesis import settings

#: Hypothesis's own default budget: the ``ci`` profile keeps it, so ``examples(n)`` is ``n`` there.
FULL = 100


def examples(n: int) -> int:
    """``n`` scaled by the loaded profile's budget against the full one, at least ``min(n, 10)``:
    ``examples(300)`` is 300 under ``ci`` and 30 under ``dev``."""
    return max(min(n, 10), n * settings().max_examples // FULL)
