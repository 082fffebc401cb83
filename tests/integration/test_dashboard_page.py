"""The page itself: what ``GET /dashboard`` serves, the CSP that pins it, and the page's pure
helpers (run inside chromium) held to invariants with Hypothesis.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.budget import examples
from support.dashboard import ContractApi

from toolcall300.jobs.failures import FAILURE_REASONS
from toolcall300.service.domain.dashboard import (
    FACTS_MARK,
    SCRIPT_MARK,
    STYLE_MARK,
    assemble,
    build_page,
    content_security_policy,
    facts_block,
    page,
    server_facts,
    source_hash,
)
from toolcall300.spec import CATEGORIES, PARALLEL_CATEGORIES

ROOT = Path(__file__).resolve().parents[2]


def inline_block(html: str, tag: str) -> str:
    found = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)
    assert len(found) == 1, f"expected exactly one inline <{tag}>"
    return str(found[0])


def csp_directives(csp: str) -> dict[str, str]:
    return dict(part.strip().split(" ", 1) for part in csp.split(";"))


def test_csp_hashes_pin_exactly_the_inline_style_and_script() -> None:
    shipped = page()
    directives = csp_directives(shipped.headers["Content-Security-Policy"])
    script = inline_block(shipped.html, "script")
    style = inline_block(shipped.html, "style")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert directives["script-src"] == f"'sha256-{digest}'"
    assert directives["style-src"] == source_hash(style)
    assert directives["default-src"] == "'none'"
    assert directives["connect-src"] == "'self'"
    assert directives["form-action"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in shipped.headers["Content-Security-Policy"]


def test_page_references_no_external_host_font_or_handler_attribute() -> None:
    html = page().html
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)  # only the SVG namespace
    assert "@import" not in html and "url(" not in html and "@font-face" not in html
    assert not re.search(r"\son[a-z]+\s*=", html.split("<script>")[0])  # no onclick= markup
    for sink in (".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in html, sink
    assert "localStorage.setItem" not in html


def test_page_headers_harden_a_page_that_handles_a_key() -> None:
    headers = page().headers
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Frame-Options"] == "DENY"


@given(st.text(max_size=200), st.text(max_size=200))
def test_assemble_inlines_verbatim_and_the_hash_follows_the_text(style: str, script: str) -> None:
    if "</style" in style.lower() or "</script" in script.lower():
        with pytest.raises(ValueError):
            assemble(
                f"<style>{STYLE_MARK}</style><script>{SCRIPT_MARK}</script>{FACTS_MARK}",
                style,
                script,
            )
        return
    template = f"<style>{STYLE_MARK}</style><script>{SCRIPT_MARK}</script>{FACTS_MARK}"
    built = build_page(template, style, script, '{"a":1}')
    assert built.html == f'<style>{style}</style><script>{script}</script>{{"a":1}}'
    directives = csp_directives(built.headers["Content-Security-Policy"])
    assert directives["script-src"] == source_hash(script)
    assert directives["style-src"] == source_hash(style)


def test_assemble_refuses_a_template_without_every_marker() -> None:
    with pytest.raises(ValueError):
        assemble("<style>{{style}}</style>", "a{}", "1")
    with pytest.raises(ValueError):
        assemble("{{style}}{{script}}", "a{}", "1")  # no facts marker
    with pytest.raises(ValueError):
        assemble("{{style}}{{script}}{{facts}}", "a{}", "1", '"</script>"')
    with pytest.raises(ValueError):
        assemble("{{style}}{{style}}{{script}}", "a{}", "1")
    with pytest.raises(ValueError):
        assemble("{{style}}{{script}}{{facts}}", "a{}", "x='</SCRIPT>'")


def test_the_page_carries_the_server_facts_as_one_json_block_and_the_script_restates_none() -> None:
    html = page().html
    block = html.split('<script id="server-facts" type="application/json">', 1)[1].split(
        "</script>"
    )[0]
    assert json.loads(block) == server_facts()
    assert server_facts()["categories"] == list(CATEGORIES)
    assert set(server_facts()["failure_text"]) == set(FAILURE_REASONS)
    script = (ROOT / "layers/toolcall300/toolcall300/service/static/dashboard.js").read_text()
    for fact in (*CATEGORIES, *FAILURE_REASONS, *server_facts()["failure_text"].values()):
        assert fact not in script, fact


def test_the_facts_block_cannot_end_its_element() -> None:
    assert "<" not in facts_block({"x": "</script><script>alert(1)</script>"})
    assert json.loads(facts_block({"x": "</script>"})) == {"x": "</script>"}


def test_csp_differs_when_the_script_changes() -> None:
    assert content_security_policy("a", "b") != content_security_policy("a", "c")


def test_lambda_handler_serves_the_page_with_its_headers() -> None:
    spec = importlib.util.spec_from_file_location(
        "tc300_dashboard_app", ROOT / "functions" / "dashboard" / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from toolcall300.service.local.httpapi import LambdaContext

    event = {
        "version": "2.0",
        "routeKey": "GET /dashboard",
        "rawPath": "/dashboard",
        "rawQueryString": "",
        "headers": {"accept": "text/html"},
        "requestContext": {
            "http": {"method": "GET", "path": "/dashboard", "sourceIp": "127.0.0.1"},
            "requestId": "r1",
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }
    answer = module.handler(event, LambdaContext("dashboard"))
    assert answer["statusCode"] == 200
    headers = {k.lower(): v for k, v in answer["headers"].items()}
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-security-policy"] == page().headers["Content-Security-Policy"]
    assert answer["body"] == page().html


def test_template_routes_get_dashboard_to_the_dashboard_function() -> None:
    from toolcall300.service.local.cfn import http_routes, load_template

    routes = http_routes(load_template(ROOT / "template.yaml"))
    mine = [r for r in routes if r.path == "/dashboard"]
    assert len(mine) == 1
    assert mine[0].method.upper() == "GET" and mine[0].code_uri.rstrip("/") == "functions/dashboard"


# ---------------------------------------------------------------- the page's pure JS helpers


@pytest.fixture(scope="module")
def helpers_page(browser: Any) -> Any:
    """The shipped page, loaded once, for calling ``window.TC300Dashboard`` helpers."""
    from support.dashboard import serve_contract_api

    with serve_contract_api() as api:
        context = browser.new_context()
        pg = context.new_page()
        pg.goto(api.base_url + "/dashboard")
        pg.wait_for_function("window.TC300Dashboard !== undefined")
        yield pg
        context.close()


_point = st.fixed_dictionaries(
    {
        "value": st.integers(min_value=0, max_value=400),
        "of": st.one_of(st.none(), st.integers(min_value=0, max_value=400)),
    }
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(_point, min_size=1, max_size=60))
def test_chart_points_stay_inside_the_plot_in_run_order(
    helpers_page: Any, series: list[dict[str, Any]]
) -> None:
    box = {"width": 320, "height": 150, "left": 34, "right": 12, "top": 10, "bottom": 24}
    geo = helpers_page.evaluate("([s, b]) => TC300Dashboard.chartPoints(s, b)", [series, box])
    xs = [p["x"] for p in geo["points"]]
    ys = [p["y"] for p in geo["points"]]
    assert len(xs) == len(series)
    assert all(box["left"] - 1e-9 <= x <= box["width"] - box["right"] + 1e-9 for x in xs)
    assert all(box["top"] - 1e-9 <= y <= box["height"] - box["bottom"] + 1e-9 for y in ys)
    assert xs == sorted(xs)  # oldest on the left
    assert geo["yMax"] >= max(max(p["value"], p["of"] or 0) for p in series)
    # a larger value is never drawn lower
    for a, b in zip(series, geo["points"], strict=True):
        for c, d in zip(series, geo["points"], strict=True):
            if a["value"] > c["value"]:
                assert b["y"] < d["y"]


_cat = st.sampled_from(["type_coercion", "truncated", "unrecoverable", "custom_x"])


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.dictionaries(_cat, st.integers(min_value=-25, max_value=25)))
def test_category_moves_partition_the_comparison(helpers_page: Any, deltas: dict[str, int]) -> None:
    comparison = {
        "categories": {
            c: {"baseline": 10, "current": 10 + d, "delta": d} for c, d in deltas.items()
        }
    }
    moves = helpers_page.evaluate("(c) => TC300Dashboard.categoryMoves(c)", comparison)
    names = [e["name"] for k in ("fell", "rose", "same") for e in moves[k]]
    assert sorted(names) == sorted(deltas)
    assert all(e["delta"] < 0 for e in moves["fell"])
    assert all(e["delta"] > 0 for e in moves["rose"])
    assert all(e["delta"] == 0 for e in moves["same"])


def test_assess_reads_each_count_in_its_good_direction(helpers_page: Any) -> None:
    got = helpers_page.evaluate(
        """() => [["exact", 3], ["exact", -1], ["invented_calls", 2], ["false_refusals", -2],
                  ["schema_invalid_returns", 0], ["refused_correctly", 1]]
                 .map(([n, d]) => TC300Dashboard.assess(n, d))"""
    )
    assert got == ["better", "worse", "worse", "better", "same", "better"]


def test_api_urls_follow_the_stage_prefix(helpers_page: Any) -> None:
    got = helpers_page.evaluate(
        """() => [TC300Dashboard.apiUrl("/runs/run_1/report", "https://x.test/prod/dashboard#/runs/a"),
                  TC300Dashboard.apiUrl("licence", "http://127.0.0.1:8300/dashboard")]"""
    )
    assert got == ["https://x.test/prod/runs/run_1/report", "http://127.0.0.1:8300/licence"]


def test_baseline_names_put_main_first(helpers_page: Any) -> None:
    got = helpers_page.evaluate(
        """() => TC300Dashboard.baselineNames({baselines: {"release-1.2": [], "main": []}},
                                             [{baseline: "alpha"}, {baseline: "main"}])"""
    )
    assert got == ["main", "alpha", "release-1.2"]


def test_scored_history_is_oldest_first_and_scored_only(helpers_page: Any) -> None:
    runs = [
        {"run_id": "c", "status": "scored", "created_at": "2026-11-03T00:00:00Z", "summary": {}},
        {"run_id": "b", "status": "failed", "created_at": "2026-11-02T00:00:00Z", "summary": None},
        {"run_id": "a", "status": "scored", "created_at": "2026-11-01T00:00:00Z", "summary": {}},
        {
            "run_id": "d",
            "status": "scored",
            "baseline": "rel",
            "created_at": "2026-11-04T00:00:00Z",
            "summary": {},
        },
    ]
    got = helpers_page.evaluate(
        "(r) => TC300Dashboard.scoredHistory(r, 'main').map(x => x.run_id)", runs
    )
    assert got == ["a", "c"]


def test_the_charts_draw_single_call_runs_and_other_tracks_say_their_track(
    helpers_page: Any,
) -> None:
    """A parallel run's summary counts exact_turns, not exact: the charts (single-call counts)
    leave it out, and the runs table shows its own figure with its track (it showed
    'undefined / 300')."""
    runs = [
        {"run_id": "p", "track": "parallel", "status": "scored",
         "created_at": "2026-11-02T00:00:00Z", "summary": {"exact_turns": 12, "cases": 300}},
        {"run_id": "s", "status": "scored", "created_at": "2026-11-01T00:00:00Z",
         "summary": {"exact": 7, "cases": 300}},
    ]  # fmt: skip
    got = helpers_page.evaluate(
        "(r) => [TC300Dashboard.scoredHistory(r, '').map(x => x.run_id),"
        " r.map(x => TC300Dashboard.exactText(x, x.summary))]",
        runs,
    )
    assert got == [["s"], ["12 / 300 (parallel)", "7 / 300"]]


def test_scored_history_keeps_the_api_order_of_runs_created_in_the_same_second(
    helpers_page: Any,
) -> None:
    same = "2026-11-30T15:00:00Z"
    newest_first = [
        {"run_id": r, "status": "scored", "created_at": same, "summary": {}} for r in "zyx"
    ]
    got = helpers_page.evaluate(
        "(r) => TC300Dashboard.scoredHistory(r, '').map(x => x.run_id)", newest_first
    )
    assert got == ["x", "y", "z"]


def test_contract_api_fixture_is_contract_shaped() -> None:
    """The canned API used by the browser tests answers the contract's listing keys only."""
    api = ContractApi()
    status, _, body = api.answer("/teams/acme/runs", "Bearer " + "tc300_" + "g" * 32)
    assert status == 200
    import json

    listed = json.loads(body)["runs"]
    assert set(listed[0]) == {
        "run_id",
        "status",
        "verdict",
        "ref",
        "commit",
        "baseline",
        "track",
        "created_at",
        "finished_at",
        "summary",
    }  # fmt: skip  (docs/runs-contract.md: a row names its track since hosted runs have tracks)


