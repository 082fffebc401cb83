"""End to end: the dashboard in headless chromium against the real local stack over HTTP.

A team licence is bought the way ``toolcall300 dev purchase`` does it (``POST /checkout``, the
local checkout page, then the claim); real runs are submitted through ``POST /runs`` with ``adapter_cmd``
and scored by the local worker; then, in the browser: sign in, the charts of a team with
several runs, a run and its comparison, a failed run, the report download, sign out, phone
width, keyboard only, an empty team and a wrong key. Screenshots go to
tests/integration/screenshots/ (gitignored).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect
from support.dashboard import HeldRequests, settle, shoot
from support.runs import wait_for_run

from toolcall300.spec import PARALLEL_CATEGORIES

pytestmark = pytest.mark.slow

TOOLSHIM = ["toolcall300", "toolshim", "--stream"]
#: The reference normaliser answering lists: the parallel track's stream protocol.
TOOLSHIM_ALL = ["toolcall300", "toolshim", "--all", "--stream"]
#: toolshim's deltas process adapter: the deltas track's protocol.
TOOLSHIM_DELTAS = ["python3", "-m", "toolcall300.toolshim.deltas"]
#: An adapter that refuses every case: a clear regression against a toolshim baseline.
REFUSE_ALL = [
    "python3",
    "-c",
    "import sys, json\n"
    "for line in sys.stdin:\n"
    "    print(json.dumps({'id': json.loads(line)['id'], 'call': None}), flush=True)\n",
]
#: An adapter that dies at once with something on stderr: a failed run with a log tail.
CRASHES = ["sh", "-c", "echo 'adapter: cannot load model weights' >&2; exit 3"]


@dataclass(frozen=True)
class Team:
    url: str
    name: str
    key: str
    runs: dict[str, dict[str, Any]]  # label -> final GET /runs/{id} body
    deltas_run_id: str  # scored while the other tests run (see ``deltas_run``)


def buy_team_licence(url: str, team: str) -> str:
    from toolcall300.client.dev import purchase

    claimed = purchase(url, tier="team", team=team)
    return str(claimed["key"])


def submit(url: str, key: str, body: dict[str, Any]) -> str:
    """POST /runs; the new run's id."""
    auth = {"Authorization": f"Bearer {key}"}
    answer = requests.post(f"{url}/runs", json=body, headers=auth, timeout=30)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["run_id"])


@pytest.fixture(scope="module")
def team(dashboard_stack: str) -> Team:
    """A team with seven real runs: baseline, regression, pass, failure, a second baseline, and
    a run of the parallel track and one of the deltas track on main (each its track's own
    baseline, never on the single-call trend). The deltas run (of the stack's cut deltas track,
    see ``dashboard_stack``) is not waited for here but by the one test that shows it (``deltas_run``):
    the others never wait on it, and it is scored while they run."""
    url = dashboard_stack
    probe = requests.get(f"{url}/teams/nobody-here/runs", timeout=30)
    if probe.status_code == 404 and "route" in probe.text:
        pytest.fail("the local stack does not serve GET /teams/{team}/runs (runs routes missing)")
    name = "dash-" + secrets.token_hex(4)
    key = buy_team_licence(url, name)
    commit = iter(f"{n:07x}{secrets.token_hex(3)}" for n in range(1, 99))

    def start(
        adapter: list[str], ref: str = "refs/heads/main", baseline: str = "main", **more: str
    ) -> str:
        body = {"adapter_cmd": adapter, "ref": ref, "commit": next(commit), "baseline": baseline}
        return submit(url, key, {**body, **more})

    # The baseline must be scored before the runs measured against it; the other four
    # neither set nor move main's baseline, so they are scored side by side.
    runs = {"baseline": wait_for_run(url, key, start(TOOLSHIM))}
    started = {
        "regression": start(REFUSE_ALL),
        "pass": start(TOOLSHIM, ref="refs/heads/feature-x"),
        "failed": start(CRASHES),
        "release": start(TOOLSHIM, ref="refs/heads/release-1.2", baseline="release-1.2"),
        "parallel": start(TOOLSHIM_ALL, track="parallel"),
    }
    deltas = start(TOOLSHIM_DELTAS, track="deltas")
    runs.update({label: wait_for_run(url, key, run_id) for label, run_id in started.items()})
    return Team(url, name, key, runs, deltas)


