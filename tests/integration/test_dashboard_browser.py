"""The dashboard in headless chromium against a contract-shaped team API over real HTTP.

These pin the page's behaviour state by state (signed out, loading, empty, error, a failed
run, a regression's comparison, the report download, phone width, keyboard only) with data
chosen to exercise each branch. The end-to-end run against the real local stack is in
``test_dashboard_e2e.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from support.dashboard import (
    EMPTY_KEY,
    GOOD_KEY,
    OWNER_KEY,
    PACK_KEY,
    SINGLE_KEY,
    ContractApi,
    HeldRequests,
    run_record,
    settle,
    shoot,
    summary,
)


def open_dashboard(pg: Any, api: ContractApi, key: str | None = GOOD_KEY) -> None:
    pg.goto(api.base_url + "/dashboard")
    if key is not None:
        sign_in(pg, key)


def sign_in(pg: Any, key: str) -> None:
    pg.get_by_label("Licence key").fill(key)
    pg.get_by_role("button", name="Sign in").click()


def test_signed_out_page_shows_only_the_sign_in_form(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api, key=None)
    assert watched_page.get_by_role("heading", name="Sign in").is_visible()
    assert not watched_page.locator("#history").is_visible()
    assert watched_page.evaluate("document.activeElement.id") != "key"  # skip link comes first
    assert contract_api.seen_auth == [""]  # only the page itself was fetched
    assert watched_page.console_errors == []


def test_sign_in_shows_charts_for_every_count_and_category(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    counts = watched_page.locator("#count-charts figure.chart")
    cats = watched_page.locator("#category-charts figure.chart")
    assert counts.count() == 5
    assert cats.count() == 12
    # main baseline: runs 1, 2, 3 are scored on main (4 failed, 5 is release-1.2, 6 running)
    points = watched_page.locator("#count-charts svg").first.get_attribute("data-points")
    assert points == "3"
    first = watched_page.locator("#count-charts svg").first
    assert first.get_attribute("role") == "img"
    label_ids = first.get_attribute("aria-labelledby").split()
    texts = [watched_page.locator(f"[id='{i}']").text_content() for i in label_ids]
    assert texts[0] == "Exact matches"
    assert "from 261 of 300" in texts[1] and "to 250 of 300" in texts[1]
    assert watched_page.locator("#count-charts [data-mark=baseline]").count() == 5
    assert watched_page.locator("#count-charts [data-mark=regression]").count() == 5
    assert watched_page.console_errors == []


def test_charts_have_a_text_table_alternative(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    figure = watched_page.locator("figure[data-chart='Exact matches']")
    figure.locator("summary").click()
    rows = figure.locator("tbody tr")
    assert rows.count() == 3
    assert rows.nth(2).locator("td").nth(1).text_content() == "250 of 300"
    assert rows.nth(0).locator("td").nth(2).text_content() == "Baseline set"


def test_runs_table_lists_every_run_of_the_baseline_newest_first(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    ids = watched_page.locator("#runs-table tbody th a").all_text_contents()
    assert ids == [f"run_{n:026d}" for n in (6, 4, 3, 2, 1)]


def test_choosing_a_named_baseline_switches_the_history(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    options = watched_page.locator("#baseline-select option").all_text_contents()
    assert options == ["main", "release-1.2", "All baselines"]
    watched_page.get_by_label("Baseline", exact=True).select_option("release-1.2")
    ids = watched_page.locator("#runs-table tbody th a").all_text_contents()
    assert ids == [f"run_{5:026d}"]
    assert "release-1.2" in watched_page.locator("#baselines caption").first.text_content()
    watched_page.get_by_label("Baseline", exact=True).select_option("")
    assert watched_page.locator("#runs-table tbody tr").count() == 6


def test_opening_a_regression_shows_its_comparison(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("link", name=f"run_{3:026d}").first.click()
    watched_page.get_by_role("heading", name=f"Run run_{3:026d}").wait_for()
    assert watched_page.evaluate("document.activeElement.id") == "run-title"
    comparison = watched_page.locator("#comparison")
    assert "Regression." in comparison.text_content()
    assert "exact matches fell from 261 to 250" in comparison.text_content()
    broken = watched_page.locator("#flipped-broken li").all_text_contents()
    assert broken == ["tc300-0254", "tc300-0266", "tc300-0288"]
    assert watched_page.locator("#flipped-fixed li").all_text_contents() == ["tc300-0011"]
    exact_row = watched_page.locator("#comparison-counts tr", has_text="Exact matches")
    assert "-11 (worse)" in exact_row.text_content()
    invented_row = watched_page.locator("#comparison-counts tr", has_text="Invented calls")
    assert "+3 (worse)" in invented_row.text_content()
    fell = watched_page.locator("#categories-fell li").count()
    rose = watched_page.locator("#categories-rose li").count()
    assert fell > 0 and rose > 0
    watched_page.get_by_role("link", name="All runs").click()
    watched_page.get_by_role("heading", name="Team acme").wait_for()


def test_failed_run_shows_reason_and_log_tail_as_text(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("link", name=f"run_{4:026d}").first.click()
    watched_page.get_by_role("heading", name="Why it failed").wait_for()
    assert "The adapter did not start." in watched_page.locator("#run-body").text_content()
    log = watched_page.locator("pre.log")
    assert "<script>alert('x')</script>" in log.text_content()  # shown as text, never run
    assert watched_page.locator("pre.log script").count() == 0
    assert not watched_page.get_by_role("button", name="Download report (JSON)").is_visible()
    shoot(watched_page, "contract-run-failed")


def test_report_downloads_through_a_blob_with_the_bearer_header(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("link", name=f"run_{2:026d}").first.click()
    with watched_page.expect_download() as info:
        watched_page.get_by_role("button", name="Download report (JSON)").click()
    download = info.value
    assert download.suggested_filename == f"run_{2:026d}-report.json"
    assert download.url.startswith("blob:")
    report = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert report["run_id"] == f"run_{2:026d}" and report["exact"] == 262
    assert contract_api.seen_auth[-1] == f"Bearer {GOOD_KEY}"


def test_key_lives_in_session_storage_only_and_never_in_a_url(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.get_by_role("link", name=f"run_{3:026d}").first.click()
    watched_page.get_by_role("heading", name=f"Run run_{3:026d}").wait_for()
    assert watched_page.evaluate("sessionStorage.getItem('toolcall300.licenceKey')") == GOOD_KEY
    assert watched_page.evaluate("localStorage.length") == 0
    assert watched_page.evaluate("document.cookie") == ""
    assert all(GOOD_KEY not in url for url in watched_page.requests_seen)
    assert GOOD_KEY not in watched_page.url
    data_calls = [a for a in contract_api.seen_auth if a]
    assert data_calls and all(a == f"Bearer {GOOD_KEY}" for a in data_calls)


def test_sign_out_forgets_the_key(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.get_by_role("button", name="Sign out").click()
    assert watched_page.get_by_role("heading", name="Sign in").is_visible()
    assert watched_page.evaluate("sessionStorage.length") == 0
    assert "Signed out" in watched_page.locator("#notice").text_content()
    watched_page.reload()
    assert watched_page.get_by_role("heading", name="Sign in").is_visible()


def test_reload_keeps_the_session_within_the_tab(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.reload()
    watched_page.get_by_role("heading", name="Team acme").wait_for()


def test_wrong_key_is_an_error_on_the_form(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api, key="tc300_" + "x" * 32)
    error = watched_page.locator("#signin-error")
    error.wait_for()
    assert error.text_content() == "That key was not accepted: unknown licence key"
    assert watched_page.get_by_label("Licence key").get_attribute("aria-invalid") == "true"
    assert watched_page.evaluate("sessionStorage.length") == 0


def test_single_licence_is_refused_with_a_reason(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api, key=SINGLE_KEY)
    watched_page.locator("#signin-error").wait_for()
    assert "needs a team licence" in watched_page.locator("#signin-error").text_content()


def test_a_check_pack_key_is_refused_saying_its_balance_not_single_developer(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api, key=PACK_KEY)
    watched_page.locator("#signin-error").wait_for()
    said = watched_page.locator("#signin-error").text_content() or ""
    assert "check-pack key (37 of 500 paid checks left)" in said
    assert "single-developer" not in said and "needs a team licence" in said


def test_empty_team_shows_the_empty_state(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api, key=EMPTY_KEY)
    watched_page.get_by_role("heading", name="No runs yet").wait_for()
    assert "quiet-team has no hosted runs yet" in watched_page.locator("#empty").text_content()
    assert not watched_page.locator("#history-body").is_visible()
    assert not watched_page.locator("#baseline-control").is_visible()


def test_server_error_shows_the_error_state_and_retry_recovers(
    watched_page: Any, contract_api: ContractApi
) -> None:
    contract_api.faults["/teams/acme/runs"] = 500
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Something went wrong").wait_for()
    assert "injected failure" in watched_page.locator("#problem-text").text_content()
    shoot(watched_page, "contract-server-error")
    del contract_api.faults["/teams/acme/runs"]
    watched_page.get_by_role("button", name="Try again").click()
    watched_page.get_by_role("heading", name="Team acme").wait_for()


def test_loading_state_is_announced_while_data_is_on_its_way(
    watched_page: Any, contract_api: ContractApi
) -> None:
    """The team's runs are held on their way (not slowed by a delay the test must outrun:
    read after the delay, the page had already loaded on a busy machine)."""
    open_dashboard(watched_page, contract_api, key=None)
    runs = HeldRequests(watched_page, lambda r: "/teams/acme/runs" in r.url)
    sign_in(watched_page, GOOD_KEY)
    runs.wait()
    notice = watched_page.locator("#notice.loading")
    expect(notice).to_have_text("Loading runs and baselines…")
    assert notice.get_attribute("role") == "status"
    assert watched_page.locator("main").get_attribute("aria-busy") == "true"
    shoot(watched_page, "contract-loading")
    runs.release()
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    assert watched_page.locator("main").get_attribute("aria-busy") == "false"


def test_a_comparison_left_for_another_is_not_drawn_under_its_address(
    watched_page: Any, contract_api: ContractApi
) -> None:
    """The reader opens one comparison, then another before the first has loaded: the first's
    late answer is not drawn over the second (the old page drew it under the second's address)."""
    late, b = f"run_{2:026d}", f"run_{3:026d}"
    open_team(watched_page, contract_api)
    held = HeldRequests(watched_page, lambda r: r.url.endswith(f"/runs/{late}"))
    watched_page.evaluate(f"location.hash = '#/compare/{late}/{b}'")
    held.wait()
    watched_page.evaluate(f"location.hash = '#/compare/run_{1:026d}/{b}'")
    title = watched_page.get_by_role("heading", name=f"Run run_{1:026d} compared with {b}")
    title.wait_for()
    with watched_page.expect_response(lambda r: r.url.endswith(f"/runs/{late}/report")) as report:
        held.release()
    report.value.finished()
    settle(watched_page)
    expect(watched_page.locator("#compare-title")).to_have_text(
        f"Run run_{1:026d} compared with {b}"
    )
    assert watched_page.evaluate("location.hash") == f"#/compare/run_{1:026d}/{b}"
    assert watched_page.console_errors == []


def test_unknown_run_is_an_error_state(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.evaluate("location.hash = '#/runs/run_nope'")
    watched_page.get_by_role("heading", name="Something went wrong").wait_for()
    assert "no such run" in watched_page.locator("#problem-text").text_content()


def test_phone_width_has_no_horizontal_page_scroll(
    watched_page: Any, contract_api: ContractApi
) -> None:
    watched_page.set_viewport_size({"width": 375, "height": 812})
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    assert watched_page.evaluate("document.documentElement.scrollWidth") <= 375
    watched_page.get_by_role("link", name=f"run_{3:026d}").first.click()
    watched_page.get_by_role("heading", name="Why it failed").or_(
        watched_page.get_by_role("heading", name="Compared with the baseline")
    ).wait_for()
    assert watched_page.evaluate("document.documentElement.scrollWidth") <= 375


def test_keyboard_only_sign_in_open_run_and_sign_out(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api, key=None)
    kb = watched_page.keyboard
    kb.press("Tab")
    assert watched_page.evaluate("document.activeElement.className") == "skip-link"
    assert watched_page.locator(".skip-link").is_visible()
    kb.press("Enter")
    assert watched_page.evaluate("document.activeElement.id") == "main"
    kb.press("Tab")
    assert watched_page.evaluate("document.activeElement.id") == "key"
    kb.type(GOOD_KEY)
    kb.press("Enter")
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    # Tab until the first run link of the runs table has focus, then open it with Enter.
    target = f"run_{6:026d}"
    for _ in range(200):
        kb.press("Tab")
        if watched_page.evaluate("document.activeElement.textContent") == target:
            break
    else:
        pytest.fail("the run link was never reached with Tab")
    outline = watched_page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # visible focus
    shoot(watched_page, "contract-keyboard-focus")
    kb.press("Enter")
    watched_page.get_by_role("heading", name=f"Run {target}").wait_for()
    for _ in range(20):
        kb.press("Shift+Tab")
        if watched_page.evaluate("document.activeElement.id") == "sign-out":
            break
    else:
        pytest.fail("sign out was never reached with Shift+Tab")
    kb.press("Enter")
    assert watched_page.get_by_role("heading", name="Sign in").is_visible()


def test_no_request_leaves_the_page_origin(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.get_by_role("link", name=f"run_{2:026d}").first.click()
    watched_page.get_by_role("heading", name="Compared with the baseline").wait_for()
    assert watched_page.requests_seen
    assert all(url.startswith(contract_api.base_url) for url in watched_page.requests_seen)
    assert watched_page.console_errors == []  # no CSP violation, no script error


def test_a_running_run_is_checked_again_until_it_finishes(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    running = contract_api.runs[5]
    watched_page.get_by_role("link", name=running["run_id"]).first.click()
    watched_page.get_by_text("This run is running.").wait_for()
    running.update(status="scored", verdict="pass", summary=contract_api.runs[1]["summary"])
    running["finished_at"] = "2026-11-16T09:02:00Z"
    watched_page.get_by_role("heading", name="Scores").wait_for(timeout=15_000)
    assert watched_page.locator("#run-body .badge-scored").count() == 1


def test_long_flipped_lists_are_folded_but_complete(
    watched_page: Any, contract_api: ContractApi
) -> None:
    many = [f"tc300-{n:04d}" for n in range(1, 120)]
    contract_api.runs[2]["comparison"]["flipped"]["broken"] = many
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("link", name=contract_api.runs[2]["run_id"]).first.click()
    folded = watched_page.locator("#flipped-broken details")
    folded.wait_for()
    assert not watched_page.locator("#flipped-broken li").first.is_visible()
    folded.locator("summary").click()
    assert watched_page.locator("#flipped-broken li").all_text_contents() == many


#: WCAG 2.1 contrast of every visible text node against its nearest opaque background.
CONTRAST_JS = """
() => {
  function rgb(s) {
    const m = s.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(',').map(x => parseFloat(x));
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  }
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  }
  function background(el) {
    for (let n = el; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c && c.a === 1) return c;
    }
    return {r: 255, g: 255, b: 255, a: 1};
  }
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!t.textContent.trim() || !el || el.closest('[hidden], details:not([open]) > :not(summary), title, desc, script, style')) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const style = getComputedStyle(el);
    const fg = rgb(el instanceof SVGElement ? style.fill : style.color);
    if (!fg) continue;
    const bg = background(el);
    const a = lum(fg), b = lum(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize) * (el instanceof SVGElement ? (el.ownerSVGElement.getBoundingClientRect().width / el.ownerSVGElement.viewBox.baseVal.width) : 1);
    const large = size >= 24 || (size >= 18.66 && parseInt(style.fontWeight) >= 700);
    out.push({text: t.textContent.trim().slice(0, 40), ratio: Math.round(ratio * 100) / 100, need: large ? 3 : 4.5});
  }
  return out;
}
"""


def low_contrast(pg: Any) -> list[dict[str, Any]]:
    return [t for t in pg.evaluate(CONTRAST_JS) if t["ratio"] < t["need"]]


def test_text_contrast_meets_wcag_aa_on_every_view(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api, key=None)
    assert low_contrast(watched_page) == []
    sign_in(watched_page, GOOD_KEY)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    checked = watched_page.evaluate(CONTRAST_JS)
    assert len(checked) > 100  # the charts' axis labels and the tables are included
    assert low_contrast(watched_page) == []
    for n in (3, 4):
        watched_page.get_by_role("link", name=f"run_{n:026d}").first.click()
        watched_page.get_by_role("heading", name=f"Run run_{n:026d}").wait_for()
        assert low_contrast(watched_page) == []
        watched_page.get_by_role("link", name="All runs").click()


def test_a_key_refused_mid_session_signs_out_with_the_reason(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    run_id = contract_api.runs[2]["run_id"]
    contract_api.faults[f"/runs/{run_id}"] = 401  # e.g. the licence was revoked meanwhile
    watched_page.get_by_role("link", name=run_id).first.click()
    watched_page.get_by_role("heading", name="Sign in").wait_for()
    assert "Sign in again" in watched_page.locator("#signin-error").text_content()
    assert watched_page.evaluate("sessionStorage.length") == 0
    assert not watched_page.locator("#account").is_visible()


def test_reload_while_the_service_fails_offers_retry_and_sign_out(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    contract_api.faults["/licence"] = 503
    watched_page.reload()
    watched_page.get_by_role("heading", name="Something went wrong").wait_for()
    assert watched_page.get_by_role("button", name="Sign out").is_visible()
    del contract_api.faults["/licence"]
    watched_page.get_by_role("button", name="Try again").click()
    watched_page.get_by_role("heading", name="Team acme").wait_for()


def test_a_broken_case_id_opens_its_case_view_with_the_rationale(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("link", name=f"run_{3:026d}").first.click()
    watched_page.get_by_role("heading", name=f"Run run_{3:026d}").wait_for()
    # the failed cases of the stored report are listed, each id a link
    failed = watched_page.locator("#failed-cases-list li a")
    failed.first.wait_for()
    assert failed.all_text_contents() == ["tc300-0254", "tc300-0266", "tc300-0288"]
    # and the comparison's broken ids link to the same view
    watched_page.locator("#flipped-broken").get_by_role("link", name="tc300-0254").click()
    watched_page.get_by_role("heading", name="Case tc300-0254").wait_for()
    assert watched_page.evaluate("location.hash") == f"#/runs/run_{3:026d}/cases/tc300-0254"
    view = watched_page.locator("#case-body")
    assert '"days": [2]' in watched_page.locator("#case-input").text_content()
    assert watched_page.locator("#case-body img").count() == 0  # the input is text, never markup
    assert watched_page.locator("#case-expected").text_content() == (
        '{"arguments":{"days":2},"name":"get_forecast"}'
    )
    assert (
        watched_page.locator("#case-returned")
        .text_content()
        .endswith('"days":[2]},"name":"get_forecast"}')
    )
    assert watched_page.locator("#case-diff li").all_text_contents()[0] == (
        "$.arguments.days: expected 2, returned [2]"
    )
    assert watched_page.locator("#case-rule").text_content() == "rule 8 / D8.1"
    assert "one-element array [2]" in watched_page.locator("#case-rationale").text_content()
    assert "D1.1" in view.text_content()
    # the input wraps inside its box: the page never scrolls sideways
    assert watched_page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    shoot(watched_page, "contract-case-view")
    # a case without a rationale row says so; back to the run
    watched_page.goto(contract_api.base_url + f"/dashboard#/runs/run_{3:026d}/cases/tc300-0266")
    watched_page.get_by_role("heading", name="Case tc300-0266").wait_for()
    watched_page.locator("#case-rationale").wait_for()
    assert watched_page.locator("#case-rationale").text_content() == (
        "No rationale is available for this case."
    )
    watched_page.get_by_role("link", name="The run").click()
    watched_page.get_by_role("heading", name=f"Run run_{3:026d}").wait_for()
    # the one console line is the browser's own note of the rationale's 404, no script error
    assert watched_page.console_errors == [
        "Failed to load resource: the server responded with a status of 404 (Not Found)"
    ]


def test_a_case_that_passed_has_no_view_and_says_why(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.goto(contract_api.base_url + f"/dashboard#/runs/run_{3:026d}/cases/tc300-0001")
    watched_page.get_by_role("heading", name="Case tc300-0001").wait_for()
    assert "only failed cases have a view" in watched_page.locator("#case-body").text_content()


def add_feature_run(api: ContractApi, ref: str = "refs/heads/feature-x") -> str:
    """A scored run of another branch measured against main (it used to zig-zag main's trend)."""
    run = run_record(7, ref=ref, summary=summary(200))
    api.runs.append(run)
    return str(run["run_id"])


def runs_shown(pg: Any) -> list[str]:
    return [t.strip() for t in pg.locator("#runs-table tbody th a").all_text_contents()]


def test_the_branch_filter_draws_each_branchs_own_trend(
    watched_page: Any, contract_api: ContractApi
) -> None:
    feature = add_feature_run(contract_api)
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    # main's baseline shows main's runs by default: the feature run is not on its trend
    assert watched_page.get_by_label("Branch").input_value() == "main"
    assert feature not in runs_shown(watched_page)
    points = watched_page.locator("#count-charts svg").first
    assert points.get_attribute("data-points") == "3"
    watched_page.get_by_label("Branch").select_option("feature-x")
    assert runs_shown(watched_page) == [feature]
    assert watched_page.locator("#count-charts svg").first.get_attribute("data-points") == "1"
    watched_page.get_by_label("Branch").select_option("")
    assert feature in runs_shown(watched_page)
    assert watched_page.locator("#count-charts svg").first.get_attribute("data-points") == "4"
    options = watched_page.locator("#branch-select option").all_text_contents()
    assert options == ["main", "feature-x", "release-1.2", "All branches"]
    assert watched_page.console_errors == []


def test_two_ticked_runs_compare_case_by_case(watched_page: Any, contract_api: ContractApi) -> None:
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    button = watched_page.get_by_role("button", name="Compare two runs")
    assert button.is_disabled()
    watched_page.get_by_label(f"Compare run_{2:026d}").check()
    assert button.is_disabled()
    watched_page.get_by_label(f"Compare run_{3:026d}").check()
    button.click()
    watched_page.get_by_role(
        "heading", name=f"Run run_{2:026d} compared with run_{3:026d}"
    ).wait_for()
    assert watched_page.evaluate("location.hash") == f"#/compare/run_{2:026d}/run_{3:026d}"
    broken = watched_page.locator("#compare-broken li a").all_text_contents()
    assert broken == ["tc300-0254", "tc300-0266", "tc300-0288"]
    assert watched_page.locator("#compare-fixed li").count() == 0
    exact = watched_page.locator("#compare-counts tr", has_text="Exact matches")
    assert "262" in exact.text_content() and "-12 (worse)" in exact.text_content()
    shoot(watched_page, "contract-compare")
    # each case links to its view in the run where it failed
    watched_page.locator("#compare-broken").get_by_role("link", name="tc300-0266").click()
    watched_page.get_by_role("heading", name="Case tc300-0266").wait_for()
    assert watched_page.evaluate("location.hash") == f"#/runs/run_{3:026d}/cases/tc300-0266"
    # the other way round, the same cases were fixed
    watched_page.goto(contract_api.base_url + f"/dashboard#/compare/run_{3:026d}/run_{2:026d}")
    watched_page.locator("#compare-fixed li").first.wait_for()
    assert watched_page.locator("#compare-fixed li a").all_text_contents() == broken


@pytest.mark.parametrize("width", [1280, 1440])
def test_no_runs_column_is_clipped_at_common_widths(
    watched_page: Any, contract_api: ContractApi, width: int
) -> None:
    add_feature_run(contract_api, "refs/heads/feature/a-rather-long-branch-name-for-the-new-reader")
    watched_page.set_viewport_size({"width": width, "height": 900})
    open_dashboard(watched_page, contract_api)
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.get_by_label("Branch").select_option("")
    watched_page.get_by_label("Baseline", exact=True).select_option("")
    assert len(runs_shown(watched_page)) == 7
    for region in watched_page.locator("#runs-table, #baselines table").all():
        overflow = region.evaluate("t => t.parentNode.scrollWidth - t.parentNode.clientWidth")
        assert overflow <= 0, f"a column is clipped by {overflow} px at {width} px"
    compare = watched_page.locator("#runs-table thead th").last
    assert compare.text_content() == "Compare" and compare.is_visible()
    box = compare.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width
    shoot(watched_page, f"contract-runs-{width}")


# ---------------------------------------------------------------- tracks


def open_team(pg: Any, api: ContractApi) -> None:
    """Sign in to the canned team and wait for its history."""
    open_dashboard(pg, api)
    pg.get_by_role("heading", name="Team acme").wait_for()


def choose_track(pg: Any, track: str) -> tuple[Any, list[str]]:
    """Pick ``track`` in the filter: its charts (checked to be the track's) and their titles."""
    pg.get_by_label("Track", exact=True).select_option(track)
    charts = pg.locator("#count-charts")
    assert charts.get_attribute("data-track") == track
    return charts, charts.locator("figure.chart").evaluate_all("fs => fs.map(f => f.dataset.chart)")


def track_ids(api: ContractApi, track: str) -> list[str]:
    return [r["run_id"] for r in api.runs if r["track"] == track]


def chart_tips(pg: Any) -> list[str]:
    """Every point's tooltip in the outcome and category charts (each names its run)."""
    return pg.locator("#count-charts svg title, #category-charts svg title").all_text_contents()


def test_parallel_and_deltas_runs_never_enter_the_single_call_view(
    watched_page: Any, contract_api: ContractApi
) -> None:
    """The canned team's newest runs are of the parallel and deltas tracks: the default view
    is the single-call track's, and none of those runs is drawn, listed or taken as the
    latest run there (the old page showed the newest run of any track as 'Latest run')."""
    contract_api.runs[5].update(status="scored", verdict="pass", summary=summary(255))
    open_team(watched_page, contract_api)
    assert watched_page.get_by_label("Track", exact=True).input_value() == "single"
    others = track_ids(contract_api, "parallel") + track_ids(contract_api, "deltas")
    assert len(others) == 3
    tips = " ".join(chart_tips(watched_page))
    assert tips and not any(run_id in tips for run_id in others)
    assert not any(run_id in runs_shown(watched_page) for run_id in others)
    assert watched_page.locator("#count-charts").get_attribute("data-track") == "single"
    assert watched_page.locator("#count-charts svg").first.get_attribute("data-points") == "4"
    latest = watched_page.locator("#latest-figures")
    assert latest.get_attribute("data-track") == "single"
    assert latest.text_content().startswith("Single call track: Exact matches 255 of 300")
    assert watched_page.locator("#latest a").first.text_content() == f"run_{6:026d}"
    baselines = watched_page.locator("#baselines").text_content()
    assert not any(run_id in baselines for run_id in others)
    assert watched_page.console_errors == []


def test_the_track_filter_draws_the_parallel_tracks_own_figures(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_team(watched_page, contract_api)
    options = watched_page.locator("#track-select option").all_text_contents()
    assert options == ["Single call (6 runs)", "Parallel (2 runs)", "Deltas (1 run)"]
    charts, titles = choose_track(watched_page, "parallel")
    assert "track=parallel" in watched_page.url
    assert titles == [
        "Exact turns",
        "Call precision",
        "Call recall",
        "Invented calls",
        "Dropped calls",
        "False collapses",
        "Partial refusals exact",
    ]
    assert "Exact matches" not in titles
    for svg in charts.locator("svg").all():
        assert svg.get_attribute("data-points") == "2"
    caption = lambda t: charts.locator(f"figure[data-chart='{t}'] figcaption").text_content()  # noqa: E731
    assert caption("Exact turns") == "Exact turns latest 262 of 300"
    # 966 matched of 975 returned, of 1000 expected (the regression dropped 9 calls)
    assert caption("Call precision") == "Call precision latest 99.1%"
    assert caption("Call recall") == "Call recall latest 96.6%"
    assert caption("Dropped calls") == "Dropped calls latest 9"
    assert "parallel track" in watched_page.locator("#track-legend").text_content()
    assert "exact turns" in watched_page.locator("#track-legend").text_content()
    tips = " ".join(chart_tips(watched_page))
    assert all(run_id in tips for run_id in track_ids(contract_api, "parallel"))
    assert not any(r["run_id"] in tips for r in contract_api.runs if r["track"] != "parallel")
    cats = watched_page.locator("#category-charts figure.chart")
    assert cats.first.get_attribute("data-chart") == "distinct_calls" and cats.count() == 12
    assert runs_shown(watched_page) == list(reversed(track_ids(contract_api, "parallel")))
    assert watched_page.locator("#runs-exact-head").text_content() == "Exact turns"
    latest = watched_page.locator("#latest-figures").text_content()
    assert latest.startswith("Parallel track: Exact turns 262 of 300 · Call precision 99.1%")
    assert "False collapses 2" in latest
    baseline_head = watched_page.locator("#baselines thead th").all_text_contents()
    assert baseline_head[4:] == [
        "Exact turns",
        "Invented calls",
        "Dropped calls",
        "False collapses",
    ]
    assert watched_page.locator("#baselines tbody tr").count() == 1
    shoot(watched_page, "contract-track-parallel")
    # the choice is in the address: a reload keeps it, the branch filter still applies
    watched_page.reload()
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    assert watched_page.get_by_label("Track", exact=True).input_value() == "parallel"
    assert watched_page.locator("#count-charts").get_attribute("data-track") == "parallel"
    watched_page.get_by_label("Branch").select_option("release-1.2")
    assert watched_page.get_by_role("heading", name="No runs yet").is_visible()
    assert "parallel track of branch “release-1.2”" in watched_page.locator("#empty").text_content()
    assert watched_page.console_errors == []


def test_the_track_filter_draws_the_deltas_tracks_own_figures(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_team(watched_page, contract_api)
    charts, titles = choose_track(watched_page, "deltas")
    assert titles == [
        "Exact",
        "Invariant across partitions",
        "Unsafe commits",
        "Invented values",
        "Refused correctly",
        "Commit lead",
    ]
    caption = lambda t: charts.locator(f"figure[data-chart='{t}'] figcaption").text_content()  # noqa: E731
    assert caption("Exact") == "Exact latest 571 of 590"
    assert caption("Invariant across partitions") == "Invariant across partitions latest 574 of 590"
    assert caption("Unsafe commits") == "Unsafe commits latest 0"
    assert caption("Commit lead") == "Commit lead latest 41.3%"
    legend = watched_page.locator("#track-legend").text_content()
    assert "deltas track" in legend and "unsafe commits" in legend and "commit lead" in legend
    assert runs_shown(watched_page) == track_ids(contract_api, "deltas")
    cats = watched_page.locator("#category-charts figure.chart")
    assert cats.count() == 11  # the main corpus's categories but multiple_calls
    head = watched_page.locator("#baselines thead th").all_text_contents()
    assert head[4:] == ["Exact", "Invariant across partitions", "Unsafe commits", "Commit lead"]
    row = watched_page.locator("#baselines tbody tr").first.locator("td").all_text_contents()
    assert row[-4:] == ["571 of 590", "574 of 590", "0", "41.3%"]
    shoot(watched_page, "contract-track-deltas")
    assert watched_page.console_errors == []


def test_a_parallel_run_shows_its_own_scores_and_comparison(
    watched_page: Any, contract_api: ContractApi
) -> None:
    regression = track_ids(contract_api, "parallel")[1]
    open_team(watched_page, contract_api)
    watched_page.evaluate(f"location.hash = '#/runs/{regression}'")
    watched_page.get_by_role("heading", name=f"Run {regression}").wait_for()
    assert watched_page.locator("#run-track").text_content() == "Parallel (parallel)"
    scores = watched_page.locator("#scores-table")
    assert "undefined" not in scores.text_content()
    exact = scores.locator("tr", has_text="Exact turns").locator("td").text_content()
    assert exact == "262 of 300"
    dropped = watched_page.locator("#comparison-counts tr", has_text="Dropped calls")
    assert "+5 (worse)" in dropped.text_content()
    turns = watched_page.locator("#comparison-counts tr", has_text="Exact turns")
    assert "-8 (worse)" in turns.text_content()
    assert watched_page.locator("#categories-fell li").count() == 0
    assert watched_page.console_errors == []


def test_two_runs_of_one_track_compare_and_of_two_tracks_are_refused(
    watched_page: Any, contract_api: ContractApi
) -> None:
    first, second = track_ids(contract_api, "parallel")
    open_team(watched_page, contract_api)
    watched_page.get_by_label("Track", exact=True).select_option("parallel")
    watched_page.get_by_label(f"Compare {first}").check()
    watched_page.get_by_label(f"Compare {second}").check()
    watched_page.get_by_role("button", name="Compare two runs").click()
    watched_page.get_by_role("heading", name=f"Run {first} compared with {second}").wait_for()
    table = watched_page.locator("#compare-counts")
    assert "Parallel track" in table.locator("caption").text_content()
    assert "-8 (worse)" in table.locator("tr", has_text="Exact turns").text_content()
    precision = table.locator("tr", has_text="Call precision").text_content()
    assert "99.4%" in precision and "99.1%" in precision and "-0.3 pts (worse)" in precision
    assert "Exact matches" not in table.text_content()
    assert watched_page.locator("#compare-broken li a").all_text_contents() == ["tc300-0254"]
    # a single-call run and a parallel run: refused, with the reason, before any report
    single = f"run_{2:026d}"
    reports_before = [a for a in contract_api.seen_auth]
    watched_page.goto(contract_api.base_url + f"/dashboard#/compare/{single}/{second}")
    refused = watched_page.locator("#compare-refused")
    refused.wait_for()
    said = refused.text_content()
    assert f"Run {single} is a run of the single track and run {second} of the parallel" in said
    assert "not compared" in said
    assert watched_page.locator("#compare-counts").count() == 0
    assert len(contract_api.seen_auth) > len(reports_before)
    # ticking runs of two tracks keeps the button off and says why
    watched_page.goto(contract_api.base_url + "/dashboard")
    watched_page.get_by_role("heading", name="Team acme").wait_for()
    watched_page.get_by_label(f"Compare {single}").check()
    watched_page.get_by_label("Track", exact=True).select_option("parallel")
    watched_page.get_by_label(f"Compare {second}").check()
    assert watched_page.get_by_role("button", name="Compare two runs").is_disabled()
    assert "not compared" in watched_page.locator("#compare-hint").text_content()
    assert watched_page.console_errors == []


@pytest.mark.parametrize("width", [1280, 1440])
@pytest.mark.parametrize("track", ["single", "parallel", "deltas"])
def test_no_column_of_any_track_is_clipped_at_common_widths(
    watched_page: Any, contract_api: ContractApi, width: int, track: str
) -> None:
    add_feature_run(contract_api, "refs/heads/feature/a-rather-long-branch-name-for-the-new-reader")
    watched_page.set_viewport_size({"width": width, "height": 900})
    open_team(watched_page, contract_api)
    watched_page.get_by_label("Track", exact=True).select_option(track)
    watched_page.get_by_label("Branch").select_option("")
    watched_page.get_by_label("Baseline", exact=True).select_option("")
    assert runs_shown(watched_page)
    tables = watched_page.locator("#runs-table, #baselines table").all()
    assert len(tables) >= 2
    for region in tables:
        overflow = region.evaluate("t => t.parentNode.scrollWidth - t.parentNode.clientWidth")
        assert overflow <= 0, f"a {track} column is clipped by {overflow} px at {width} px"
    assert watched_page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    compare = watched_page.locator("#runs-table thead th").last
    box = compare.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width


@pytest.mark.parametrize("track", ["parallel", "deltas"])
def test_each_tracks_view_reads_at_phone_width_and_in_contrast(
    watched_page: Any, contract_api: ContractApi, track: str
) -> None:
    """A track's legend, charts and tables keep WCAG AA contrast, and at 375 px the page
    never scrolls sideways (its tables scroll inside their own region)."""
    watched_page.set_viewport_size({"width": 375, "height": 812})
    open_team(watched_page, contract_api)
    choose_track(watched_page, track)
    assert watched_page.locator("#track-legend").is_visible()
    assert watched_page.evaluate("document.documentElement.scrollWidth") <= 375
    assert low_contrast(watched_page) == []
    run_id = track_ids(contract_api, track)[-1]
    watched_page.get_by_role("link", name=run_id).first.click()
    watched_page.get_by_role("heading", name="Scores").wait_for()
    assert watched_page.evaluate("document.documentElement.scrollWidth") <= 375
    assert low_contrast(watched_page) == []
    assert watched_page.console_errors == []


def test_another_tracks_case_view_shows_its_reports_own_rationale(
    watched_page: Any, contract_api: ContractApi
) -> None:
    """The rationale API knows the main corpus's ids only: a parallel run's failed case shows
    the rationale its report carries, and the page asks the API nothing about it."""
    regression = track_ids(contract_api, "parallel")[1]
    open_team(watched_page, contract_api)
    watched_page.evaluate(f"location.hash = '#/runs/{regression}'")
    watched_page.locator("#flipped-broken").get_by_role("link", name="tc300-0254").click()
    watched_page.get_by_role("heading", name="Case tc300-0254").wait_for()
    why = watched_page.locator("#case-rationale")
    why.wait_for()
    assert why.text_content() == "P7: two identical copies of one call collapse to one (rule 10)"
    assert not any("/cases/" in url for url in watched_page.requests_seen)
    assert watched_page.console_errors == []


# ---------------------------------------------------------------- the README badge


def test_the_purchase_key_switches_the_badge_with_the_keyboard_and_gets_its_readme_line(
    watched_page: Any, contract_api: ContractApi
) -> None:
    """The switch (a labelled checkbox, role switch) is reached and toggled with the keyboard;
    while the change is on its way nothing says it is done; once stored, the README line the
    API answered and a preview of the image; off again, both are gone."""
    pg = watched_page
    open_dashboard(pg, contract_api, key=OWNER_KEY)
    switch = pg.get_by_role("switch", name="Public badge")
    expect(switch).not_to_be_checked()
    state = pg.locator("#readme-badge-state")
    expect(state).to_have_text(
        "The badge is private: its address answers 404 until the team makes it public."
    )
    assert low_contrast(pg) == []
    switch.focus()
    saving = HeldRequests(pg, lambda r: r.method == "PUT")
    pg.keyboard.press("Space")
    saving.wait()
    expect(state).to_have_text("Making the badge public…")
    assert switch.get_attribute("aria-disabled") == "true"
    assert pg.locator("#readme-badge-public").is_hidden()  # not before the API stored it
    saving.release()
    line = pg.locator("#readme-badge-markdown")
    expect(line).to_have_text(contract_api.badge_view("acme")["markdown"])
    assert contract_api.badge_public is True
    expect(state).to_have_text("The badge is public: anyone with its address sees it.")
    expect(switch).to_be_checked()
    assert pg.evaluate("document.activeElement.id") == "readme-badge-switch"
    preview = pg.get_by_role("img", name="Preview of the badge of branch main")
    expect(preview).to_have_attribute("src", re.compile("^blob:"))  # the CSP admits no address
    pg.wait_for_function("document.getElementById('readme-badge-preview').complete")
    assert f"{contract_api.base_url}/badges/acme/main.svg" in pg.requests_seen
    assert preview.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [160, 20]
    assert low_contrast(pg) == []
    shoot(pg, "contract-badge-public")
    pg.keyboard.press("Space")
    expect(state).to_have_text(
        "The badge is private: its address answers 404 until the team makes it public."
    )
    assert contract_api.badge_public is False
    assert pg.locator("#readme-badge-public").is_hidden()
    assert pg.locator("#readme-badge-preview").get_attribute("src") is None
    assert pg.console_errors == []


def test_a_member_key_sees_the_badge_setting_but_no_switch(
    watched_page: Any, contract_api: ContractApi
) -> None:
    contract_api.badge_public = True
    open_team(watched_page, contract_api)  # GOOD_KEY: a member key
    expect(watched_page.locator("#readme-badge-state")).to_have_text(
        "The badge is public: anyone with its address sees it."
    )
    assert watched_page.get_by_role("switch").count() == 0
    assert watched_page.get_by_text("Only the team's purchase key can change it.").is_visible()
    expect(watched_page.locator("#readme-badge-markdown")).to_have_text(
        contract_api.badge_view("acme")["markdown"]
    )
    assert watched_page.console_errors == []


def test_a_badge_change_the_api_refuses_leaves_the_switch_as_stored_and_says_why(
    watched_page: Any, contract_api: ContractApi
) -> None:
    open_dashboard(watched_page, contract_api, key=OWNER_KEY)
    switch = watched_page.get_by_role("switch", name="Public badge")
    expect(switch).not_to_be_checked()
    contract_api.faults["/teams/acme/badge"] = 500
    switch.click()
    error = watched_page.get_by_role("alert").filter(has_text="The badge was not changed")
    expect(error).to_have_text("The badge was not changed: injected failure")
    expect(switch).not_to_be_checked()
    expect(watched_page.locator("#readme-badge-state")).to_have_text(
        "The badge is private: its address answers 404 until the team makes it public."
    )
    assert watched_page.locator("#readme-badge-public").is_hidden()