def test_the_empty_state_suggests_what_a_local_stack_runs_and_what_aws_runs() -> None:
    empty = page().html.split('id="empty"', 1)[1].split("</div>", 1)[0]
    local, aws = empty.split("On AWS", 1)
    assert "--adapter-cmd" in local and "--image" not in local  # a local stack refuses images
    assert "absolute path" in local and "toolshim --stream" in local
    assert "--image IMAGE@sha256:" in aws


def test_a_tracks_figures_are_read_from_its_own_summary(helpers_page: Any) -> None:
    """A share is derived from the counts it is a share of (or the stored fraction), a figure
    a summary lacks is none (never 0), and each track's charts draw only its own figures."""
    got = helpers_page.evaluate(
        """() => {
          const T = TC300Dashboard, p = T.TRACKS.parallel.metrics, d = T.TRACKS.deltas.metrics;
          const by = (ms, k) => ms.filter(m => m.key === k)[0];
          const s = {matched_calls: 966, returned_calls: 975, expected_calls: 1000,
                     exact_turns: 262, cases: 300};
          return [
            T.figureText(T.figure(by(p, "call_precision"), s)),
            T.figureText(T.figure(by(p, "call_recall"), s)),
            T.figureText(T.figure(by(p, "exact_turns"), s)),
            T.figure(by(p, "call_precision"), {matched_calls: 0, returned_calls: 0}),
            T.figureText(T.figure(by(d, "commit_lead"), {commit_lead: 0.4125})),
            T.figure(by(d, "commit_lead"), {exact: 3}),
            T.trackMetrics("parallel", true).map(m => m.key),
            T.trackMetrics("deltas", true).map(m => m.key),
            T.trackMetrics("nonsense", true).map(m => m.key),
          ];
        }"""
    )
    assert got[:6] == ["99.1%", "96.6%", "262 of 300", None, "41.3%", None]
    assert got[6] == [
        "exact_turns", "call_precision", "call_recall", "invented_calls", "dropped_calls",
        "false_collapses", "partial_refusals_exact",
    ]  # fmt: skip
    assert got[7] == [
        "exact", "invariant", "unsafe_commits", "invented_values", "refused_correctly",
        "commit_lead",
    ]  # fmt: skip
    assert got[8] == ["exact", "refused_correctly", "invented_calls", "false_refusals",
                      "schema_invalid_returns"]  # fmt: skip


