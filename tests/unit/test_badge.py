"""A team's README badge: the SVG drawn (well-formed, every text escaped) and the two routes
through the real handlers on moto: ``PUT /teams/{team}/badge`` (the purchase key only, a
strict body) and the public ``GET /badges/{team}/{branch}.svg`` (private by default, one 404
for a private badge and a team that does not exist, never a 500).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from toolcall300.service.api.openapi import document
from toolcall300.service.domain import badge, licences, runs
from toolcall300.service.domain.records import iso
from toolcall300.service.local.httpapi import invoke
from toolcall300.service.sdk.dynamo import LicenceTable
from toolcall300.service.sdk.runs import RunTable

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
SVG_NS = "{http://www.w3.org/2000/svg}"


def _svg(text: str) -> ET.Element:
    root = ET.fromstring(text)  # raises on anything that is not well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    return root


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG_NS}text")]


def _run(team: str, n: int, **fields: Any) -> runs.Run:
    base: dict[str, Any] = {
        "run_id": runs.new_run_id(T0 + timedelta(milliseconds=n)),
        "team": team,
        "licence_id": "lic",
        "adapter": {"kind": "image"},
        "ref": "refs/heads/main",
        "commit": f"{n:07x}",
        "status": "scored",
        "created_at": iso(T0 + timedelta(seconds=n)),
        "finished_at": iso(T0 + timedelta(seconds=n, minutes=5)),
        "verdict": "pass",
        "summary": {"cases": 300, "exact": 280 + n},
        "version": 1,
    }
    return runs.Run(**{**base, **fields})


# ----------------------------------------------------------------------------- the drawing


def test_a_pass_badge_is_well_formed_svg_with_the_verdict_and_exact_figure() -> None:
    drawn = badge.badge_for(_run("team-0", 7), branch="main", track="single")
    root = _svg(drawn.svg)
    assert _texts(root)[-2:] == ["pass · 287/300 exact"] * 2
    assert "TOOLCALL-300" in _texts(root)
    assert badge.GREEN in drawn.svg and badge.RED not in drawn.svg
    assert int(root.attrib["width"]) > 100 and root.attrib["height"] == "20"
    assert root.attrib["aria-label"] == "TOOLCALL-300: pass · 287/300 exact"
    assert drawn.etag.startswith('"') and len(drawn.etag) == 34


def test_a_regression_is_red_and_no_scored_run_is_grey() -> None:
    red = badge.badge_for(_run("t", 1, verdict="regression"), branch="main", track="single")
    assert "regression · 281/300 exact" in _texts(_svg(red.svg)) and badge.RED in red.svg
    grey = badge.badge_for(None, branch="main", track="single")
    assert "no scored run" in _texts(_svg(grey.svg)) and badge.GREY in grey.svg
    assert red.etag != grey.etag


def test_a_parallel_run_shows_its_exact_turns() -> None:
    run = _run("t", 0, track="parallel", summary={"cases": 100, "exact_turns": 91})
    drawn = badge.badge_for(run, branch="main", track="parallel")
    assert "pass · 91/100 exact" in _texts(_svg(drawn.svg))
    assert "(parallel track)" in _svg(drawn.svg).find(f"{SVG_NS}title").text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "branch",
    [
        "<script>alert(1)</script>",
        '"><svg onload=alert(1)>',
        "a&b]]><!--",
        "../../etc/passwd",
        "x\x00\x01\x1b\ufffe\ud800y",
        "feature/" + "é" * 5000,
    ],
)
def test_every_text_the_badge_draws_is_escaped(branch: str) -> None:
    for message in ("pass", "<b>x</b>", "\x07"):
        drawn = badge.render("<i>L</i>", message, badge.GREEN, title=f"on {branch}")
        root = _svg(drawn.svg)  # still well-formed XML
        assert {e.tag for e in root.iter()} <= {
            f"{SVG_NS}{t}" for t in ("svg", "title", "rect", "g", "text")
        }
        assert "<script" not in drawn.svg and "<i>" not in drawn.svg and "<b>" not in drawn.svg
    title = _svg(badge.badge_for(None, branch=branch, track="single").svg).find(f"{SVG_NS}title")
    assert title is not None and title.text is not None
    assert len(title.text) < 200  # a long name is cut, not drawn whole
    if branch.isprintable() and len(branch) < 80:
        assert branch in title.text  # said back exactly, as text


def test_the_latest_scored_run_is_chosen_per_branch_and_track() -> None:
    team = "team-0000000000000000"
    history = [
        _run(team, 1, ref="main"),
        _run(team, 2, ref="refs/heads/feature/x", verdict="regression"),
        _run(team, 3, ref="refs/heads/main", status="failed", verdict=None, summary=None),
        _run(team, 4, ref="main", track="parallel"),
        _run(team, 5, ref="refs/heads/main", status="running", verdict=None),
    ]
    assert badge.latest_scored(history, "main", "single") is history[0]
    assert badge.latest_scored(history, "feature/x", "single") is history[1]
    assert badge.latest_scored(history, "main", "parallel") is history[3]
    assert badge.latest_scored(history, "feature", "single") is None
    assert badge.branch_of("feature/x.svg") == "feature/x"
    assert badge.branch_of("main") is None and badge.branch_of(".svg") is None


# ----------------------------------------------------------------------------- the routes


@pytest.fixture
def raw(aws: Any, routes: list[Any]) -> Any:
    """A request through the real handlers: (status, headers, body bytes)."""

    def _call(
        method: str, target: str, *, key: str | None = None, body: Any = None, **headers: str
    ) -> tuple[int, dict[str, str], bytes]:
        sent = {k.replace("_", "-"): v for k, v in headers.items()}
        if key is not None:
            sent["authorization"] = f"Bearer {key}"
        data = b""
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent.setdefault("content-type", "application/json")
        return invoke(
            routes, method=method, target=target, headers=list(sent.items()), body=data,
            source_ip="198.51.100.7",
        )  # fmt: skip

    return _call


@pytest.fixture
def acme(aws: Any) -> dict[str, Any]:
    """Team acme: its purchase key, a member key, and scored runs on main and feature/x."""
    store = LicenceTable(aws.names["LicencesTable"])
    key, owner = licences.issue_manual(store, tier="team", team_name="acme", now=T0)
    member_key, _ = licences.issue_member(store, owner, str(owner.team), now=T0)
    table = RunTable(aws.names["RunsTable"])
    team = str(owner.team)
    for run in (
        _run(team, 1),
        _run(team, 2, ref="refs/heads/feature/x", verdict="regression"),
        _run(team, 3, track="parallel", summary={"cases": 100, "exact_turns": 64}),
    ):
        table.put(run.to_item(), expected_version=None)
    return {"key": key, "member": member_key, "team": team, "store": store}


def test_a_badge_is_private_until_the_purchase_key_makes_it_public(
    raw: Any, acme: dict[str, Any]
) -> None:
    team = acme["team"]
    status, _, hidden = raw("GET", f"/badges/{team}/main.svg")
    assert status == 404
    status, _, data = raw("PUT", f"/teams/{team}/badge", key=acme["key"], body={"public": True})
    assert status == 200, data
    view = json.loads(data)
    assert view["public"] is True and view["badge_url"].endswith(f"/badges/{team}/main.svg")
    assert view["markdown"] == f"![TOOLCALL-300]({view['badge_url']})"
    status, headers, svg = raw("GET", f"/badges/{team}/main.svg")
    assert status == 200 and headers["content-type"] == "image/svg+xml"
    assert "pass · 281/300 exact" in _texts(_svg(svg.decode()))
    assert headers["cache-control"] == "public, max-age=60" and headers["etag"]
    assert headers["content-security-policy"] == "default-src 'none'"
    status, again, body = raw("GET", f"/badges/{team}/main.svg", if_none_match=headers["etag"])
    assert status == 304 and body == b"" and again["etag"] == headers["etag"]
    status, _, data = raw("PUT", f"/teams/{team}/badge", key=acme["key"], body={"public": False})
    assert status == 200 and json.loads(data)["public"] is False
    assert raw("GET", f"/badges/{team}/main.svg")[2] == hidden


def test_a_branch_with_slashes_a_track_and_a_branch_without_runs(
    raw: Any, acme: dict[str, Any]
) -> None:
    team = acme["team"]
    raw("PUT", f"/teams/{team}/badge", key=acme["key"], body={"public": True})
    status, _, svg = raw("GET", f"/badges/{team}/feature/x.svg")
    assert status == 200 and "regression · 282/300 exact" in _texts(_svg(svg.decode()))
    status, _, svg = raw("GET", f"/badges/{team}/main.svg?track=parallel")
    assert status == 200 and "pass · 64/100 exact" in _texts(_svg(svg.decode()))
    status, _, svg = raw("GET", f"/badges/{team}/nothing/here.svg")
    assert status == 200 and "no scored run" in _texts(_svg(svg.decode()))
    status, _, data = raw("GET", f"/badges/{team}/main.svg?track=bogus")
    assert status == 400 and json.loads(data)["error"]["code"] == "invalid_track"


def test_a_member_key_or_another_teams_key_cannot_toggle_it(raw: Any, acme: dict[str, Any]) -> None:
    team = acme["team"]
    status, _, data = raw("PUT", f"/teams/{team}/badge", key=acme["member"], body={"public": True})
    assert status == 403 and json.loads(data)["error"]["code"] == "owner_only"
    rival_key, _ = licences.issue_manual(acme["store"], tier="team", team_name="rival", now=T0)
    status, _, data = raw("PUT", f"/teams/{team}/badge", key=rival_key, body={"public": True})
    assert status == 403 and json.loads(data)["error"]["code"] == "wrong_team"
    status, _, data = raw("PUT", f"/teams/{team}/badge", body={"public": True})
    assert status == 401
    assert raw("GET", f"/badges/{team}/main.svg")[0] == 404  # still private
    assert not licences.badge_public(acme["store"], team)


def test_any_key_of_the_team_reads_the_setting_and_its_readme_line(
    raw: Any, acme: dict[str, Any]
) -> None:
    """GET /teams/{team}/badge: what the dashboard shows (a member key sees what only the
    purchase key changes); another team's key is refused, no key is 401."""
    team = acme["team"]
    for key in (acme["key"], acme["member"]):
        status, _, data = raw("GET", f"/teams/{team}/badge", key=key)
        assert status == 200, data
        assert json.loads(data)["public"] is False
    raw("PUT", f"/teams/{team}/badge", key=acme["key"], body={"public": True})
    status, _, data = raw("GET", f"/teams/{team}/badge", key=acme["member"])
    view = json.loads(data)
    assert status == 200 and view["public"] is True and view["team"] == team
    assert view["markdown"] == f"![TOOLCALL-300]({view['badge_url']})"
    assert view["badge_url"].endswith(f"/badges/{team}/main.svg")
    rival_key, _ = licences.issue_manual(acme["store"], tier="team", team_name="rival", now=T0)
    status, _, data = raw("GET", f"/teams/{team}/badge", key=rival_key)
    assert status == 403 and json.loads(data)["error"]["code"] == "wrong_team"
    assert raw("GET", f"/teams/{team}/badge")[0] == 401


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"public": "yes"}, 400),
        ({"public": 1}, 400),
        ({"public": None}, 400),
        ({}, 400),
        ({"public": True, "team": "x"}, 400),
        ([True], 400),
        (b"public=true", 400),
        (b'{"public": true, "public": false}', 400),
        (b"", 400),
    ],
)
def test_a_malformed_body_is_a_400_and_changes_nothing(
    raw: Any, acme: dict[str, Any], body: Any, status: int
) -> None:
    got, _, data = raw("PUT", f"/teams/{acme['team']}/badge", key=acme["key"], body=body)
    assert got == status, data
    assert json.loads(data)["error"]["code"] in ("invalid_request", "invalid_body")
    assert not licences.badge_public(acme["store"], acme["team"])


