"""``toolcall300 admin licence issue|list|revoke|reissue``: manage licences by hand.

For a manual sale (``issue``), a lost key (``reissue``: a new key, the old one stops working)
or a revocation outside Stripe. Talks to the licences table named by ``--table`` or
``LICENCES_TABLE`` with the operator's AWS credentials. New keys are printed alone on the last
line and nowhere else; ``list`` never shows keys or hashes.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime
from typing import TextIO

from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError
from toolcall300.service.domain import licences
from toolcall300.service.domain.licences import LicenceStore
from toolcall300.service.errors import BackendError


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(prog="toolcall300 admin", description="Operator commands.")
    parser.add_argument("--table", default=None, help="licences table (default: $LICENCES_TABLE)")
    sub = parser.add_subparsers(dest="noun", required=True)
    lic = sub.add_parser("licence", help="manage licences")
    verbs = lic.add_subparsers(dest="verb", required=True)
    issue = verbs.add_parser("issue", help="issue a licence for a manual sale")
    issue.add_argument("--tier", choices=licences.TIERS, required=True)
    issue.add_argument("--team", help="the team's display name (team tier)")
    issue.add_argument(
        "--team-id",
        help="add the licence to this existing team (team-<16 hex>) instead of a new one",
    )
    verbs.add_parser("list", help="list licences (never keys)")
    for verb, help_ in (("revoke", "revoke a licence"), ("reissue", "replace a lost key")):
        p = verbs.add_parser(verb, help=help_)
        p.add_argument("licence_id")
    args = parser.parse_args(argv)
    if getattr(args, "verb", None) == "issue":
        problem = licences.team_name_problem(args.team)
        if args.tier == "team" and problem is not None:
            raise UsageError(
                f"toolcall300 admin licence issue: --tier team needs --team NAME: {problem}"
            )
        if args.team_id is not None and licences.team_id_or_none(args.team_id) is None:
            raise UsageError(
                f"toolcall300 admin licence issue: --team-id {args.team_id!r} is not team-<16 hex>"
            )
    table = args.table or os.environ.get("LICENCES_TABLE")
    if not table:
        raise UsageError(
            "toolcall300 admin: name the licences table with --table or LICENCES_TABLE"
        )
    args.table = table
    return args


def execute(args: argparse.Namespace, store: LicenceStore, stdout: TextIO) -> None:
    """Run one verb against ``store`` (the testable core of :func:`run`)."""
    now = datetime.now(UTC)
    if args.verb == "list":
        for lic in licences.list_licences(store):
            stdout.write(json.dumps(lic.public(), sort_keys=True) + "\n")
        return
    if args.verb == "revoke":
        lic = licences.revoke(store, args.licence_id, now=now)
        stdout.write(f"licence {lic.licence_id}: {lic.status}\n")
        return
    if args.verb == "issue":
        key, lic = licences.issue_manual(
            store, tier=args.tier, team_name=args.team, team=args.team_id, now=now
        )
    else:
        key, lic = licences.reissue(store, args.licence_id, now=now)
    stdout.write(
        f"licence {lic.licence_id}: tier {lic.tier}, team {lic.team or '-'}, {lic.status}\n"
    )
    stdout.write("key (shown once):\n")
    stdout.write(f"{key}\n")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from toolcall300.service.sdk.dynamo import LicenceTable

    try:
        execute(args, LicenceTable(args.table), stdout)
    except BackendError as exc:
        stderr.write(f"toolcall300 admin: {exc.code}: {exc.message}\n")
        return EXIT_ERROR
    return EXIT_OK
