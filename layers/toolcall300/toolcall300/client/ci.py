"""``toolcall300 ci``: submit a hosted scoring run from CI, wait for it, gate the build on it.

Exit codes follow the scorer's CLI: 0 when the run passed or set the baseline, 2 on a
regression against the team's baseline, 1 for anything else (bad flags, no key, refused
submission, a failed run, a timeout). The licence key comes from ``TOOLCALL300_LICENCE``
(never a flag, so it stays out of process listings and CI logs). Standard library only
(``httpclient``). A retried CI step re-submits with the same ``Idempotency-Key`` and gets the
same run back rather than a second one. Not a scorer: the numbers come from the service.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from toolcall300.client.http import ApiError, check_transport, request_json
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, EXIT_REGRESSION, ArgParser, UsageError

FINAL = ("scored", "failed")
#: CI systems' per-attempt ids: a deliberate re-run of a job is a new run, a retried step is not.
ATTEMPT_VARS = ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "CI_JOB_ID", "BUILD_ID", "BUILDKITE_JOB_ID")

Request = Callable[..., tuple[int, dict[str, str], Any]]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = ArgParser(
        prog="toolcall300 ci", description="Submit a hosted scoring run and gate on it."
    )
    parser.add_argument("--api", required=True, help="service base URL")
    adapter = parser.add_mutually_exclusive_group(required=True)
    adapter.add_argument(
        "--image", help="adapter image pinned by digest (registry/repo@sha256:...)"
    )
    adapter.add_argument(
        "--adapter-cmd",
        help='adapter command (local stack only), e.g. "toolcall300 toolshim --stream"',
    )
    parser.add_argument("--ref", required=True, help="git ref, e.g. refs/heads/main")
    parser.add_argument("--commit", required=True, help="commit sha (7-40 hex)")
    parser.add_argument("--baseline", default="main", help="baseline name (default main)")
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
    return parser.parse_args(list(argv))


def submission(args: argparse.Namespace) -> dict[str, Any]:
    """The ``POST /runs`` body for the parsed flags."""
    body: dict[str, Any] = {"ref": args.ref, "commit": args.commit, "baseline": args.baseline}
    if args.image:
        body["image"] = args.image
    else:
        command = shlex.split(args.adapter_cmd)
        if not command:
            raise UsageError("toolcall300 ci: --adapter-cmd is empty")
        body["adapter_cmd"] = command
    if args.callback_url:
        body["callback_url"] = args.callback_url
    return body


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


def render(run: Mapping[str, Any]) -> str:
    """The comparison table a CI log shows."""
    lines = [
        f"TOOLCALL-300 hosted run {run.get('run_id')}  ({run.get('ref')} @ {str(run.get('commit'))[:12]})",
        f"status   {run.get('status')}",
        f"verdict  {run.get('verdict')}",
    ]
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
            lines.append(f"{name:<24}{row['baseline']:>9}{row['current']:>9}{row['delta']:>+7d}")
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
    if run.get("report_url"):
        lines.append(f"report   {run.get('report_url')}")
    return "\n".join(lines) + "\n"


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
        stderr.write("toolcall300 ci: set TOOLCALL300_LICENCE to your team licence key\n")
        return EXIT_ERROR
    api = args.api.rstrip("/")
    try:
        check_transport(api)
    except ValueError as exc:
        stderr.write(f"toolcall300 ci: {exc}\n")
        return EXIT_ERROR
    body = submission(args)
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
        stderr.write(f"toolcall300 ci: {exc}\n")
        return EXIT_ERROR
    except (OSError, KeyError, TypeError) as exc:
        stderr.write(f"toolcall300 ci: cannot reach the service: {exc}\n")
        return EXIT_ERROR
    if final is None:
        stderr.write(f"toolcall300 ci: run {run_id} did not finish within {args.timeout:g} s\n")
        return EXIT_ERROR
    stdout.write(json.dumps(final, indent=2, sort_keys=True) + "\n" if args.json else render(final))
    return exit_code(final)
