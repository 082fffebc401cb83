"""The local stack's state folder: one process at a time, and what an older version left there.

What the folder holds is ``statefolder.folder``'s (a SQLite database, objects, secrets and keys
as files); this module is the stack's side: a lock (two stacks writing one folder would
interleave their writes and serve each other's keys) and the refusal of a folder an earlier
version wrote, whose state was a recording of moto's server (``moto-recording.jsonl``) that
this version cannot read (docs/local-stack.md, "Upgrading from a moto recording").
"""

from __future__ import annotations

import os
from pathlib import Path

from toolcall300.service.statefolder.folder import DATABASE, FolderInUse, lock_folder

#: What the stack kept before it had a database: every request to its embedded moto, replayed at start.
LEGACY_RECORDING = "moto-recording.jsonl"


StateInUse = FolderInUse  # another live process holds the state folder


class LegacyState(Exception):
    """The folder holds an earlier version's moto recording and no database."""


def legacy_message(folder: Path) -> str:
    return (
        f"{folder} holds a recording of the moto server earlier versions kept their state in "
        f"({LEGACY_RECORDING}); this version keeps it in SQLite. Bring it across with "
        f"`toolcall300 serve --state {folder} --migrate` (needs moto, as in a checkout's "
        f"`make venv`), or move the folder aside (mv {folder} {folder}.moto) and start "
        "afresh (docs/local-stack.md, 'Upgrading')"
    )


def open_state(folder: Path) -> int:
    """Make ``folder`` (mode 700) and hold its lock; the lock's descriptor (for :func:`close_state`).

    Raises :class:`StateInUse` when another process holds it, :class:`LegacyState` when the
    folder is an earlier version's.
    """
    held = lock_folder(folder)
    if (folder / LEGACY_RECORDING).exists() and not (folder / DATABASE).exists():
        os.close(held)
        raise LegacyState(legacy_message(folder))
    return held


def has_state(folder: Path) -> bool:
    """Whether the folder already holds a database (a restart, not a first start)."""
    return (folder / DATABASE).exists()


def close_state(held: int) -> None:
    os.close(held)  # releases the folder's lock
