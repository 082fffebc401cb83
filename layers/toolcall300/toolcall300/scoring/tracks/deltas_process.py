"""The deltas track's process protocol: one long-lived program, JSON Lines, lock-step.

For each stream (one partition of one case) the scorer writes ``{"id", "tools"}``, then one
``{"id", "event"}`` per event, reading after each one line ``{"id", "commits": [...]}``, then
``{"id", "end": true}``, reading ``{"id", "call": {...} | null}`` (docs/adapter-protocols.md,
"The deltas track"). Anything else (a wrong id, a line that is not that object, no answer
within ``--timeout`` for the whole stream, the program exiting) refuses the stream, records an
adapter error with the program's stderr tail, and the program is restarted for the next
stream. It grades nothing. The hosted job harness drives the same class with its sandbox's
``Popen`` arguments and its output limits (``jobs.deltas_job``).
"""

from __future__ import annotations

import json
import os
import select
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import loads_strict
from toolcall300.scoring import adapters
from toolcall300.scoring.protocol import _finish, _spawn, _Tail, error_tail

#: The longest answer line read (a commit list or a call): past it the stream is refused.
MAX_LINE = 16 * 1024 * 1024


class _Broken(Exception):
    """The program did not answer as the protocol says; the message says how."""


class _OutputCap(_Broken):
    """The program wrote more than the run's output limit (the harness stops the run)."""


@dataclass
class _Program:
    """One running copy of the program; its pipes read and written with ``select`` against
    the stream's deadline, in this thread (lock-step needs no other)."""

    argv: Sequence[str]
    popen_kwargs: Mapping[str, Any] | None = None
    max_line: int = MAX_LINE
    #: How many bytes of output this copy may still write (None: no limit).
    allowance: int | None = None
    proc: Any = None
    buffer: bytearray = field(default_factory=bytearray)
    tail: _Tail | None = None
    read_bytes: int = 0

    def start(self) -> None:
        try:
            self.proc = _spawn(self.argv, self.popen_kwargs)
        except OSError as exc:  # not found, not executable, the sandbox gone
            raise _Broken(f"cannot start the program: {exc.strerror or exc}") from None
        self.tail = _Tail(self.proc.stderr)
        os.set_blocking(self.proc.stdin.fileno(), False)
        os.set_blocking(self.proc.stdout.fileno(), False)

    def send(self, message: Mapping[str, Any], deadline: float) -> None:
        data = memoryview(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        fd = self.proc.stdin.fileno()
        while data:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise _Broken("the program stopped reading within the time limit")
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:
                continue
            except OSError:
                raise _Broken("the program closed its input") from None

    def answer(self, key: str, field_name: str, deadline: float) -> Any:
        fd = self.proc.stdout.fileno()
        while (cut := self.buffer.find(b"\n")) < 0:
            if len(self.buffer) > self.max_line:
                raise _Broken("an answer line past the limit")
            if self.allowance is not None and self.read_bytes > self.allowance:
                raise _OutputCap("the program wrote more than its output limit")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _Broken("no answer within the time limit")
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                raise _Broken("the program exited")
            self.read_bytes += len(chunk)
            self.buffer += chunk
        raw = bytes(self.buffer[:cut])
        del self.buffer[: cut + 1]
        try:
            message = loads_strict(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _Broken(f"not a JSON line: {raw[:120]!r}") from None
        if not isinstance(message, dict) or message.get("id") != key or field_name not in message:
            raise _Broken(f'expected {{"id": "{key}", "{field_name}": ...}}, got {raw[:120]!r}')
        return message[field_name]

    def stop(self) -> str:
        """Kill the program and its group; its stderr tail."""
        if self.proc is None:
            return ""
        _finish(self.proc, time.monotonic())
        return self.tail.text() if self.tail else ""


@dataclass
class DeltasProcessAdapter:
    """``--adapter-cmd CMD`` on a deltas corpus (with or without ``--stream``)."""

    argv: Sequence[str]
    description: str
    #: How the program is started (the job harness's sandbox; None: as the CLI starts it).
    popen_kwargs: Mapping[str, Any] | None = None
    max_line: int = MAX_LINE
    #: The output limit over every copy of the program (None: none); past it
    #: :attr:`capped` is set and every stream from then on is refused.
    max_output: int | None = None
    program: _Program | None = None
    #: Bytes read from every copy of the program so far, and how many copies were started.
    output_bytes: int = 0
    starts: int = 0
    capped: bool = False

    def _program(self) -> _Program:
        if self.program is None:
            left = None if self.max_output is None else self.max_output - self.output_bytes
            self.program = _Program(self.argv, self.popen_kwargs, self.max_line, left)
            self.starts += 1
            self.program.start()
        return self.program

    def _stop(self) -> str:
        """Stop the running copy, if any; its stderr tail."""
        program, self.program = self.program, None
        if program is None:
            return ""
        self.output_bytes += program.read_bytes
        return program.stop()

    def run_stream(
        self, key: str, events: list[dict[str, Any]], tools: list[dict[str, Any]], timeout: float
    ) -> Any:
        from toolcall300.scoring.tracks.deltas import StreamResult

        # A copy's start (its interpreter, its imports) is not the stream's time: the first
        # stream a fresh copy serves has the limit twice, once for the start and once for
        # the stream (docs/adapter-protocols.md, "The deltas track").
        fresh = self.program is None
        deadline = time.monotonic() + timeout * (2 if fresh else 1)
        commits: list[dict[str, Any]] = []
        try:
            if self.capped:
                raise _OutputCap("the program wrote more than its output limit")
            program = self._program()
            program.send({"id": key, "tools": tools}, deadline)
            for pulled, event in enumerate(events, 1):
                program.send({"id": key, "event": event}, deadline)
                made = program.answer(key, "commits", deadline)
                if not isinstance(made, list):
                    raise _Broken("commits must be a list")
                commits += [{"commit": c, "after": pulled} for c in made]
            program.send({"id": key, "end": True}, deadline)
            call = program.answer(key, "call", deadline)
            return StreamResult(call, commits, len(events))
        except _Broken as exc:
            self.capped = self.capped or isinstance(exc, _OutputCap)
            text = f"{exc}\n{self._stop()}".strip()
            return StreamResult(None, commits, len(events), error_tail(text))

    def close(self) -> None:
        """Stop the program (a run's end)."""
        self._stop()

    def run(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        timeout: float,
        progress: adapters.Progress | None = None,
    ) -> adapters.AdapterRun:
        from toolcall300.scoring.tracks.deltas import DeltasRun, replay

        out = DeltasRun(answers={})
        start = time.perf_counter()
        try:
            for done, item in enumerate(items, 1):
                key = str(item["id"])
                t0 = time.perf_counter()
                results = [
                    self.run_stream(f"{key}/{n}", replay(item, p), list(item["tools"]), timeout)
                    for n, p in enumerate(item["partitions"])
                ]
                out.case_seconds.append(time.perf_counter() - t0)
                out.streams[key] = results
                out.answers[key] = results[0].answer
                errors = [r.error for r in results if r.error]
                if errors:
                    out.errors[key] = errors[0]
                if progress:
                    progress(done, len(items))
        finally:
            self.close()
        out.total_seconds = time.perf_counter() - start
        return out
