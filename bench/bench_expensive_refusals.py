"""Paid checks while another key floods the checker with backtracking patterns (criteria D26).

Starts the local stack in its own process (``bench_local_stack.start_stack``), buys two check
packs, and times one key's paid pattern-free ``POST /check`` (sequential, ``--n`` of them) at
rest and then while ``--flooders`` threads send the other key's ReDoS-shaped pattern as fast
as they are answered for ``--flood-s`` seconds. Prints the medians and their ratio (the rest
figure is the peer, measured in the same run), and what the flooding key was answered:
``422 CAP-EXCEEDED:check_seconds`` (a child ran), ``429 check_in_flight`` (its one lane was
busy) and ``429 check_seconds_spent`` (its day's overruns are spent). Before D26 the paid
median went from 0.42 s to 16.6 s under the same flood. The machine's 2 cores are
shared with the clients and the bounded child, so a ratio near 1 is not to be expected.

    .venv/bin/python bench/bench_expensive_refusals.py [--n 20] [--flooders 8] [--flood-s 20]

Figures, not assertions.
"""

from __future__ import annotations

import argparse
import collections
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_local_stack import BODY, start_stack  # a sibling script

#: Polynomial backtracking (the schema engine refuses nested repetition statically, D20).
REDOS = {
    "schema": {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^\\w*\\w*\\w*\\w*x$"}},
    },
    "arguments": {"s": "a" * 5000},
}


def paid_latencies(url: str, key: str, n: int) -> list[float]:
    import requests

    out = []
    with requests.Session() as s:
        for _ in range(n):
            t0 = time.perf_counter()
            r = s.post(f"{url}/check", json=BODY, headers={"Authorization": f"Bearer {key}"})
            out.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text[:200]
    return out


def flood(url: str, key: str, until: float, seen: collections.Counter[str]) -> None:
    import requests

    with requests.Session() as s:
        while time.perf_counter() < until:
            r = s.post(f"{url}/check", json=REDOS, headers={"Authorization": f"Bearer {key}"})
            doc = r.json()
            code = (doc.get("refusal") or doc.get("error") or {}).get("code", "?")
            seen[f"{r.status_code} {code}"] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="paid checks timed per phase")
    parser.add_argument("--flooders", type=int, default=8)
    parser.add_argument("--flood-s", type=float, default=20.0)
    args = parser.parse_args()

    from toolcall300.argcheck.criteria import PACK_PRODUCT
    from toolcall300.client import dev as devtools

    proc: subprocess.Popen[str]
    proc, url = start_stack()
    try:
        victim = devtools.purchase(url, tier=PACK_PRODUCT, team=None)["key"]
        flooder = devtools.purchase(url, tier=PACK_PRODUCT, team=None)["key"]
        paid_latencies(url, victim, 3)  # warm
        rest = statistics.median(paid_latencies(url, victim, args.n))
        seen: collections.Counter[str] = collections.Counter()
        until = time.perf_counter() + args.flood_s
        threads = [
            threading.Thread(target=flood, args=(url, flooder, until, seen))
            for _ in range(args.flooders)
        ]
        for t in threads:
            t.start()
        time.sleep(1.0)  # the flood is under way (one child running)
        loaded = statistics.median(paid_latencies(url, victim, args.n))
        for t in threads:
            t.join()
        print(f"paid POST /check at rest: median {rest * 1000:.0f} ms ({args.n} sequential)")
        print(
            f"paid POST /check while {args.flooders} threads of another key send backtracking "
            f"patterns: median {loaded * 1000:.0f} ms ({loaded / rest:.2f}x at rest)"
        )
        print(
            "the flooding key was answered: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(seen.items()))
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
