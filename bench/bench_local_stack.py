"""The local stack under load and at rest: paid checks at concurrency 1, 8 and 32; idle CPU.

The stack runs as ``toolcall300 serve --no-state --port 0 --processes P`` (``--processes``, default
the machine's cores) in processes of its own (its worker pool included), so the clients here do
not share its interpreter; its CPU time is its whole process tree's. Load: ``--n`` paid ``POST /check``
per level, spread over C client threads with a keep-alive connection each, each round followed
by as many GETs of the floor (a bare waitress app, ``FLOOR``) with the same clients; prints
requests a second (median of ``--repeat`` rounds) for both, each one's growth from concurrency
1 and the stack's rate as a share of the floor's (the peers, measured in the same run), with
refused or reset connections and non-200 answers counted (expected: 0).
The machine has 2 cores shared with these clients, so more than about 2x the peer is not to
be had, and on a loaded machine the rate says little: the stack's CPU time per check (which
bounds one interpreter at about 1000 / ms checks a second) and the load average are printed
beside it. At rest: the stack process's CPU time (``/proc/<pid>/stat``) over ``--idle-s`` seconds
with nothing to do, as a share of one core; then one hosted run is submitted and the time to
its pickup (``status`` leaving ``queued``) is printed, which a polling worker would round up
to its poll interval.

    bench/.venv/bin/python bench/bench_local_stack.py [--n 200] [--repeat 3] [--idle-s 10] [--processes P]

Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BODY = {
    "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "arguments": {"n": "42"},
}
LEVELS = (1, 8, 32)


def start_stack(processes: int) -> tuple[subprocess.Popen[str], str]:
    exe = Path(sys.executable).with_name("toolcall300")
    proc = subprocess.Popen(
        [str(exe), "serve", "--no-state", "--port", "0", "--processes", str(processes)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "TOOLCALL300_WORKERS": "2"},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        m = re.search(r"local stack at (http://\S+)", line)
        if m:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain
            return proc, m.group(1)
    raise SystemExit("toolcall300 serve did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU so far of a process, its children it reaped and its live descendants:
    the stack's sibling processes and pattern checkers included. A live thread's time is read
    in nanoseconds (``/proc/<pid>/task/<tid>/schedstat``, its first field), so a round of a
    few hundred requests is measured to well under a clock tick; the children a process reaped
    are in clock ticks (``/proc/<pid>/stat`` fields 16 and 17), and so is everything where
    ``schedstat`` is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):  # it ended meanwhile (before or while read)
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    own = _threads_ns(pid)
    total = (sum(int(f) for f in fields[11:13]) / tick) if own is None else own / 1e9
    total += sum(int(f) for f in fields[13:15]) / tick
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            total += sum(cpu_seconds(int(child)) for child in task.read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def _threads_ns(pid: int) -> int | None:
    """The CPU time of ``pid``'s live threads in nanoseconds, or None without ``schedstat``."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return total if total else None


def settle(pid: int, *, quiet_s: float = 0.5, limit_s: float = 60.0) -> None:
    """Wait until ``pid``'s process tree has used less than 2 % of a core over ``quiet_s``:
    ``serve`` prints its address while its sibling processes are still importing, and their
    start-up (about a second of CPU each) would otherwise be counted as the first requests'."""
    deadline = time.monotonic() + limit_s
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = cpu_seconds(pid)
        if now - before < 0.02 * quiet_s:
            return
        before = now


