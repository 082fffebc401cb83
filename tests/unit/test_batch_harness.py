"""The Batch harness image's entrypoint, run directly (no container engine here).

A local HTTP server plays S3's presigned links: GET serves the label-free inputs, PUT takes the
answers file. The entrypoint's answers file is then fed to the service's event handling.
"""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes

from toolcall300.canonical import jsonl_bytes
from toolcall300.jobs import harness
from toolcall300.jobs.failures import (
    EXIT_ANSWERS_NOT_UPLOADED,
    EXIT_INPUTS_UNREADABLE,
    EXIT_LINK_EXPIRED,
    EXIT_NO_COMMAND,
    HARNESS_EXITS,
)
from toolcall300.service.hosted import events

ROOT = Path(__file__).resolve().parents[2]
CASES = fakes.small_corpus(8)


def load_entrypoint() -> Any:
    spec = importlib.util.spec_from_file_location(
        "tc300_harness_entrypoint", ROOT / "infra" / "harness" / "entrypoint.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Links:
    """GET /inputs and PUT /answers, like the two presigned S3 links a job gets."""

    def __init__(self, inputs: bytes) -> None:
        self.inputs = inputs
        self.answers: bytes | None = None
        links = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/expired":  # S3, past the link's X-Amz-Expires
                    return self.s3_error(403, "AccessDenied", "Request has expired")
                self.send_response(200 if self.path == "/inputs" else 404)
                self.end_headers()
                if self.path == "/inputs":
                    self.wfile.write(links.inputs)

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/expired":  # S3, once the signing session has ended
                    return self.s3_error(400, "ExpiredToken", "The provided token has expired.")
                if self.path == "/refused":
                    return self.s3_error(403, "AccessDenied", "Access Denied")
                links.answers = body
                self.send_response(200)
                self.end_headers()

            def s3_error(self, status: int, code: str, message: str) -> None:
                xml = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(xml)))
                self.end_headers()
                self.wfile.write(xml)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "TC300_INPUTS_URL": f"{self.base}/inputs",
            "TC300_ANSWERS_URL": f"{self.base}/answers",
            "TC300_PER_CASE_TIMEOUT": "2",
            "TC300_TOTAL_TIMEOUT": "20",
            **extra,
        }


@pytest.fixture
def links() -> Iterator[Links]:
    served = Links(jsonl_bytes(harness.job_inputs(CASES)))
    yield served
    served.server.shutdown()
    served.server.server_close()


def test_the_entrypoint_runs_the_adapter_and_uploads_its_answers(links: Links) -> None:
    entry = load_entrypoint()
    assert entry.main(fakes.ECHO, links.env()) == 0
    assert links.answers is not None
    output = events.read_answers(links.answers)
    assert output.failure is None
    assert output.answers == {c["id"]: c["expected"] for c in CASES}
    assert json.loads(links.answers)["diagnostics"]["answered"] == len(CASES)


def test_a_failing_adapter_is_reported_in_the_answers_file(links: Links) -> None:
    entry = load_entrypoint()
    assert entry.main(fakes.NON_JSON, links.env()) == 0
    output = events.read_answers(links.answers or b"")
    assert output.failure is not None and output.failure["reason"] == "output_malformed"


def test_the_adapter_never_sees_the_links_or_credentials(links: Links) -> None:
    entry = load_entrypoint()
    spy = fakes.py(
        "import json,os,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
        "    print(json.dumps({'id':item['id'],'call':{'name':'env','arguments':{'env':sorted(os.environ)}}}),flush=True)\n"
    )
    assert entry.main(spy, links.env(AWS_SECRET_ACCESS_KEY="leak", TEAM_SETTING="kept")) == 0
    seen = next(iter(events.read_answers(links.answers or b"").answers.values()))["arguments"][
        "env"
    ]
    assert "TEAM_SETTING" in seen
    assert not [k for k in seen if k.startswith(("TC300_", "AWS_"))]


