"""The CPU-time guard around checks whose schema has a pattern."""

from __future__ import annotations

import json
import socket

import pytest

from toolcall300.argcheck import check as argcheck
from toolcall300.argcheck.check import CAP_CHECK
from toolcall300.service.api.bounded_check import check_body_bounded, needs_bound
from toolcall300.service.errors import REFUSAL_STATUS, refusal_status


def _body(pattern: str, value: str, key: str = "pattern") -> bytes:
    schema = {"type": "object", "properties": {"s": {"type": "string", key: pattern}}}
    return json.dumps({"schema": schema, "arguments": {"s": value}}).encode()


def test_polynomial_backtracking_is_cut_off_with_a_named_refusal() -> None:
    answer = check_body_bounded(_body("\\w*\\w*x", "a" * 20000), seconds=1)
    assert answer["refusal"]["code"] == CAP_CHECK
    assert "a" * 50 not in json.dumps(answer)  # no submitted value is echoed
    assert refusal_status(CAP_CHECK) == 422


def test_an_ordinary_pattern_gets_the_same_answer_as_in_process() -> None:
    for value in ("ABC", "abc"):
        body = _body("^[A-Z]{3}$", value)
        assert check_body_bounded(body) == argcheck.check_body(body)
        assert check_body_bounded(body, precheck=True) == argcheck.check_body(body, precheck=True)


def test_escaped_pattern_keys_are_seen() -> None:
    body = _body("^a$", "a").replace(b'"pattern"', b'"\\u0070attern"')
    assert json.loads(body)["schema"]["properties"]["s"]["pattern"] == "^a$"
    assert needs_bound(body)


def test_schemas_without_pattern_and_malformed_bodies_stay_in_process() -> None:
    assert not needs_bound(json.dumps({"schema": {"type": "object"}, "arguments": {}}).encode())
    assert not needs_bound(b"{not json")
    assert check_body_bounded(b"{not json")["refusal"]["code"] == "invalid_request_body"


def test_every_refusal_code_has_one_status_in_the_service_error_map() -> None:
    assert set(REFUSAL_STATUS) == {*argcheck.REFUSAL_CODES, CAP_CHECK}
    assert refusal_status(argcheck.CAP_BODY) == 413
    assert refusal_status(CAP_CHECK) == 422
    assert {refusal_status(c) for c in argcheck.REFUSAL_CODES if c != argcheck.CAP_BODY} == {400}


def test_pattern_checks_run_in_children_of_the_warm_pool() -> None:
    from toolcall300.service.api.bounded_check import POOL

    body = _body("^[A-Z]{3}$", "abc")
    assert POOL.check(body, precheck=False, seconds=2) == argcheck.check_body(body)
    zygote = POOL._zygote
    assert zygote is not None and zygote.poll() is None  # the warm process stays up
    (first, one), (second, other) = POOL.take(), POOL.take()
    with one, other:
        assert first != second and zygote.pid not in (first, second)  # one child per check
    assert len(POOL._ready) + POOL._pending == POOL.size  # replacements asked for


def test_the_pool_outlives_a_child_past_its_budget_and_a_lost_zygote() -> None:
    from toolcall300.service.api.bounded_check import POOL

    ordinary = _body("^[A-Z]{3}$", "ABC")
    over = POOL.check(_body("\\w*\\w*x", "a" * 20000), precheck=False, seconds=1)
    assert over["refusal"]["code"] == CAP_CHECK
    assert POOL.check(ordinary, precheck=False, seconds=2)["verdict"] == "VALID"
    assert POOL._zygote is not None
    POOL._zygote.kill()
    POOL._zygote.wait()
    assert check_body_bounded(ordinary)["verdict"] == "VALID"
    assert POOL._zygote is not None and POOL._zygote.poll() is None  # started again


def test_a_forked_process_starts_its_own_pool() -> None:
    import os

    from toolcall300.service.api.bounded_check import POOL

    body = _body("^[A-Z]{3}$", "ABC")
    assert POOL.check(body, precheck=False, seconds=2)["verdict"] == "VALID"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child must not use the parent's zygote or its ready children
        try:
            ok = POOL.check(body, precheck=False, seconds=2)["verdict"] == "VALID"
            ok = ok and POOL._zygote is not None and POOL._owner == os.getpid()
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"
    assert POOL.check(body, precheck=False, seconds=2)["verdict"] == "VALID"


def test_a_child_frames_its_answer_so_it_is_read_without_waiting_for_the_childs_exit() -> None:
    import struct

    from toolcall300.service.api.bounded_check import POOL

    body = _body("^[A-Z]{3}$", "abc")
    _, conn = POOL.take()
    with conn:
        conn.settimeout(10)
        conn.sendall(struct.pack("!QBQ", 2, 0, len(body)) + body)
        (length,) = struct.unpack("!Q", conn.recv(8, socket.MSG_WAITALL))
        answer = conn.recv(length, socket.MSG_WAITALL)
        assert json.loads(answer) == argcheck.check_body(body)
        assert conn.recv(1) == b""  # nothing after the answer: the child then exits


def test_a_body_without_pattern_or_an_escape_in_its_bytes_is_decided_unparsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolcall300.service.api import bounded_check

    plain = json.dumps({"schema": {"type": "object"}, "arguments": {"s": "x"}}).encode()
    escaped = _body("^a$", "a").replace(b'"pattern"', b'"patt\\u0065rn"')

    def unparsed(*_: object, **__: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(bounded_check.json, "loads", unparsed)
    assert not needs_bound(plain)  # no key can spell pattern: not parsed
    with pytest.raises(AssertionError, match="parsed"):
        needs_bound(escaped)  # an escape could: parsed, as before
    monkeypatch.undo()
    assert needs_bound(escaped) and needs_bound(_body("^a$", "a"))
