"""``toolcall300 ci --pr-comment``: one pull-request comment with the verdict and the changed cases.

On a ``pull_request`` workflow run (GitHub's ``GITHUB_EVENT_PATH`` names the pull request) it
posts one comment, or updates the one it posted before (found by :data:`MARKER`), so a pull
request carries one TOOLCALL-300 comment however often CI runs. It talks to GitHub's REST API
(``GITHUB_API_URL``, default ``https://api.github.com``) with ``GITHUB_TOKEN``, standard library
only. It is not a GitHub client: three routes, no retries; a failure to comment is a warning
and never changes the verdict's exit code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from toolcall300.client.http import ApiError, request_json

#: The first line of every comment this posts: how the next run finds it to update it.
MARKER = "<!-- toolcall300-pr-comment -->"
#: At most this many case ids per list in a comment (the rest are counted).
CASES_SHOWN = 20
#: At most this many pages of 100 comments are searched for an earlier one.
MAX_PAGES = 30

Request = Callable[..., tuple[int, dict[str, str], Any]]
_LOCAL = ("localhost", "127.0.0.1", "::1")


class CommentError(Exception):
    """Why no comment could be posted (said as one warning line)."""


def pull_request_number(env: Mapping[str, str]) -> int | None:
    """The pull request this workflow run is for (its event payload), or None."""
    path = env.get("GITHUB_EVENT_PATH", "")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            event = json.load(fh)
    except (OSError, ValueError):
        return None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number = pull.get("number") if isinstance(pull, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def _ids(ids: list[str]) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:CASES_SHOWN])
    return shown + (f" and {len(ids) - CASES_SHOWN} more" if len(ids) > CASES_SHOWN else "")


def comment_body(final: Mapping[str, Any]) -> str:
    """The comment for a finished hosted run: the verdict, the counts against the baseline, the
    cases that broke and were fixed."""
    verdict = str(final.get("verdict") or final.get("status") or "unknown")
    shown = verdict.upper() if verdict in ("regression", "failed") else verdict
    lines = [
        MARKER,
        f"### TOOLCALL-300: **{shown}**",
        "",
        f"Run `{final.get('run_id')}` on `{final.get('ref')}` @ `{str(final.get('commit'))[:12]}`, "
        f"baseline `{final.get('baseline')}`.",
    ]
    failure = final.get("failure")
    if isinstance(failure, Mapping):
        lines += ["", f"The run failed: `{failure.get('reason')}`: {failure.get('detail')}"]
    comparison = final.get("comparison")
    summary = final.get("summary")
    if isinstance(comparison, Mapping):
        lines += [""] + [f"- {reason}" for reason in comparison.get("reasons") or []]
        counts = comparison.get("counts") or {}
        if counts:
            lines += ["", "| count | baseline | this run | change |", "|---|---:|---:|---:|"]
            lines += [
                f"| {name} | {row.get('baseline')} | {row.get('current')} | {row.get('delta'):+d} |"
                for name, row in counts.items()
                if isinstance(row, Mapping) and isinstance(row.get("delta"), int)
            ]
        flipped = comparison.get("flipped") or {}
        broken, fixed = list(flipped.get("broken") or []), list(flipped.get("fixed") or [])
        lines.append("")
        lines.append(f"**Broke** ({len(broken)}): {_ids(broken)}" if broken else "**Broke**: none")
        lines.append(f"**Fixed** ({len(fixed)}): {_ids(fixed)}" if fixed else "**Fixed**: none")
    elif verdict == "baseline_set":
        lines += [
            "",
            f"No earlier baseline `{final.get('baseline')}`: this run is now the baseline.",
        ]
    if isinstance(summary, Mapping) and "exact" in summary:
        lines += ["", f"Exact {summary.get('exact')} of {summary.get('cases')}."]
    lines += [
        "",
        "Each case's input, expected and returned call: the job summary and the dashboard.",
    ]
    return "\n".join(lines) + "\n"


def post_or_update(
    body: str,
    *,
    env: Mapping[str, str],
    number: int,
    request: Request = request_json,
) -> str:
    """Update this tool's earlier comment on pull request ``number``, or post one; returns
    ``"updated"`` or ``"created"``. Raises :class:`CommentError`."""
    token = env.get("GITHUB_TOKEN", "").strip()
    repo = env.get("GITHUB_REPOSITORY", "").strip()
    api = (env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
    if not token or not repo:
        raise CommentError("set GITHUB_TOKEN and GITHUB_REPOSITORY to comment on the pull request")
    parts = urlsplit(api)
    if not (parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOCAL)):
        raise CommentError(f"refusing to send GITHUB_TOKEN to {api!r}: use https://")
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "toolcall300-ci",
        "Content-Type": "application/json",
    }
    data = json.dumps({"body": body}).encode()
    issue = f"{api}/repos/{repo}/issues"
    try:
        for page in range(1, MAX_PAGES + 1):
            _, _, found = request(
                "GET", f"{issue}/{number}/comments?per_page=100&page={page}", headers=headers
            )
            if not isinstance(found, list) or not found:
                break
            for comment in found:
                if isinstance(comment, dict) and str(comment.get("body", "")).startswith(MARKER):
                    url = f"{issue}/comments/{int(comment['id'])}"
                    request("PATCH", url, headers=headers, body=data)
                    return "updated"
        request("POST", f"{issue}/{number}/comments", headers=headers, body=data)
    except ApiError as exc:  # a non-2xx answer: its status and GitHub's message, never the token
        raise CommentError(f"GitHub answered {exc}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommentError(f"GitHub could not be reached or answered oddly: {exc}") from None
    return "created"