def test_labels_are_not_in_what_the_job_reads(links: Links) -> None:
    rows = [json.loads(line) for line in links.inputs.splitlines()]
    assert all(set(row) == {"id", "text", "tools"} for row in rows)
    assert b"expected" not in links.inputs


def test_the_harness_itself_failing_exits_with_a_code_naming_what_failed(links: Links) -> None:
    entry = load_entrypoint()
    assert entry.main([], links.env()) == EXIT_NO_COMMAND  # no CMD in the image
    expired = links.env(TC300_INPUTS_URL=f"{links.base}/missing")  # S3 answers 403 once expired
    assert entry.main(fakes.ECHO, expired) == EXIT_INPUTS_UNREADABLE
    assert entry.main(fakes.ECHO, {"PATH": "/usr/bin"}) == EXIT_INPUTS_UNREADABLE
    refused = links.env(TC300_ANSWERS_URL=f"{links.base}/refused")
    assert entry.main(fakes.ECHO, refused) == EXIT_ANSWERS_NOT_UPLOADED


def test_an_expired_link_is_reported_as_expired_not_as_the_adapter_failing(links: Links) -> None:
    """S3's two answers for an expired presigned link: past X-Amz-Expires (403 "Request has
    expired") and signed by a session that ended (400 ExpiredToken)."""
    entry = load_entrypoint()
    inputs_gone = links.env(TC300_INPUTS_URL=f"{links.base}/expired")
    assert entry.main(fakes.ECHO, inputs_gone) == EXIT_LINK_EXPIRED
    answers_gone = links.env(TC300_ANSWERS_URL=f"{links.base}/expired")
    assert entry.main(fakes.ECHO, answers_gone) == EXIT_LINK_EXPIRED
    reason, detail = HARNESS_EXITS[EXIT_LINK_EXPIRED]
    assert reason == "infra_error" and "expired" in detail


def test_the_dockerfile_keeps_the_harness_as_entrypoint() -> None:
    text = (ROOT / "infra" / "harness" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["python3", "/usr/local/bin/toolcall300-harness"]' in text
    assert "CMD [" in text


def test_the_inputs_are_derived_once_at_upload_without_labels_and_the_pointer_comes_last() -> None:
    corpus = fakes.corpus_bytes(fakes.small_corpus(5))
    derived = harness.derive_inputs(corpus)
    assert list(derived)[-1] == harness.INPUTS_POINTER  # uploaded last: never points at nothing
    pointer = json.loads(derived[harness.INPUTS_POINTER])
    assert pointer["corpus_sha256"] == hashlib.sha256(corpus).hexdigest()
    rows = [json.loads(line) for line in derived[pointer["key"]].splitlines()]
    assert len(rows) == pointer["cases"] == 5
    assert all(set(r) == {"id", "text", "tools"} for r in rows)
    assert b"expected" not in derived[pointer["key"]]


def test_a_crash_halfway_reaches_the_hosted_report_as_adapter_errors(links: Links) -> None:
    """The Batch path counts adapter errors as ``score --adapter-stream`` does: each id the
    crashed stream never answered is an error with the stream's stop and stderr's end."""
    from toolcall300.scoring.report import score_cases

    entry = load_entrypoint()
    assert entry.main(fakes.CRASH_HALF, links.env()) == 0
    output = events.read_answers(links.answers or b"")
    assert output.failure is None
    unanswered = sorted(k for k, v in output.answers.items() if v is None)
    assert unanswered and sorted(output.errors) == [
        k for k in unanswered if k in json.loads(links.answers or b"")["errors"]
    ]
    assert all(text.startswith("never answered (exited)") for text in output.errors.values())
    report = score_cases(CASES, output.answers, errors=output.errors)
    assert report["adapter_errors"] == len(output.errors) > 0


def test_the_answers_files_errors_are_untrusted_and_bounded() -> None:
    """The file comes from the team's container: an error is kept only for an id answered
    null (it can never turn an answer into something else), as a string, cut to its tail."""
    raw = json.dumps(
        {
            "answers": {"a": None, "b": {"name": "x", "arguments": {}}, "c": None},
            "errors": {"a": "x\n" * 10_000, "b": "said it broke", "c": 7, "zz": "not asked"},
        }
    ).encode()
    output = events.read_answers(raw)
    assert set(output.errors) == {"a"}
    assert 0 < len(output.errors["a"]) <= 800
    assert events.read_answers(b'{"answers": {}, "errors": []}').errors == {}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"answers": {"a": {"name": "x", "arguments": {"n": NaN}}}}',
        b'{"answers": {"a": {"name": "x", "arguments": {"n": 1e999}}}}',
        b'{"answers": {"a": {"name": "x", "arguments": {"n": 1, "n": 2}}}}',
        b'{"answers": {"a": null, "a": {"name": "x", "arguments": {}}}}',
        b'\xef\xbb\xbf{"answers": {}}',
    ],
)
def test_an_answers_file_that_is_not_strict_json_is_never_graded(raw: bytes) -> None:
    """E1: the one strict reader, as `toolcall300 score` reads an adapter's line; the harness
    never writes such a file, so it is output_malformed, not a graded answer."""
    output = events.read_answers(raw)
    assert output.answers == {} and output.failure is not None
    assert output.failure["reason"] == "output_malformed"