def test_a_team_that_does_not_exist_answers_exactly_as_a_private_badge(
    raw: Any, acme: dict[str, Any]
) -> None:
    private = raw("GET", f"/badges/{acme['team']}/main.svg")
    for path in (
        "/badges/team-ffffffffffffffff/main.svg",
        "/badges/acme/main.svg",
        f"/badges/{acme['team']}.svg/main.svg",
    ):
        status, headers, body = raw("GET", path)
        assert (status, body) == (private[0], private[2]), path
        assert headers.get("content-type") == "application/json"


@pytest.mark.parametrize(
    "path",
    [
        "main",  # no .svg
        ".svg",
        "%3Cscript%3Ealert(1)%3C%2Fscript%3E.svg",
        "..%2F..%2Fetc%2Fpasswd.svg",
        "../../x.svg",
        "%00%ff%fe.svg",
        "a" * 5000 + ".svg",
        "feature/%E2%80%AE/x.svg",
    ],
)
def test_hostile_branches_are_a_badge_or_a_404_never_a_500(
    raw: Any, acme: dict[str, Any], path: str
) -> None:
    raw("PUT", f"/teams/{acme['team']}/badge", key=acme["key"], body={"public": True})
    status, _, body = raw("GET", f"/badges/{acme['team']}/{path}")
    assert status in (200, 404), (status, body[:200])
    if status == 200:
        root = _svg(body.decode())
        assert "no scored run" in _texts(root)
        assert "<script" not in body.decode()


