"""``toolcall300 serve --migrate``: an earlier version's moto recording becomes the database
(docs/local-stack.md, "Upgrading"). The recording is made the way that version made it:
moto's own recorder, appending every request the stack's moto server served."""

from __future__ import annotations

import io
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcall300.service.local import migrate, stack, state
from toolcall300.service.local.provision import provision

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def recorded(tmp_path: Path, template: dict[str, Any]) -> Iterator[Path]:
    """A state folder holding an old stack's recording: tables, a licence, a run, a pack, the
    corpus manifest and the webhook secret, written through the AWS adapters to moto."""
    from moto import moto_api
    from moto.moto_api._internal.recorder.models import Recorder
    from moto.server import ThreadedMotoServer

    from toolcall300.service.api import wiring
    from toolcall300.service.sdk.dynamo import CheckLedgerTable, LicenceTable
    from toolcall300.service.sdk.runs import RunTable
    from toolcall300.service.sdk.s3 import CorpusObjects

    folder = tmp_path / "state"
    folder.mkdir()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    saved_env, saved_recorder = dict(os.environ), moto_api.recorder
    recorder = Recorder()
    recorder._location = str(folder / state.LEGACY_RECORDING)
    moto_api.recorder = recorder
    try:
        host, port = server.get_host_and_port()
        os.environ.update({**stack.FAKE_AWS_ENV, "AWS_ENDPOINT_URL": f"http://{host}:{port}"})
        os.environ.pop("TOOLCALL300_STATE_DIR", None)
        wiring.renew()
        recorder.start_recording()
        made = provision(
            template,
            prefix=migrate.PREFIX,
            secret_values={
                "StripeWebhookSecret": json.dumps({"current": "whsec_old", "previous": ""}),
                "StripeApiKeySecret": json.dumps({"api_key": ""}),
            },
        )
        n = made.names
        LicenceTable(n["LicencesTable"]).put(
            {"licence_id": "lic_old", "key_hash": "h", "team": "team-0123456789abcdef",
             "transitions": [], "version": 1},
            expected_version=None,
        )  # fmt: skip
        RunTable(n["RunsTable"]).put(
            {"run_id": "run_old", "team": "team-0123456789abcdef", "created_at": "2026-11-30T00:00:00Z",
             "callback_secret": "cb-secret", "version": 1},
            expected_version=None,
        )  # fmt: skip
        CheckLedgerTable(n["CheckLedgerTable"]).grant(
            "lic_old", checks=500, payment_id="pi_old", granted_at="2026-11-30T00:00:00+00:00"
        )
        CorpusObjects(n["CorpusBucket"]).put("manifest.json", b'{"files": []}', "application/json")
        recorder.stop_recording()
        # moto's backends are this process's: empty them, so only the replay can bring it back
        urllib.request.urlopen(
            urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")
        ).close()
    finally:
        moto_api.recorder = saved_recorder
        server.stop()
        os.environ.clear()
        os.environ.update(saved_env)
        wiring.renew()
    yield folder


def test_a_moto_recording_is_migrated_into_the_database(
    recorded: Path, template: dict[str, Any]
) -> None:
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    with pytest.raises(state.LegacyState):  # refused as it is
        state.open_state(recorded)
    copied = migrate.migrate(recorded, template)
    assert copied["licences"] == 1 and copied["runs"] == 1 and copied["ledger"] == 1
    assert copied["objects"] == 1
    assert not (recorded / state.LEGACY_RECORDING).exists()
    kept = recorded / (state.LEGACY_RECORDING + ".migrated")
    # it holds every request the old stack served, the callback secret among them (base64,
    # not sealed): owner-only, as moto wrote it 0644
    assert kept.stat().st_mode & 0o777 == 0o600
    edition = LocalAdapters(StateFolder(recorded), public_url=lambda: "")
    try:
        assert edition.licences.find_by_key_hash("h")["licence_id"] == "lic_old"
        assert edition.runs.get("run_old")["callback_secret"] == "cb-secret"
        pack = edition.ledger.pack("lic_old")
        assert (pack["remaining"], pack["payments"]) == (500, {"pi_old"})
        assert edition.corpus("tc300-local-corpusbucket").read("manifest.json") == b'{"files": []}'
        assert edition.folder.secret("tc300-local-stripewebhooksecret")["current"] == "whsec_old"
    finally:
        edition.close()
    held = state.open_state(recorded)  # now an ordinary state folder
    state.close_state(held)
    with pytest.raises(migrate.MigrationError):  # once only
        migrate.migrate(recorded, template)


def test_serve_refuses_the_old_folder_in_one_line_naming_the_migration(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / state.LEGACY_RECORDING).write_text("{}\n")
    out, err = io.StringIO(), io.StringIO()
    args = stack.parse_args(["--port", "0", "--state", str(tmp_path / "state")])
    assert stack.run(args, out, err) == 1
    assert err.getvalue().count("\n") == 1 and "--migrate" in err.getvalue()
