"""The harness image's entrypoint run as Fargate would run it, and what the run record says.

The filesystem is the one ``make harness-image`` builds (``build/harness-rootfs``: Debian
from Debian's packages, the harness laid out as ``infra/harness/Dockerfile`` says). It runs
under bubblewrap the way a container runtime starts a container on Fargate: its own root
filesystem, a PID namespace, the 14 capabilities a runtime grants by default (no
``CAP_SYS_ADMIN``) and a seccomp filter that refuses new namespaces (``unshare``, ``setns``,
``mount`` and namespace flags on ``clone``), and the host's network (Fargate's awsvpc gives the
task a network; isolation is the VPC's). A probing adapter reports whether it can reach the
harness's network. The single-call job, and the parallel and deltas tracks' jobs (each told
its track as the service tells it): toolshim's adapter for the track scored there as in
process, and no label reaching the adapter even from an inputs file that held them. Skipped, with the reason, when the filesystem has not been built or
bubblewrap or python3-seccomp is missing: building it downloads Debian packages.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes
from support.corpus import deltas_subset
from support.tiers import unavailable

from toolcall300.canonical import jsonl_bytes
from toolcall300.jobs import harness, sandbox
from toolcall300.scoring import tracks
from toolcall300.service.domain.runs import Corpus
from toolcall300.service.domain.runs.scoring import derive_track_inputs, summary_of, track_run
from toolcall300.service.hosted import events
from toolcall300.service.hosted.flow import batch_sandbox

ROOT = Path(__file__).resolve().parents[2]
ROOTFS = ROOT / "build" / "harness-rootfs"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, where python3-seccomp installs its module
#: What Docker, containerd and Fargate grant a container by default.
CONTAINER_CAPS = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
)  # fmt: skip
CASES = fakes.small_corpus(4)

#: The seccomp filter: every syscall allowed except making or entering namespaces and mounting
#: (the local sandbox hands bubblewrap the same one).
SECCOMP_SCRIPT = sandbox.SECCOMP_SCRIPT

#: The adapter: answers every case with whether the harness's own network is reachable.
PROBE = """
import json, os, socket, sys
host, port = os.environ.get("PROBE_HOST", "127.0.0.1"), int(sys.argv[1])
def reach():
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False
for line in sys.stdin:
    item = json.loads(line)
    call = {"name": "probe", "arguments": {"reached_the_harness_network": reach(), "uid": os.getuid()}}
    print(json.dumps({"id": item["id"], "call": call}), flush=True)
