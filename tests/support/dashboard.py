"""What the dashboard's browser tests share: chromium's flags, screenshots, and a small
contract-shaped team API served over real HTTP.

``ContractApi`` answers exactly the routes and shapes of the runs contract
(docs/runs-contract.md) from canned data, and serves ``GET /dashboard`` from the shipped page
with its real headers; the end-to-end test uses the real local stack instead. The fixtures
built on these (``browser``, ``watched_page``, ``contract_api``, ``dashboard_stack``) are in
``tests/integration/conftest.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from toolcall300.scoring.tracks import deltas, parallel
from toolcall300.service.domain.dashboard import page
from toolcall300.service.domain.runs.record import LISTING_FIELDS
from toolcall300.spec import CATEGORIES, PARALLEL_CATEGORIES

#: Where the browser tests leave their screenshots (gitignored): look at them after a run.
SCREENSHOTS = Path(__file__).resolve().parents[1] / "integration" / "screenshots"

#: Debian's chromium under Playwright without its own sandbox, GPU or background network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

GOOD_KEY = "tc300_" + "g" * 32  # a member key of team acme
OWNER_KEY = "tc300_" + "o" * 32  # team acme's purchase key: member keys, the badge switch
EMPTY_KEY = "tc300_" + "e" * 32
SINGLE_KEY = "tc300_" + "s" * 32
PACK_KEY = "tc300_" + "p" * 32  # a check-pack key: GET /licence says its balance
PACK = {"remaining": 37, "granted": 500}


def shoot(pg: Any, name: str) -> Path:
    """Save a full-page screenshot where anyone can look at it (gitignored PNGs)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


# ---------------------------------------------------------------- canned contract data


def summary(
    exact: int, *, invented: int = 2, schema_invalid: int = 1, shift: int = 0
) -> dict[str, Any]:
    """A report summary with all twelve categories (25 cases each)."""
    cats = {
        c: {"n": 25, "pass": max(0, min(25, 22 + ((i + shift) % 4)))}
        for i, c in enumerate(CATEGORIES)
    }
    return {
        "cases": 300,
        "exact": exact,
        "refusal_cases": 50,
        "refused_correctly": 45,
        "invented_calls": invented,
        "false_refusals": 3,
        "schema_invalid_returns": schema_invalid,
        "categories": cats,
    }


def run_record(n: int, **over: Any) -> dict[str, Any]:
    """A full ``GET /runs/{id}`` record, scored and passing unless overridden."""
    run_id = f"run_{n:026d}"
    base: dict[str, Any] = {
        "run_id": run_id,
        "team": "acme",
        "status": "scored",
        "ref": "refs/heads/main",
        "commit": f"{n:07x}abcdef",
        "baseline": "main",
        "track": "single",
        "adapter": {"kind": "command", "command": ["toolcall300", "toolshim", "--stream"]},
        "created_at": f"2026-11-{10 + n:02d}T09:00:00Z",
        "started_at": f"2026-11-{10 + n:02d}T09:00:05Z",
        "finished_at": f"2026-11-{10 + n:02d}T09:01:00Z",
        "failure": None,
        "sandbox": {"network_isolated": True, "notes": ["unshare -n"]},
        "verdict": "pass",
        "summary": summary(260 + n),
        "comparison": None,
        "report_url": f"/runs/{run_id}/report",
    }
    base.update(over)
    return base


def comparison(baseline: dict[str, Any], current: dict[str, Any], **over: Any) -> dict[str, Any]:
    """A single-call comparison: the five counts and the twelve categories."""
    names = (
        "exact",
        "refused_correctly",
        "invented_calls",
        "false_refusals",
        "schema_invalid_returns",
    )
    return track_comparison(baseline, current, names, **over)


