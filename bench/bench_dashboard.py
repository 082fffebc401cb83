"""Dashboard benchmark: building and serving the page, and drawing a full team in chromium.

Prints medians with ratios against peers measured in the same run; asserts nothing.

- page build (read the three static files, hash the inline blocks, assemble) against a bare
  read of the same three files (peer): the ratio is the cost of the CSP hashing and assembly;
- warm ``GET /dashboard`` through its Lambda handler against warm ``GET /openapi.json``
  through its own handler (peer: another document served by the same resolver stack);
- page weight, raw and gzip-compressed (what a browser downloads once);
- in headless chromium (skipped without it): from sign-in to all 17 charts drawn for a team
  with 50 scored runs (the API's page size), against the empty state of a team with no runs
  (peer): the ratio is the cost of rendering the charts and tables.

Run: .venv/bin/python bench/bench_dashboard.py [--repeats N]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/support


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def load_handler(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", ROOT / "functions" / name / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def event(path: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": f"GET {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {},
        "requestContext": {
            "http": {"method": "GET", "path": path, "sourceIp": "127.0.0.1"},
            "requestId": "bench",
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }


def bench_server_side(repeats: int) -> None:
    import os

    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from toolcall300.service.domain import dashboard
    from toolcall300.service.local.httpapi import LambdaContext

    static = ROOT / "layers" / "toolcall300" / "toolcall300" / "service" / "static"
    names = ("dashboard.html", "dashboard.css", "dashboard.js")

    def build() -> object:
        dashboard.page.cache_clear()
        return dashboard.page()

    def read_only() -> object:
        return [(static / n).read_text(encoding="utf-8") for n in names]

    built = median_ms(build, repeats)
    read = median_ms(read_only, repeats)
    print(
        f"page build            {built:8.3f} ms   peer: read the 3 files {read:8.3f} ms   ratio {built / read:5.1f}x"
    )

    dash, docs = load_handler("dashboard"), load_handler("apidocs")
    ctx = LambdaContext("bench")
    dash(event("/dashboard"), ctx), docs(event("/openapi.json"), ctx)  # warm both
    d = median_ms(lambda: dash(event("/dashboard"), ctx), repeats)
    o = median_ms(lambda: docs(event("/openapi.json"), ctx), repeats)
    print(
        f"GET /dashboard (warm) {d:8.3f} ms   peer: GET /openapi.json {o:8.3f} ms   ratio {d / o:5.2f}x"
    )

    html = dashboard.page().html.encode("utf-8")
    print(
        f"page weight           {len(html) / 1024:8.1f} KiB raw, {len(gzip.compress(html)) / 1024:.1f} KiB gzip"
    )


def bench_browser(repeats: int) -> None:
    executable = shutil.which("chromium")
    if executable is None:
        print("browser render        skipped: chromium is not installed")
        return
    from playwright.sync_api import sync_playwright
    from support.dashboard import (
        CHROMIUM_ARGS,
        EMPTY_KEY,
        GOOD_KEY,
        comparison,
        run_record,
        serve_contract_api,
        summary,
    )

    runs = [run_record(n % 28 + 1, summary=summary(240 + n % 50, shift=n)) for n in range(50)]
    for i, run in enumerate(runs):
        run["run_id"] = f"run_{i:026d}"
        run["created_at"] = f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"
        if i:
            run["comparison"] = comparison(runs[0], run)

    with serve_contract_api() as api, sync_playwright() as pw:
        api.runs = runs
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)

        def sign_in(key: str, ready: str) -> Callable[[], None]:
            def go() -> None:
                context = browser.new_context()
                pg = context.new_page()
                pg.goto(api.base_url + "/dashboard")
                pg.get_by_label("Licence key").fill(key)
                start = time.perf_counter()
                pg.get_by_role("button", name="Sign in").click()
                pg.locator(ready).wait_for()
                timings.append((time.perf_counter() - start) * 1000)
                context.close()

            return go

        timings: list[float] = []
        for _ in range(repeats):
            sign_in(GOOD_KEY, "#category-charts figure:nth-child(12) svg")()
        full = statistics.median(timings)
        timings = []
        for _ in range(repeats):
            sign_in(EMPTY_KEY, "#empty:not([hidden])")()
        empty = statistics.median(timings)
        browser.close()
    print(
        f"sign-in to 17 charts  {full:8.1f} ms   peer: empty state {empty:8.1f} ms   ratio {full / empty:5.2f}x  (50 runs)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    bench_server_side(args.repeats)
    bench_browser(max(3, args.repeats // 40))
    return 0


if __name__ == "__main__":
    sys.exit(main())
