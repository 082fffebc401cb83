"""Hosted runs on the local stack: submission-to-verdict time and 10-run throughput.

Peer in the same run: the same adapter (the reference normaliser, ``toolcall300 toolshim
--stream``) scored directly by the CLI (``toolcall300 score --adapter-cmd ... --stream``), so
the ratio is what hosting adds (HTTP, the runs table, the sandbox, report storage, the
baseline comparison). Uses ``corpus_private/toolcall300.jsonl`` (300 cases).

    .venv/bin/python bench/bench_runs.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus_private" / "toolcall300.jsonl"
REFERENCE = ["toolcall300", "toolshim", "--stream"]


def corpus_dir() -> Path:
    """A corpus directory in the service's manifest format holding the 300-case corpus."""
    data = CORPUS.read_bytes()
    out = Path(tempfile.mkdtemp(prefix="tc300-bench-"))
    (out / "toolcall300.jsonl").write_bytes(data)
    files = [
        {
            "name": "toolcall300.jsonl",
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }
    ]
    (out / "manifest.json").write_text(json.dumps({"version": "bench", "files": files}))
    return out


def cli_seconds() -> float:
    """The peer: the CLI scoring the same adapter over the same corpus, one process."""
    tool = str(Path(sys.executable).with_name("toolcall300"))
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [tool, "score", "--corpus", str(CORPUS), "--adapter-cmd", f"{tool} toolshim --stream"]
        start = time.perf_counter()
        subprocess.run([*cmd, "--stream", "--json", str(report)], check=True, capture_output=True)
        elapsed = time.perf_counter() - start
        assert json.loads(report.read_text())["exact"] > 0, "the peer answered nothing"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("TOOLCALL300_WORKERS", "2")
    # one team here: let it use every worker, so the figure is the pool's throughput (the
    # default per-team limit of 1 would measure one worker; docs/local-sandbox.md)
    os.environ.setdefault("TOOLCALL300_TEAM_RUNS", os.environ["TOOLCALL300_WORKERS"])
    from toolcall300.client import dev as devtools
    from toolcall300.client.http import request_json
    from toolcall300.service.local.stack import start_local_stack
    from toolcall300.service.observability import logger

    stack = start_local_stack(corpus_dir=corpus_dir())
    # The handlers log every run as a JSON line; on this terminal that would bury the figures.
    logger.setLevel("WARNING")
    try:
        key = devtools.purchase(stack.url, tier="team", team="bench")["key"]
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

        def submit(i: int) -> str:
            body = {"adapter_cmd": REFERENCE, "ref": f"refs/heads/b{i}", "commit": f"{i:07x}"}
            _, _, answer = request_json(
                "POST", f"{stack.url}/runs", headers=headers, body=json.dumps(body).encode()
            )
            return str(answer["run_id"])

        def wait(run_id: str) -> dict[str, object]:
            while True:
                _, _, run = request_json("GET", f"{stack.url}/runs/{run_id}", headers=headers)
                if run["status"] in ("scored", "failed"):
                    return dict(run)
                time.sleep(0.02)

        hosted, cli = [], []
        for i in range(args.repeat):
            start = time.perf_counter()
            run = wait(submit(i))
            hosted.append(time.perf_counter() - start)
            assert run["status"] == "scored", run
            cli.append(cli_seconds())
        exact = run["summary"]["exact"]  # type: ignore[index]

        ids: list[str] = []
        start = time.perf_counter()
        threads = [
            threading.Thread(target=lambda i=i: ids.append(submit(100 + i))) for i in range(10)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        finished = [wait(run_id) for run_id in ids]
        wall = time.perf_counter() - start
        assert all(r["status"] == "scored" for r in finished)
    finally:
        stack.stop()

    h, c = statistics.median(hosted), statistics.median(cli)
    print(f"corpus: {CORPUS.name} (300 cases); adapter: {' '.join(REFERENCE)}; exact {exact}/300")
    print(f"submission -> verdict, hosted (local stack)  median {h:.3f} s over {args.repeat}")
    print(f"peer: toolcall300 score --stream (CLI)       median {c:.3f} s over {args.repeat}")
    print(f"ratio hosted / CLI                           {h / c:.2f}x")
    print(
        f"10 concurrent runs: wall {wall:.2f} s, {10 / wall * 60:.1f} runs/min, "
        f"{wall / 10:.3f} s per run vs {h:.3f} s alone ({os.environ['TOOLCALL300_WORKERS']} workers, "
        f"{os.environ['TOOLCALL300_TEAM_RUNS']} per team, {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
