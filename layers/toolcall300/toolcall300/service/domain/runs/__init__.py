"""Hosted CI runs (the old ``runs.py``, moved whole into :mod:`.record` before it is split)."""

from toolcall300.service.domain.runs.record import *  # noqa: F403
