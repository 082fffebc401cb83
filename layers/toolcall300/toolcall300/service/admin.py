"""``toolcall300 admin licence issue|list|revoke|reissue``: manage licences by hand;
``toolcall300 admin pack grant LICENCE``: give an operator's own licence a house pack of
argument checks (kept out of the tripwires, docs/argcheck-payment.md).

For a manual sale (``issue``), a lost key (``reissue``: a new key, the old one stops working)
or a revocation outside Stripe. Talks to the licences table named by ``--table`` or
``LICENCES_TABLE`` with the operator's AWS credentials, or with ``--state DIR`` to a local
stack's state folder (its SQLite database; safe while the stack runs). New keys are printed
alone on the last line and nowhere else; ``list`` never shows keys or hashes.

``toolcall300 admin --state DIR backup --out NEW`` copies a local stack's state folder while
it serves (sqlite3's online backup, then the objects, secrets and keys);
``admin --state DIR restore --from BACKUP`` makes a new folder from one (docs/local-stack.md).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from toolcall300.argcheck.criteria import PACK_CHECKS
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser, UsageError
from toolcall300.service.domain import licences
from toolcall300.service.domain.ledger import CheckLedger
from toolcall300.service.domain.licences import LicenceStore
from toolcall300.service.errors import BackendError, BadRequest, NotFound


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(prog="toolcall300 admin", description="Operator commands.")
    parser.add_argument("--table", default=None, help="licences table (default: $LICENCES_TABLE)")
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        help="a local stack's state folder (instead of the AWS tables)",
    )
    sub = parser.add_subparsers(dest="noun", required=True)
    backup = sub.add_parser("backup", help="copy a local stack's state folder (while it runs)")
    backup.add_argument("--out", type=Path, required=True, help="a new folder for the copy")
    restore = sub.add_parser("restore", help="make a local stack's state folder from a backup")
    restore.add_argument("--from", dest="source", type=Path, required=True)
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
    parser.add_argument(
        "--ledger-table", default=None, help="check ledger table (default: $CHECK_LEDGER_TABLE)"
    )
    pack = sub.add_parser("pack", help="argument-check packs")
    pack_verbs = pack.add_subparsers(dest="verb", required=True)
    grant = pack_verbs.add_parser("grant", help="give an operator's own licence a house pack")
    grant.add_argument("licence_id")
    grant.add_argument("--checks", type=int, default=PACK_CHECKS)
    args = parser.parse_args(argv)
    if args.noun in ("backup", "restore"):
        if args.state is None:
            raise UsageError(f"toolcall300 admin {args.noun}: name the state folder with --state")
        return args
    if args.state is not None:
        return _checked_verbs(args)
    if args.noun == "pack":
        if args.checks < 1:
            raise UsageError("toolcall300 admin pack grant: --checks must be at least 1")
        args.ledger_table = args.ledger_table or os.environ.get("CHECK_LEDGER_TABLE")
        if not args.ledger_table:
            raise UsageError(
                "toolcall300 admin pack: name the ledger with --ledger-table or CHECK_LEDGER_TABLE"
            )
    _checked_verbs(args)
    table = args.table or os.environ.get("LICENCES_TABLE")
    if not table:
        raise UsageError(
            "toolcall300 admin: name the licences table with --table or LICENCES_TABLE"
        )
    args.table = table
    return args


def _checked_verbs(args: argparse.Namespace) -> argparse.Namespace:
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
    return args


def execute(
    args: argparse.Namespace,
    store: LicenceStore,
    stdout: TextIO,
    ledger: CheckLedger | None = None,
) -> None:
    """Run one verb against ``store`` (and ``ledger`` for packs): the testable core of :func:`run`."""
    now = datetime.now(UTC)
    if args.noun == "pack":
        assert ledger is not None
        item = store.get(args.licence_id)
        if item is None or not licences.is_licence(item):
            raise NotFound(f"no licence {args.licence_id}", code="not_found")
        lic = licences.Licence.from_item(item)
        if lic.source != "manual":
            # A bought licence's checks are sales: a gift would count as paid use.
            raise BadRequest(
                "only an operator's own (manual) licence takes a house pack", code="not_house"
            )
        ledger.grant(
            lic.licence_id,
            checks=args.checks,
            payment_id=f"house-{secrets.token_hex(8)}",
            granted_at=now.isoformat(timespec="seconds"),
        )
        stdout.write(f"licence {lic.licence_id}: {args.checks} house checks granted\n")
        return
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
    if args.noun in ("backup", "restore"):
        return _copy_state(args, stdout, stderr)
    try:
        if args.state is not None:
            from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

            if not (args.state / "state.db").exists():
                stderr.write(f"toolcall300 admin: {args.state} is not a state folder\n")
                return EXIT_ERROR
            edition = LocalAdapters(StateFolder(args.state), public_url=lambda: "")
            try:
                execute(args, edition.licences, stdout, edition.ledger)
            finally:
                edition.close()
            return EXIT_OK
        from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable

        ledger = CheckLedgerTable(args.ledger_table) if args.ledger_table else None
        execute(args, LicenceTable(args.table), stdout, ledger)
    except BackendError as exc:
        stderr.write(f"toolcall300 admin: {exc.code}: {exc.message}\n")
        return EXIT_ERROR
    return EXIT_OK


def _copy_state(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from toolcall300.service.statefolder import folder as state_folder

    try:
        if args.noun == "backup":
            copied = state_folder.backup(args.state, args.out)
            stdout.write(f"backed up {args.state} to {args.out}: {', '.join(copied)}\n")
        else:
            copied = state_folder.restore(args.source, args.state)
            stdout.write(f"restored {args.state} from {args.source}: {', '.join(copied)}\n")
    except (OSError, ValueError, state_folder.FolderInUse) as exc:
        stderr.write(f"toolcall300 admin {args.noun}: {exc}\n")
        return EXIT_ERROR
    return EXIT_OK
