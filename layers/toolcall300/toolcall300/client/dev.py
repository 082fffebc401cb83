"""``toolcall300 dev purchase``: buy a test licence from a local stack, as Stripe would sell one.

Builds a ``checkout.session.completed`` event in Stripe's shape (paid, ``metadata.tier`` and
``metadata.team``), signs it exactly as Stripe does (``t=<ts>,v1=<HMAC-SHA256(secret,
"<ts>.<payload>")>``) with the local stack's fixed dev secret, posts it to the webhook, claims
the key and prints it alone on the last line. A developer tool for local stacks and tests
only: it never talks to Stripe, and a deployed stack's real secret is not known to it.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import secrets
import time
from typing import Any, TextIO
from urllib.parse import urlencode

from toolcall300.client.http import ApiError, check_transport, request_json
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError

#: Must equal ``localstack.DEV_WEBHOOK_SECRET`` (kept literal so this module stays light).
DEV_WEBHOOK_SECRET = "whsec_toolcall300_local_dev_only"
PRICES = {"single": 4900, "team": 49900}


def signature_header(payload: bytes, secret: str, *, timestamp: int) -> str:
    """Stripe's ``Stripe-Signature`` header for ``payload`` (scheme v1)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def checkout_event(*, tier: str, team: str | None, now: int) -> dict[str, Any]:
    """A paid ``checkout.session.completed`` event with fresh ids."""
    session_id = "cs_test_" + secrets.token_hex(24)
    metadata = {"tier": tier, **({"team": team} if team else {})}
    session = {
        "id": session_id,
        "object": "checkout.session",
        "mode": "payment",
        "status": "complete",
        "payment_status": "paid",
        "payment_intent": "pi_" + secrets.token_hex(12),
        "amount_total": PRICES[tier],
        "currency": "usd",
        "created": now,
        "livemode": False,
        "metadata": metadata,
        "customer_details": {"email": "buyer@example.com"},
    }
    return {
        "id": "evt_" + secrets.token_hex(12),
        "object": "event",
        "api_version": "2024-06-20",
        "created": now,
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": "checkout.session.completed",
        "data": {"object": session},
    }


def purchase(api: str, *, tier: str, team: str | None, secret: str) -> dict[str, Any]:
    """Post the signed event, then claim (retrying briefly while the webhook lands)."""
    now = int(time.time())
    event = checkout_event(tier=tier, team=team, now=now)
    payload = json.dumps(event, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "Stripe-Signature": signature_header(payload, secret, timestamp=now),
    }
    request_json("POST", f"{api}/webhooks/stripe", headers=headers, body=payload)
    query = urlencode({"session_id": event["data"]["object"]["id"]})
    for attempt in range(10):
        try:
            return dict(request_json("GET", f"{api}/licence/claim?{query}")[2])
        except ApiError as exc:
            if exc.code != "not_ready" or attempt == 9:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(prog="toolcall300 dev", description="Developer helpers for a local stack.")
    sub = parser.add_subparsers(dest="action", required=True)
    buy = sub.add_parser("purchase", help="buy a test licence (signed test Stripe event)")
    buy.add_argument("--api", required=True, help="the local stack's URL")
    buy.add_argument("--tier", choices=("single", "team"), required=True)
    buy.add_argument("--team", help="team name (team tier)")
    args = parser.parse_args(argv)
    if args.tier == "team" and not args.team:
        raise UsageError("toolcall300 dev purchase: --tier team needs --team NAME")
    return args


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    api = args.api.rstrip("/")
    secret = os.environ.get("TOOLCALL300_WEBHOOK_SECRET", DEV_WEBHOOK_SECRET)
    try:
        check_transport(api)
        claimed = purchase(api, tier=args.tier, team=args.team, secret=secret)
    except (ApiError, ValueError, OSError) as exc:
        stderr.write(f"toolcall300 dev purchase: {exc}\n")
        return EXIT_ERROR
    stdout.write(
        f"licence {claimed['licence_id']}: tier {claimed['tier']}, team {claimed.get('team') or '-'}\n"
    )
    stdout.write("key (shown once; export it as TOOLCALL300_LICENCE):\n")
    stdout.write(f"{claimed['key']}\n")
    return EXIT_OK