def test_each_track_reads_its_gated_figures_in_its_own_direction(helpers_page: Any) -> None:
    got = helpers_page.evaluate(
        """() => [["dropped_calls", 2, "parallel"], ["exact_turns", 2, "parallel"],
                  ["unsafe_commits", 1, "deltas"], ["commit_lead", 0.1, "deltas"],
                  ["invariant", -1, "deltas"], ["dropped_calls", 2, "single"]]
                 .map(([n, d, t]) => TC300Dashboard.assess(n, d, t))"""
    )
    assert got == ["worse", "better", "worse", "better", "worse", "same"]


def test_scored_history_and_categories_keep_to_one_track(helpers_page: Any) -> None:
    runs = [
        {"run_id": "d", "track": "deltas", "status": "scored", "created_at": "2026-11-04T00:00:00Z",
         "summary": {"categories": {"truncated": {}, "type_coercion": {}}}},
        {"run_id": "p", "track": "parallel", "status": "scored",
         "created_at": "2026-11-03T00:00:00Z",
         "summary": {"categories": {"zz_new": {}, "split_call": {}, "distinct_calls": {}}}},
        {"run_id": "s", "status": "scored", "created_at": "2026-11-01T00:00:00Z",
         "summary": {"categories": {}}},
    ]  # fmt: skip
    got = helpers_page.evaluate(
        """(r) => ["single", "parallel", "deltas"].map(t => {
             const h = TC300Dashboard.scoredHistory(r, "", t);
             return [h.map(x => x.run_id), TC300Dashboard.categoriesOf(h, t)];
           })""",
        runs,
    )
    assert got[0] == [["s"], list(CATEGORIES)]
    assert got[1] == [["p"], ["distinct_calls", "split_call", "zz_new"]]
    assert got[2] == [["d"], ["type_coercion", "truncated"]]