def load(url: str, key: str | None, clients: int, n: int) -> tuple[float, int, int]:
    """(requests a second, refused or reset connections, non-200 answers) for ``n`` paid checks
    (``key`` None: ``n`` GETs of ``url``, the floor's load)."""
    import requests

    per_client = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]
    refused = [0] * clients
    bad = [0] * clients
    sessions = [requests.Session() for _ in range(clients)]
    headers = {"Authorization": f"Bearer {key}"}
    start = threading.Barrier(clients + 1)

    def client(i: int) -> None:
        start.wait()
        for _ in range(per_client[i]):
            try:
                if key is None:
                    r = sessions[i].get(url, timeout=120)
                else:
                    r = sessions[i].post(f"{url}/check", json=BODY, headers=headers, timeout=120)
                bad[i] += r.status_code != 200
            except requests.ConnectionError:
                refused[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    for s in sessions:
        s.close()
    return n / elapsed, sum(refused), sum(bad)


#: The floor: a bare waitress app answering a small JSON document, what any Python HTTP
#: service on this machine pays per request before its own work.
FLOOR = """
import logging, sys, waitress
logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # no line per queued request
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "2")])
    return [b"{}"]
server = waitress.create_server(app, host="127.0.0.1", port=0, threads=8)
print(f"floor at http://127.0.0.1:{server.effective_port}", flush=True)
server.run()
"""


def start_floor() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", FLOOR], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    m = re.search(r"floor at (http://\S+)", proc.stdout.readline())
    if m is None:
        raise SystemExit("the floor did not start")
    settle(proc.pid)
    return proc, m.group(1)


def per_request(
    pid: int, send: dict[str, Callable[[], object]], n: int, rounds: int
) -> dict[str, tuple[float, float]]:
    """(server CPU seconds, median wall seconds) per request of each sender, interleaved in
    rounds of ``n`` sequential requests. The CPU is the server's total over every round divided
    by the requests (``/proc`` counts in clock ticks: a round alone is too coarse); ``pid`` is the
    server a sender loads, or the sender's own ``pid`` attribute."""
    cpu: dict[str, float] = dict.fromkeys(send, 0.0)
    wall: dict[str, list[float]] = {name: [] for name in send}
    for fn in send.values():
        fn()
    for _ in range(rounds):
        for name, fn in send.items():
            owner = getattr(fn, "pid", pid)
            before, t0 = cpu_seconds(owner), time.perf_counter()
            for _ in range(n):
                fn()
            wall[name].append((time.perf_counter() - t0) / n)
            cpu[name] += cpu_seconds(owner) - before
    return {name: (cpu[name] / (n * rounds), statistics.median(wall[name])) for name in send}


def against_floor(proc: subprocess.Popen[str], url: str, key: str, n: int, rounds: int) -> None:
    """``GET /criteria`` (plain and revalidated with its ETag) against the floor's GET, server
    CPU per request; a paid check with a pattern against one without, wall time per check."""
    import requests

    floor_proc, floor_url = start_floor()
    try:
        session, floor_session = requests.Session(), requests.Session()
        etag = session.get(f"{url}/criteria").headers["ETag"]
        headers = {"Authorization": f"Bearer {key}"}
        pattern = {
            "schema": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "id": {"type": "string", "pattern": "^[a-z]{3}$"},
                },
            },
            "arguments": {"n": "42", "id": "abc"},
        }

        def floor() -> object:
            return floor_session.get(floor_url)

        floor.pid = floor_proc.pid  # type: ignore[attr-defined]
        senders: dict[str, Callable[[], object]] = {
            "floor GET (bare waitress)": floor,
            "GET /criteria": lambda: session.get(f"{url}/criteria"),
            "GET /criteria, If-None-Match (304)": lambda: session.get(
                f"{url}/criteria", headers={"If-None-Match": etag}
            ),
            "paid POST /check, no pattern": lambda: session.post(
                f"{url}/check", json=BODY, headers=headers
            ),
            "paid POST /check, with a pattern": lambda: session.post(
                f"{url}/check", json=pattern, headers=headers
            ),
        }
        got = per_request(proc.pid, senders, n, rounds)
    finally:
        floor_proc.kill()
        floor_proc.wait()
    floor_cpu = got["floor GET (bare waitress)"][0]
    print(
        f"per request, {rounds} interleaved rounds of {n} (CPU: all rounds; wall: median; load average {os.getloadavg()[0]:.1f}):"
    )
    for name, (cpu, wall) in got.items():
        print(
            f"  {name:<38} server CPU {cpu * 1e3:6.2f} ms ({cpu / floor_cpu:5.2f}x the floor)  wall {wall * 1e3:6.2f} ms"
        )
    no, yes = got["paid POST /check, no pattern"][1], got["paid POST /check, with a pattern"][1]
    print(f"  a paid check with a pattern / without, wall: {yes / no:.2f}x")


