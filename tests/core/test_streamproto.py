"""The stream protocol client against misbehaving adapter programs (small python scripts):
crash halfway, hang, flood stdout, unknown ids, non-JSON, out of order, never read stdin."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.budget import examples

from toolcall300.scoring import protocol as streamproto
from toolcall300.scoring.protocol import run_once, run_stream

ITEMS = [{"id": f"c{i}", "text": f"text {i}", "tools": []} for i in range(5)]
IDS = [item["id"] for item in ITEMS]

PRELUDE = """
import json, sys, time, os
def answer(key, call):
    sys.stdout.write(json.dumps({"id": key, "call": call}) + "\\n")
    sys.stdout.flush()
"""


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "adapter.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(path)]


def stream(
    argv: list[str], items: list[dict[str, Any]] = ITEMS, **kw: Any
) -> streamproto.StreamResult:
    options: dict[str, Any] = {"per_case_timeout": 2.0, "total_timeout": 10.0}
    options.update(kw)
    return run_stream(argv, items, **options)


def test_answers_out_of_order_are_matched_by_id(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        rows = [json.loads(line) for line in sys.stdin]
        for row in reversed(rows):
            answer(row["id"], None if row["id"] == "c2" else {"name": row["text"], "arguments": {}})
        """,
    )
    result = stream(argv)
    assert result.stopped_reason is None and result.exit_code == 0
    assert list(result.answers) == IDS  # every asked id, in asking order
    assert result.answers["c2"] is None and result.answers["c4"] == {
        "name": "text 4",
        "arguments": {},
    }
    assert result.unanswered == [] and result.malformed_lines == 0
    assert set(result.latencies) == set(IDS) == set(result.answered_at)
    assert max(result.answered_at.values()) <= result.elapsed


def test_a_crash_halfway_leaves_the_rest_unanswered(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        for n, line in enumerate(sys.stdin):
            if n == 2:
                sys.stderr.write("Traceback: exploded on purpose\\n")
                sys.exit(3)
            answer(json.loads(line)["id"], {"name": "x", "arguments": {}})
        """,
    )
    result = stream(argv)
    assert result.stopped_reason == "exited" and result.exit_code == 3
    assert result.unanswered == ["c2", "c3", "c4"]
    assert result.answers["c3"] is None and result.answers["c0"] is not None
    assert "exploded on purpose" in result.stderr_tail


def test_a_hang_stops_at_the_per_case_limit_and_kills_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    argv = script(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        line = sys.stdin.readline()
        answer(json.loads(line)["id"], None)
        time.sleep(60)
        """,
    )
    result = stream(argv, per_case_timeout=1.5)  # how fast it stops: bench/bench_limits.py
    assert result.stopped_reason == "idle_timeout"
    assert result.unanswered == IDS[1:]
    assert result.exit_code == -signal.SIGKILL
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10  # poll: the kernel delivers a group kill asynchronously
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child), "the adapter's child survived the group kill"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (reparented, not yet reaped by init) counts as dead
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_total_timeout_stops_a_slow_adapter(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        for line in sys.stdin:
            answer(json.loads(line)["id"], None)
            time.sleep(60)
        """,
    )
    result = stream(argv, per_case_timeout=30.0, total_timeout=2.0)
    assert result.stopped_reason == "total_timeout"
    assert result.unanswered == IDS[1:]


def test_a_stdout_flood_without_newlines_stops_at_the_output_cap(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        line = sys.stdin.readline()
        answer(json.loads(line)["id"], None)
        while True:
            sys.stdout.write("x" * 65536)
        """,
    )
    result = stream(argv, max_output_bytes=1_000_000, max_line_bytes=10_000)
    assert result.stopped_reason == "output_cap"
    assert "c0" not in result.unanswered and result.unanswered == IDS[1:]
    assert result.malformed_lines == 1  # one over-long line, counted once


def test_over_long_lines_are_skipped_and_later_answers_still_count(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        rows = [json.loads(line) for line in sys.stdin]
        sys.stdout.write(json.dumps({"id": "c0", "call": {"pad": "y" * 50000}}) + "\\n")
        for row in rows:
            answer(row["id"], {"name": "ok", "arguments": {}})
        """,
    )
    result = stream(argv, max_line_bytes=10_000)
    assert result.stopped_reason is None and result.unanswered == []
    assert result.malformed_lines == 1
    assert result.answers["c0"] == {"name": "ok", "arguments": {}}


def test_unknown_ids_non_json_and_duplicates_are_counted_not_trusted(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        rows = [json.loads(line) for line in sys.stdin]
        print("Loading model... done", flush=True)
        print("[1, 2, 3]", flush=True)
        print(json.dumps({"id": "c0"}), flush=True)
        answer("zz-never-asked", {"name": "x", "arguments": {}})
        answer(7, None)
        for row in rows:
            answer(row["id"], {"name": "first", "arguments": {}})
            if row["id"] == "c1":  # a duplicate while ids are still outstanding
                answer("c1", {"name": "second", "arguments": {}})
        """,
    )
    result = stream(argv)
    assert result.malformed_lines == 3
    assert result.unknown_ids == ["zz-never-asked", "7"]
    assert result.duplicate_answers == 1
    assert result.answers["c1"] == {"name": "first", "arguments": {}}
    assert result.unanswered == []


