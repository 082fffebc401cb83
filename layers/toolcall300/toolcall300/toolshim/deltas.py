"""toolshim for streamed calls: one stream's provider events in, the call (or a refusal) out.

Reads the four wire shapes of docs/deltas.md (OpenAI Chat Completions chunks, OpenAI Responses
events, Anthropic Messages events, Gemini ``functionCall`` chunks) into the name, the
arguments text and the provider's own end signal, then hands the call to the single-call
pipeline under the deltas decisions (DS1-DS4, ``score --spec`` of the deltas track in
docs/deltas.md). The incremental form, :class:`DeltaSession`, commits the call's values as
soon as nothing later in a well-formed stream can change them (DS4). It does not split
several calls (the parallel track) and it never guesses at a lost fragment.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Generator, Iterable, Iterator
from typing import Any, TextIO

from toolcall300.canonical import loads_strict, raw_decode_strict
from toolcall300.toolshim.pipeline import normalise

Commit = dict[str, Any]


class _Reading:
    """What the events so far say: the name, the arguments text, whether the call closed,
    and the end signal (``None`` until the provider says, then ``"complete"`` or ``"cut"``)."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.parts: list[str] = []
        self.final_text: str | None = None  # a provider's own copy of the whole arguments
        self.args_object: Any = None  # Gemini: arguments arrive as an object
        self.partial: list[Any] = []  # Vertex: partialArgs, in order
        self.closed = False
        self.end: str | None = None

    @property
    def text(self) -> str:
        return self.final_text if self.final_text is not None else "".join(self.parts)

    def feed(self, event: Any) -> None:  # noqa: C901, PLR0915
        if not isinstance(event, dict):
            return
        if isinstance(event.get("choices"), list):  # OpenAI Chat Completions chunk
            for choice in event["choices"]:
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                delta = _obj(choice.get("delta"))
                for call in delta.get("tool_calls") or []:
                    fn = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(fn, dict) or self.closed:
                        continue
                    if isinstance(fn.get("name"), str) and self.name is None:
                        self.name = fn["name"]
                    if isinstance(fn.get("arguments"), str):
                        self.parts.append(fn["arguments"])
                reason = choice.get("finish_reason")
                if reason is not None:
                    self.closed = True
                    self.end = "cut" if reason == "length" else "complete"
            return
        kind = event.get("type")
        if isinstance(kind, str) and kind.startswith("response."):  # OpenAI Responses
            item = _obj(event.get("item"))
            if kind == "response.output_item.added" and item.get("type") == "function_call":
                self.name = item.get("name") if isinstance(item.get("name"), str) else None
            elif kind == "response.function_call_arguments.delta" and not self.closed:
                if isinstance(event.get("delta"), str):
                    self.parts.append(event["delta"])
            elif kind == "response.function_call_arguments.done" and not self.closed:
                if isinstance(event.get("arguments"), str):
                    self.final_text = event["arguments"]  # DS1: the provider's own copy
                self.closed = True
            elif kind == "response.output_item.done" and item.get("type") == "function_call":
                self.closed = True
                if item.get("status") == "incomplete":
                    self.end = "cut"
                elif item.get("status") == "completed":
                    self.end = "complete"
            elif kind == "response.incomplete":
                self.closed, self.end = True, "cut"
            elif kind == "response.completed":
                self.closed, self.end = True, self.end or "complete"
            return
        if kind in ("content_block_start", "content_block_delta", "content_block_stop"):
            if event.get("index", 0) != 0:
                return
            if kind == "content_block_start":
                block = event.get("content_block")
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    self.name = block.get("name") if isinstance(block.get("name"), str) else None
            elif kind == "content_block_delta" and not self.closed:
                piece = _obj(event.get("delta")).get("partial_json")
                if isinstance(piece, str):
                    self.parts.append(piece)
            else:
                self.closed = True
            return
        if kind == "message_delta":
            delta = _obj(event.get("delta"))
            reason = delta.get("stop_reason")
            if reason is not None:
                self.closed = True
                self.end = "cut" if reason == "max_tokens" else "complete"
            return
        if isinstance(event.get("candidates"), list):  # Gemini
            for cand in event["candidates"]:
                if not isinstance(cand, dict):
                    continue
                content = _obj(cand.get("content"))
                for part in content.get("parts") or []:
                    call = part.get("functionCall") if isinstance(part, dict) else None
                    if isinstance(call, dict) and not self.closed:
                        if isinstance(call.get("name"), str) and self.name is None:
                            self.name = call["name"]
                        if "args" in call:
                            self.args_object = call["args"]
                        for arg in call.get("partialArgs") or []:
                            self.partial.append(arg)  # Vertex: one value by its jsonPath
                        if call.get("willContinue") is False:
                            self.closed = True
                reason = cand.get("finishReason")
                if reason is not None:
                    self.closed = True
                    self.end = "cut" if reason == "MAX_TOKENS" else "complete"

    def settled(self) -> bool:
        """DS4: whether nothing later in a well-formed stream can change the answer: the call
        closed and either the end signal came or its arguments are whole JSON (read the same
        way whether the stream then says complete or cut)."""
        if not self.closed:
            return False
        whole = self.args_object is not None or (
            bool(self.partial) and not _open_paths(self.partial)
        )
        return self.end is not None or whole or _documents(self.text) == 1

    def answer(self, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The call these events carry under DS1-DS3 (and rule 11 on a cut), or None."""
        if not isinstance(self.name, str):
            return None
        name = json.dumps(self.name)
        if self.partial and self.args_object is None:
            built = _from_paths(self.partial, drop_open=self.end == "cut")  # rule 11 on a cut
            if built is None:
                return None  # DS2: a value left open on a normal end, or a path not understood
            return normalise(json.dumps({"name": self.name, "arguments": built}), tools)
        if self.args_object is not None:
            return normalise(json.dumps({"name": self.name, "arguments": self.args_object}), tools)
        text = self.text
        if not text.strip():
            return normalise('{"name": ' + name + "}", tools)  # DS3: no arguments is {} (D1.3)
        if self.end == "cut":
            return normalise('{"name": ' + name + ', "arguments": ' + text, tools)  # rule 11
        count = _documents(text)
        if count == 1:
            return normalise('{"name": ' + name + ', "arguments": ' + text + "}", tools)
        if count > 1:  # TRACKS_CONTRACT: documents read apart; equal copies are one call
            answers = [
                normalise('{"name": ' + name + ', "arguments": ' + doc + "}", tools)
                for doc in _split_documents(text)
            ]
            first = answers[0]
            same = all(
                a is not None and json.dumps(a, sort_keys=True) == json.dumps(first, sort_keys=True)
                for a in answers
            )
            return first if same else None
        return None  # DS2: the provider said complete, but its arguments text is not JSON


_STEP = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)
_KINDS = ("stringValue", "numberValue", "boolValue", "nullValue")


def _steps(path: Any) -> list[Any] | None:
    """The steps of an RFC 9535 path (``$.a.b[0]``, ``$['a']``), or None when it is not one."""
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    steps: list[Any] = []
    pos = 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return None
        if m[1] is not None:
            steps.append(m[1])
        elif m[2] is not None:
            steps.append(int(m[2]))
        else:
            quoted = m[3] if m[3] is not None else m[4]
            try:
                steps.append(loads_strict('"' + quoted.replace("\\'", "'") + '"'))
            except ValueError:
                return None
        pos = m.end()
    return steps or None


def _open_paths(args: list[Any]) -> set[str]:
    """The paths whose last piece said another follows (``willContinue``)."""
    state: dict[str, bool] = {}
    for arg in args:
        if isinstance(arg, dict) and isinstance(arg.get("jsonPath"), str):
            state[arg["jsonPath"]] = arg.get("willContinue") is True
    return {path for path, going in state.items() if going}


def _from_paths(args: list[Any], *, drop_open: bool) -> dict[str, Any] | None:
    """The arguments Vertex's ``partialArgs`` spell (a string's pieces joined), or None when a
    path is not understood or, unless ``drop_open`` (rule 11: a cut), a value never finished."""
    still = _open_paths(args)
    if still and not drop_open:
        return None
    root: dict[str, Any] = {}
    for arg in args:
        if not isinstance(arg, dict) or arg.get("jsonPath") in still:
            continue
        steps = _steps(arg.get("jsonPath"))
        kind = next((k for k in _KINDS if k in arg), None)
        if steps is None or kind is None:
            return None
        value = None if kind == "nullValue" else arg[kind]
        node: Any = root
        for step, after in itertools.pairwise(steps):
            fresh: Any = [] if isinstance(after, int) else {}
            if isinstance(node, dict) and isinstance(step, str):
                node = node.setdefault(step, fresh)
            elif isinstance(node, list) and isinstance(step, int) and step <= len(node):
                if step == len(node):
                    node.append(fresh)
                node = node[step]
            else:
                return None
        last = steps[-1]
        if isinstance(node, dict) and isinstance(last, str):
            joined = kind == "stringValue" and isinstance(node.get(last), str)
            node[last] = node[last] + value if joined else value
        elif isinstance(node, list) and isinstance(last, int) and last <= len(node):
            if last == len(node):
                node.append(value)
            elif kind == "stringValue" and isinstance(node[last], str):
                node[last] += value
            else:
                node[last] = value
        else:
            return None
    return root


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (a field a stream left out)."""
    return value if isinstance(value, dict) else {}


