"""``toolcall300 dev purchase``: buy a test licence from a local stack, as a buyer would.

The same path as a real purchase: ``POST /checkout`` (the service creates the Checkout
Session), then the checkout page (on a local stack, its stand-in for Stripe's hosted page,
which sends the signed events Stripe would), then the success URL: the one-time key claim.
The key is printed alone on the last line. A team name the service cannot use is said back
by the service (400 ``invalid_team_name``), never replaced.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, TextIO

from toolcall300.client.http import ApiError, check_transport, request_json
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError

_JSON = {"Content-Type": "application/json"}


def purchase(api: str, *, tier: str, team: str | None, key: str | None = None) -> dict[str, Any]:
    """Check out ``tier`` (a team name for a new team, or ``key`` to add a seat to its team),
    pay on the checkout page, then claim (retrying briefly while the webhook lands)."""
    body = {"product": tier, **({"team_name": team} if team is not None else {})}
    headers = {**_JSON, **({"Authorization": f"Bearer {key}"} if key else {})}
    started = request_json(
        "POST", f"{api}/checkout", headers=headers, body=json.dumps(body).encode()
    )[2]
    paid = request_json("POST", str(started["checkout_url"]), headers=_JSON, body=b"{}")[2]
    for attempt in range(10):
        try:
            return dict(request_json("GET", str(paid["success_url"]))[2])
        except ApiError as exc:
            if exc.code != "not_ready" or attempt == 9:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(prog="toolcall300 dev", description="Developer helpers for a local stack.")
    sub = parser.add_subparsers(dest="action", required=True)
    buy = sub.add_parser("purchase", help="buy a test licence through POST /checkout")
    buy.add_argument("--api", required=True, help="the local stack's URL")
    # checks-500: a pack of paid argument checks (docs/argcheck-payment.md).
    buy.add_argument("--tier", choices=("single", "team", "checks-500"), required=True)
    buy.add_argument("--team", help="the new team's display name (team tier)")
    args = parser.parse_args(argv)
    if args.tier == "team" and not args.team:
        raise UsageError("toolcall300 dev purchase: --tier team needs --team NAME")
    return args


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    api = args.api.rstrip("/")
    try:
        check_transport(api)
        claimed = purchase(api, tier=args.tier, team=args.team)
    except (ApiError, ValueError, OSError) as exc:
        stderr.write(f"toolcall300 dev purchase: {exc}\n")
        return EXIT_ERROR
    checks = None
    if claimed.get("tier") == "checks":  # say the pack's balance, as GET /licence does
        try:
            auth = {"Authorization": f"Bearer {claimed['key']}"}
            checks = request_json("GET", f"{api}/licence", headers=auth)[2].get("checks")
        except (ApiError, OSError, AttributeError):
            checks = None
    stdout.write(licence_line(claimed, checks) + "\n")
    stdout.write("key (shown once; export it as TOOLCALL300_LICENCE):\n")
    stdout.write(f"{claimed['key']}\n")
    return EXIT_OK


def licence_line(claimed: dict[str, Any], checks: dict[str, Any] | None = None) -> str:
    """What was bought, in the words of its tier (a pack has no team; a single licence neither).

    >>> licence_line({"licence_id": "lic_1", "tier": "team", "team": "t_9", "team_name": "Acme"})
    'licence lic_1: tier team, team t_9 (Acme)'
    >>> licence_line({"licence_id": "lic_2", "tier": "checks"}, {"remaining": 500, "granted": 500})
    'licence lic_2: a check pack, 500 of 500 paid checks left (POST /check)'
    >>> licence_line({"licence_id": "lic_3", "tier": "single"})
    'licence lic_3: tier single (one developer)'
    """
    head = f"licence {claimed['licence_id']}"
    if claimed.get("tier") == "team":
        return f"{head}: tier team, team {claimed.get('team')} ({claimed.get('team_name')})"
    if claimed.get("tier") == "checks":
        balance = (
            f"{checks['remaining']} of {checks['granted']} paid checks left"
            if checks
            else "its balance is at GET /licence"
        )
        return f"{head}: a check pack, {balance} (POST /check)"
    return f"{head}: tier {claimed.get('tier')} (one developer)"