def parallel_summary(exact_turns: int, *, invented: int = 1, dropped: int = 4) -> dict[str, Any]:
    """A parallel run's summary: the parallel track's counts (docs/tracks.md), 300 turns."""
    counts = {
        "cases": 300,
        "exact_turns": exact_turns,
        "order_free_turns": exact_turns + 5,
        "expected_calls": 1000,
        "returned_calls": 980 + invented - dropped,
        "matched_calls": 975 - dropped,
        "invented_calls": invented,
        "dropped_calls": dropped,
        "false_collapses": 2,
        "partial_refusal_turns": 25,
        "partial_refusals_exact": 21,
        "schema_invalid_returns": 0,
    }
    assert set(counts) == set(parallel.COUNT_FIELDS)
    cats = {c: {"n": 25, "pass": 20 + i % 5} for i, c in enumerate(PARALLEL_CATEGORIES)}
    return {**counts, "categories": cats}


def deltas_summary(exact: int, *, unsafe: int = 0, lead: float = 0.4125) -> dict[str, Any]:
    """A deltas run's summary: the deltas track's counts and its commit lead, 590 cases."""
    counts = {
        "cases": 590,
        "exact": exact,
        "streams": 47528,
        "streams_exact": 47000,
        "invariant": exact + 3,
        "refusal_cases": 60,
        "refused_correctly": 58,
        "false_refusals": 1,
        "invented_calls": 0,
        "invented_values": 2,
        "unsafe_commits": unsafe,
        "commits": 9000,
    }
    assert set(counts) == set(deltas.COUNT_FIELDS)
    cats = {c: {"n": 50, "pass": 45} for c in CATEGORIES if c != "multiple_calls"}
    return {**counts, "commit_lead": lead, "categories": cats}


def track_comparison(
    baseline: dict[str, Any], current: dict[str, Any], gated: Iterable[str], **over: Any
) -> dict[str, Any]:
    """A comparison as the API sends it (``counts``: the track's ``gated`` counts, as its
    scorer compares them; ``categories``: every category of the current run)."""
    bs, cs = baseline["summary"], current["summary"]
    out: dict[str, Any] = {
        "baseline_run_id": baseline["run_id"],
        "regressed": False,
        "reasons": [],
        "counts": {k: {"baseline": bs[k], "current": cs[k], "delta": cs[k] - bs[k]} for k in gated},
        "categories": {
            c: {
                "baseline": bs["categories"][c]["pass"],
                "current": cs["categories"][c]["pass"],
                "delta": cs["categories"][c]["pass"] - bs["categories"][c]["pass"],
            }
            for c in cs["categories"]
        },
        "flipped": {"fixed": [], "broken": []},
    }
    out.update(over)
    return out


#: The parallel track's gated counts as its scorer compares them.
PARALLEL_GATED = (*parallel.MUST_NOT_FALL, *parallel.MUST_NOT_RISE)


def track_runs() -> list[dict[str, Any]]:
    """Runs of the other tracks on main, newer than every single-call run: two parallel
    runs (a baseline, then a regression: more dropped calls) and a deltas baseline."""
    p1 = run_record(11, track="parallel", verdict="baseline_set", summary=parallel_summary(270))
    p2 = run_record(
        12,
        track="parallel",
        verdict="regression",
        summary=parallel_summary(262, invented=4, dropped=9),
    )
    p2["comparison"] = track_comparison(
        p1,
        p2,
        PARALLEL_GATED,
        regressed=True,
        reasons=[
            "exact_turns fell 270 -> 262",
            "invented_calls rose 1 -> 4",
            "dropped_calls rose 4 -> 9",
        ],
        flipped={"fixed": [], "broken": ["tc300-0254"]},
    )
    d1 = run_record(13, track="deltas", verdict="baseline_set", summary=deltas_summary(571))
    return [p1, p2, d1]


