"""Two buyers who type the same team name are two accounts (docs/tenancy.md), end to end.

Over real HTTP on the shared local stack: both buy through ``toolcall300 dev purchase``
(``POST /checkout``, the dev checkout page, the key claim), both run on ``main``, and each
key sees only its own team's runs, reports, baselines and dashboard data; a member key issued
by one team reads that team and nothing of the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from support import runs as fakes

from toolcall300.client.http import ApiError, request_json

pytestmark = pytest.mark.slow


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def get(url: str, key: str | None) -> tuple[int, Any]:
    try:
        status, _, body = request_json("GET", url, headers=auth(key) if key else {})
        return status, body
    except ApiError as exc:
        return exc.status, exc.code


def scored_run(url: str, key: str, commit: str) -> str:
    body = {"adapter_cmd": fakes.ECHO, "ref": "refs/heads/main", "commit": commit}
    run_id = str(
        request_json("POST", f"{url}/runs", headers=auth(key), body=json.dumps(body).encode())[2][
            "run_id"
        ]
    )
    run = fakes.wait_for_run(url, key, run_id)
    assert run["status"] == "scored", run
    return run_id


def test_two_buyers_with_the_same_team_name_see_only_their_own_team(
    local_stack: Any, buy_licence: Callable[..., str]
) -> None:
    url = local_stack.url
    first, second = buy_licence("team", "Bravo-X"), buy_licence("team", "  BRAVO-X ")
    team = {k: get(f"{url}/licence", k)[1]["team"] for k in (first, second)}
    assert team[first] != team[second]
    runs = {first: scored_run(url, first, "aaaaaaa"), second: scored_run(url, second, "bbbbbbb")}
    for me, other in ((first, second), (second, first)):
        mine, theirs = team[me], team[other]
        assert get(f"{url}/runs/{runs[me]}", me)[0] == 200
        assert get(f"{url}/runs/{runs[me]}/report", me)[0] == 200
        assert get(f"{url}/runs/{runs[other]}", me)[0] == 404
        assert get(f"{url}/runs/{runs[other]}/report", me)[0] == 404
        listing = get(f"{url}/teams/{mine}/runs", me)[1]
        assert [r["run_id"] for r in listing["runs"]] == [runs[me]]
        history = get(f"{url}/teams/{mine}/baselines", me)[1]
        assert [b["run_id"] for b in history["baselines"]["main"]] == [runs[me]]
        for path in ("runs", "baselines", "keys"):
            assert get(f"{url}/teams/{theirs}/{path}", me)[0] == 403
    status, _, member = request_json("POST", f"{url}/teams/{team[first]}/keys", headers=auth(first))
    assert status == 201
    assert get(f"{url}/runs/{runs[first]}", member["key"])[0] == 200
    assert get(f"{url}/runs/{runs[second]}", member["key"])[0] == 404
    assert get(f"{url}/teams/{team[second]}/baselines", member["key"])[0] == 403