def _split_documents(text: str) -> list[str]:
    docs: list[str] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return docs
        try:
            _, end = raw_decode_strict(text, pos)
        except ValueError:
            return []
        docs.append(text[pos:end])
        pos = end


def _documents(text: str) -> int:
    """How many whole JSON documents ``text`` is (0: it is not whole documents)."""
    try:
        loads_strict(text)
        return 1
    except (ValueError, RecursionError):
        pass
    try:
        return len(_split_documents(text))
    except RecursionError:
        return 0


class DeltaSession:
    """The incremental form: feed events one by one; :meth:`feed` returns the values it
    commits (``{"path": [key], "value": v}``), each final under DS4; :meth:`end` returns the
    call. A committed value is never changed: the answer is fixed when it settles."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.reading = _Reading()
        self.fixed: tuple[dict[str, Any] | None] | None = None

    def feed(self, event: Any) -> list[Commit]:
        if self.fixed is not None:
            return []  # DS1: nothing after the call settled belongs to it
        self.reading.feed(event)
        if not self.reading.settled():
            return []
        answer = self.reading.answer(self.tools)
        self.fixed = (answer,)
        if answer is None:
            return []
        return [{"path": [key], "value": value} for key, value in answer["arguments"].items()]

    def end(self) -> dict[str, Any] | None:
        if self.fixed is not None:
            return self.fixed[0]
        return (
            self.reading.answer(self.tools)
            if self.reading.end or self.reading.closed
            else _unclosed(self.reading, self.tools)
        )


def _unclosed(reading: _Reading, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """DS2: a stream that ended without its provider closing the call said nothing about its
    end: read it like a complete one (whole JSON, or refused)."""
    return reading.answer(tools)


def normalise_events(events: Iterable[Any], tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The call one stream's provider events carry (any of the four shapes), or None.

    >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {
    ...     "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    >>> events = [{"type": "content_block_start", "index": 0,
    ...            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}},
    ...           {"type": "content_block_delta", "index": 0,
    ...            "delta": {"type": "input_json_delta", "partial_json": '{"n": "4'}},
    ...           {"type": "content_block_delta", "index": 0,
    ...            "delta": {"type": "input_json_delta", "partial_json": '2"}'}},
    ...           {"type": "content_block_stop", "index": 0},
    ...           {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}]
    >>> normalise_events(events, tools)
    {'name': 'f', 'arguments': {'n': 42}}
    """
    session = DeltaSession(tools)
    for event in events:
        session.feed(event)
    return session.end()


def stream_adapter(
    events: Iterator[Any], tools: list[dict[str, Any]]
) -> Generator[Commit, None, dict[str, Any] | None]:
    """The deltas adapter entry (``--adapter toolshim`` on a deltas corpus): pulls events
    one by one, yields each commit as soon as it is made, returns the call."""
    session = DeltaSession(tools)
    for event in events:
        yield from session.feed(event)
    return session.end()


def serve(stdin: TextIO, stdout: TextIO) -> None:
    """The deltas process protocol (docs/adapter-protocols.md, "The deltas track"), served
    by :class:`DeltaSession`: ``python -m toolcall300.toolshim.deltas``."""
    sessions: dict[Any, DeltaSession] = {}
    for line in stdin:
        try:
            message = loads_strict(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(message, dict):
            continue
        key = message.get("id")
        if "tools" in message:
            tools = message["tools"]
            sessions[key] = DeltaSession(tools if isinstance(tools, list) else [])
            continue
        session = sessions.get(key)
        if session is None:
            continue
        if "event" in message:
            reply: dict[str, Any] = {"id": key, "commits": session.feed(message["event"])}
        elif message.get("end") is True:
            reply = {"id": key, "call": session.end()}
            del sessions[key]
        else:
            continue
        stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