def acme_runs() -> list[dict[str, Any]]:
    """Six single-call runs: a baseline, passes, a regression, a failure, a release-1.2 run;
    then the runs of the other tracks (:func:`track_runs`); oldest first."""
    r1 = run_record(1, verdict="baseline_set")
    r2 = run_record(2)
    r2["comparison"] = comparison(r1, r2, flipped={"fixed": ["tc300-0007"], "broken": []})
    r3 = run_record(
        3, summary=summary(250, invented=5, schema_invalid=4, shift=1), verdict="regression"
    )
    r3["comparison"] = comparison(
        r1,
        r3,
        regressed=True,
        reasons=["exact matches fell from 261 to 250", "invented calls rose from 2 to 5"],
        flipped={"fixed": ["tc300-0011"], "broken": ["tc300-0254", "tc300-0266", "tc300-0288"]},
    )
    r4 = run_record(
        4,
        status="failed",
        verdict=None,
        summary=None,
        report_url=None,
        failure={
            "reason": "adapter_start_failed",
            "detail": "the adapter exited with status 127 before answering",
            "stderr_tail": "sh: 1: my-adapter: not found\n<script>alert('x')</script>",
        },
    )
    r5 = run_record(5, baseline="release-1.2", verdict="baseline_set", ref="refs/heads/release-1.2")
    r6 = run_record(6, status="running", verdict=None, summary=None, finished_at=None)
    return [r1, r2, r3, r4, r5, r6, *track_runs()]


#: The rationale rows the contract API serves (``GET /cases/{id}/rationale``).
RATIONALE = {
    "tc300-0254": {
        "rule": "rule 8 / D8.1",
        "rationale": '"days" was written as the one-element array [2] where an integer is '
        "declared; the expected call unwraps it to 2.",
    }
}


#: The cases every canned stored report holds (a run fails exactly its comparison's broken ones).
CASE_IDS = ("tc300-0001", "tc300-0007", "tc300-0011", "tc300-0254", "tc300-0266", "tc300-0288")


def stored_score(run: dict[str, Any]) -> dict[str, Any]:
    """The scorer's part of a stored report: the comparison's broken cases failed (with a
    case view, one of them with an input that tries to be markup), the rest passed."""
    broken = list(((run.get("comparison") or {}).get("flipped") or {}).get("broken") or [])
    per_case = [
        {"id": c, "category": "array_vs_scalar", "passed": False, "outcome": "schema_invalid"}
        if c in broken
        else {"id": c, "category": "args_as_string", "passed": True, "outcome": "exact"}
        for c in CASE_IDS
    ]
    details = {
        c: {
            "input": '{"name": "get_forecast", "arguments": {"days": [2]}}\n<img src=x onerror=alert(1)>'
            + " padding" * 60,
            "expected": '{"arguments":{"days":2},"name":"get_forecast"}',
            "returned": '{"arguments":{"days":[2]},"name":"get_forecast"}',
            "diff": [
                "$.arguments.days: expected 2, returned [2]",
                "schema: $.arguments.days: expected integer, got array",
            ],
            "rule": "rule 8 / D8.1",
            "graded": "D1.1: not a call its declared schema accepts",
        }
        for c in broken
    }
    if run["track"] != "single":  # another track's scorer puts its rationale row in the details
        for c in broken:
            details[c]["rule"] = "P7"
            details[c]["rationale"] = "two identical copies of one call collapse to one (rule 10)"
    return {"per_case": per_case, "failure_details": details, **run["summary"]}


