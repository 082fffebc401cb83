"""An adapter image, as a team builds it for AWS, scored by a local stack over real HTTP.

The image is the harness image ``make harness-image`` builds (build/harness-image.tar, its
layout build/harness-oci) plus one layer added here with umoci, without a Docker engine, as
CI builds the harness image: the example adapter (docs/examples/jsonschema-adapter) and
jsonschema with its compiled ``rpds-py``, installed from wheels checked against the
example's hashes. ``toolcall300 ci --adapter-image`` sends it without the harness's layers
(``--base-image``: the stack holds them, ``TOOLCALL300_HARNESS_IMAGE``); the stack runs its
CMD under the sandbox, limits and seccomp filter with no network, in the image's own root.
Skipped with the reason when the harness image, umoci, bubblewrap or the wheels are
missing; a failure under CI (support.tiers).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import runs as fakes
from support.corpus import make_corpus
from support.dashboard import wait_for_serve_url
from support.tiers import unavailable

from toolcall300.client import ci as ci_client
from toolcall300.client import dev as devtools
from toolcall300.client.http import ApiError, request_json
from toolcall300.scoring.report import score_cases
from toolcall300.service.domain.runs import summary_of

ROOT = Path(__file__).resolve().parents[2]
HARNESS_ARCHIVE = ROOT / "build" / "harness-image.tar"
HARNESS_LAYOUT = ROOT / "build" / "harness-oci"
EXAMPLE = ROOT / "docs" / "examples" / "jsonschema-adapter"
#: The example's wheels, fetched once (pip download, checked against its hashes).
WHEELHOUSE = ROOT / "build" / "test-wheelhouse"


def _missing() -> str | None:
    if not HARNESS_ARCHIVE.exists() or not (HARNESS_LAYOUT / "index.json").exists():
        return f"no harness image at {HARNESS_ARCHIVE}: run `make harness-image`"
    for tool, package in (("umoci", "umoci"), ("bwrap", "bubblewrap")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install -y {package})"
    if os.geteuid() != 0:
        return "the sandbox drops to a uid of the run's own only when run as root"
    return None


def wheelhouse() -> Path:
    """The example's wheels for this machine's Python, downloaded once, hashes checked."""
    if not (WHEELHOUSE / ".complete").exists():
        shutil.rmtree(WHEELHOUSE, ignore_errors=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
             "--require-hashes", "-r", str(EXAMPLE / "requirements.txt"), "-d", str(WHEELHOUSE)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            unavailable(f"cannot fetch the example's wheels: {done.stderr.strip()[-300:]}")
        (WHEELHOUSE / ".complete").touch()
    os.chmod(WHEELHOUSE, 0o755)
    for wheel in WHEELHOUSE.iterdir():
        wheel.chmod(0o644)
    return WHEELHOUSE


def build_adapter_image(into: Path) -> Path:
    """The harness layout plus the adapter's layer and CMD (umoci insert, umoci config)."""
    layout = into / "adapter-oci"
    shutil.copytree(HARNESS_LAYOUT, layout)
    stage = into / "stage"
    stage.mkdir()
    shutil.copy(EXAMPLE / "adapter.py", stage / "adapter.py")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links",
         str(wheelhouse()), "--only-binary=:all:", "--require-hashes", "--target",
         str(stage / "site-packages"), "-r", str(EXAMPLE / "requirements.txt")],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    layer = into / "layer.tar"  # umoci 0.4.7's `insert` ends a layer without tar's trailer
    with tarfile.open(layer, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(stage, arcname="opt/adapter")
    subprocess.run(
        ["umoci", "raw", "add-layer", "--image", f"{layout}:1", str(layer)],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        ["umoci", "config", "--image", f"{layout}:1",
         "--config.env=PYTHONPATH=/opt/toolcall300:/opt/adapter/site-packages",
         "--config.cmd=python3", "--config.cmd=/opt/adapter/adapter.py"],
        check=True, capture_output=True,
    )  # fmt: skip
    return layout


@pytest.fixture(scope="module")
def image_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``toolcall300 serve`` in its own process holding the harness image's layers."""
    why = _missing()
    if why is not None:
        unavailable(why)
    corpus = tmp_path_factory.mktemp("image-corpus")
    write_corpus(corpus)
    command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0", "--corpus", str(corpus)]
    env = dict(os.environ, TOOLCALL300_HARNESS_IMAGE=str(HARNESS_ARCHIVE))
    # the operator's package index, configured as pip's is: here the example's wheels only
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse()))
    proc = subprocess.Popen(
        [*command, "--no-state"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        yield wait_for_serve_url(proc, timeout_s=60)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


#: Calls in the text, the adapter's input: valid ones it answers, one with arguments its
#: tool's schema refuses (``days`` must be an integer), and texts that are no call.
CASES = fakes.small_corpus(8)
CASES[2] = dict(CASES[2], text=json.dumps({"name": "get_weather", "arguments": {"days": "x"}}))


def write_corpus(folder: Path) -> None:
    """The stack's corpus: the small corpus's files with :data:`CASES` as its cases."""
    make_corpus(folder)
    body = fakes.corpus_bytes(CASES)
    (folder / "toolcall300.jsonl").write_bytes(body)
    manifest = json.loads((folder / "manifest.json").read_text())
    for row in manifest["files"]:
        if row["name"] == "toolcall300.jsonl":
            row.update(sha256=hashlib.sha256(body).hexdigest(), bytes=len(body))
    (folder / "manifest.json").write_text(json.dumps(manifest))


def team_key(url: str, team: str) -> str:
    argv = ["purchase", "--api", url, "--tier", "team", "--team", team]
    out, err = io.StringIO(), io.StringIO()
    assert devtools.run(devtools.parse_args(argv), out, err) == 0, err.getvalue()
    return out.getvalue().splitlines()[-1]


def expected_summary() -> dict[str, Any]:
    """The example adapter's answers, computed here with this environment's jsonschema."""
    lines = "".join(json.dumps({k: c[k] for k in ("id", "text", "tools")}) + "\n" for c in CASES)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "adapter.py")],
        input=lines, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    answers = {row["id"]: row["call"] for row in map(json.loads, done.stdout.splitlines())}
    assert any(answers.values()) and not all(answers.values())  # it answers and refuses
    return dict(summary_of(score_cases(CASES, answers)))