def test_the_track_filter_lives_in_the_query_beside_the_route(helpers_page: Any) -> None:
    got = helpers_page.evaluate(
        """() => {
          const T = TC300Dashboard, u = "http://127.0.0.1:8300/dashboard";
          return [T.trackFromUrl(u + "?track=parallel#/runs/a"), T.trackFromUrl(u + "?track=x"),
                  T.trackFromUrl(u), T.trackUrl(u + "#/", "deltas"),
                  T.trackUrl(u + "?track=deltas#/runs/a", "single")];
        }"""
    )
    assert got == [
        "parallel",
        "single",
        "single",
        "/dashboard?track=deltas#/",
        "/dashboard#/runs/a",
    ]


def test_the_page_knows_each_tracks_gate_from_its_scorer() -> None:
    from toolcall300.scoring.tracks import deltas, parallel

    tracks = server_facts()["tracks"]
    assert set(tracks) == {"single", "parallel", "deltas"}
    assert tracks["deltas"]["better_when"] == deltas.BETTER_WHEN
    assert set(tracks["parallel"]["better_when"]) == {
        *parallel.MUST_NOT_FALL,
        *parallel.MUST_NOT_RISE,
    }
    assert tracks["parallel"]["categories"] == list(PARALLEL_CATEGORIES)
