"""The local stack's state folder: moto's own recorder, so a restart brings everything back.

moto keeps its state in memory; its recorder appends every request it serves to a file and
replays them into a fresh server (docs/local-sandbox.md, "State"). This module points that
recorder at ``<state>/moto-recording.jsonl`` (mode 600 in a mode 700 folder: it holds the
licensed corpus and licence records), leaves out requests that change nothing (reads, polls
and lists: a stack polling its runs table would otherwise record thousands of lines an hour)
and serialises the appends (moto's server is threaded; one request's line must not
interleave with another's). One recording stack per process (moto's recorder is global) and
one process per folder (a lock: two stacks appending to one recording would corrupt it).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

from moto import moto_api
from moto.moto_api._internal.recorder.models import Recorder

RECORDING = "moto-recording.jsonl"
LOCK = "lock"


class StateInUse(Exception):
    """Another live process holds the state folder."""


_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_READ_OPERATIONS = ("Get", "Describe", "List", "Query", "Scan", "BatchGet", "TransactGet")


def changes_state(method: str, headers: Any, path: str) -> bool:
    """Whether a request to moto may change what it stores (only those are recorded)."""
    if method.upper() in _READ_METHODS:
        return False
    target = str(headers.get("X-Amz-Target", "") or "")
    if target:
        return not target.rsplit(".", 1)[-1].startswith(_READ_OPERATIONS)
    last = path.rstrip("/").rsplit("/", 1)[-1].lower()  # Batch's REST paths: /v1/describejobs
    return not last.startswith(tuple(op.lower() for op in _READ_OPERATIONS))


class StateRecorder(Recorder):
    """moto's recorder, writing only state changes, one whole line at a time."""

    def __init__(self, path: Path, folder_lock: int | None = None) -> None:
        super().__init__()
        self._location = str(path)
        self._os_enabled = self._user_enabled = False
        self._lock = threading.Lock()
        self.folder_lock = folder_lock

    def _record_request(self, request: Any, body: bytes | None = None) -> None:
        if not self._user_enabled or not changes_state(
            request.method, request.headers, request.path
        ):
            return
        with self._lock:
            super()._record_request(request, body)


def open_state(folder: Path) -> StateRecorder:
    """Make ``folder`` (mode 700) and its recording (mode 600); install the recorder in moto."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    held = os.open(folder / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(held)
        raise StateInUse(f"{folder} is in use by another toolcall300 serve") from None
    path = folder / RECORDING
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
    path.chmod(0o600)
    recorder = StateRecorder(path, held)
    moto_api.recorder = recorder  # moto's server looks it up on every request
    return recorder


def has_state(folder: Path) -> bool:
    path = folder / RECORDING
    return path.exists() and path.stat().st_size > 0


def restore(recorder: StateRecorder, endpoint: str) -> None:
    """Replay the recording into the server at ``endpoint``, then record from here on."""
    recorder.replay_recording(target_host=endpoint)
    recorder.start_recording()


def close_state(recorder: StateRecorder) -> None:
    recorder.stop_recording()
    if moto_api.recorder is recorder:
        moto_api.recorder = Recorder()
    if recorder.folder_lock is not None:
        os.close(recorder.folder_lock)  # releases the folder's lock
        recorder.folder_lock = None