def test_an_image_built_from_the_harness_image_scores_through_ci(
    image_stack: str, tmp_path: Path
) -> None:
    layout = build_adapter_image(tmp_path)
    env = {"TOOLCALL300_LICENCE": team_key(image_stack, "image-team")}
    argv = ["--api", image_stack, "--adapter-image", str(layout)]
    argv += ["--base-image", str(HARNESS_ARCHIVE), "--ref", "main", "--commit", "abc1234"]
    argv += ["--wait", "--poll", "0.2", "--timeout", "240", "--json"]
    out, err = io.StringIO(), io.StringIO()
    code = ci_client.run(ci_client.parse_args(argv), out, err, env=env)
    run = json.loads(out.getvalue() or "{}")
    assert code == 0, (err.getvalue(), run.get("failure"))
    assert run["status"] == "scored" and run["summary"] == expected_summary()
    assert run["adapter"]["kind"] == "image_archive"
    sandbox = run["sandbox"]
    assert sandbox["method"] == "bwrap" and sandbox["network_isolated"] is True
    assert sandbox["seccomp"] is True and sandbox["uid_dropped"] is True


def test_an_image_that_is_not_one_is_refused_at_submission_with_the_reason(
    image_stack: str, tmp_path: Path
) -> None:
    key = team_key(image_stack, "image-refused")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("dev/sda")
        info.type = tarfile.BLKTYPE
        tar.addfile(info)
    body = {"adapter_image": base64.b64encode(out.getvalue()).decode(), "ref": "main"}
    body["commit"] = "abc1234"
    with pytest.raises(ApiError) as refused:
        request_json(
            "POST",
            f"{image_stack}/runs",
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            body=json.dumps(body).encode(),
        )
    assert refused.value.status == 400 and refused.value.code == "adapter_image_unusable"
    assert "'dev/sda' is not a file or folder" in refused.value.message


def ci_folder(url: str, team: str, folder: Path) -> tuple[int, dict[str, Any], str]:
    env = {"TOOLCALL300_LICENCE": team_key(url, team)}
    argv = ["--api", url, "--adapter-files", str(folder), "--adapter-cmd"]
    argv += ["python3 /adapter/adapter.py", "--ref", "main", "--commit", "abc1234"]
    argv += ["--wait", "--poll", "0.2", "--timeout", "240", "--json"]
    out, err = io.StringIO(), io.StringIO()
    code = ci_client.run(ci_client.parse_args(argv), out, err, env=env)
    return code, json.loads(out.getvalue() or "{}"), err.getvalue()


def test_the_same_adapter_as_a_folder_with_its_requirements_scores_too(image_stack: str) -> None:
    code, run, err = ci_folder(image_stack, "folder-requirements", EXAMPLE)
    assert code == 0, (err, run.get("failure"))
    assert run["status"] == "scored" and run["summary"] == expected_summary()
    assert run["adapter"]["files"]["requirements"] is True
    assert run["sandbox"]["filesystem"] == "private" and run["sandbox"]["seccomp"] is True


def test_without_its_requirements_the_failure_names_the_fix(
    image_stack: str, tmp_path: Path
) -> None:
    folder = tmp_path / "bare"
    folder.mkdir()
    shutil.copy(EXAMPLE / "adapter.py", folder / "adapter.py")
    code, run, _err = ci_folder(image_stack, "folder-bare", folder)
    assert code == 1 and run["status"] == "failed"
    assert run["failure"]["reason"] == "adapter_start_failed"
    assert "could not import 'jsonschema'" in run["failure"]["detail"]
    assert "requirements file" in run["failure"]["detail"]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("jsonschema\n", "pin it with =="),
        ("jsonschema==4.26.0\n", "give the sha256"),
        ("git+https://example.com/x.git\n", "URLs and VCS references are not allowed"),
        ("./wheels/x-1-py3-none-any.whl\n", "local paths are not allowed"),
        ("--index-url https://example.com/simple\n", "options are not allowed"),
        ("jsonschema==4.26.0 --hash=sha256:" + "0" * 64 + "\n", "pip could not install"),
    ],
    ids=["unpinned", "no-hash", "vcs", "local-path", "option", "hash-mismatch"],
)
def test_a_requirements_file_that_cannot_be_installed_is_refused_with_the_reason(
    image_stack: str, tmp_path: Path, line: str, says: str
) -> None:
    folder = tmp_path / "adapter"
    folder.mkdir()
    shutil.copy(EXAMPLE / "adapter.py", folder / "adapter.py")
    (folder / "requirements.txt").write_text(line)
    code, _run, err = ci_folder(image_stack, "folder-refused", folder)
    assert code == 1
    assert "400 adapter_requirements_unusable" in err and says in err