def test_an_adapter_that_never_reads_stdin_does_not_block_the_writer(tmp_path: Path) -> None:
    argv = script(tmp_path, "time.sleep(60)\n")
    big = [{"id": f"b{i}", "text": "z" * 100_000, "tools": []} for i in range(20)]  # > pipe buffer
    result = stream(argv, big, per_case_timeout=0.5)  # a blocked writer would wait for exit
    assert result.stopped_reason == "idle_timeout"
    assert len(result.unanswered) == 20


def test_a_skipped_id_is_waited_for_then_refused(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        for line in sys.stdin:
            row = json.loads(line)
            if row["id"] != "c3":
                answer(row["id"], {"name": "n", "arguments": {}})
        time.sleep(60)
        """,
    )
    result = stream(argv, per_case_timeout=1.5)
    assert result.unanswered == ["c3"] and result.answers["c3"] is None
    assert result.stopped_reason == "idle_timeout"


def test_a_final_answer_without_newline_counts(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        rows = [json.loads(line) for line in sys.stdin]
        sys.stdout.write("\\n".join(json.dumps({"id": r["id"], "call": None}) for r in rows))
        """,
    )
    result = stream(argv)
    assert result.unanswered == [] and result.stopped_reason is None


def test_popen_kwargs_reach_the_process(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        for line in sys.stdin:
            answer(json.loads(line)["id"], {"name": os.environ.get("MARK", ""), "arguments": {"cwd": os.getcwd()}})
        """,
    )
    env = {**os.environ, "MARK": "sandboxed"}
    result = stream(argv, popen_kwargs={"env": env, "cwd": str(tmp_path)})
    assert result.answers["c0"] == {"name": "sandboxed", "arguments": {"cwd": str(tmp_path)}}


def test_item_ids_must_be_unique_strings() -> None:
    with pytest.raises(ValueError, match="unique strings"):
        streamproto.encode_items([{"id": "a"}, {"id": "a"}])
    with pytest.raises(ValueError, match="unique strings"):
        streamproto.encode_items([{"id": 1}])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"id": "a", "call": null}', ("a", None)),
        (b'{"id": "a", "call": [1]}', ("a", [1])),
        (b'{"id": "a"}', None),
        (b'{"call": null}', None),
        (b"[]", None),
        (b'{"id": "a", "call": NaN}', None),
        (b"\xff\xfe", None),
        (b"[" * 100_000, None),
        # a lone surrogate: JSON grammar, but no character a UTF-8 report can hold
        (b'{"id": "a", "call": {"name": "\\ud800", "arguments": {}}}', None),
        (b'{"id": "a", "call": "\\ud83d\\ude00"}', ("a", "\U0001f600")),  # a pair is one
        (b'{"id": "a", "call": "a\xe2\x80\xa8b"}', ("a", "a\u2028b")),  # not a line break here
        (b'{"id": "a", "id": "b", "call": null}', None),  # duplicate keys
    ],
)
def test_parse_answer(line: bytes, expected: Any) -> None:
    assert streamproto.parse_answer(line) == expected


# ------------------------------------------------------------------ one process per case


def test_run_once_returns_stdout_and_exit_code(tmp_path: Path) -> None:
    argv = script(tmp_path, "sys.stdout.write(sys.stdin.read().upper()); sys.exit(4)\n")
    result = run_once(argv, b"hello", timeout=5)
    assert result.stdout == b"HELLO" and result.exit_code == 4 and not result.timed_out


def test_run_once_times_out_a_hang(tmp_path: Path) -> None:
    argv = script(tmp_path, "time.sleep(60)\n")
    result = run_once(argv, b"x" * 1_000_000, timeout=0.5)  # never reads a big stdin either
    assert result.timed_out and result.exit_code == -signal.SIGKILL


def test_run_once_times_out_a_process_that_closed_stdout_but_lingers(tmp_path: Path) -> None:
    argv = script(tmp_path, "os.close(1); time.sleep(60)\n")
    result = run_once(argv, b"", timeout=0.5)
    assert result.timed_out


def test_run_once_caps_a_flood(tmp_path: Path) -> None:
    argv = script(tmp_path, "while True: sys.stdout.write('y' * 65536)\n")
    result = run_once(argv, b"", timeout=5, max_output_bytes=100_000)
    assert result.output_capped and len(result.stdout) == 100_000


def test_progress_is_reported_per_answer(tmp_path: Path) -> None:
    argv = script(tmp_path, "for line in sys.stdin:\n    answer(json.loads(line)['id'], None)\n")
    seen: list[tuple[int, int]] = []
    stream(argv, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(n, 5) for n in range(1, 6)]


# ------------------------------------------------------------------ line splitting (property)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20),
)
def test_line_splitting_does_not_depend_on_how_reads_are_chunked(
    lines: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    whole = streamproto._LineReader(20)
    expected = whole.feed(data)
    pieces = streamproto._LineReader(20)
    got: list[bytes] = []
    pos, i = 0, 0
    while pos < len(data):
        step = cuts[i % len(cuts)]
        got += pieces.feed(data[pos : pos + step])
        pos, i = pos + step, i + 1
    assert got == expected == [line for line in lines if len(line) <= 20]
    assert pieces.oversized == whole.oversized == sum(len(line) > 20 for line in lines)
