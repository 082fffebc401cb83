"""What the local sandbox costs a run, and how fast a stop takes an adapter down.

1. Start-up: the median seconds for one sandboxed run of a trivial adapter (one case in, one
   answer out) through ``harness.run_job``, for each isolation this machine allows (bubblewrap
   with its own filesystem, ``unshare``, none: the lifeline init alone), against the peer of
   the same adapter run bare (no sandbox at all) in the same run.
2. Kill: the median seconds from closing a run's lifeline (what a stop or a dead worker does)
   to the end of ``run_job``, for an adapter that ignores SIGTERM and never answers, against
   the peer of its own per-case limit firing.

Asserts nothing. Run: .venv/bin/python bench/bench_sandbox.py [--repeats N]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import threading
import time

from bench_limits import timed  # one median-of-runs timer for the benches

from toolcall300.jobs import harness, sandbox

ONE = [{"id": "c0", "text": "{}", "tools": []}]
ANSWER = [
    sandbox.SYSTEM_PYTHON,
    "-c",
    "import json,sys\nfor line in sys.stdin:\n"
    "    print(json.dumps({'id':json.loads(line)['id'],'call':None}),flush=True)\n",
]
STUBBORN = [
    sandbox.SYSTEM_PYTHON,
    "-c",
    "import signal,sys,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "sys.stdin.read(); time.sleep(600)\n",
]
LIMITS = harness.Limits(per_case_timeout=30, total_timeout=60)


def sandboxed(iso: sandbox.Isolation) -> None:
    with sandbox.session(ANSWER, isolation=iso) as prepared:
        out = harness.run_job(prepared.argv, ONE, limits=LIMITS, popen_kwargs=prepared.popen_kwargs)
    assert out.failure is None, out.failure


def bare() -> None:
    out = harness.run_job(ANSWER, ONE, limits=LIMITS)
    assert out.failure is None, out.failure


def killed_after(delay: float) -> float:
    """Seconds from the lifeline's close to run_job's return."""
    with sandbox.session(STUBBORN) as prepared:
        closed: list[float] = []

        def close() -> None:
            time.sleep(delay)
            closed.append(time.perf_counter())
            prepared.kill()

        threading.Thread(target=close, daemon=True).start()
        harness.run_job(prepared.argv, ONE, limits=LIMITS, popen_kwargs=prepared.popen_kwargs)
        return time.perf_counter() - closed[0]


def limit_fired(limit: float) -> float:
    """Seconds past its own per-case limit before run_job returns (the peer of a kill)."""
    limits = harness.Limits(per_case_timeout=limit, total_timeout=60)
    with sandbox.session(STUBBORN) as prepared:
        start = time.perf_counter()
        harness.run_job(prepared.argv, ONE, limits=limits, popen_kwargs=prepared.popen_kwargs)
        return time.perf_counter() - start - limit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    n = parser.parse_args(argv).repeats
    root = os.geteuid() == 0
    probed = sandbox.probe()
    print(f"isolation here: {probed.record()}")
    peer = timed(bare, n)
    print(f"{'start-up, one case':34} {'median s':>9} {'x bare':>7}")
    print(f"{'bare (no sandbox)':34} {peer:9.3f} {1.0:7.2f}")
    for method in ("bwrap", "unshare", "none"):
        iso = sandbox.Isolation(method != "none", root, (), method)
        try:
            took = timed(functools.partial(sandboxed, iso), n)
        except (AssertionError, OSError) as exc:
            print(f"{method:34} unavailable here ({exc})")
            continue
        print(f"{method + ' + lifeline init':34} {took:9.3f} {took / peer:7.2f}")
    kill = statistics.median(killed_after(0.5) for _ in range(n))
    late = statistics.median(limit_fired(0.5) for _ in range(n))
    print(f"\n{'stop':34} {'median s':>9}")
    print(f"{'lifeline closed -> run over':34} {kill:9.3f}")
    print(f"{'per-case limit -> run over (peer)':34} {late:9.3f}   ratio {kill / late:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