# ----------------------------------------------------------------------------- the deltas track


@pytest.fixture(scope="module")
def deltas_cases(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """A few real deltas cases: the first of each form and wire shape (support.corpus)."""
    from support.corpus import deltas_subset

    return deltas_subset(tmp_path_factory.mktemp("deltas"))


def deltas_env(links: Links, **extra: str) -> dict[str, str]:
    """A deltas job's environment; ``PYTHONPATH`` as the harness image sets it (the kit, where
    the sandbox shows it), so the adapter imports toolshim as it would in a team's image."""
    from toolcall300.jobs import sandbox

    kit = sandbox.KIT_MOUNT if sandbox.probe().filesystem_private else str(sandbox.kit())
    return links.env(TC300_TRACK="deltas", PYTHONPATH=kit, **extra)


@pytest.fixture
def deltas_links(deltas_cases: list[dict[str, Any]]) -> Iterator[Links]:
    from toolcall300.scoring.tracks import get_track

    served = Links(jsonl_bytes(get_track("deltas").adapter_items(deltas_cases)))
    yield served
    served.server.shutdown()
    served.server.server_close()


def deltas_crash_on(stream: str) -> list[str]:
    """toolshim's deltas process adapter, except that a copy whose first stream is ``stream``
    exits at once (a program that broke halfway); every other copy serves the protocol."""
    return fakes.py(
        "import itertools,json,sys\n"
        "from toolcall300.toolshim.deltas import serve\n"
        "first=sys.stdin.readline()\n"
        f"if json.loads(first)['id']=={stream!r}: sys.exit(3)\n"
        "serve(itertools.chain([first],sys.stdin),sys.stdout)\n"
    )


def score_deltas(cases: list[dict[str, Any]], answers: bytes) -> dict[str, Any]:
    """The trusted side's reading of a deltas job's answers file, judged by the track."""
    from toolcall300.scoring.tracks import get_track
    from toolcall300.scoring.tracks.deltas import run_from_records

    output = events.read_answers(answers)
    assert output.failure is None, output.failure
    run = run_from_records(cases, output.answers, errors=output.errors)
    return get_track("deltas").score(
        cases, run, adapter="job", corpus_sha256="x", corpus_version=None
    )


def test_the_entrypoint_drives_a_deltas_adapter_over_its_process_protocol_in_the_sandbox(
    deltas_links: Links, deltas_cases: list[dict[str, Any]]
) -> None:
    """A deltas run's job (``TC300_TRACK=deltas``): every partition of every stream is replayed
    to the sandboxed adapter one event at a time; the records it uploads, judged in trusted
    code, give toolshim's figures in process."""
    from toolcall300.scoring.tracks import get_track

    entry = load_entrypoint()
    command = ["python3", "-m", "toolcall300.toolshim.deltas"]
    assert entry.main(command, deltas_env(deltas_links)) == 0
    document = json.loads(deltas_links.answers or b"")
    streams = sum(len(c["partitions"]) for c in deltas_cases)
    assert document["diagnostics"]["streams"] == document["diagnostics"]["answered"] == streams
    assert document["diagnostics"]["starts"] == 1  # one long-lived program
    assert document["diagnostics"]["sandbox"]["seccomp"] is sandbox_has_seccomp()
    report = score_deltas(deltas_cases, deltas_links.answers or b"")
    track = get_track("deltas")
    items = track.adapter_items(deltas_cases)
    mine = track.score(
        deltas_cases,
        track.build_adapter("callable", "toolshim").run(items, timeout=10),
        adapter="in process",
        corpus_sha256="x",
        corpus_version=None,
    )
    for figure in ("exact", "streams", "streams_exact", "invariant", "commits", "commit_lead"):
        assert report[figure] == mine[figure], figure
    assert report["exact"] == len(deltas_cases) and report["unsafe_commits"] == 0


def sandbox_has_seccomp() -> bool:
    from toolcall300.jobs import sandbox

    return bool(sandbox.probe().record()["seccomp"])


def test_a_deltas_program_that_broke_is_started_again_in_the_same_sandbox(
    deltas_links: Links, deltas_cases: list[dict[str, Any]]
) -> None:
    """As in the CLI, a stream the program broke is refused with its error and the program is
    started again for the next: under bubblewrap the second start used to find the seccomp
    filter's descriptor read to its end, and bubblewrap refused every later start."""
    entry = load_entrypoint()
    first = deltas_cases[0]["id"]
    assert entry.main(deltas_crash_on(f"{first}/0"), deltas_env(deltas_links)) == 0
    document = json.loads(deltas_links.answers or b"")
    diagnostics = document["diagnostics"]
    assert document["failure"] is None
    assert (diagnostics["starts"], diagnostics["unanswered"]) == (2, 1)
    assert diagnostics["answered"] == diagnostics["streams"] - 1
    assert list(document["errors"]) == [first]
    report = score_deltas(deltas_cases, deltas_links.answers or b"")
    assert report["adapter_errors"] == 1 and report["errors"][first]
    assert report["streams_exact"] == report["streams"] - (
        deltas_cases[0]["expected_kind"] == "value"
    )


def test_a_deltas_job_that_never_answers_fails_with_the_specific_reason(
    deltas_links: Links,
) -> None:
    entry = load_entrypoint()
    assert entry.main(fakes.NON_JSON, deltas_env(deltas_links)) == 0
    output = events.read_answers(deltas_links.answers or b"")
    assert output.failure is not None and output.failure["reason"] == "output_malformed"
    assert json.loads(deltas_links.answers or b"")["diagnostics"]["starts"] == 3
    silent = fakes.py("import sys\nfor line in sys.stdin: pass\n")
    env = deltas_env(deltas_links, TC300_PER_CASE_TIMEOUT="0.2")
    env["TC300_TOTAL_TIMEOUT"] = "3"
    assert entry.main(silent, env) == 0
    output = events.read_answers(deltas_links.answers or b"")
    assert output.failure is not None and output.failure["reason"] == "job_timeout"
    assert "per-stream" in output.failure["detail"]  # stopped after a few, not one per stream


def test_a_deltas_jobs_inputs_keep_the_streams_and_drop_anything_else(
    deltas_cases: list[dict[str, Any]],
) -> None:
    """The entrypoint keeps a deltas row's stream fields (``harness.input_fields``), a
    single-call row's id, text and tools; a label sent by mistake never reaches the adapter."""
    entry = load_entrypoint()
    labelled = jsonl_bytes(deltas_cases)  # as if the labelled corpus had been served
    rows = entry.parse_inputs(labelled, "deltas")
    assert all(set(r) == set(harness.input_fields("deltas")) for r in rows)
    assert not any("expected" in r or "expected_kind" in r for r in rows)
    assert all(set(r) == {"id", "text", "tools"} for r in entry.parse_inputs(labelled))
