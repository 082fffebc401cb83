"""``toolcall300 ci``: submit a hosted scoring run from CI, wait for it, gate the build on it.

Exit codes follow the scorer's CLI: 0 when the run passed or set the baseline, 2 on a
regression against the team's baseline, 1 for anything else (bad flags, no key, refused
submission, a failed run, a timeout). The licence key comes from ``TOOLCALL300_LICENCE``
(never a flag, so it stays out of process listings and CI logs). Standard library only
(``httpclient``). A retried CI step re-submits with the same ``Idempotency-Key`` and gets the
same run back rather than a second one. Not a scorer: the numbers come from the service.
Without ``--commit``/``--ref`` it reads the CI system's own variables (:data:`COMMIT_VARS`,
:data:`REF_VARS`); ``--junit`` and ``--summary`` write the run's report in the forms CI
systems display (``toolcall300.scoring.render``).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO
from urllib.parse import quote

from toolcall300.client import prcomment
from toolcall300.client.http import ApiError, check_key, check_transport, request_json
from toolcall300.client.image_archive import ImageArchiveError, image_archive
from toolcall300.cliutil import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REGRESSION,
    ArgParser,
    UsageError,
    read_limited,
)
from toolcall300.scoring.render import (
    JunitBaseline,
    render_junit,
    render_junit_error,
    render_markdown,
    render_markdown_error,
)
from toolcall300.scoring.tracks import REGISTRY, get_track, report_track

FINAL = ("scored", "failed")
#: CI systems' per-attempt ids: a deliberate re-run of a job is a new run, a retried step is not.
ATTEMPT_VARS = ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "CI_JOB_ID", "BUILD_ID", "BUILDKITE_JOB_ID")

Request = Callable[..., tuple[int, dict[str, str], Any]]

#: Where CI systems put the commit being built, first match wins: GitHub Actions, GitLab CI,
#: Buildkite, CircleCI, Bitbucket Pipelines, Azure Pipelines, Travis CI, Jenkins (git plugin).
COMMIT_VARS = (
    "GITHUB_SHA",
    "CI_COMMIT_SHA",
    "BUILDKITE_COMMIT",
    "CIRCLE_SHA1",
    "BITBUCKET_COMMIT",
    "BUILD_SOURCEVERSION",
    "TRAVIS_COMMIT",
    "GIT_COMMIT",
)
#: ... and the branch or tag: on a GitHub pull request GITHUB_HEAD_REF is the branch, while
#: GITHUB_REF_NAME is "<number>/merge".
REF_VARS = (
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "CI_COMMIT_REF_NAME",
    "BUILDKITE_BRANCH",
    "CIRCLE_BRANCH",
    "BITBUCKET_BRANCH",
    "BUILD_SOURCEBRANCHNAME",
    "TRAVIS_BRANCH",
    "GIT_BRANCH",
)
#: What the service accepts as a commit (docs/runs-contract.md): a git sha, abbreviated or not.
COMMIT_RE = re.compile(r"^[0-9a-f]{7,40}$")


#: The tracks ``--track`` names (the scorer's registry, docs/tracks.md).
TRACK_NAMES = tuple(REGISTRY)


def _adapter_args(parser: argparse.ArgumentParser) -> None:
    """The adapter's flags: an image by digest, a command (with its files), or an image archive."""
    adapter = parser.add_mutually_exclusive_group(required=True)
    adapter.add_argument(
        "--image", help="adapter image pinned by digest (registry/repo@sha256:...)"
    )
    adapter.add_argument(
        "--adapter-cmd",
        help='adapter command (local stack only), e.g. "toolcall300 toolshim --stream"; '
        "with --adapter-files, name the adapter's files as /adapter/...",
    )
    adapter.add_argument(
        "--adapter-image",
        metavar="PATH",
        help="the adapter image (local stack only): an OCI layout folder or tar, or a docker "
        "save archive, built FROM the harness image; its CMD is the adapter command",
    )
    parser.add_argument(
        "--base-image",
        metavar="PATH",
        help="with --adapter-image: the harness image archive it was built FROM; its layers "
        "are left out of what is sent (the stack holds them)",
    )
    parser.add_argument(
        "--adapter-files",
        metavar="PATH",
        help="with --adapter-cmd: the adapter's folder (sent as a tar archive) or a tar "
        "archive of it; the sandbox shows a copy at /adapter, read-only",
    )


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = ArgParser(
        prog="toolcall300 ci", description="Submit a hosted scoring run and gate on it."
    )
    parser.add_argument("--api", required=True, help="service base URL")
    _adapter_args(parser)
    parser.add_argument(
        "--platform",
        default=None,
        help="with --image: linux/amd64 (the service's default) or linux/arm64, the CPU its job runs on",
    )
    parser.add_argument(
        "--ref", default=None, help="branch or tag, e.g. main (default: from the CI's variables)"
    )
    parser.add_argument(
        "--commit",
        default=None,
        help="commit sha, 7 to 40 lowercase hex digits (default: from the CI's variables)",
    )
    parser.add_argument("--baseline", default="main", help="baseline name (default main)")
    parser.add_argument(
        "--track",
        default=None,
        choices=TRACK_NAMES,
        help="the track to score on (docs/tracks.md; default single): its own corpus, "
        "protocol, judge and baselines",
    )
    parser.add_argument(
        "--callback-url", default=None, help="https URL to POST the signed summary to"
    )
    parser.add_argument(
        "--idempotency-key",
        default=None,
        help="default: derived from the inputs and the CI attempt",
    )
    parser.add_argument("--wait", action="store_true", help="wait for the verdict and exit on it")
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds to wait (default 3600)"
    )
    parser.add_argument("--poll", type=float, default=3.0, help="seconds between polls (default 3)")
    parser.add_argument(
        "--json", action="store_true", help="print the run as JSON instead of a table"
    )
    parser.add_argument(
        "--junit", metavar="FILE", help="with --wait: write the run's cases as JUnit XML"
    )
    parser.add_argument(
        "--summary",
        metavar="FILE",
        help="with --wait: append a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--pr-comment",
        action="store_true",
        help="with --wait, on a GitHub pull_request run: post, or update, one comment with the "
        "verdict and the changed cases (GITHUB_TOKEN; a failure to comment is a warning)",
    )
    return parser.parse_args(list(argv))