@dataclass
class ContractApi:
    """A team API serving canned, contract-shaped answers over real HTTP on 127.0.0.1."""

    runs: list[dict[str, Any]] = field(default_factory=acme_runs)
    faults: dict[str, int] = field(default_factory=dict)  # path -> status to answer instead
    seen_auth: list[str] = field(default_factory=list)
    base_url: str = ""
    badge_public: bool = False  # team acme's badge setting (GET and PUT /teams/acme/badge)

    def team_of(self, auth: str | None) -> tuple[str, str] | None:
        token = (auth or "").removeprefix("Bearer ")
        return {
            GOOD_KEY: ("acme", "team"),
            OWNER_KEY: ("acme", "team"),
            EMPTY_KEY: ("quiet-team", "team"),
            SINGLE_KEY: (None, "single"),
            PACK_KEY: (None, "checks"),
        }.get(token)  # type: ignore[return-value]

    def answer(self, path: str, auth: str | None) -> tuple[int, dict[str, str], bytes]:
        if path == "/dashboard":
            shipped = page()
            return 200, shipped.headers, shipped.html.encode("utf-8")
        if path in self.faults:
            return (
                self.faults[path],
                {},
                json.dumps({"error": {"code": "internal", "message": "injected failure"}}).encode(),
            )
        who = self.team_of(auth)
        if who is None:
            return (
                401,
                {},
                json.dumps(
                    {"error": {"code": "key_invalid", "message": "unknown licence key"}}
                ).encode(),
            )
        team, tier = who
        runs = self.runs if team == "acme" else []
        if path == "/licence":
            return (
                200,
                {},
                json.dumps(
                    {
                        "tier": tier,
                        "status": "active",
                        "team": team,
                        "issued_at": "2026-11-01T00:00:00Z",
                        "checks": PACK if tier == "checks" else None,
                        "manages_members": auth == f"Bearer {OWNER_KEY}",
                    }
                ).encode(),
            )
        if path == f"/teams/{team}/runs":
            listed = [{k: r[k] for k in LISTING_FIELDS} for r in reversed(runs)]
            return 200, {}, json.dumps({"team": team, "runs": listed}).encode()
        settings = self.team_settings(path, team, auth, runs)
        if settings is not None:
            return 200, {}, json.dumps(settings).encode()
        for r in runs:
            if path == f"/runs/{r['run_id']}":
                return 200, {}, json.dumps(r).encode()
            if path == f"/runs/{r['run_id']}/report" and r["summary"]:
                report = {"report_version": 1, "run_id": r["run_id"], **r["summary"]}
                report["score"] = stored_score(r)
                return 200, {"Content-Disposition": "attachment"}, json.dumps(report).encode()
        if path.startswith("/cases/") and path.endswith("/rationale"):
            case_id = path.split("/")[2]
            if (
                tier == "checks"
            ):  # a licence whose tier does not include it (kept for the page's branch)
                body = {"error": {"code": "tier_insufficient", "message": "not on this licence"}}
                return 403, {}, json.dumps(body).encode()
            if case_id in RATIONALE:
                return 200, {}, json.dumps({"id": case_id, **RATIONALE[case_id]}).encode()
        return (
            404,
            {},
            json.dumps({"error": {"code": "not_found", "message": "no such run"}}).encode(),
        )

    def team_settings(
        self, path: str, team: str, auth: str | None, runs: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """The team's baselines, its purchase key's member keys (none) and its badge setting."""
        if path == f"/teams/{team}/keys" and auth == f"Bearer {OWNER_KEY}":
            return {"team": team, "keys": []}
        if path == f"/teams/{team}/badge":
            return self.badge_view(team)
        if path == f"/teams/{team}/baselines":
            named: dict[str, list[dict[str, Any]]] = {}
            for r in runs:
                if r["verdict"] == "baseline_set":
                    named.setdefault(r["baseline"], []).append(
                        {
                            "run_id": r["run_id"],
                            "ref": r["ref"],
                            "commit": r["commit"],
                            "track": r["track"],
                            "set_at": r["finished_at"],
                            "summary": r["summary"],
                        }
                    )
            body = {"team": team, "baselines": named, "next": None}
            return body
        return None

    def badge_view(self, team: str) -> dict[str, Any]:
        """What ``GET`` and ``PUT /teams/{team}/badge`` answer (docs/api.md)."""
        url = f"{self.base_url}/badges/{team}/main.svg"
        return {
            "team": team,
            "public": self.badge_public,
            "badge_url": url,
            "markdown": f"![TOOLCALL-300]({url})",
        }

    def answer_put(self, path: str, auth: str | None, body: bytes) -> tuple[int, bytes]:
        """``PUT /teams/acme/badge``: the purchase key only, ``{"public": bool}`` only."""
        if path in self.faults:
            return self.faults[path], json.dumps(
                {"error": {"code": "internal", "message": "injected failure"}}
            ).encode()
        if self.team_of(auth) is None:
            return 401, json.dumps({"error": {"code": "key_invalid", "message": "no"}}).encode()
        if path != "/teams/acme/badge":
            return 404, json.dumps({"error": {"code": "not_found", "message": "no"}}).encode()
        if auth != f"Bearer {OWNER_KEY}":
            error = {"code": "owner_only", "message": "only the team's purchase key may do that"}
            return 403, json.dumps({"error": error}).encode()
        wanted = json.loads(body)
        if set(wanted) != {"public"} or not isinstance(wanted["public"], bool):
            return 400, json.dumps({"error": {"code": "invalid_request", "message": "no"}}).encode()
        self.badge_public = wanted["public"]
        return 200, json.dumps(self.badge_view("acme")).encode()


#: The badge the canned API draws: an SVG of the size the real one has (20 px high).
CANNED_BADGE = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="160" height="20">'
    b'<rect width="160" height="20" fill="#1a7f37"/></svg>'
)


