"""A team's README badge on the one-machine stack, over real HTTP (SQLite edition).

Bought through the dev checkout, scored by the stack's own worker: the badge is private (404,
the same body as a team that does not exist) until the purchase key turns it on; a member key
and another team's key cannot; then it draws the branch's latest verdict and exact figure as
the run says them, per branch (slashes too), and a headless Chromium renders it as an image.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest
from support import runs as fakes

from toolcall300.client.http import ApiError, request_json

pytestmark = pytest.mark.slow
SVG_NS = "{http://www.w3.org/2000/svg}"
#: Answers one invented call for every case: a regression against any baseline.
INVENT = fakes.py(
    "import json,sys\nfor line in sys.stdin:\n    item=json.loads(line)\n"
    "    print(json.dumps({'id':item['id'],'call':{'name':'invented_tool','arguments':{}}}),"
    "flush=True)\n"
)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def fetch(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    """A plain GET, as a browser or an image proxy sends it (no key)."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def set_badge(url: str, team: str, key: str, public: Any) -> tuple[int, Any]:
    body = json.dumps({"public": public}).encode()
    try:
        status, _, doc = request_json(
            "PUT", f"{url}/teams/{team}/badge", headers=auth(key), body=body
        )
        return status, doc
    except ApiError as exc:
        return exc.status, exc.code


def scored(url: str, key: str, command: list[str], ref: str, commit: str) -> dict[str, Any]:
    body = {"adapter_cmd": command, "ref": ref, "commit": commit}
    posted = request_json("POST", f"{url}/runs", headers=auth(key), body=json.dumps(body).encode())
    run = fakes.wait_for_run(url, key, str(posted[2]["run_id"]))
    assert run["status"] == "scored", run
    return run


def drawn(body: bytes) -> list[str]:
    root = ET.fromstring(body)
    assert root.tag == f"{SVG_NS}svg"
    return [t.text or "" for t in root.iter(f"{SVG_NS}text")]


def figure(run: dict[str, Any]) -> str:
    return f"{run['summary']['exact']}/{run['summary']['cases']} exact"


@pytest.fixture(scope="module")
def teams(local_stack: Any, buy_licence: Callable[..., str]) -> dict[str, Any]:
    url = local_stack.url
    owner, rival = buy_licence("team", "Badge-A"), buy_licence("team", "Badge-B")
    team = request_json("GET", f"{url}/licence", headers=auth(owner))[2]["team"]
    member = request_json("POST", f"{url}/teams/{team}/keys", headers=auth(owner))[2]["key"]
    return {"url": url, "owner": owner, "rival": rival, "member": member, "team": team}


def test_the_badge_is_private_until_the_owner_turns_it_on_then_shows_the_verdict(
    teams: dict[str, Any],
) -> None:
    url, team = teams["url"], teams["team"]
    good = scored(url, teams["owner"], fakes.ECHO, "refs/heads/main", "aaaaaaa")
    assert good["verdict"] == "baseline_set"
    status, _, private = fetch(f"{url}/badges/{team}/main.svg")
    assert status == 404
    assert fetch(f"{url}/badges/team-ffffffffffffffff/main.svg")[::2] == (404, private)
    assert set_badge(url, team, teams["member"], True) == (403, "owner_only")
    assert set_badge(url, team, teams["rival"], True) == (403, "wrong_team")
    assert set_badge(url, team, teams["owner"], "yes")[0] == 400
    assert fetch(f"{url}/badges/{team}/main.svg")[::2] == (404, private)  # still private

    status, view = set_badge(url, team, teams["owner"], True)
    assert status == 200 and view["public"] is True
    assert view["markdown"] == f"![TOOLCALL-300]({url}/badges/{team}/main.svg)"
    status, headers, body = fetch(f"{url}/badges/{team}/main.svg")
    assert status == 200 and headers["content-type"] == "image/svg+xml"
    assert f"pass · {figure(good)}" in drawn(body)
    assert "max-age=60" in headers["cache-control"]
    assert fetch(f"{url}/badges/{team}/main.svg", **{"If-None-Match": headers["etag"]})[0] == 304

    worse = scored(url, teams["owner"], INVENT, "refs/heads/main", "bbbbbbb")
    assert worse["verdict"] == "regression"
    status, again, body = fetch(
        f"{url}/badges/{team}/main.svg", **{"If-None-Match": headers["etag"]}
    )
    assert status == 200 and again["etag"] != headers["etag"]
    assert f"regression · {figure(worse)}" in drawn(body)

    branch = scored(url, teams["owner"], fakes.ECHO, "refs/heads/feature/badge", "ccccccc")
    status, _, body = fetch(f"{url}/badges/{team}/feature/badge.svg")
    assert status == 200 and f"{branch['verdict']} · {figure(branch)}" in drawn(body)
    status, _, body = fetch(f"{url}/badges/{team}/%3Cscript%3E.svg")
    assert status == 200 and drawn(body)[-1] == "no scored run" and b"<script" not in body

    assert set_badge(url, team, teams["owner"], False) == (200, {**view, "public": False})
    assert fetch(f"{url}/badges/{team}/main.svg")[::2] == (404, private)


def test_chromium_renders_the_badge_as_an_image(teams: dict[str, Any], watched_page: Any) -> None:
    url, team = teams["url"], teams["team"]
    assert set_badge(url, team, teams["owner"], True)[0] == 200
    watched_page.goto(f"{url}/openapi.json")  # a page of the stack's own origin
    watched_page.set_content(
        f'<img id="ok" src="{url}/badges/{team}/main.svg" alt="badge">'
        f'<img id="private" src="{url}/badges/team-ffffffffffffffff/main.svg" alt="none">'
    )
    watched_page.wait_for_function(
        "() => [...document.images].every(i => i.complete)", timeout=30_000
    )
    ok = watched_page.eval_on_selector("#ok", "i => [i.naturalWidth, i.naturalHeight]")
    assert ok[0] > 100 and ok[1] == 20, ok
    assert watched_page.eval_on_selector("#private", "i => i.naturalWidth") == 0


def test_team_badge_on_and_off_from_the_cli(
    teams: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolcall300 team badge on|off` does what the PUT does, and prints the README line."""
    import io

    from toolcall300.cli import dispatch

    url, team = teams["url"], teams["team"]

    def badge(switch: str, key: str) -> tuple[int, str, str]:
        monkeypatch.setenv("TOOLCALL300_LICENCE", key)
        out, err = io.StringIO(), io.StringIO()
        code = dispatch(["team", "badge", switch, "--api", url], out, err)
        return code, out.getvalue(), err.getvalue()

    code, _, err = badge("on", teams["member"])
    assert code == 1 and "owner_only" in err
    code, out, err = badge("on", teams["owner"])
    assert code == 0, err
    assert out.splitlines()[-1] == f"![TOOLCALL-300]({url}/badges/{team}/main.svg)"
    assert fetch(f"{url}/badges/{team}/main.svg")[0] == 200
    code, out, _ = badge("off", teams["owner"])
    assert code == 0 and out.endswith(": badge private\n")
    assert fetch(f"{url}/badges/{team}/main.svg")[0] == 404
