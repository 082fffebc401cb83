"""What a failed run says to the team: the harness's failure record for an adapter that
stopped before answering, with the fix when the cause is a missing module."""

from __future__ import annotations

import sys

from toolcall300.jobs import harness

INPUTS = [{"id": "tc300-0001", "text": "hello", "tools": []}]


def test_a_missing_module_names_the_requirements_file_as_the_fix() -> None:
    argv = [sys.executable, "-I", "-c", "import tc300_no_such_package.validators as v"]
    out = harness.run_job(argv, INPUTS, limits=harness.Limits(per_case_timeout=5))
    assert out.failure is not None
    assert out.failure["reason"] == "adapter_start_failed"
    detail = out.failure["detail"]
    assert "could not import 'tc300_no_such_package'" in detail
    assert "'tc300_no_such_package' to the adapter's requirements file" in detail
    assert "pinned with hashes" in detail


def test_an_adapter_stopping_for_another_reason_gets_no_such_advice() -> None:
    argv = [sys.executable, "-I", "-c", "raise SystemExit(3)"]
    out = harness.run_job(argv, INPUTS, limits=harness.Limits(per_case_timeout=5))
    assert out.failure is not None
    assert out.failure["detail"] == "the adapter exited with 3 before answering"
