"""GET /teams/{team}/baselines through the real handler (moto DynamoDB): bounded pages.

The history grows with every baseline set, so the route answers a page:
``limit`` (default 50, at most 200) baselines newest first, and ``next`` (a link carrying an
opaque cursor of ``(baseline_set_at, run_id)``) while older ones exist. Hostile limits and
cursors are a 400 with a specific code, never a 500, and a cursor never reads across teams.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.gateway import Call

from toolcall300.service.domain import runs
from toolcall300.service.domain.licences import issue_manual
from toolcall300.service.domain.records import iso
from toolcall300.service.sdk.dynamo import LicenceTable
from toolcall300.service.sdk.runs import RunTable

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _team(aws: Any, name: str) -> tuple[str, str]:
    key, lic = issue_manual(
        LicenceTable(aws.names["LicencesTable"]), tier="team", team_name=name, now=T0
    )
    return key, str(lic.team)


def _baseline(aws: Any, team: str, n: int, set_at: datetime, name: str = "main") -> str:
    run_id = runs.new_run_id(T0 + timedelta(milliseconds=n))
    item = runs.Run(
        run_id=run_id,
        team=team,
        licence_id="lic",
        adapter={"kind": "image"},
        ref=name,
        commit=f"{n:07x}",
        baseline=name,
        status="scored",
        created_at=iso(T0),
        finished_at=iso(set_at),
        verdict="baseline_set",
        baseline_set_at=iso(set_at),
        version=1,
    ).to_item()
    RunTable(aws.names["RunsTable"]).put(item, expected_version=None)
    return run_id


@pytest.fixture
def acme(aws: Any) -> dict[str, Any]:
    """Team acme with 7 baselines, three of them set in the same second (newest first)."""
    key, team = _team(aws, "acme")
    seconds = [0, 1, 2, 2, 2, 3, 4]
    ids = [_baseline(aws, team, i, T0 + timedelta(seconds=s)) for i, s in enumerate(seconds)]
    return {"key": key, "team": team, "ids": ids}


def _get(call: Call, key: str, target: str) -> tuple[int, Any]:
    status, _, data = call("GET", target, headers={"authorization": f"Bearer {key}"})
    return status, data


def _ids(doc: dict[str, Any]) -> list[str]:
    return [e["run_id"] for entries in doc["baselines"].values() for e in entries]


def test_following_next_reads_every_baseline_once_newest_first_in_bounded_pages(
    call: Call, acme: dict[str, Any]
) -> None:
    target: str | None = f"/teams/{acme['team']}/baselines?limit=2"
    pages: list[list[str]] = []
    while target is not None:
        status, doc = _get(call, acme["key"], target)
        assert status == 200 and doc["team"] == acme["team"]
        assert 0 < len(_ids(doc)) <= 2
        pages.append(_ids(doc))
        target = doc["next"]
    seen = [i for page in pages for i in page]
    assert sorted(seen) == sorted(acme["ids"]) and len(seen) == len(set(seen)) == 7
    assert len(pages) == 4
    assert set(pages[0]) == set(acme["ids"][5:])  # the two set last (seconds 4 and 3)
    assert set(pages[-1]) == {acme["ids"][0]}
    # one page holding everything says there is no more
    status, doc = _get(call, acme["key"], f"/teams/{acme['team']}/baselines")
    assert status == 200 and doc["next"] is None and sorted(_ids(doc)) == sorted(acme["ids"])
    assert [e["run_id"] for e in doc["baselines"]["main"]] == acme["ids"][:2] + sorted(
        acme["ids"][2:5]
    ) + acme["ids"][5:]


def test_the_default_page_is_50_and_the_most_is_200(call: Call, aws: Any) -> None:
    key, team = _team(aws, "many")
    for i in range(runs.BASELINE_PAGE + 1):
        _baseline(aws, team, i, T0 + timedelta(minutes=i))
    status, doc = _get(call, key, f"/teams/{team}/baselines")
    assert status == 200 and len(_ids(doc)) == runs.BASELINE_PAGE and doc["next"]
    status, doc = _get(call, key, doc["next"])
    assert status == 200 and len(_ids(doc)) == 1 and doc["next"] is None
    status, data = _get(call, key, f"/teams/{team}/baselines?limit={runs.MAX_BASELINE_PAGE}")
    assert status == 200 and len(_ids(data)) == runs.BASELINE_PAGE + 1


@pytest.mark.parametrize("limit", ["0", "-1", "201", "abc", "1e3", ""])
def test_a_hostile_limit_is_a_400_invalid_request(
    call: Call, acme: dict[str, Any], limit: str
) -> None:
    status, data = _get(call, acme["key"], f"/teams/{acme['team']}/baselines?limit={limit}")
    assert status == 400 and data["error"]["code"] == "invalid_request"


def _cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_hostile_cursors_are_a_400_bad_cursor_and_another_teams_reads_nothing(
    call: Call, aws: Any, acme: dict[str, Any]
) -> None:
    rival_key, rival = _team(aws, "rival")
    _baseline(aws, rival, 99, T0)
    status, first = _get(call, acme["key"], f"/teams/{acme['team']}/baselines?limit=2")
    acme_cursor = first["next"].split("cursor=")[1]
    run_id = acme["ids"][0]
    hostile = [
        "!!!",
        "a" * 300,
        "%00",
        "bm90IGpzb24",  # "not json"
        _cursor({"t": acme["team"]}),
        _cursor([rival, "2026-12-01T12:00:00Z"]),
        _cursor([rival, "yesterday", run_id]),
        _cursor([rival, "2026-12-01T12:00:00Z", "run_' OR 1=1 --"]),
        _cursor([rival, "2026-12-01T12:00:00Z", 7]),
        _cursor([rival, ["2026-12-01T12:00:00Z"], run_id]),
        acme_cursor,  # minted for acme's listing: never a position in rival's
    ]
    for cursor in hostile:
        status, data = _get(
            call, rival_key, f"/teams/{rival}/baselines?cursor={quote(cursor, safe='')}"
        )
        assert status == 400 and data["error"]["code"] == "bad_cursor", (cursor, status, data)
    # and acme's cursor with rival's key on acme's listing is refused before any read
    status, data = _get(call, rival_key, f"/teams/{acme['team']}/baselines?cursor={acme_cursor}")
    assert status == 403


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cursor=st.text(max_size=400)
    | st.binary(max_size=200).map(lambda b: base64.urlsafe_b64encode(b).decode())
)
def test_any_cursor_answers_a_page_or_a_400_never_a_500(
    call: Call, acme: dict[str, Any], cursor: str
) -> None:
    status, data = _get(
        call, acme["key"], f"/teams/{acme['team']}/baselines?cursor={quote(cursor, safe='')}"
    )
    assert status in (200, 400), (status, data)
    if status == 400:
        assert data["error"]["code"] in ("bad_cursor", "invalid_request")
    else:
        assert set(_ids(data)) <= set(acme["ids"])


def test_the_openapi_document_names_the_page_parameters_and_next() -> None:
    from toolcall300.service.api import openapi

    doc = openapi.document()
    get = doc["paths"]["/teams/{team}/baselines"]["get"]
    params = {p["name"]: p for p in get["parameters"]}
    assert params["limit"]["schema"]["maximum"] == runs.MAX_BASELINE_PAGE
    assert params["limit"]["schema"]["default"] == runs.BASELINE_PAGE
    assert "cursor" in params
    assert "next" in doc["components"]["schemas"]["BaselinesView"]["properties"]