@contextmanager
def serve_contract_api() -> Iterator[ContractApi]:
    """Run a :class:`ContractApi` on a free local port until the block ends."""
    api = ContractApi()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            auth = self.headers.get("Authorization")
            api.seen_auth.append(auth or "")
            path = urlsplit(self.path).path
            if path == "/badges/acme/main.svg" and api.badge_public:
                self.send(200, {"Content-Type": "image/svg+xml"}, CANNED_BADGE)
                return
            self.send(*api.answer(path, auth))

        def do_PUT(self) -> None:
            auth = self.headers.get("Authorization")
            api.seen_auth.append(auth or "")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer = api.answer_put(urlsplit(self.path).path, auth, body)
            self.send(status, {}, answer)

        def send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            headers = {"Content-Type": "application/json", **headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    yield api
    server.shutdown()
    server.server_close()


def wait_for_serve_url(proc: subprocess.Popen[str], *, timeout_s: float) -> str:
    """Read ``serve``'s banner until it names its URL (its first line)."""
    found: list[str] = []
    seen: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            match = re.search(r"local stack at (http://\S+)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()  # the output ended: serve exited
        # keep draining so the server never blocks on a full pipe

    threading.Thread(target=read, daemon=True).start()
    ready.wait(timeout_s)
    if not found:
        raise AssertionError("toolcall300 serve did not start:\n" + "".join(seen[-40:]))
    return found[0]


class HeldRequests:
    """Holds the page's requests that ``wanted`` picks (a Playwright request in, a bool out)
    until :meth:`release`, so a test looks at the page while an answer is on its way however
    loaded the machine is, instead of hoping to read it inside a window of time."""

    def __init__(self, page: Any, wanted: Any) -> None:
        self.page, self.wanted, self.held, self.released = page, wanted, [], False
        page.route("**/*", self._hold)

    def _hold(self, route: Any) -> None:
        if not self.released and self.wanted(route.request):
            self.held.append(route)
        else:
            route.continue_()

    def wait(self, count: int = 1, timeout_s: float = 30) -> None:
        """Until ``count`` requests are held (a route handler runs while the page is waited on)."""
        deadline = time.monotonic() + timeout_s
        while len(self.held) < count and time.monotonic() < deadline:
            self.page.wait_for_timeout(10)
        assert len(self.held) >= count, f"{len(self.held)} of {count} requests reached the route"

    def release(self) -> None:
        """Stop holding and let every held request through, oldest first."""
        self.released = True
        held, self.held = self.held, []
        for route in held:
            route.continue_()
        self.page.unroute("**/*", self._hold)  # after: unrouting hands held requests on


def settle(page: Any) -> None:
    """A round trip to the page's own origin and back through its event loop: answers the
    page was already handed are processed before it ends (a barrier for checking that
    something did not happen)."""
    page.evaluate(
        "() => fetch(location.href.split('#')[0], {cache: 'no-store'}).then(r => r.text())"
        ".then(() => new Promise(done => setTimeout(done, 0)))"
    )
