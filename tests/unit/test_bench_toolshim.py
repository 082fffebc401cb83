"""The toolshim benchmark still runs end to end (its figures are read by people, not asserted:
this only keeps the script from rotting)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_toolshim_runs_on_the_public_sample_and_reports_its_targets() -> None:
    sample = ROOT / "corpus_private" / "sample30.jsonl"
    out = subprocess.run(
        [sys.executable, "bench/bench_toolshim.py", "--corpus", str(sample), "--reps", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "30 cases from" in out
    for contender in (
        "toolshim.normalise ",
        "toolshim.normalise, tools parsed afresh",
        "json_repair + jsonschema.validate",
        "json_repair + kept Draft202012Validator",
        "json.loads alone",
    ):
        assert contender in out, contender
    assert "within 5x of json.loads:" in out
