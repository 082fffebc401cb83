"""The one-machine edition's store: restart time and a team's run listing, against its history.

Figures (medians) for a state folder holding 10,000 runs of one team (10,000 writes through
the SQLite adapter, ``statefolder.sqlite``), each against the same figure on an empty folder in the
same run, so the ratio says whether the cost grows with history (docs/local-stack.md
promises start and stop in about a second whatever the history; before the SQLite store, a
stack replayed every recorded request at start: about 5 minutes after 5,129 of them):

- opening the state (the database, its schema, the TTL sweep) and the first query;
- ``toolcall300 serve --state DIR``: process start to its URL printed, then Ctrl-C to exit
  (a whole process: Python's imports of the handlers are most of it);
- the store's listing of the team's latest 50 runs, and ``GET /teams/{team}/runs`` over HTTP;
- the store's page of the team's 200 newest baselines (what scoring compares with; every run
  here became one; with 50 runs there are only 50 to read, so that ratio is not flat);
- the deepest page of ``GET /teams/{team}/baselines``: the 10 oldest, after a cursor (a
  keyset seek on the same index, so its cost should not grow with the history).

    .venv/bin/python bench/bench_local_store.py [--runs 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus_private"


def median_of(repeat: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(repeat))


def fill(state: Path, runs: int) -> tuple[str, str]:
    """``runs`` runs of one team written through the store; a team licence's key and team."""
    from toolcall300.service import admin
    from toolcall300.service.domain.runs import Run
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    edition = LocalAdapters(StateFolder(state), public_url=lambda: "")
    out = io.StringIO()
    args = admin.parse_args(
        ["--state", str(state), "licence", "issue", "--tier", "team", "--team", "Bench"]
    )
    admin.execute(args, edition.licences, out)
    key = out.getvalue().splitlines()[-1]
    team = re.search(r"team (team-[0-9a-f]{16})", out.getvalue()).group(1)  # type: ignore[union-attr]
    for i in range(runs):
        created = f"2026-{1 + i // 28000 % 12:02d}-{1 + i // 1000 % 28:02d}T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
        run = Run(
            run_id=f"run_{i:026d}", team=team, licence_id="lic_bench", adapter={"kind": "command"},
            ref="main", commit="abc1234", status="scored", created_at=created, finished_at=created,
            verdict="pass", summary={"passed": 300}, version=1, baseline_set_at=created,
        )  # fmt: skip
        edition.runs.put(run.to_item(), expected_version=None)
    edition.close()
    return key, team


def open_state(state: Path, team: str) -> float:
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    started = time.perf_counter()
    edition = LocalAdapters(StateFolder(state), public_url=lambda: "")
    edition.runs.by_team(team, limit=1)
    took = time.perf_counter() - started
    edition.close()
    return took


def newest_baselines(state: Path, team: str) -> float:
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    edition = LocalAdapters(StateFolder(state), public_url=lambda: "")
    started = time.perf_counter()
    found = edition.runs.baselines_page(team, limit=200, after=None)
    took = time.perf_counter() - started
    edition.close()
    assert len(found) <= 200
    return took


def oldest_baselines_page(state: Path, team: str) -> float:
    """``GET /teams/{team}/baselines``'s deepest page: the 10 oldest, after a cursor taken 10
    from the end of the history (a keyset seek, whatever the depth)."""
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    edition = LocalAdapters(StateFolder(state), public_url=lambda: "")
    every = edition.runs.baselines_page(team, limit=1_000_000, after=None)
    cut = every[-11]
    started = time.perf_counter()
    found = edition.runs.baselines_page(
        team, limit=10, after=(cut["baseline_set_at"], cut["run_id"])
    )
    took = time.perf_counter() - started
    edition.close()
    assert found == every[-10:]
    return took


def list_latest(state: Path, team: str) -> float:
    from toolcall300.service.statefolder.folder import LocalAdapters, StateFolder

    edition = LocalAdapters(StateFolder(state), public_url=lambda: "")
    started = time.perf_counter()
    found = edition.runs.by_team(team, limit=50)
    took = time.perf_counter() - started
    edition.close()
    assert len(found) == min(50, len(found)) and found == sorted(
        found, key=lambda r: r["created_at"], reverse=True
    )
    return took


class Serve:
    """``toolcall300 serve`` on a state folder: start (to its URL) and stop (Ctrl-C) timed."""

    def __init__(self, state: Path) -> None:
        command = [
            sys.executable,
            "-m",
            "toolcall300",
            "serve",
            "--port",
            "0",
            "--state",
            str(state),
        ]
        command += ["--corpus", str(CORPUS)]
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        found: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                match = re.search(r"local stack at (http://\S+)", line)
                if match and not found:
                    found.append(match.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(300)
        if not found:
            self.proc.kill()
            raise SystemExit("toolcall300 serve did not start")
        self.url, self.start_s = found[0], time.perf_counter() - started

    def stop(self) -> float:
        started = time.perf_counter()
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=120)
        return time.perf_counter() - started


def http_listing(url: str, key: str, team: str) -> float:
    request = urllib.request.Request(
        f"{url}/teams/{team}/runs", headers={"Authorization": f"Bearer {key}"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = json.loads(answer.read())
    took = time.perf_counter() - started
    assert len(body["runs"]) == min(50, len(body["runs"]))
    return took


def measure(label: str, runs: int, repeat: int) -> dict[str, float]:
    state = Path(tempfile.mkdtemp(prefix="tc300-bench-state-"))
    try:
        started = time.perf_counter()
        key, team = fill(state, runs)
        write_s = time.perf_counter() - started
        figures = {
            "writes_s": write_s,
            "open_s": median_of(repeat, lambda: open_state(state, team)),
            "list50_s": median_of(repeat * 4, lambda: list_latest(state, team)),
            "baselines200_s": median_of(repeat * 4, lambda: newest_baselines(state, team)),
            "oldest10_s": median_of(repeat * 4, lambda: oldest_baselines_page(state, team)),
        }
        starts, stops, listings = [], [], []
        for _ in range(repeat):
            serve = Serve(state)
            starts.append(serve.start_s)
            listings.append(statistics.median(http_listing(serve.url, key, team) for _ in range(5)))
            stops.append(serve.stop())
        figures.update(
            serve_start_s=statistics.median(starts),
            serve_stop_s=statistics.median(stops),
            http_list50_s=statistics.median(listings),
        )
        print(
            f"{label:>16}: {runs} runs written in {write_s:.2f} s; open {figures['open_s'] * 1e3:.1f} ms; "
            f"latest 50 from the store {figures['list50_s'] * 1e3:.2f} ms, over HTTP "
            f"{figures['http_list50_s'] * 1e3:.1f} ms; 200 newest baselines "
            f"{figures['baselines200_s'] * 1e3:.2f} ms, the 10 oldest after a cursor "
            f"{figures['oldest10_s'] * 1e3:.2f} ms; serve start {figures['serve_start_s']:.2f} s, "
            f"stop {figures['serve_stop_s']:.2f} s (medians of {repeat})",
            flush=True,
        )
        return figures
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    empty = measure("50 runs", 50, args.repeat)
    full = measure(f"{args.runs} runs", args.runs, args.repeat)
    print(f"ratios ({args.runs} runs / 50 runs; 1.0 = the cost does not grow with history):")
    for name in (
        "open_s", "list50_s", "http_list50_s", "baselines200_s", "oldest10_s",
        "serve_start_s", "serve_stop_s",
    ):  # fmt: skip
        print(f"  {name:14} {full[name] / empty[name]:.2f}x")


if __name__ == "__main__":
    main()