def idle_and_pickup(proc: subprocess.Popen[str], url: str, idle_s: float) -> None:
    from toolcall300.client import dev as devtools

    time.sleep(2)  # let start-up work (imports, the recovery pass) finish
    before = cpu_seconds(proc.pid)
    time.sleep(idle_s)
    used = cpu_seconds(proc.pid) - before
    print(f"idle stack: {used / idle_s * 100:.2f} % of one core over {idle_s:.0f} s")

    import requests

    key = devtools.purchase(url, tier="team", team="bench-pickup")["key"]
    auth = {"Authorization": f"Bearer {key}"}
    hang = "import sys,time\nsys.stdin.read()\ntime.sleep(600)\n"  # killed at the stop
    body = {"adapter_cmd": ["python3", "-c", hang], "ref": "refs/heads/main", "commit": "abc1234"}
    t0 = time.perf_counter()
    r = requests.post(f"{url}/runs", json=body, headers=auth, timeout=30)
    if r.status_code != 202:
        print(f"hosted run not accepted ({r.status_code} {r.text[:200]}); pickup not measured")
        return
    run_id = r.json()["run_id"]
    while time.perf_counter() - t0 < 30:
        status = requests.get(f"{url}/runs/{run_id}", headers=auth, timeout=30).json()["status"]
        if status != "queued":
            print(
                f"submitted run picked up ({status}) {1000 * (time.perf_counter() - t0):.0f} ms "
                "after its POST /runs was sent (status polled by this bench every ~10 ms)"
            )
            return
        time.sleep(0.01)
    print("submitted run still queued after 30 s")


def levels(
    proc: subprocess.Popen[str], url: str, n_checks: int, repeat: int, processes: int
) -> None:
    """Paid checks at concurrency 1, 8 and 32 next to the floor loaded the same way, rounds
    interleaved (a paid round, then a floor round, at each level), and the ratios the stack is
    held to: its growth from concurrency 1 against the floor's own, its rate against the
    floor's at each level."""
    from toolcall300.argcheck.criteria import PACK_CHECKS, PACK_PRODUCT
    from toolcall300.client import dev as devtools

    floor_proc, floor_url = start_floor()
    rates: dict[int, float] = {}
    floors: dict[int, float] = {}
    try:
        for clients in LEVELS:
            samples, floor_samples, cpu, refused, bad = [], [], [], 0, 0
            for _ in range(repeat):
                key = devtools.purchase(url, tier=PACK_PRODUCT, team=None)["key"]
                load(url, key, clients, min(8, n_checks))  # warm: connections, caches
                n = min(n_checks, PACK_CHECKS - 8)
                before = cpu_seconds(proc.pid)
                rate, r, b = load(url, key, clients, n)
                cpu.append((cpu_seconds(proc.pid) - before) / n)
                samples.append(rate)
                floor_rate, fr, fb = load(floor_url, None, clients, n)
                floor_samples.append(floor_rate)
                refused, bad = refused + r + fr, bad + b + fb
            rates[clients] = statistics.median(samples)
            floors[clients] = statistics.median(floor_samples)
            print(
                f"concurrency {clients:>2}: paid POST /check median {rates[clients]:.1f} req/s "
                f"({rates[clients] / rates[LEVELS[0]]:.2f}x concurrency 1), the floor "
                f"{floors[clients]:.1f} req/s ({floors[clients] / floors[LEVELS[0]]:.2f}x); "
                f"paid / floor {rates[clients] / floors[clients]:.2f}x; stack CPU "
                f"{statistics.median(cpu) * 1000:.2f} ms a check; refused/reset connections "
                f"{refused}, non-200 answers {bad} ({repeat} rounds of {n} each; load average "
                f"{os.getloadavg()[0]:.1f})"
            )
    finally:
        floor_proc.kill()
        floor_proc.wait()
    paid_growth, floor_growth = rates[8] / rates[1], floors[8] / floors[1]
    print(
        f"the stack served by {processes} processes (--processes); "
        f"from concurrency 1 to 8: paid checks grow {paid_growth:.2f}x, the floor "
        f"{floor_growth:.2f}x (paid / floor growth {paid_growth / floor_growth:.2f}, wanted "
        f">= 1); paid / floor at concurrency 8: {rates[8] / floors[8]:.2f}x (wanted >= 0.5)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="paid checks per level and round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per level (median)")
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument(
        "--processes", type=int, default=os.cpu_count() or 1, help="serve --processes (the cores)"
    )
    args = parser.parse_args()

    from toolcall300.argcheck.criteria import PACK_PRODUCT
    from toolcall300.client import dev as devtools

    proc, url = start_stack(args.processes)
    try:
        settle(proc.pid)
        key = devtools.purchase(url, tier=PACK_PRODUCT, team=None)["key"]
        against_floor(proc, url, key, n=min(40, args.n), rounds=args.repeat + 2)
        idle_and_pickup(proc, url, args.idle_s)
        levels(proc, url, args.n, args.repeat, args.processes)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