def _first(env: Mapping[str, str], names: Sequence[str]) -> str | None:
    return next((env[n].strip() for n in names if env.get(n, "").strip()), None)


def resolve_commit_and_ref(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Fill ``--commit``/``--ref`` from the CI's variables; a bad or missing one is a usage error
    whose message says what a commit must look like and where it was looked for."""
    if args.commit is None:
        args.commit = _first(env, COMMIT_VARS)
        if args.commit is None:
            raise UsageError(
                "toolcall300 ci: no --commit, and none of "
                + ", ".join(COMMIT_VARS)
                + " is set: pass --commit $(git rev-parse HEAD)"
            )
    if not COMMIT_RE.match(args.commit):
        raise UsageError(
            f"toolcall300 ci: commit {args.commit!r} is not a git commit sha: it must be 7 to 40 "
            "lowercase hex digits, e.g. the output of `git rev-parse HEAD`"
        )
    if args.ref is None:
        args.ref = _first(env, REF_VARS)
        if args.ref is None:
            raise UsageError(
                "toolcall300 ci: no --ref, and none of "
                + ", ".join(REF_VARS)
                + " is set: pass --ref with the branch name, e.g. --ref main"
            )


def submission(args: argparse.Namespace) -> dict[str, Any]:
    """The ``POST /runs`` body for the parsed flags."""
    body: dict[str, Any] = {"ref": args.ref, "commit": args.commit, "baseline": args.baseline}
    if args.image:
        body["image"] = args.image
        if args.platform:
            body["platform"] = args.platform
    elif args.platform:
        raise UsageError("toolcall300 ci: --platform goes with --image")
    elif args.adapter_image:
        try:
            archive = image_archive(args.adapter_image, args.base_image)
        except (ImageArchiveError, OSError) as exc:
            raise UsageError(f"toolcall300 ci: --adapter-image {exc}") from None
        body["adapter_image"] = base64.b64encode(archive).decode()
    else:
        command = shlex.split(args.adapter_cmd)
        if not command:
            raise UsageError("toolcall300 ci: --adapter-cmd is empty")
        body["adapter_cmd"] = command
    if args.base_image and not args.adapter_image:
        raise UsageError("toolcall300 ci: --base-image goes with --adapter-image")
    if args.adapter_files:
        if args.image or args.adapter_image:
            raise UsageError("toolcall300 ci: --adapter-files goes with --adapter-cmd")
        body["adapter_files"] = base64.b64encode(folder_archive(args.adapter_files)).decode()
    if args.callback_url:
        body["callback_url"] = args.callback_url
    if args.track:
        body["track"] = args.track
    return body


#: Left out of a folder sent as the adapter's files: version control and bytecode caches.
SKIPPED_NAMES = (".git", "__pycache__", ".venv")


#: What ``POST /runs`` takes as adapter files (docs/runs-contract.md): the archive, its entries
#: and their unpacked bytes. The job's side is ``jobs.adapter_files`` (which this package may
#: not import); tests/core/test_cli_hostile.py keeps the two equal. Packing stops at the first
#: one passed, so a folder named by mistake (a home folder) is one line, not gigabytes read.
MAX_ARCHIVE_BYTES = 6 * 1024 * 1024
MAX_FILES = 4096
MAX_UNPACKED_BYTES = 64 * 1024 * 1024


def folder_archive(path: str) -> bytes:
    """The adapter's files as ``POST /runs`` takes them (docs/local-sandbox.md): a tar archive
    sent as is, or a folder packed as one (gzip; sorted, with no owners or times, so the same
    folder gives the same bytes and a retried step the same idempotency key). Over the
    service's limits, or unreadable, it is a usage error naming which."""
    where = f"toolcall300 ci: --adapter-files {path}"
    try:
        if os.path.isfile(path):
            return read_limited(path, MAX_ARCHIVE_BYTES)
        if not os.path.isdir(path):
            raise UsageError(f"{where}: no such folder or file")
        return _pack(path, where)
    except OSError as exc:
        raise UsageError(f"{where}: {exc.strerror or exc} ({exc.filename or path})") from None


def _pack(path: str, where: str) -> bytes:
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if os.path.basename(info.name) in SKIPPED_NAMES:
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    out = io.BytesIO()
    entries = unpacked = 0
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for folder, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(folder, name)
                rel = os.path.relpath(full, path)
                if any(part in SKIPPED_NAMES for part in rel.split(os.sep)):
                    continue
                entries += 1
                unpacked += os.lstat(full).st_size
                if entries > MAX_FILES or unpacked > MAX_UNPACKED_BYTES:
                    raise UsageError(
                        f"{where}: over the service's {MAX_FILES} files or "
                        f"{MAX_UNPACKED_BYTES} unpacked bytes (docs/runs-contract.md)"
                    )
                tar.add(full, arcname=rel, recursive=False, filter=clean)
                if out.tell() > MAX_ARCHIVE_BYTES:
                    break  # the check below says so
            else:
                continue
            break
    if len(out.getvalue()) > MAX_ARCHIVE_BYTES:
        raise UsageError(
            f"{where}: packed, over the service's {MAX_ARCHIVE_BYTES}-byte archive limit "
            "(docs/runs-contract.md)"
        )
    return out.getvalue()


def idempotency_key(body: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Same inputs in the same CI attempt -> the same key (a retried step is the same run)."""
    attempt = [env.get(name, "") for name in ATTEMPT_VARS]
    basis = json.dumps([body, attempt], sort_keys=True, separators=(",", ":"))
    return "ci-" + hashlib.sha256(basis.encode()).hexdigest()[:40]


def exit_code(run: Mapping[str, Any]) -> int:
    """0 pass or baseline_set; 2 regression; 1 anything else."""
    if run.get("status") == "scored":
        return EXIT_REGRESSION if run.get("verdict") == "regression" else EXIT_OK
    return EXIT_ERROR


def render(run: Mapping[str, Any]) -> str:  # noqa: C901
    """The comparison table a CI log shows."""
    lines = [
        f"TOOLCALL-300 hosted run {run.get('run_id')}  ({run.get('ref')} @ {str(run.get('commit'))[:12]})",
        f"status   {run.get('status')}",
    ]
    if run.get("track", "single") != "single":
        lines.append(f"track    {run.get('track')}")
    if run.get("verdict") is not None:  # a failed run has none: it was never judged
        lines.append(f"verdict  {run.get('verdict')}")
    failure = run.get("failure")
    if failure:
        lines.append(f"failure  {failure.get('reason')}: {failure.get('detail')}")
        if failure.get("stderr_tail"):
            lines += [
                "adapter stderr (tail):",
                *("  " + ln for ln in str(failure["stderr_tail"]).splitlines()[-20:]),
            ]
    sandbox = run.get("sandbox") or {}
    for note in sandbox.get("notes") or []:
        lines.append(f"sandbox  {note}")
    summary, comparison = run.get("summary"), run.get("comparison")
    if comparison:
        lines.append(f"baseline {run.get('baseline')} = run {comparison.get('baseline_run_id')}")
        lines += ["", f"{'':<24}{'baseline':>9}{'current':>9}{'delta':>7}"]
        for name, row in {
            **comparison.get("counts", {}),
            **comparison.get("categories", {}),
        }.items():
            # ``g``: a count, or the deltas track's commit lead (a share)
            lines.append(f"{name:<24}{row['baseline']:>9}{row['current']:>9}{row['delta']:>+7g}")
        for reason in comparison.get("reasons") or []:
            lines.append(f"REGRESSION: {reason}")
        for label in ("fixed", "broken"):
            ids = (comparison.get("flipped") or {}).get(label) or []
            if ids:
                lines.append(f"{label}: {', '.join(ids[:20])}{' ...' if len(ids) > 20 else ''}")
    elif summary:
        lines += ["", f"{'':<24}{'current':>9}"]
        for name, value in summary.items():
            if name != "categories":
                lines.append(f"{name:<24}{value:>9}")
        for name, row in (summary.get("categories") or {}).items():
            lines.append(f"{name:<24}{row['pass']:>5}/{row['n']:<3}")
        if run.get("verdict") == "baseline_set":
            lines.append(
                f"no earlier baseline {run.get('baseline')!r}: this run is now the baseline"
            )
    if run.get("verdict") == "pass" and run.get("baseline_updated"):
        lines.append(f"baseline {run.get('baseline')!r} moved to this run")
    if run.get("report_url"):
        lines.append(f"report   {run.get('report_url')}")
    return "\n".join(lines) + "\n"


def hosted_baseline(final: Mapping[str, Any], score: Mapping[str, Any]) -> JunitBaseline | None:
    """The baseline a hosted run was judged against, for JUnit: a case failing now that the
    comparison does not list as ``broken`` failed in the baseline run too. None when the run
    set the baseline (there was none to compare with)."""
    comparison = final.get("comparison")
    if not isinstance(comparison, dict):
        return None
    broken = set((comparison.get("flipped") or {}).get("broken") or [])
    name = f"baseline {final.get('baseline')!r} (run {comparison.get('baseline_run_id')})"
    known = {
        str(row["id"]): "failed"
        for row in score["per_case"]
        if not row["passed"] and row["id"] not in broken
    }
    return JunitBaseline(
        name,
        known,
        final.get("verdict") == "regression",
        tuple(comparison.get("reasons") or ()),
    )


def run_error(final: Mapping[str, Any]) -> str:
    """Why a run produced no scores, in one line."""
    failure = final.get("failure") or {}
    return (
        f"hosted run {final.get('run_id')} {final.get('status')}: "
        f"{failure.get('reason')}: {failure.get('detail')}"
    )


def write_ci_files(
    args: argparse.Namespace, final: Mapping[str, Any], score: Mapping[str, Any] | None
) -> None:
    """``--junit``/``--summary`` from the run's stored report (``score``; None if it has none):
    the scorer's own writers, so a failure's message is the one ``toolcall300 score --junit``
    writes (the stored report's ``failure_details`` give the expected call and what came back)."""
    track = report_track(score) if score is not None else "single"
    if track != "single" and score is not None:  # the track's own writers (docs/tracks.md)
        _write_track_files(args, final, score, track)
        return
    if args.junit:
        if score is not None:
            data = render_junit([score], baseline=hosted_baseline(final, score))
        else:  # a failed run: one failing testcase says why
            failure = final.get("failure") or {}
            data = render_junit_error(str(failure.get("reason")), str(failure.get("detail")))
        with open(args.junit, "wb") as fh:
            fh.write(data)
    if args.summary:
        if score is not None:
            comparison = final.get("comparison") or None
            text = render_markdown(
                [score],
                comparison=None
                if comparison is None
                else {
                    "regressed": final.get("verdict") == "regression",
                    "reasons": comparison.get("reasons") or [],
                    "flipped": comparison.get("flipped") or {},
                },
                baseline_name=f"baseline {final.get('baseline')!r}",
                baseline_set=final.get("verdict") == "baseline_set",
            )
            if final.get("verdict") == "pass" and final.get("baseline_updated"):
                text += f"\nBaseline {final.get('baseline')!r} moved to this run.\n"
        else:
            text = render_markdown_error(run_error(final))
        with open(args.summary, "a", encoding="utf-8") as fh:
            fh.write(text)


def _write_track_files(
    args: argparse.Namespace, final: Mapping[str, Any], score: Mapping[str, Any], track: str
) -> None:
    """``--junit``/``--summary`` of a run of another track than the single-call one: that
    track's testsuites and rows, the regression its gate found (the stored comparison)."""
    writer = get_track(track)
    comparison = final.get("comparison") or None
    name = f"baseline {final.get('baseline')!r}"
    if args.junit:
        with open(args.junit, "wb") as fh:
            fh.write(
                writer.render_junit([score], baseline_name=name, baseline=None, comparison=None)
            )
    if args.summary:
        text = writer.render_markdown(
            [score],
            in_sample=False,
            comparison=None
            if comparison is None
            else {
                "regressed": final.get("verdict") == "regression",
                "reasons": comparison.get("reasons") or [],
                "flipped": comparison.get("flipped") or {},
            },
            baseline_name=name,
        )
        with open(args.summary, "a", encoding="utf-8") as fh:
            fh.write(text)


def wait_for(
    api: str,
    run_id: str,
    headers: dict[str, str],
    *,
    timeout: float,
    poll: float,
    request: Request = request_json,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any] | None:
    """Poll ``GET /runs/{id}`` until the run ends; None on timeout. Transient errors are retried."""
    deadline = clock() + timeout
    while True:
        try:
            _, _, run = request("GET", f"{api}/runs/{run_id}", headers=headers)
            if isinstance(run, dict) and run.get("status") in FINAL:
                return run
        except ApiError as exc:
            if exc.status < 500 and exc.status != 429:
                raise
        except OSError:
            pass  # the network blinked; keep polling until the deadline
        if clock() >= deadline:
            return None
        sleep(poll)


def run(
    args: argparse.Namespace,
    stdout: TextIO,
    stderr: TextIO,
    *,
    request: Request = request_json,
    env: Mapping[str, str] | None = None,
) -> int:
    environ = os.environ if env is None else env
    key = environ.get("TOOLCALL300_LICENCE", "").strip()
    if not key:
        return _error(args, stderr, "set TOOLCALL300_LICENCE to your team licence key")
    api = args.api.rstrip("/")
    try:
        check_key(key)
        check_transport(api)
    except ValueError as exc:
        return _error(args, stderr, str(exc))
    try:
        resolve_commit_and_ref(args, environ)
        body = submission(args)
    except UsageError as exc:
        return _error(args, stderr, str(exc).removeprefix("toolcall300 ci: "))
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Idempotency-Key": args.idempotency_key or idempotency_key(body, environ),
    }
    try:
        _, _, accepted = request(
            "POST", f"{api}/runs", headers=headers, body=json.dumps(body).encode()
        )
        run_id = str(accepted["run_id"])
        stderr.write(f"toolcall300 ci: submitted {run_id}\n")
        if not args.wait:
            stdout.write(json.dumps(accepted) + "\n" if args.json else f"{run_id}\n")
            return EXIT_OK
        final = wait_for(
            api,
            run_id,
            {"Authorization": headers["Authorization"]},
            timeout=args.timeout,
            poll=args.poll,
            request=request,
        )
    except ApiError as exc:
        return _error(args, stderr, str(exc))
    except (OSError, KeyError, TypeError) as exc:
        return _error(args, stderr, f"cannot reach the service: {exc}")
    if final is None:
        return _error(args, stderr, f"run {run_id} did not finish within {args.timeout:g} s")
    stdout.write(json.dumps(final, indent=2, sort_keys=True) + "\n" if args.json else render(final))
    if args.junit or args.summary:
        try:
            write_ci_files(args, final, _stored_score(api, final, headers, request))
        except (ApiError, OSError, ValueError) as exc:
            stderr.write(f"toolcall300 ci: cannot write the CI report files: {exc}\n")
            return EXIT_ERROR
    _after_the_verdict(args, api, final, environ, stderr)
    return exit_code(final)


def _after_the_verdict(
    args: argparse.Namespace,
    api: str,
    final: Mapping[str, Any],
    environ: Mapping[str, str],
    stderr: TextIO,
) -> None:
    """What a finished run leaves beside its verdict: its branch's README badge line and,
    with ``--pr-comment``, the pull request's comment (neither changes the exit)."""
    line = badge_line(api, final)
    if line is not None:
        stderr.write(f"toolcall300 ci: this branch's README badge (once public): {line}\n")
    if args.pr_comment:
        _comment(final, environ, stderr)


def badge_line(api: str, run: Mapping[str, Any]) -> str | None:
    """The Markdown a README holds to show the badge of a scored run's branch; the service
    serves it once the team's purchase key has made it public (``PUT /teams/{team}/badge``,
    docs/runs-contract.md, "Badges"). None for a run that was not scored."""
    team, ref = run.get("team"), run.get("ref")
    if run.get("status") != "scored" or not isinstance(team, str) or not isinstance(ref, str):
        return None
    branch = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
    return f"![TOOLCALL-300]({api}/badges/{quote(team)}/{quote(branch, safe='/')}.svg)"


def _comment(final: Mapping[str, Any], environ: Mapping[str, str], stderr: TextIO) -> None:
    """``--pr-comment``: one comment per pull request (``prcomment``); never changes the exit."""
    number = prcomment.pull_request_number(environ)
    if number is None:
        stderr.write("toolcall300 ci: not a pull request run: no comment posted\n")
        return
    try:
        done = prcomment.post_or_update(prcomment.comment_body(final), env=environ, number=number)
    except prcomment.CommentError as exc:
        stderr.write(f"toolcall300 ci: warning: no pull-request comment: {exc}\n")
        return
    stderr.write(f"toolcall300 ci: pull request #{number}: comment {done}\n")


def _error(args: argparse.Namespace, stderr: TextIO, line: str) -> int:
    """Exit 1 with one line, and a ``--summary`` whose verdict is ``error`` saying the same."""
    stderr.write(f"toolcall300 ci: {line}\n")
    if args.summary:
        try:
            with open(args.summary, "a", encoding="utf-8") as fh:
                fh.write(render_markdown_error(line))
        except OSError as exc:
            stderr.write(f"toolcall300 ci: cannot write {args.summary}: {exc}\n")
    return EXIT_ERROR


def _stored_score(
    api: str, final: Mapping[str, Any], headers: Mapping[str, str], request: Request
) -> dict[str, Any] | None:
    """The scorer's report inside the run's stored report (docs/runs-contract.md), or None."""
    if final.get("status") != "scored" or not final.get("report_url"):
        return None
    _, _, doc = request(
        "GET",
        f"{api}{final['report_url']}",
        headers={"Authorization": headers["Authorization"]},
    )
    score = doc.get("score", doc) if isinstance(doc, dict) else None
    if not isinstance(score, dict) or not isinstance(score.get("per_case"), list):
        raise ValueError("the run's report has no per-case results")
    return score
