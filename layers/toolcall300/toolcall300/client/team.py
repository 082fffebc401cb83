"""``toolcall300 team keys issue|list|revoke --api URL``: a team's member keys from the shell,
and ``toolcall300 team badge on|off --api URL``: whether its README badge is served.

The same routes the dashboard and curl use (``POST``/``GET /teams/{team}/keys``,
``DELETE /teams/{team}/keys/{key_id}``; docs/tenancy.md; ``PUT /teams/{team}/badge``,
docs/runs-contract.md), with the team's purchase key from ``TOOLCALL300_LICENCE`` (never a
flag). The team is the key's own, read from ``GET /licence``. A new member key is printed
once, alone on the last line; a list never shows keys, only their ids; ``badge on`` prints
the README line. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO
from urllib.parse import quote

from toolcall300.client.download import read_key
from toolcall300.client.http import ApiError, check_transport, request_json
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(
        prog="toolcall300 team", description="A team's member keys (docs/tenancy.md)."
    )
    sub = parser.add_subparsers(dest="what", required=True)
    keys = sub.add_parser("keys", help="issue, list or revoke member keys (the purchase key only)")
    actions = keys.add_subparsers(dest="action", required=True)
    for name, help_ in (
        ("issue", "issue a member key of your team; it is shown once"),
        ("list", "list your team's member keys (ids and status, never the keys)"),
        ("revoke", "revoke one member key by its id"),
    ):
        action = actions.add_parser(name, help=help_)
        action.add_argument("--api", required=True, help="the service's base URL")
        if name == "revoke":
            action.add_argument(
                "key_id", help="the member key's id (lic_k...), from `team keys list`"
            )
    badge = sub.add_parser("badge", help="serve the team's README badge or not (purchase key)")
    switch = badge.add_subparsers(dest="action", required=True)
    for name, help_ in (
        ("on", "make the team's badge public: /badges/{team}/{branch}.svg"),
        ("off", "make it private again (the default)"),
    ):
        switch.add_parser(name, help=help_).add_argument(
            "--api", required=True, help="the service's base URL"
        )
    return parser.parse_args(argv)


def _call(method: str, url: str, key: str) -> Any:
    return request_json(method, url, headers={"Authorization": f"Bearer {key}"})[2]


def _keys(args: argparse.Namespace, base: str, key: str, said: str, stdout: TextIO) -> None:
    """``team keys issue|list|revoke`` on ``base`` (``/teams/{team}/keys``)."""
    if args.action == "issue":
        made = _call("POST", base, key)
        stdout.write(f"member key {made['key_id']} of team {said}\n")
        stdout.write("key (shown once; give it to the member as TOOLCALL300_LICENCE):\n")
        stdout.write(f"{made['key']}\n")
    elif args.action == "list":
        listed = _call("GET", base, key)["keys"]
        noun = "member key" if len(listed) == 1 else "member keys"
        stdout.write(f"team {said}: {len(listed)} {noun}\n")
        for member in listed:
            stdout.write(
                f"{member['key_id']}  {member['status']:<8} {member.get('issued_at') or '-'}\n"
            )
    else:
        gone = _call("DELETE", f"{base}/{quote(args.key_id, safe='')}", key)
        stdout.write(f"member key {gone['key_id']}: {gone['status']}\n")


def _badge(args: argparse.Namespace, base: str, key: str, said: str, stdout: TextIO) -> None:
    """``team badge on|off``: ``PUT /teams/{team}/badge``, then the README line when on."""
    body = json.dumps({"public": args.action == "on"}).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    view = request_json("PUT", f"{base}/badge", headers=headers, body=body)[2]
    stdout.write(f"team {said}: badge {'public' if view['public'] else 'private'}\n")
    if view["public"]:
        stdout.write("in a README (main; another branch: /badges/.../<branch>.svg):\n")
        stdout.write(f"{view['markdown']}\n")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    api = args.api.rstrip("/")
    try:
        check_transport(api)
        key = read_key(dict(os.environ))
        licence = _call("GET", f"{api}/licence", key)
        team = licence.get("team")
        if licence.get("tier") != "team" or not team:
            stderr.write(
                f"toolcall300 team: {'member keys' if args.what == 'keys' else 'a badge'} "
                "belong to a team licence's purchase key\n"
            )
            return EXIT_ERROR
        base = f"{api}/teams/{quote(str(team), safe='')}"
        said = f"{team} ({licence.get('team_name')})"
        if args.what == "keys":
            _keys(args, f"{base}/keys", key, said, stdout)
        else:
            _badge(args, base, key, said, stdout)
    except (ApiError, ValueError, OSError, KeyError, TypeError, AttributeError) as exc:
        stderr.write(f"toolcall300 team: {exc}\n")
        return EXIT_ERROR
    return EXIT_OK