@pytest.fixture(scope="module")
def deltas_run(team: Team) -> dict[str, Any]:
    """The team's deltas run, scored (module scope: set up before a test signs in)."""
    return wait_for_run(team.url, team.key, team.deltas_run_id)


@pytest.fixture
def signed_in(watched_page: Any, team: Team) -> Iterator[Any]:
    watched_page.goto(team.url + "/dashboard")
    watched_page.get_by_label("Licence key").fill(team.key)
    watched_page.get_by_role("button", name="Sign in").click()
    watched_page.get_by_role("heading", name=f"Team {team.name}").wait_for()
    yield watched_page


def test_the_seeded_runs_have_the_verdicts_the_journey_needs(team: Team) -> None:
    r = team.runs
    assert r["baseline"]["status"] == "scored" and r["baseline"]["verdict"] == "baseline_set"
    assert r["regression"]["verdict"] == "regression"
    assert r["regression"]["comparison"]["flipped"]["broken"]
    assert r["pass"]["verdict"] == "pass"
    assert r["failed"]["status"] == "failed" and r["failed"]["failure"]["reason"]
    assert r["release"]["verdict"] == "baseline_set"
    assert r["parallel"]["track"] == "parallel" and r["parallel"]["verdict"] == "baseline_set"


def test_sign_in_charts_open_run_comparison_sign_out(signed_in: Any, team: Team) -> None:
    pg = signed_in
    # the charts: five counts and twelve categories, one point per scored run of branch main
    # on main's baseline (the feature-x run measured against main is not on main's trend)
    assert pg.locator("#count-charts figure.chart").count() == 5
    assert pg.locator("#category-charts figure.chart").count() == 12
    assert pg.get_by_label("Branch").input_value() == "main"
    assert pg.locator("#count-charts svg").first.get_attribute("data-points") == "2"
    assert pg.locator("#count-charts [data-mark=regression]").count() == 5
    exact = pg.locator("figure[data-chart='Exact matches'] figcaption").text_content()
    assert f"latest {team.runs['regression']['summary']['exact']} of 300" in exact
    # every branch: the feature-x run joins the trend
    pg.get_by_label("Branch").select_option("")
    assert pg.locator("#count-charts svg").first.get_attribute("data-points") == "3"
    exact = pg.locator("figure[data-chart='Exact matches'] figcaption").text_content()
    assert f"latest {team.runs['pass']['summary']['exact']} of 300" in exact
    shoot(pg, "e2e-1-history")

    # open the regression and read its comparison
    regression = team.runs["regression"]
    pg.get_by_role("link", name=regression["run_id"]).first.click()
    pg.get_by_role("heading", name=f"Run {regression['run_id']}").wait_for()
    comparison = pg.locator("#comparison")
    comparison.wait_for()
    assert "Regression." in comparison.text_content()
    assert team.runs["baseline"]["run_id"] in comparison.text_content()
    broken = pg.locator("#flipped-broken li").all_text_contents()
    assert broken == regression["comparison"]["flipped"]["broken"]
    fell = regression["comparison"]["categories"]
    assert pg.locator("#categories-fell li").count() == sum(
        1 for c in fell.values() if c["delta"] < 0
    )
    shoot(pg, "e2e-2-run-regression")

    # a broken case id opens its case view: the stored report's input, expected and returned
    # call, and the rationale the licence includes, from the real stack
    if pg.locator("#flipped-broken details").count():  # a long list is folded
        pg.locator("#flipped-broken summary").click()
    pg.locator("#flipped-broken").get_by_role("link", name=broken[0], exact=True).click()
    pg.get_by_role("heading", name=f"Case {broken[0]}").wait_for()
    pg.locator("#case-rationale").wait_for()
    direct = requests.get(
        f"{team.url}/runs/{regression['run_id']}/report",
        headers={"Authorization": f"Bearer {team.key}"},
        timeout=30,
    ).json()["score"]["failure_details"][broken[0]]
    assert pg.locator("#case-input").text_content() == direct["input"]
    assert pg.locator("#case-expected").text_content() == direct["expected"]
    assert pg.locator("#case-returned").text_content() == "a refusal (null)"
    assert pg.locator("#case-rule").text_content() == direct["rule"]
    why = requests.get(
        f"{team.url}/cases/{broken[0]}/rationale",
        headers={"Authorization": f"Bearer {team.key}"},
        timeout=30,
    ).json()
    assert why["rationale"] in pg.locator("#case-rationale").text_content()
    shoot(pg, "e2e-2b-case-view")
    pg.get_by_role("link", name="The run").click()
    pg.get_by_role("heading", name=f"Run {regression['run_id']}").wait_for()

    # back to the history, then sign out
    pg.get_by_role("link", name="All runs").click()
    pg.get_by_role("heading", name=f"Team {team.name}").wait_for()
    pg.get_by_role("button", name="Sign out").click()
    pg.get_by_role("heading", name="Sign in").wait_for()
    assert pg.evaluate("sessionStorage.length") == 0
    assert all(team.key not in url for url in pg.requests_seen)
    shoot(pg, "e2e-3-signed-out")
    assert pg.console_errors == []


