"""Shared pytest configuration: nothing here imports third-party service code.

Hypothesis profiles: ``ci`` draws the full budget, ``dev`` a tenth of it (a developer's loop;
``support.budget.examples`` scales the properties that name their own budget). The profile is
``TOOLCALL300_HYPOTHESIS_PROFILE`` when set, else ``ci`` when ``CI=true`` (as CI runs
``.ci/run``), else ``dev``.
"""

import os

# Hypothesis imports this module lazily the first time a test draws `st.randoms()`. pytest then
# rewrites and parses it, and CPython 3.11.7 can fail that parse with "AST constructor recursion
# depth mismatch" when an earlier test recovered from a RecursionError (deep-JSON tests do).
# Importing it here, at collection, parses it before any such test has run.
import hypothesis.strategies._internal.random  # noqa: F401
from hypothesis import settings
from support.budget import FULL

settings.register_profile("ci", max_examples=FULL, print_blob=True)
settings.register_profile("dev", max_examples=FULL // 10)
settings.load_profile(
    os.environ.get("TOOLCALL300_HYPOTHESIS_PROFILE")
    or ("ci" if os.environ.get("CI", "").lower() == "true" else "dev")
)
