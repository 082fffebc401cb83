"""Running an adapter program under a bounded protocol: one process per case, or one stream.

Both ``score --adapter-cmd`` and the hosted runner (which runs untrusted adapter images)
talk to adapter programs through this module, so it assumes the program may misbehave: it
may crash, hang, never read its stdin, flood its stdout, print non-JSON, answer ids it was
never asked, answer twice or answer out of order. Every read is bounded in bytes and time,
stdin is written from a thread, and a stop kills the program's whole process group.

The stream protocol (docs/adapter-protocols.md, protocol 3): JSON Lines ``{"id","text","tools"}`` on
stdin, JSON Lines ``{"id","call"}`` on stdout, any order; an id not answered in time is a
refusal. This module reports what happened; it does not grade (that is ``scorer``) and it
does not sandbox (callers pass ``popen_kwargs`` with their own ``preexec_fn``, ``env``, ``cwd``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcall300.canonical import loads_strict

STDERR_TAIL_BYTES = 4096
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
_READ_CHUNK = 65536
_EXIT_GRACE_SECONDS = 1.0

#: Why a stream stopped before every id was answered (``None``: it did not stop early).
STOP_REASONS = ("total_timeout", "idle_timeout", "output_cap", "value_cap", "exited")


@dataclass(frozen=True)
class StreamResult:
    """What one stream run produced. ``answers`` holds every asked id; unanswered ones are None."""

    answers: dict[str, Any]
    unanswered: list[str]
    unknown_ids: list[str]
    malformed_lines: int
    duplicate_answers: int
    exit_code: int | None
    stderr_tail: str
    stopped_reason: str | None
    elapsed: float
    latencies: dict[str, float] = field(default_factory=dict)  # id -> seconds from sent to answered
    answered_at: dict[str, float] = field(default_factory=dict)  # id -> seconds since the start


#: How much of an error's text is kept per case: enough for a traceback's last frames.
ERROR_TAIL_CHARS = 800


def error_tail(text: str, limit: int = ERROR_TAIL_CHARS) -> str:
    """The last lines of ``text`` that fit in ``limit`` characters (where an error is named).

    >>> error_tail("Traceback (most recent call last):\\n  ...\\nKeyError: 'x'\\n", 20)
    "...\\nKeyError: 'x'"
    """
    lines = text.strip().splitlines()
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + 1
        if kept and size > limit:
            break
        kept.append(line[-limit:])
    return "\n".join(reversed(kept))


def stream_errors(result: StreamResult) -> dict[str, str]:
    """The adapter errors of one stream run (docs/adapter-protocols.md, "Refusing is not
    breaking"): each id never answered, with why the stream stopped and the end of stderr.

    One place for the local scorer and the hosted harness, so a hosted report counts
    ``adapter_errors`` exactly as ``toolcall300 score --adapter-stream`` does.
    """
    tail = error_tail(result.stderr_tail)
    note = f"never answered ({result.stopped_reason or 'skipped'})"
    text = f"{note}\n{tail}" if tail else note
    return dict.fromkeys(result.unanswered, text)


@dataclass(frozen=True)
class OnceResult:
    """What one process-per-case run produced; the caller decides what the output means."""

    exit_code: int | None
    stdout: bytes
    stderr_tail: str
    timed_out: bool
    output_capped: bool
    elapsed: float


# --------------------------------------------------------------------------- process plumbing


class _Tail:
    """Keeps the last ``limit`` bytes of a pipe, read from a thread so the child never blocks."""

    def __init__(self, stream: Any, limit: int = STDERR_TAIL_BYTES) -> None:
        self._buf = bytearray()
        self._limit = limit
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: Any) -> None:
        try:
            while chunk := stream.read(_READ_CHUNK):
                self._buf += chunk
                if len(self._buf) > 2 * self._limit:
                    del self._buf[: -self._limit]
        except (OSError, ValueError):
            pass

    def text(self, wait: float = 0.2) -> str:
        self._thread.join(wait)
        return bytes(self._buf[-self._limit :]).decode("utf-8", "replace")


def _spawn(argv: Sequence[str], popen_kwargs: Mapping[str, Any] | None) -> subprocess.Popen[bytes]:
    """Start ``argv`` with three pipes in a new session (its own process group) unless told otherwise."""
    kwargs: dict[str, Any] = {"start_new_session": True}
    kwargs.update(popen_kwargs or {})
    kwargs.update(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    return subprocess.Popen(list(argv), **kwargs)


def _write_all(
    proc: subprocess.Popen[bytes], lines: Sequence[tuple[str, bytes]], sent_at: dict[str, float]
) -> threading.Thread:
    """Write ``lines`` to the child's stdin from a thread (the child may never read), then close it."""

    def feed() -> None:
        stdin = proc.stdin
        assert stdin is not None
        try:
            for key, data in lines:
                view = memoryview(data)
                while view:  # a raw pipe write may be partial
                    view = view[stdin.write(view) or 0 :]
                sent_at[key] = time.monotonic()
        except (OSError, ValueError):  # the child closed its stdin or was killed
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def _exited_unreaped(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it, so its pid (and group id) stay reserved."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _wait_exit(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait (unreaped) until the child exits or ``deadline`` passes; True if it exited."""
    pause = 0.0005
    while not _exited_unreaped(proc.pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (or the child alone if it leads no group of its own)."""
    try:
        if os.getpgid(proc.pid) == proc.pid:  # never our own group: only a session/group leader
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _finish(proc: subprocess.Popen[bytes], grace_until: float) -> int | None:
    """Give the child until ``grace_until`` to exit, kill its group, reap it, return its code."""
    _wait_exit(proc, grace_until)
    _kill_group(proc)
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered
        return None
    finally:
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


class _LineReader:
    """Splits the child's stdout into lines, each bounded by ``max_line`` bytes.

    An over-long line is counted once as oversized and skipped up to its newline, so a
    flood without newlines cannot grow memory.
    """

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.buf = bytearray()
        self.skipping = False
        self.oversized = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        self.buf += chunk
        lines: list[bytes] = []
        while True:
            cut = self.buf.find(b"\n")
            if cut < 0:
                if len(self.buf) > self.max_line:
                    if not self.skipping:
                        self.oversized += 1
                    self.skipping = True
                    self.buf.clear()
                return lines
            line = bytes(self.buf[:cut])
            del self.buf[: cut + 1]
            if self.skipping:
                self.skipping = False
            elif len(line) > self.max_line:
                self.oversized += 1
            else:
                lines.append(line)

    def close(self) -> list[bytes]:
        """The final line if it had no newline (a last answer need not end with one)."""
        rest = bytes(self.buf)
        self.buf.clear()
        return [rest] if rest.strip() and not self.skipping else []


# --------------------------------------------------------------------------- one process per case


def run_once(
    argv: Sequence[str],
    stdin_bytes: bytes,
    *,
    timeout: float,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    popen_kwargs: Mapping[str, Any] | None = None,
) -> OnceResult:
    """Run ``argv`` once with ``stdin_bytes``; stop it at ``timeout`` or ``max_output_bytes``."""
    start = time.monotonic()
    deadline = start + timeout
    proc = _spawn(argv, popen_kwargs)
    tail = _Tail(proc.stderr)
    _write_all(proc, [("", stdin_bytes)], {})
    out = bytearray()
    timed_out = capped = False
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(left):
                continue
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                break
            out += chunk
            if len(out) > max_output_bytes:
                capped = True
                del out[max_output_bytes:]
                break
    grace = time.monotonic() if (timed_out or capped) else deadline
    code = _finish(proc, grace)
    if not timed_out and not capped and code is not None and code < 0:
        # killed at the deadline while it still held no stdout open: that is a timeout too
        timed_out = time.monotonic() >= deadline
    return OnceResult(
        exit_code=code,
        stdout=bytes(out),
        stderr_tail=tail.text(),
        timed_out=timed_out,
        output_capped=capped,
        elapsed=time.monotonic() - start,
    )


# --------------------------------------------------------------------------- the stream protocol


def encode_items(items: Sequence[Mapping[str, Any]]) -> list[tuple[str, bytes]]:
    """The stdin lines for ``items``: one compact JSON object a line, ids unique strings."""
    seen: set[str] = set()
    lines: list[tuple[str, bytes]] = []
    for item in items:
        key = item.get("id")
        if not isinstance(key, str) or key in seen:
            raise ValueError(f"stream item ids must be unique strings, got {key!r}")
        seen.add(key)
        row = {"id": key, "text": item.get("text"), "tools": item.get("tools")}
        data = json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
        lines.append((key, data.encode("utf-8")))
    return lines


def loads_output(text: str | bytes) -> Any:
    """An adapter's JSON output, read as :func:`loads_strict` reads, and refused
    (``ValueError``) when it holds a lone surrogate (``"\\ud800"``): JSON's grammar allows
    the escape, but Unicode has no such character, and no UTF-8 report could hold it (the
    report would fail to be written, a hosted run would end ``infra_error``)."""
    value = loads_strict(text)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # UnicodeEncodeError: a ValueError
    return value


def count_values(value: Any, limit: int) -> int:
    """How many JSON values ``value`` holds (itself included), counting stops past ``limit``.

    Parsed JSON takes far more memory than its text (a line of ``{},`` about 24 times its
    bytes), so the answers a run keeps are bounded in values as well as in bytes.
    """
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def parse_answer(line: bytes) -> tuple[Any, Any] | None:
    """``(id, call)`` from one stdout line, or None when the line is not a protocol answer.

    The call itself is not judged here: any JSON value is passed on, and the scorer grades
    a non-object as a schema-invalid return (D1.1). A value :func:`loads_output` refuses is
    not an answer either.
    """
    try:
        value = loads_output(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "id" not in value or "call" not in value:
        return None
    return value["id"], value["call"]


def _answer_key(raw_id: Any) -> str:
    return raw_id if isinstance(raw_id, str) else json.dumps(raw_id, sort_keys=True)


class _Answers:
    """What a stream run keeps from the adapter's stdout, and what it counts while taking it.

    The first answer to an asked id wins; a later one is a duplicate, an id never asked is
    unknown, a line that is no protocol answer is malformed. ``values_left`` (None: no bound)
    is what :func:`count_values` may still keep; below zero the run stops (``value_cap``).
    """

    def __init__(
        self,
        order: list[str],
        start: float,
        values_left: int | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.order = order
        self.wanted = set(order)
        self.start = start
        self.values_left = values_left
        self.progress = progress
        self.answers: dict[str, Any] = {}
        self.latencies: dict[str, float] = {}
        self.answered_at: dict[str, float] = {}
        self.sent_at: dict[str, float] = {}
        self.unknown: list[str] = []
        self.malformed = self.duplicates = 0
        self.last_progress = start

    @property
    def complete(self) -> bool:
        return len(self.answers) >= len(self.order)

    @property
    def over_value_cap(self) -> bool:
        return self.values_left is not None and self.values_left < 0

    def take(self, raw: bytes) -> None:
        """Take one stdout line (an answer, or something counted as not one)."""
        if not raw.strip():
            return
        parsed = parse_answer(raw)
        if parsed is None:
            self.malformed += 1
            return
        key = _answer_key(parsed[0])
        if key not in self.wanted or not isinstance(parsed[0], str):
            self.unknown.append(key)
        elif key in self.answers:
            self.duplicates += 1
        else:
            if self.values_left is not None:
                self.values_left -= count_values(parsed[1], self.values_left)
                if self.values_left < 0:
                    return
            now = time.monotonic()
            self.answers[key] = parsed[1]
            self.latencies[key] = now - self.sent_at.get(key, self.start)
            self.answered_at[key] = now - self.start
            self.last_progress = now
            if self.progress:
                self.progress(len(self.answers), len(self.order))

    def result(
        self, exit_code: int | None, stderr_tail: str, stopped: str | None, oversized: int
    ) -> StreamResult:
        """The run's :class:`StreamResult`, once the adapter is stopped and reaped."""
        return StreamResult(
            answers={key: self.answers.get(key) for key in self.order},
            unanswered=[key for key in self.order if key not in self.answers],
            unknown_ids=self.unknown,
            malformed_lines=self.malformed + oversized,
            duplicate_answers=self.duplicates,
            exit_code=exit_code,
            stderr_tail=stderr_tail,
            stopped_reason=stopped,
            elapsed=time.monotonic() - self.start,
            latencies=self.latencies,
            answered_at=self.answered_at,
        )


def _read_answers(
    fd: int,
    reader: _LineReader,
    kept: _Answers,
    *,
    deadline: float,
    per_case_timeout: float,
    max_output_bytes: int,
) -> str | None:
    """Read the adapter's stdout into ``kept`` until every id is answered (None) or the run
    stops early: the reason, one of :data:`STOP_REASONS`."""
    total = 0
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while not kept.complete:
            now = time.monotonic()
            if now >= deadline:
                return "total_timeout"
            if now >= kept.last_progress + per_case_timeout:
                return "idle_timeout"
            if not sel.select(min(deadline, kept.last_progress + per_case_timeout) - now):
                continue
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                for raw in reader.close():
                    kept.take(raw)
                if kept.over_value_cap:
                    return "value_cap"
                return None if kept.complete else "exited"
            total += len(chunk)
            if total > max_output_bytes:
                return "output_cap"
            for raw in reader.feed(chunk):
                kept.take(raw)
            if kept.over_value_cap:
                return "value_cap"
    return None


def run_stream(
    argv: Sequence[str],
    items: Sequence[Mapping[str, Any]],
    *,
    per_case_timeout: float,
    total_timeout: float,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    popen_kwargs: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_answer_values: int | None = None,
) -> StreamResult:
    """Run one long-lived adapter over ``items`` and collect its answers.

    Time limits: the run stops at ``total_timeout``, and it stops when no answer arrives for
    ``per_case_timeout`` seconds while ids are still outstanding (``idle_timeout``): an
    adapter that skips an id is waited for that long after its last answer, and one stuck
    on a case loses that case and, if it answers sequentially, the ones behind it. Every id
    not answered by then is a refusal (D12.1). The first answer to an id wins; later ones
    are counted in ``duplicate_answers``. stdin is closed after the last item, so an adapter
    may also read everything first and answer at EOF.

    ``max_answer_values`` (None: no bound) bounds the JSON values the kept answers hold in
    all (:func:`count_values`); an answer that would pass it stops the run (``value_cap``).

    ``progress(answered, total)`` is called after each new answer. ``popen_kwargs`` (env,
    cwd, preexec_fn, ...) are passed to ``Popen``; the child gets its
    own session (``start_new_session=True``) so a stop can kill its whole group. A
    ``preexec_fn`` that calls ``os.setsid()`` itself must pass ``start_new_session=False``.
    """
    lines = encode_items(items)
    start = time.monotonic()
    kept = _Answers([key for key, _ in lines], start, max_answer_values, progress)
    deadline = start + total_timeout
    proc = _spawn(argv, popen_kwargs)
    tail = _Tail(proc.stderr)
    _write_all(proc, lines, kept.sent_at)
    reader = _LineReader(max_line_bytes)
    assert proc.stdout is not None
    stopped = _read_answers(
        proc.stdout.fileno(),
        reader,
        kept,
        deadline=deadline,
        per_case_timeout=per_case_timeout,
        max_output_bytes=max_output_bytes,
    )
    grace = (
        min(deadline, time.monotonic() + _EXIT_GRACE_SECONDS)
        if stopped in (None, "exited")
        else 0.0
    )
    code = _finish(proc, grace)
    return kept.result(code, tail.text(), stopped, reader.oversized)