def test_failed_run_shows_its_reason_and_log_tail(signed_in: Any, team: Team) -> None:
    failed = team.runs["failed"]
    signed_in.get_by_role("link", name=failed["run_id"]).first.click()
    signed_in.get_by_role("heading", name="Why it failed").wait_for()
    assert failed["failure"]["reason"] in signed_in.locator("#run-body").text_content()
    assert signed_in.locator("pre.log").text_content() == (
        failed["failure"]["stderr_tail"] or "(empty)"
    )
    shoot(signed_in, "e2e-4-run-failed")


def test_report_download_is_the_stored_report(signed_in: Any, team: Team, tmp_path: Path) -> None:
    scored = team.runs["pass"]
    signed_in.get_by_label("Branch").select_option("feature-x")  # the run of branch feature-x
    signed_in.get_by_role("link", name=scored["run_id"]).first.click()
    with signed_in.expect_download() as info:
        signed_in.get_by_role("button", name="Download report (JSON)").click()
    got = Path(info.value.path()).read_bytes()
    direct = requests.get(
        f"{team.url}/runs/{scored['run_id']}/report",
        headers={"Authorization": f"Bearer {team.key}"},
        timeout=30,
    )
    assert direct.status_code == 200
    assert json.loads(got) == json.loads(direct.content)


def test_named_baselines_to_choose_between(signed_in: Any, team: Team) -> None:
    options = signed_in.locator("#baseline-select option").all_text_contents()
    assert options[:2] == ["main", "release-1.2"]
    signed_in.get_by_label("Baseline", exact=True).select_option("release-1.2")
    ids = signed_in.locator("#runs-table tbody th a").all_text_contents()
    assert ids == [team.runs["release"]["run_id"]]
    shoot(signed_in, "e2e-5-release-baseline")


def test_phone_width(watched_page: Any, team: Team) -> None:
    watched_page.set_viewport_size({"width": 375, "height": 812})
    watched_page.goto(team.url + "/dashboard")
    watched_page.get_by_label("Licence key").fill(team.key)
    watched_page.get_by_role("button", name="Sign in").click()
    watched_page.get_by_role("heading", name=f"Team {team.name}").wait_for()
    assert watched_page.evaluate("document.documentElement.scrollWidth") <= 375
    shoot(watched_page, "e2e-6-phone-history")
    watched_page.get_by_role("link", name=team.runs["regression"]["run_id"]).first.click()
    watched_page.locator("#comparison").wait_for()
    assert watched_page.evaluate("document.documentElement.scrollWidth") <= 375
    shoot(watched_page, "e2e-7-phone-run")


def test_keyboard_only(watched_page: Any, team: Team) -> None:
    pg, kb = watched_page, watched_page.keyboard
    pg.goto(team.url + "/dashboard")
    kb.press("Tab")
    assert pg.evaluate("document.activeElement.className") == "skip-link"
    kb.press("Enter")
    kb.press("Tab")
    assert pg.evaluate("document.activeElement.id") == "key"
    kb.type(team.key)
    kb.press("Enter")
    pg.get_by_role("heading", name=f"Team {team.name}").wait_for()
    target = team.runs["regression"]["run_id"]
    for _ in range(300):
        kb.press("Tab")
        if pg.evaluate("document.activeElement.textContent") == target:
            break
    else:
        pytest.fail("the regression's link was never reached with Tab")
    assert pg.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    kb.press("Enter")
    pg.get_by_role("heading", name=f"Run {target}").wait_for()
    assert pg.evaluate("document.activeElement.id") == "run-title"
    shoot(pg, "e2e-8-keyboard-run")