"""


def _missing() -> str | None:
    if not (ROOTFS / "usr" / "bin" / "python3").exists():
        return f"no harness filesystem at {ROOTFS}: run `make harness-image` (downloads Debian packages)"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import seccomp"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return "python3-seccomp is not installed (apt-get install -y python3-seccomp)"
    if os.geteuid() != 0:
        return "bubblewrap keeps or drops capabilities only when run as root"
    return None


@pytest.fixture(autouse=True)
def _container_tier() -> None:
    """Skipped where the tools are missing; under CI a failure (support.tiers)."""
    why = _missing()
    if why is not None:
        unavailable(why)


class Links:
    """The job's two presigned links, served on the host's loopback (the task's network)."""

    def __init__(self, inputs: bytes) -> None:
        self.inputs, self.answers = inputs, None
        self.session_ended = False  # answer the upload as S3 does once the signer's session ended
        links = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(links.inputs)

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if links.session_ended:
                    xml = b"<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>"
                    self.send_response(400)
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                    return
                links.answers = body
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@contextlib.contextmanager
def serving(inputs: bytes) -> Iterator[Links]:
    served = Links(inputs)
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()


@pytest.fixture
def links() -> Iterator[Links]:
    with serving(jsonl_bytes(harness.job_inputs(CASES))) as served:
        yield served


def run_in_container(
    tmp_path: Path,
    links: Links,
    command: list[str] | None = None,
    *,
    track: str | None = None,
    scripts: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The image's ENTRYPOINT and a CMD (by default the probing one), in the image's
    filesystem, as Fargate runs it; ``track`` is the run's ``TC300_TRACK``, ``scripts`` the
    files put in /tmp/probe for the CMD (by default the probe)."""
    bpf = tmp_path / "filter.bpf"
    subprocess.run([SYSTEM_PYTHON, "-c", SECCOMP_SCRIPT, str(bpf)], check=True)
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    for name, text in (scripts or {"probe.py": PROBE}).items():
        (probe_dir / name).write_text(text)
        (probe_dir / name).chmod(0o644)
    probe_dir.chmod(0o755)
    cmd = command or ["python3", "/tmp/probe/probe.py", str(links.port)]  # a team's CMD
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": "/opt/toolcall300",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TC300_RUN_ID": "run_" + "0" * 26,
        "TC300_INPUTS_URL": f"http://127.0.0.1:{links.port}/inputs",
        "TC300_ANSWERS_URL": f"http://127.0.0.1:{links.port}/answers",
        "TC300_PER_CASE_TIMEOUT": "5",
        "TC300_TOTAL_TIMEOUT": "60",
        **({"TC300_TRACK": track} if track else {}),
    }
    caps = [arg for cap in CONTAINER_CAPS for arg in ("--cap-add", cap)]
    with bpf.open("rb") as seccomp_filter:
        fd = seccomp_filter.fileno()
        argv = [
            "bwrap", "--ro-bind", str(ROOTFS), "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--ro-bind", str(probe_dir), "/tmp/probe",
            "--unshare-pid", "--die-with-parent", "--clearenv",
            *[a for k, v in env.items() for a in ("--setenv", k, v)],
            "--cap-drop", "ALL", *caps, "--seccomp", str(fd), "--chdir", "/tmp",
            "python3", "/usr/local/bin/toolcall300-harness",  # the image's ENTRYPOINT
            *cmd,
        ]  # fmt: skip
        return subprocess.run(
            argv, pass_fds=(fd,), capture_output=True, text=True, timeout=120, check=False
        )


def test_inside_a_fargate_like_container_the_harness_cannot_isolate_and_the_record_says_so(
    tmp_path: Path, links: Links
) -> None:
    done = run_in_container(tmp_path, links)
    assert done.returncode == 0, done.stderr
    assert links.answers is not None
    document = json.loads(links.answers)
    output = events.read_answers(links.answers)
    assert output.failure is None and len(output.answers) == len(CASES)
    # What really held: unshare was refused (EPERM under the filter, no CAP_SYS_ADMIN) ...
    seen = document["diagnostics"]["sandbox"]
    assert seen["network_isolated"] is False and seen["method"] == "none"
    assert seen["uid_dropped"] is True
    # ... and the adapter did share the harness's network, as the record says
    probes = [a["arguments"] for a in output.answers.values()]
    assert all(p["reached_the_harness_network"] is True for p in probes)
    assert all(p["uid"] == 65534 for p in probes)
    # The run then records the network's isolation, never the harness's claim
    record = batch_sandbox(document["diagnostics"], network_isolated=False)
    assert record["network_isolated"] is False
    assert record["harness"]["network_isolated"] is False
    assert any("shares the harness's network" in note for note in record["notes"])


def test_in_that_container_an_expired_link_is_reported_as_expired(
    tmp_path: Path, links: Links
) -> None:
    from toolcall300.jobs.failures import EXIT_LINK_EXPIRED

    links.session_ended = True
    done = run_in_container(tmp_path, links)
    assert done.returncode == EXIT_LINK_EXPIRED, done.stderr
    assert links.answers is None


def test_the_filter_really_refuses_namespaces_in_that_container(tmp_path: Path) -> None:
    bpf = tmp_path / "filter.bpf"
    subprocess.run([SYSTEM_PYTHON, "-c", SECCOMP_SCRIPT, str(bpf)], check=True)
    caps = [arg for cap in CONTAINER_CAPS for arg in ("--cap-add", cap)]
    with bpf.open("rb") as seccomp_filter:
        fd = seccomp_filter.fileno()
        argv = [
            "bwrap", "--ro-bind", str(ROOTFS), "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--unshare-pid", "--die-with-parent",
            "--cap-drop", "ALL", *caps, "--seccomp", str(fd),
            "unshare", "--net", "--fork", "--pid", "--mount-proc", "/bin/true",
        ]  # fmt: skip
        done = subprocess.run(argv, pass_fds=(fd,), capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "Operation not permitted" in done.stderr


def test_the_image_archive_runs_the_harness_as_the_dockerfile_says() -> None:
    import tarfile

    archive = ROOT / "build" / "harness-image.tar"
    if not archive.exists():
        unavailable("no build/harness-image.tar: run `make harness-image`")
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> Any:
            member = tar.extractfile(f"./blobs/sha256/{digest.split(':', 1)[1]}")
            assert member is not None
            return json.load(member)

        index_file = tar.extractfile("./index.json")
        assert index_file is not None
        manifest = blob(json.load(index_file)["manifests"][0]["digest"])
        config = blob(manifest["config"]["digest"])
    dockerfile = (ROOT / "infra" / "harness" / "Dockerfile").read_text()
    instruction = {
        line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1])
        for line in dockerfile.splitlines()
        if line.startswith(("ENTRYPOINT [", "CMD ["))
    }
    entrypoint, cmd = instruction["ENTRYPOINT"], instruction["CMD"]
    assert config["config"]["Entrypoint"] == entrypoint
    assert config["config"]["Cmd"] == cmd
    assert "PYTHONPATH=/opt/toolcall300" in config["config"]["Env"]
    assert config["os"] == "linux" and config["architecture"] in ("amd64", "arm64")


def test_post_runs_would_read_the_built_images_platform_from_its_config() -> None:
    """The check POST /runs makes on a single image (docs/runs-contract.md), on the real
    manifest and config blob umoci wrote: the descriptor, the digest, ``os/architecture``."""
    import tarfile

    from toolcall300.service.domain.images import (
        ImageFacts,
        config_descriptor,
        config_platform,
        image_problem,
    )

    archive = ROOT / "build" / "harness-image.tar"
    if not archive.exists():
        unavailable("no build/harness-image.tar: run `make harness-image`")
    with tarfile.open(archive) as tar:

        def raw(digest: str) -> bytes:
            member = tar.extractfile(f"./blobs/sha256/{digest.split(':', 1)[1]}")
            assert member is not None
            return member.read()

        index_file = tar.extractfile("./index.json")
        assert index_file is not None
        manifest = json.loads(raw(json.load(index_file)["manifests"][0]["digest"]))
        digest, size = config_descriptor(manifest)
        platform = config_platform(raw(digest), digest, size)
    built = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert platform == f"linux/{built}"
    facts = ImageFacts(size, frozenset({platform}))
    other = "linux/arm64" if built == "amd64" else "linux/amd64"
    assert image_problem(facts, platform) is None
    refused = image_problem(facts, other)
    assert refused is not None and refused[0] == "image_platform_mismatch"


def test_a_teams_dockerfile_installs_its_adapter_into_a_venv_in_the_image(tmp_path: Path) -> None:
    """The documented adapter Dockerfile (docs/hosted-scoring.md): Debian's python3 refuses a
    system-wide ``pip install`` (PEP 668), so the image ships pip and venv and the adapter gets
    a venv of its own. Here its RUN step runs in the image's filesystem, offline: the adapter
    is a wheel made here (a real build would fetch its build backend from an index)."""
    import zipfile

    app = tmp_path / "app"
    app.mkdir()
    files = {
        "my_adapter/__init__.py": "ANSWER = 42\n",
        "my_adapter-1.dist-info/METADATA": "Metadata-Version: 2.1\nName: my-adapter\nVersion: 1\n",
        "my_adapter-1.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "my_adapter-1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(app / "my_adapter-1-py3-none-any.whl", "w") as wheel:
        for name, text in {**files, "my_adapter-1.dist-info/RECORD": record}.items():
            wheel.writestr(name, text)
    wheel_path = "/tmp/app/my_adapter-1-py3-none-any.whl"
    script = (
        f"python3 -m pip install --no-index {wheel_path} 2>&1 | grep -q externally-managed"
        " && python3 -m venv /tmp/adapter"
        f" && /tmp/adapter/bin/pip install --no-index --no-cache-dir {wheel_path}"
        " && /tmp/adapter/bin/python -c 'import my_adapter; print(my_adapter.ANSWER)'"
    )
    argv = [
        "bwrap", "--ro-bind", str(ROOTFS), "/", "--proc", "/proc", "--dev", "/dev",
        "--tmpfs", "/tmp", "--bind", str(app), "/tmp/app", "--unshare-pid", "--unshare-net",
        "--die-with-parent", "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
        "--setenv", "HOME", "/tmp", "/bin/sh", "-c", script,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "42"


# ---------------------------------------------------------------- the parallel and deltas jobs
#
# The same container runs a parallel-track job (the stream protocol, a list of calls per turn)
# and a deltas-track job (the deltas process protocol, every partition of every stream, event
# by event), told its track by ``TC300_TRACK`` as the service tells it. Their corpora: the
# parallel track's free sample and the deltas subset the stack tests serve (one case of every
# form and wire shape of the real deltas corpus).

PARALLEL_CORPUS = (
    ROOT / "layers" / "toolcall300" / "toolcall300" / "data" / "parallel-sample24.jsonl"
)
#: What a team's image runs as its CMD: toolshim's list normaliser, its deltas process adapter.
TRACK_COMMANDS = {
    "parallel": ["toolcall300", "toolshim", "--all", "--stream"],
    "deltas": ["python3", "-m", "toolcall300.toolshim.deltas"],
}
#: The label fields of a row of either track's corpus, as a key in a JSON object.
LABEL_MARKERS = ('"expected"', '"expected_kind"', '"category"', '"rationale"')

#: A parallel-track adapter (stream protocol): answers each turn with one call saying what it
#: was handed (the line's keys, whether a label field was in it), whether the harness's network
#: is reachable, and its uid.
PARALLEL_PROBE = """
import json, os, socket, sys
MARKERS = __MARKERS__
def reach():
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
        return True
    except OSError:
        return False
reached = reach()
for line in sys.stdin:
    item = json.loads(line)
    seen = {"keys": sorted(item), "label": any(m in line for m in MARKERS),
            "reached_the_harness_network": reached, "uid": os.getuid()}
    print(json.dumps({"id": item["id"], "call": [{"name": "probe", "arguments": seen}]}), flush=True)
""".replace("__MARKERS__", repr(LABEL_MARKERS))

#: A deltas-track adapter (process protocol): commits nothing and answers each stream with one
#: call saying what its messages held (their keys, a label field or not, how many events).
DELTAS_PROBE = """
import json, os, socket, sys
MARKERS = __MARKERS__
def reach():
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
        return True
    except OSError:
        return False
reached, streams = reach(), {}
for line in sys.stdin:
    m = json.loads(line)
    seen = streams.setdefault(m["id"], {"keys": set(), "label": False, "events": 0})
    seen["keys"] |= set(m)
    seen["label"] |= any(k in line for k in MARKERS)
    if "event" in m:
        seen["events"] += 1
        print(json.dumps({"id": m["id"], "commits": []}), flush=True)
    elif m.get("end"):
        s = streams.pop(m["id"])
        said = {"keys": sorted(s["keys"]), "label": s["label"], "events": s["events"],
                "reached_the_harness_network": reached, "uid": os.getuid()}
        print(json.dumps({"id": m["id"], "call": {"name": "probe", "arguments": said}}), flush=True)
""".replace("__MARKERS__", repr(LABEL_MARKERS))


def track_corpus(track: str, folder: Path) -> bytes:
    """The labelled corpus of ``track`` the tests run: its bytes as the corpus bucket holds them."""
    if track == "parallel":
        return PARALLEL_CORPUS.read_bytes()
    deltas_subset(folder)
    return (folder / "deltas.jsonl").read_bytes()


def job_inputs_of(track: str, corpus: bytes) -> bytes:
    """The label-free inputs the service stores for a run of ``track`` (derive_track_inputs)."""
    sha = hashlib.sha256(corpus).hexdigest()
    return derive_track_inputs(track, corpus)[f"job-inputs/{track}/{sha}.jsonl"]


def assert_the_record_says_the_network_was_shared(document: dict[str, Any]) -> None:
    """In that container the harness cannot isolate the adapter; the record says so."""
    seen = document["diagnostics"]["sandbox"]
    assert seen["network_isolated"] is False and seen["method"] == "none"
    assert seen["uid_dropped"] is True
    record = batch_sandbox(document["diagnostics"], network_isolated=False)
    assert record["network_isolated"] is False


@pytest.mark.parametrize("track", ["parallel", "deltas"])
def test_in_that_container_a_track_job_scores_toolshim_as_it_scores_in_process(
    tmp_path: Path, track: str
) -> None:
    """The job of a parallel or deltas run, in the image's filesystem under a container's
    default capabilities: handed the track's label-free inputs, it runs toolshim's adapter for
    the track (the image's CMD) over the track's protocol, uploads its answers, and the trusted
    side's judge makes of them the report toolshim gets in process: every case exact."""
    corpus = track_corpus(track, tmp_path / "corpus")
    inputs = job_inputs_of(track, corpus)
    assert not any(marker.encode() in inputs for marker in LABEL_MARKERS)  # no label in them
    with serving(inputs) as served:
        done = run_in_container(tmp_path, served, TRACK_COMMANDS[track], track=track)
    assert done.returncode == 0, done.stderr
    assert served.answers is not None
    document = json.loads(served.answers)
    output = events.read_answers(served.answers)
    assert output.failure is None and output.errors == {}
    assert_the_record_says_the_network_was_shared(document)
    found, cases = tracks.read_corpus(corpus)
    sha = hashlib.sha256(corpus).hexdigest()
    held = Corpus(cases, sha, None, track=track)
    report = found.score(
        cases, track_run(held, output), adapter="container", corpus_sha256=sha, corpus_version=None
    )
    in_process = found.build_adapter("callable", "toolshim")
    mine = found.score(
        cases,
        in_process.run(found.adapter_items(cases), timeout=10),
        adapter="in process",
        corpus_sha256=sha,
        corpus_version=None,
    )
    assert summary_of(report) == summary_of(mine)
    summary = summary_of(report)
    if track == "parallel":
        assert summary["exact_turns"] == len(cases) and summary["invented_calls"] == 0
        assert summary["false_collapses"] == 0 and summary["partial_refusals_exact"] > 0
    else:
        streams = sum(len(c["partitions"]) for c in cases)
        assert summary["exact"] == len(cases) and summary["streams_exact"] == streams
        assert summary["unsafe_commits"] == 0 and summary["commits"] > 0
        assert summary["refused_correctly"] == summary["refusal_cases"] > 0


@pytest.mark.parametrize("track", ["parallel", "deltas"])
def test_in_that_container_no_label_reaches_a_track_jobs_adapter(
    tmp_path: Path, track: str
) -> None:
    """Even an inputs file holding the whole labelled corpus (what the service never stores)
    hands the adapter only its protocol's fields: the entrypoint keeps the track's input
    fields of each row, and each protocol writes only its own (``id``, ``text``, ``tools`` a
    turn; ``tools``, one ``event``, ``end`` a stream). The probe sees no label, runs every
    partition of every stream, is uid 65534, and shares the harness's network, as the run's
    record says."""
    corpus = track_corpus(track, tmp_path / "corpus")
    assert all(b'"expected"' in row for row in corpus.splitlines())  # every row labelled
    probe = PARALLEL_PROBE if track == "parallel" else DELTAS_PROBE
    with serving(corpus) as served:
        command = ["python3", "/tmp/probe/probe.py", str(served.port)]
        done = run_in_container(tmp_path, served, command, track=track, scripts={"probe.py": probe})
    assert done.returncode == 0, done.stderr
    assert served.answers is not None
    document = json.loads(served.answers)
    output = events.read_answers(served.answers)
    assert output.failure is None and output.errors == {}
    assert_the_record_says_the_network_was_shared(document)
    _, cases = tracks.read_corpus(corpus)
    assert set(output.answers) == {c["id"] for c in cases}
    if track == "parallel":
        said = [answer[0]["arguments"] for answer in output.answers.values()]
        assert all(s["keys"] == ["id", "text", "tools"] for s in said)
    else:
        by_id = {c["id"]: c for c in cases}
        said = []
        for key, records in output.answers.items():
            assert len(records) == len(by_id[key]["partitions"])  # every partition driven
            said += [record["call"]["arguments"] for record in records]
        assert all(
            s["keys"] in (["end", "event", "id", "tools"], ["end", "id", "tools"]) for s in said
        )
        assert all(s["events"] > 0 for s in said)
    assert not any(s["label"] for s in said)
    assert all(s["reached_the_harness_network"] is True and s["uid"] == 65534 for s in said)
