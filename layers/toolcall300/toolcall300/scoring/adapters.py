"""The code under test, behind one interface: in-process callables, programs, and streams.

An adapter turns ``(text, tools)`` into a returned value, where ``None`` is a refusal
(rule 12). This module knows the four adapter protocols of docs/adapter-protocols.md (``module:callable``,
``naive``/``integrator``/``toolshim``, ``--adapter-cmd`` one process per case, ``--adapter-cmd --stream``)
and how each one's failures map onto "refused" or "returned something" (D12.1). It does
not grade anything: the scorer judges what comes back. It does record, apart from the
answers, every case where the adapter broke rather than answered (an exception, a crash, a
non-zero exit, a timeout, output that is not JSON), so a broken adapter is never mistaken for
a refusing one (docs/report.md, ``adapter_errors``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import queue
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from toolcall300.canonical import canonical, loads_strict
from toolcall300.controls import integrator, naive
from toolcall300.scoring import protocol as streamproto
from toolcall300.scoring.protocol import error_tail, stream_errors

Normaliser = Callable[[str, list[dict[str, Any]]], Any]
Progress = Callable[[int, int], None]
Item = Mapping[str, Any]


class AdapterError(Exception):
    """The adapter could not be loaded or started at all (a usage error, exit 1)."""


@dataclass
class AdapterRun:
    """What an adapter returned for every item, with notes on why a case came back empty.

    ``answers`` maps every id to the returned value (``None`` = refusal). ``notes`` says,
    for cases where the protocol decided the answer (a timeout, an exit code, an
    exception), what happened, for ``--show-failures``; it never changes the grade.
    ``errors`` holds, for each case where the adapter broke instead of answering, the
    error's tail (the end of a traceback or of stderr); it never changes the grade either.
    ``case_seconds`` is each case's latency, from sending it to its answer.
    """

    answers: dict[str, Any]
    notes: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    case_seconds: list[float] = field(default_factory=list)
    total_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def timing(self) -> dict[str, Any]:
        """The report's ``timing`` block: total wall time, wall time per case, median latency."""
        median = statistics.median(self.case_seconds) if self.case_seconds else None
        per_case = self.total_seconds / len(self.answers) if self.answers else None
        return {
            "total_seconds": round(self.total_seconds, 6),
            "wall_seconds_per_case": per_case,
            "median_case_seconds": median,
        }


class Adapter(Protocol):
    """Anything that can answer a list of ``{"id","text","tools"}`` items."""

    description: str

    def run(
        self, items: Sequence[Item], *, timeout: float, progress: Progress | None = None
    ) -> AdapterRun: ...


# --------------------------------------------------------------------------- in-process callables