def test_empty_team(watched_page: Any, dashboard_stack: str) -> None:
    name = "empty-" + secrets.token_hex(4)
    key = buy_team_licence(dashboard_stack, name)
    watched_page.goto(dashboard_stack + "/dashboard")
    watched_page.get_by_label("Licence key").fill(key)
    watched_page.get_by_role("button", name="Sign in").click()
    watched_page.get_by_role("heading", name="No runs yet").wait_for()
    assert f"{name} has no hosted runs yet" in watched_page.locator("#empty").text_content()
    shoot(watched_page, "e2e-9-empty-team")


def test_wrong_key(watched_page: Any, dashboard_stack: str) -> None:
    watched_page.goto(dashboard_stack + "/dashboard")
    watched_page.get_by_label("Licence key").fill("tc300_" + secrets.token_urlsafe(24))
    watched_page.get_by_role("button", name="Sign in").click()
    error = watched_page.locator("#signin-error")
    error.wait_for()
    assert error.text_content().startswith("That key was not accepted")
    assert watched_page.evaluate("sessionStorage.length") == 0
    shoot(watched_page, "e2e-10-wrong-key")


def test_member_keys_are_listed_for_the_purchase_key_only(watched_page: Any, team: Team) -> None:
    """docs/tenancy.md: the team's purchase key issues member keys; the dashboard lists them
    (ids and status, never keys); a member key signs in to the same team without that list."""
    licence = requests.get(
        f"{team.url}/licence", headers={"Authorization": f"Bearer {team.key}"}, timeout=30
    ).json()
    member = requests.post(
        f"{team.url}/teams/{licence['team']}/keys",
        headers={"Authorization": f"Bearer {team.key}"},
        timeout=30,
    ).json()
    pg = watched_page
    pg.goto(team.url + "/dashboard")
    pg.get_by_label("Licence key").fill(team.key)
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_role("heading", name=f"Team {team.name}").wait_for()
    pg.get_by_role("heading", name="Member keys").wait_for()
    listed = pg.locator("#members-list").text_content() or ""
    assert member["key_id"] in listed and member["key"] not in pg.content()
    pg.get_by_role("button", name="Sign out").click()
    pg.get_by_label("Licence key").fill(member["key"])
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_role("heading", name=f"Team {team.name}").wait_for()
    assert pg.locator("#members").is_hidden()
    assert pg.console_errors == []


