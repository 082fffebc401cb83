"""The schema engine (moving into its modules; see keywords.py)."""

from toolcall300.schema.keywords import *  # noqa: F403