def test_the_openapi_document_names_both_routes() -> None:
    paths = document()["paths"]
    get = paths["/badges/{team}/{branch}.svg"]["get"]
    assert {p["name"] for p in get["parameters"]} >= {"team", "branch", "track"}
    assert "image/svg+xml" in get["responses"]["200"]["content"]
    put = paths["/teams/{team}/badge"]["put"]
    assert put["requestBody"]["content"]["application/json"]
    assert not any(".+" in p for p in paths)


# ----------------------------------------------------------------------------- the CI client


def test_toolcall300_ci_prints_the_readme_line_of_the_runs_branch() -> None:
    import io

    from toolcall300.client import ci

    api = "https://api.example.com"
    run = {"status": "scored", "team": "team-0123456789abcdef", "ref": "refs/heads/feature/x"}
    line = "![TOOLCALL-300](https://api.example.com/badges/team-0123456789abcdef/feature/x.svg)"
    assert ci.badge_line(api, run) == line
    assert ci.badge_line(api, {**run, "status": "failed"}) is None

    def answer(method: str, url: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        if method == "POST":
            return 202, {}, {"run_id": "run_01ABCDEFGHJKMNPQRSTVWXYZ012", "status": "queued"}
        return 200, {}, {**run, "run_id": "run_01ABCDEFGHJKMNPQRSTVWXYZ012", "verdict": "pass"}

    argv = ["--api", api, "--image", "r.example.com/a@sha256:" + "a" * 64, "--wait"]
    argv += ["--ref", "refs/heads/feature/x", "--commit", "abc1234", "--poll", "0"]
    out, err = io.StringIO(), io.StringIO()
    code = ci.run(
        ci.parse_args(argv),
        out,
        err,
        request=answer,
        env={"TOOLCALL300_LICENCE": "tc300_" + "k" * 32},
    )
    assert code == 0 and err.getvalue().splitlines()[-1].endswith(f"(once public): {line}")