class _Worker:
    """One daemon thread that runs calls, so a hung callable can be abandoned at its time limit."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[tuple[Normaliser, str, list[dict[str, Any]]]] = (
            queue.SimpleQueue()
        )
        self.outbox: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, text, tools = self.inbox.get()
            try:  # as_json inside: a returned object's own methods run under the time limit too
                self.outbox.put((True, as_json(fn(text, tools))))
            except BaseException as exc:
                self.outbox.put((False, exc))

    def call(
        self, fn: Normaliser, text: str, tools: list[dict[str, Any]], timeout: float
    ) -> tuple[bool, Any]:
        """``(True, value)`` or ``(False, exception)``; raises ``TimeoutError`` after ``timeout``."""
        self.inbox.put((fn, text, tools))
        try:
            return self.outbox.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None


@dataclass
class CallableAdapter:
    """``--adapter module:callable`` (and ``naive``, ``integrator``, ``toolshim``): ``None`` or an exception refuses.

    Each call runs on a worker thread so the per-case limit holds; a call that overruns is
    a refusal and its thread is abandoned (Python cannot kill a thread), so a hung
    in-process adapter keeps burning CPU until the scorer exits.
    """

    fn: Normaliser
    description: str

    def run(
        self, items: Sequence[Item], *, timeout: float, progress: Progress | None = None
    ) -> AdapterRun:
        out = AdapterRun(answers={})
        worker = _Worker()
        start = time.perf_counter()
        for done, item in enumerate(items, 1):
            key = str(item["id"])
            tools = _copy_json(item["tools"])  # the adapter may mutate its arguments
            t0 = time.perf_counter()
            try:
                ok, value = worker.call(self.fn, item["text"], tools, timeout)
            except TimeoutError:
                worker = _Worker()
                ok, value = True, None
                out.notes[key] = f"no answer within {timeout:g}s"
                out.errors[key] = out.notes[key]
            out.case_seconds.append(time.perf_counter() - t0)
            if not ok:
                out.notes[key] = f"raised {type(value).__name__}: {value}"[:300]
                out.errors[key] = error_tail("".join(traceback.format_exception(value)))
                value = None
            out.answers[key] = value
            if progress:
                progress(done, len(items))
        out.total_seconds = time.perf_counter() - start
        return out


def as_json(value: Any) -> Any:
    """What an in-process adapter returned, as the plain JSON data it serialises to.

    The scorer grades JSON, and reads the value in several places (``grading``, the report's
    ``failure_details``): a ``dict`` subclass whose ``get``, ``keys`` or ``items`` lie, or a
    ``str`` whose ``__eq__`` always says yes, would show each reader something else. Read once
    here, the answer is one plain value whatever the object claims. A value that is not JSON
    (NaN, an int past a double, a set, nesting past the stack, an object whose methods raise)
    becomes the text ``not JSON: ...``, which grades as the value it was: a failed return.
    """
    if value is None:
        return None
    try:
        return loads_strict(canonical(value))
    except Exception as exc:  # the adapter's own __iter__/items/__repr__ may raise anything
        return f"not JSON: a {type(value).__name__} ({type(exc).__name__})"


def _copy_json(value: Any) -> Any:
    """A deep copy of plain JSON data (faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _import_target(spec: str) -> Any:
    """Import ``module:attr.path`` (or ``path/to/file.py:attr``) and return the attribute.

    A file's folder goes first on ``sys.path``, so the adapter can import its sibling modules
    as it would when run from there.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AdapterError(f"adapter {spec!r} is not in the form module:callable")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).resolve()
            folder = str(path.parent)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            loc = importlib.util.spec_from_file_location(f"_toolcall300_adapter_{path.stem}", path)
            if loc is None or loc.loader is None:
                raise ImportError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(loc)
            sys.modules[loc.name] = module  # dataclasses and pickling look the module up
            loc.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.append(os.getcwd())  # `yourmodule:normalise` from the current folder
            module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # sys.exit(2) on import must not pass for a regression
        raise AdapterError(f"cannot import adapter module {module_name!r}: {exc!r}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise AdapterError(f"adapter module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise AdapterError(f"adapter {spec!r} is not callable")
    return target


#: The reference normaliser's names: ``toolshim`` and the published ``toolshim:normalise``
#: (which no ``toolshim`` module on the path may shadow, the kit's entry script included).
_REFERENCE = "toolcall300.toolshim:normalise"
_REFERENCE_SPECS = frozenset({"toolshim", "toolshim:normalise", _REFERENCE})


def load_callable(spec: str) -> CallableAdapter:
    """The adapter named by ``--adapter``: the controls ``naive`` (C1) and ``integrator``
    (C2), ``toolshim[:normalise]``, or ``module:callable``."""
    if spec == "naive":
        return CallableAdapter(naive, "naive")
    if spec == "integrator":
        return CallableAdapter(integrator, "integrator")
    if spec in _REFERENCE_SPECS:  # imported by name: scoring never imports toolshim's code
        return CallableAdapter(_import_target(_REFERENCE), "toolshim:normalise")
    return CallableAdapter(_import_target(spec), spec)


_TOOLSHIM = re.compile(r"(?<![\w-])toolshim(?![\w-])")


def is_reference_normaliser(description: str) -> bool:
    """Whether the adapter is toolshim (in-process or as a program), whose score on this
    corpus is in-sample (see README).

    >>> is_reference_normaliser("cmd --stream: toolcall300 toolshim --stream")
    True
    >>> is_reference_normaliser("my_toolshim_fork:normalise")
    False
    """
    return bool(_TOOLSHIM.search(description))


# --------------------------------------------------------------------------- adapter programs


#: How much of a stdout over the output limit is kept as the returned text.
CAPPED_TEXT_BYTES = 4096


def interpret_output(result: streamproto.OnceResult, timeout: float) -> tuple[Any, str | None]:
    """D12.1: map one program run to ``(returned value, note)``.

    A timeout, a non-zero exit, empty stdout or the JSON ``null`` is a refusal. Output that is
    not JSON is a failed case, not a refusal: it is passed on as the raw text, which the
    scorer grades as a schema-invalid return (D1.1).
    """
    if result.output_capped:  # any text grades alike (D1.1): keep its start, not 64 MiB of it
        text = result.stdout[:CAPPED_TEXT_BYTES].decode("utf-8", "replace")
        return text, "stdout over the output limit"
    if result.timed_out:
        return None, f"no answer within {timeout:g}s"
    if result.exit_code != 0:
        tail = result.stderr_tail.strip().splitlines()[-1:] or [""]
        return None, f"exit {result.exit_code} {tail[0]}".strip()[:300]
    text = result.stdout.decode("utf-8", "replace")
    if not text.strip():
        return None, "empty stdout"
    try:
        value = streamproto.loads_output(text)
    except (ValueError, RecursionError):
        return text, "stdout is not JSON"
    return value, ("null" if value is None else None)


def program_error(result: streamproto.OnceResult, timeout: float) -> str | None:
    """Why one program run broke instead of answering, with its stderr's tail; None if it answered.

    A refusal (exit 0 with empty stdout or ``null``) is an answer; a timeout, a non-zero exit,
    a crash, an output flood or stdout that is not JSON is an adapter error.
    """
    if result.output_capped:
        what = "stdout over the output limit"
    elif result.timed_out:
        what = f"no answer within {timeout:g}s"
    elif result.exit_code != 0:
        what = f"exit {result.exit_code}"
    else:
        text = result.stdout.decode("utf-8", "replace")
        try:
            if text.strip():
                streamproto.loads_output(text)
            return None
        except (ValueError, RecursionError):
            what = "stdout is not JSON: " + text.strip()[:120]
    tail = error_tail(result.stderr_tail)
    return f"{what}\n{tail}" if tail else what


@dataclass
class CommandAdapter:
    """``--adapter-cmd CMD``: one process per case, ``{"text","tools"}`` on stdin.

    ``max_output_bytes`` bounds the stdout of the whole run, as in a stream (64 MiB in all,
    docs/adapter-protocols.md): per case alone, 300 cases could keep 300 times that.
    A case that starts with the budget spent is capped at its first byte.
    """

    argv: list[str]
    description: str
    popen_kwargs: dict[str, Any] = field(default_factory=dict)
    max_output_bytes: int = streamproto.DEFAULT_MAX_OUTPUT_BYTES

    def run(
        self, items: Sequence[Item], *, timeout: float, progress: Progress | None = None
    ) -> AdapterRun:
        out = AdapterRun(answers={})
        start = time.perf_counter()
        budget = self.max_output_bytes
        for done, item in enumerate(items, 1):
            key = str(item["id"])
            payload = json.dumps({"text": item["text"], "tools": item["tools"]}, ensure_ascii=False)
            try:
                result = streamproto.run_once(
                    self.argv,
                    payload.encode("utf-8"),
                    timeout=timeout,
                    max_output_bytes=budget,
                    popen_kwargs=self.popen_kwargs,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise AdapterError(f"cannot run adapter command {self.argv[0]!r}: {exc}") from exc
            budget -= len(result.stdout)
            value, note = interpret_output(result, timeout)
            out.answers[key] = value
            out.case_seconds.append(result.elapsed)
            if note:
                out.notes[key] = note
            error = program_error(result, timeout)
            if error:
                out.errors[key] = error
            if progress:
                progress(done, len(items))
        out.total_seconds = time.perf_counter() - start
        return out


@dataclass
class StreamAdapter:
    """``--adapter-cmd CMD --stream``: one long-lived process over JSON Lines."""

    argv: list[str]
    description: str
    popen_kwargs: dict[str, Any] = field(default_factory=dict)
    max_output_bytes: int = streamproto.DEFAULT_MAX_OUTPUT_BYTES
    max_line_bytes: int = streamproto.DEFAULT_MAX_LINE_BYTES

    def run(
        self, items: Sequence[Item], *, timeout: float, progress: Progress | None = None
    ) -> AdapterRun:
        try:
            result = streamproto.run_stream(
                self.argv,
                items,
                per_case_timeout=timeout,
                total_timeout=timeout * max(1, len(items)),
                max_output_bytes=self.max_output_bytes,
                max_line_bytes=self.max_line_bytes,
                popen_kwargs=self.popen_kwargs,
                progress=progress,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise AdapterError(f"cannot run adapter command {self.argv[0]!r}: {exc}") from exc
        if progress and result.unanswered:
            progress(len(items), len(items))  # close the bar; the gaps are refusals
        errors = stream_errors(result)
        return AdapterRun(
            answers=result.answers,
            notes={key: text.partition("\n")[0] for key, text in errors.items()},
            errors=errors,
            # send to answer: it includes the time a case waited behind the ones before it,
            # which is what a caller of a stream waits; wall time per case is in timing()
            case_seconds=[
                result.latencies[key] for key in result.answers if key in result.latencies
            ],
            total_seconds=result.elapsed,
            warnings=stream_warnings(result),
        )


def stream_warnings(result: streamproto.StreamResult) -> list[str]:
    """One line per protocol problem the stream showed, for stderr (grades are unaffected)."""
    out: list[str] = []
    if result.stopped_reason:
        out.append(f"stream stopped early: {result.stopped_reason} (exit {result.exit_code})")
    if result.unanswered:
        out.append(f"{len(result.unanswered)} id(s) never answered: counted as refusals")
    if result.unknown_ids:
        out.append(f"{len(result.unknown_ids)} answer(s) for ids never asked, ignored")
    if result.duplicate_answers:
        out.append(f"{result.duplicate_answers} duplicate answer(s), the first one kept")
    if result.malformed_lines:
        out.append(f'{result.malformed_lines} stdout line(s) not a {{"id","call"}} object, ignored')
    return out


def command_description(argv: Sequence[str], stream: bool) -> str:
    """How a command adapter is named in the report."""
    return ("cmd --stream: " if stream else "cmd: ") + shlex.join(argv)