class HeldListRefresh:
    """Holds the page's next refresh of the member-key list, so a test can check that the
    outcome of an issue or a revoke is not shown beside a list that still says otherwise
    (the order the page keeps whatever the network's timing)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.held = HeldRequests(page, lambda r: r.method == "GET" and r.url.endswith("/keys"))

    def click(self, button: Any, outcome: Any) -> None:
        """Click, hold the list refresh the click causes, check ``outcome`` is not shown
        yet, then let the refresh through."""
        button.click()
        self.held.wait()
        assert outcome.count() == 0, "the outcome was shown before the list was refreshed"
        self.held.release()


def test_the_purchase_key_issues_and_revokes_member_keys_on_the_page(
    watched_page: Any, dashboard_stack: str
) -> None:
    """The dashboard manages member keys as `toolcall300 team keys` does: issue (shown once),
    list, revoke; a team with no runs yet can do it too."""
    url, name = dashboard_stack, "keys-" + secrets.token_hex(4)
    owner = buy_team_licence(url, name)
    pg = watched_page
    pg.goto(url + "/dashboard")
    pg.get_by_label("Licence key").fill(owner)
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_role("heading", name="Member keys").wait_for()
    HeldListRefresh(pg).click(
        pg.get_by_role("button", name="Issue a member key"), outcome=pg.locator("#member-new-key")
    )
    shown = pg.locator("#member-new-key")
    shown.wait_for()
    member = shown.text_content() or ""
    assert member.startswith("tc300_")
    auth = {"Authorization": f"Bearer {member}"}
    seen = requests.get(f"{url}/licence", headers=auth, timeout=30).json()
    assert seen["tier"] == "team" and seen["manages_members"] is False
    key_id = requests.get(
        f"{url}/teams/{seen['team']}/keys", headers={"Authorization": f"Bearer {owner}"}, timeout=30
    ).json()["keys"][0]["key_id"]
    assert key_id in (pg.locator("#members-list").text_content() or "")
    HeldListRefresh(pg).click(
        pg.get_by_role("button", name=f"Revoke {key_id}"),
        outcome=pg.get_by_text(f"Member key {key_id} is revoked."),
    )
    pg.get_by_text(f"Member key {key_id} is revoked.").wait_for()
    assert requests.get(f"{url}/licence", headers=auth, timeout=30).status_code == 401
    assert pg.get_by_role("button", name=f"Revoke {key_id}").count() == 0
    pg.get_by_role("button", name="Sign out").click()
    assert member not in pg.content()  # the key shown once does not outlive the session
    assert pg.console_errors == []


def test_a_member_key_answered_after_signing_out_is_never_shown(
    watched_page: Any, dashboard_stack: str
) -> None:
    """The purchase key signs out while a member key it asked for is on its way: the key,
    shown once, is not put back on the signed-out page (the old page showed it there, with
    a refresh of the list it sent without a key)."""
    url, name = dashboard_stack, "late-" + secrets.token_hex(4)
    owner = buy_team_licence(url, name)
    pg = watched_page
    pg.goto(url + "/dashboard")
    pg.get_by_label("Licence key").fill(owner)
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_role("heading", name="Member keys").wait_for()
    issued = HeldRequests(pg, lambda r: r.method == "POST" and r.url.endswith("/keys"))
    pg.get_by_role("button", name="Issue a member key").click()
    issued.wait()
    pg.get_by_role("button", name="Sign out").click()
    pg.get_by_role("heading", name="Sign in").wait_for()
    asked = len(pg.requests_seen)
    with pg.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith("/keys")
    ) as made:
        issued.release()
    key = made.value.json()["key"]
    settle(pg)
    settle(pg)  # the old page's refresh of the list, then its outcome, each a round trip
    assert key not in pg.content()
    assert pg.locator("#member-new").text_content() == ""
    assert not [u for u in pg.requests_seen[asked:] if u.endswith("/keys")]
    assert pg.console_errors == []


def test_the_purchase_key_switches_the_badge_on_the_page_and_a_member_key_sees_it(
    watched_page: Any, dashboard_stack: str
) -> None:
    """The dashboard's badge switch does what `toolcall300 team badge on|off` does, on the real
    stack: the README line it prints, the image served without a key, previewed on the page;
    a member key sees the setting and no switch."""
    url, name = dashboard_stack, "badge-" + secrets.token_hex(4)
    owner = buy_team_licence(url, name)
    team = requests.get(
        f"{url}/licence", headers={"Authorization": f"Bearer {owner}"}, timeout=30
    ).json()["team"]
    member = requests.post(
        f"{url}/teams/{team}/keys", headers={"Authorization": f"Bearer {owner}"}, timeout=30
    ).json()["key"]
    image = f"{url}/badges/{team}/main.svg"
    pg = watched_page
    pg.goto(url + "/dashboard")
    pg.get_by_label("Licence key").fill(owner)
    pg.get_by_role("button", name="Sign in").click()
    switch = pg.get_by_role("switch", name="Public badge")
    expect(switch).not_to_be_checked()
    assert requests.get(image, timeout=30).status_code == 404
    switch.click()
    expect(pg.locator("#readme-badge-markdown")).to_have_text(f"![TOOLCALL-300]({image})")
    expect(switch).to_be_checked()
    assert requests.get(image, timeout=30).status_code == 200
    preview = pg.get_by_role("img", name="Preview of the badge of branch main")
    preview.wait_for()
    pg.wait_for_function("document.getElementById('readme-badge-preview').complete")
    width, height = preview.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    assert width > 100 and height == 20
    shoot(pg, "e2e-11-badge-public")
    switch.click()
    expect(pg.locator("#readme-badge-state")).to_contain_text("The badge is private")
    assert requests.get(image, timeout=30).status_code == 404
    switch.click()
    expect(switch).to_be_checked()
    expect(pg.locator("#readme-badge-markdown")).to_have_text(f"![TOOLCALL-300]({image})")
    pg.get_by_role("button", name="Sign out").click()
    pg.get_by_label("Licence key").fill(member)
    pg.get_by_role("button", name="Sign in").click()
    # the member's own view (the owner's, hidden, still says the same until it is drawn)
    pg.get_by_role("heading", name=f"Team {name}").wait_for()
    expect(pg.locator("#readme-badge-state")).to_have_text(
        "The badge is public: anyone with its address sees it."
    )
    assert pg.get_by_role("switch").count() == 0
    assert pg.get_by_text("Only the team's purchase key can change it.").is_visible()
    assert pg.console_errors == []


def test_the_track_filter_shows_the_parallel_runs_own_figures(signed_in: Any, team: Team) -> None:
    """The real stack's parallel run: never on the single-call charts; under the track
    filter, its own charts with its own figures, as its summary holds them."""
    pg = signed_in
    parallel = team.runs["parallel"]
    assert pg.get_by_label("Track", exact=True).input_value() == "single"
    assert parallel["run_id"] not in pg.locator("#runs-table").text_content()
    tips = pg.locator("#count-charts svg title").all_text_contents()
    assert tips and not any(parallel["run_id"] in t for t in tips)
    pg.get_by_label("Track", exact=True).select_option("parallel")
    charts = pg.locator("#count-charts")
    assert charts.get_attribute("data-track") == "parallel"
    s = parallel["summary"]
    exact = charts.locator("figure[data-chart='Exact turns']")
    assert exact.locator("svg").get_attribute("data-points") == "1"
    caption = exact.locator("figcaption").text_content()
    assert caption == f"Exact turns latest {s['exact_turns']} of {s['cases']}"
    recall = 100 * s["matched_calls"] / s["expected_calls"]
    assert (
        f"latest {recall:.1f}%" in charts.locator("figure[data-chart='Call recall']").text_content()
    )
    false = charts.locator("figure[data-chart='False collapses'] figcaption").text_content()
    assert false == f"False collapses latest {s['false_collapses']}"
    cats = pg.locator("#category-charts figure.chart")
    titles = cats.evaluate_all("fs => fs.map(f => f.dataset.chart)")
    assert titles == [c for c in PARALLEL_CATEGORIES if c in s["categories"]]  # the track's order
    latest = pg.locator("#latest-figures").text_content()
    assert latest.startswith(f"Parallel track: Exact turns {s['exact_turns']} of {s['cases']}")
    shown = [t.strip() for t in pg.locator("#runs-table tbody th a").all_text_contents()]
    assert shown == [parallel["run_id"]]
    assert parallel["run_id"] in pg.locator("#baselines").text_content()
    shoot(pg, "e2e-4-track-parallel")
    assert pg.console_errors == []


def test_the_track_filter_shows_the_deltas_runs_own_figures(
    deltas_run: dict[str, Any], signed_in: Any
) -> None:
    """The real stack's deltas run, driven over its process protocol: under the track filter,
    its own charts (exact, invariance, unsafe commits, commit lead) with its summary's figures."""
    pg = signed_in
    deltas = deltas_run
    assert deltas["track"] == "deltas" and deltas["verdict"] == "baseline_set"
    assert deltas["run_id"] not in pg.locator("#runs-table").text_content()
    pg.get_by_label("Track", exact=True).select_option("deltas")
    charts = pg.locator("#count-charts")
    assert charts.get_attribute("data-track") == "deltas"
    s = deltas["summary"]

    def caption(title: str) -> str:
        return str(charts.locator(f"figure[data-chart='{title}'] figcaption").text_content())

    assert caption("Exact") == f"Exact latest {s['exact']} of {s['cases']}"
    assert caption("Invariant across partitions") == (
        f"Invariant across partitions latest {s['invariant']} of {s['cases']}"
    )
    assert caption("Unsafe commits") == f"Unsafe commits latest {s['unsafe_commits']}"
    assert s["commit_lead"] > 0
    assert caption("Commit lead") == f"Commit lead latest {100 * s['commit_lead']:.1f}%"
    assert charts.locator("svg").first.get_attribute("data-points") == "1"
    shown = [t.strip() for t in pg.locator("#runs-table tbody th a").all_text_contents()]
    assert shown == [deltas["run_id"]]
    shoot(pg, "e2e-5-track-deltas")
    assert pg.console_errors == []
