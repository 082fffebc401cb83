"""Service benchmark: Lambda cold-import time per function, warm latency through the local gateway.

Prints medians (and p99 for latencies) with ratios against peers measured in the same run:
cold imports against a bare ``python -c pass`` start; ``POST /check`` through the gateway
against ``toolcall300.argcheck.check.check_body`` called in-process (the work itself), so the ratio
is the cost of HTTP + event building + Powertools + the store per check. Requests per
second here are one client's, one request at a time; ``bench_local_stack.py`` measures the
stack under concurrency.
Run: ``.venv/bin/python bench/bench_service.py [--n 300]``. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ["stripe_webhook", "licences", "corpus", "argcheck", "apidocs"]
BODY = json.dumps(
    {"schema": {"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}},
     "arguments": {"n": "42", "tags": "one"}}
).encode()  # fmt: skip


#: The peer for cold imports: what any Powertools HTTP handler pays before our own code.
FRAMEWORK_FLOOR = """
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
app = APIGatewayHttpResolver(enable_validation=True)
logger, tracer, metrics = Logger(), Tracer(), Metrics()
"""


def cold_import_seconds(module_path: Path | None, repeat: int) -> float:
    """Median wall time of a fresh interpreter importing one handler module (None = bare start)."""
    code = (
        "import importlib.util,sys,time;t=time.perf_counter();"
        f"s=importlib.util.spec_from_file_location('app',{str(module_path)!r});m=importlib.util.module_from_spec(s);"
        "s.loader.exec_module(m);print(time.perf_counter()-t)"
        if module_path
        else "import time;t=time.perf_counter();print(time.perf_counter()-t)"
    )
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="requests per latency measurement")
    parser.add_argument(
        "--repeat", type=int, default=3, help="interpreter starts per cold-import figure"
    )
    args = parser.parse_args()

    bare = cold_import_seconds(None, args.repeat)
    print(f"cold start, bare python -c pass: median {bare * 1000:.0f} ms (peer)")
    floor_module = Path(tempfile.mkdtemp()) / "floor.py"
    floor_module.write_text(FRAMEWORK_FLOOR)
    floor = cold_import_seconds(floor_module, args.repeat)
    print(
        f"cold import, Powertools resolver + Logger/Tracer/Metrics only: median {floor * 1000:.0f} ms (peer)"
    )
    for name in FUNCTIONS:
        t = cold_import_seconds(ROOT / "functions" / name / "app.py", args.repeat)
        print(
            f"cold import functions/{name}/app.py: median {t * 1000:.0f} ms "
            f"({t / bare:.1f}x bare start, {t / floor:.2f}x the framework floor)"
        )

    import requests

    from toolcall300.argcheck import check as argcheck
    from toolcall300.service.local.stack import start_local_stack

    stack = start_local_stack(port=0, background=False)
    try:
        from toolcall300.argcheck.criteria import PACK_CHECKS, PACK_PRODUCT
        from toolcall300.client import dev as devtools

        # A paid check needs a pack (docs/argcheck-payment.md); one pack pays for this run.
        if args.n + 20 > PACK_CHECKS:
            raise SystemExit(f"--n is at most {PACK_CHECKS - 20}: one pack pays for the run")
        key = devtools.purchase(stack.url, tier=PACK_PRODUCT, team=None)["key"]
        session = requests.Session()
        auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        for _ in range(20):  # warm every instance and connection
            session.get(f"{stack.url}/licence", headers=auth)
            session.post(f"{stack.url}/check", data=BODY, headers=auth)

        def get_licence() -> None:
            assert session.get(f"{stack.url}/licence", headers=auth).status_code == 200

        def post_check() -> None:
            assert session.post(f"{stack.url}/check", data=BODY, headers=auth).status_code == 200

        from toolcall300.service.api import wiring as ports
        from toolcall300.service.domain.licences import hash_key

        store = ports.licence_store()
        moto_peer = timed(lambda: store.find_by_key_hash(hash_key(key)), args.n)
        p50_moto, p99_moto = percentiles(moto_peer)
        print(
            f"one licence lookup straight to the store: p50 {p50_moto * 1e3:.2f} ms, p99 {p99_moto * 1e3:.2f} ms (peer)"
        )
        peer = timed(lambda: argcheck.check_body(BODY), args.n)
        p50_peer, p99_peer = percentiles(peer)
        print(
            f"in-process argcheck.check_body: p50 {p50_peer * 1e3:.3f} ms, p99 {p99_peer * 1e3:.3f} ms (peer)"
        )
        for label, fn in (("GET /licence", get_licence), ("POST /check (licensed)", post_check)):
            samples = timed(fn, args.n)
            p50, p99 = percentiles(samples)
            rps = len(samples) / sum(samples)
            print(
                f"{label} via local gateway: p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, "
                f"{rps:.0f} req/s one client ({p50 / p50_peer:.0f}x the in-process check p50)"
            )
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
