"""The tracer: X-Ray where tracing is on (Lambda), and where it is off (the local stack, the
tests) Powertools' provider interface with a provider that never loads the X-Ray SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import toolcall300

LAYER = str(Path(toolcall300.__file__).resolve().parents[1])

PROBE = """
import json, sys
from toolcall300.service.observability import tracer

@tracer.capture_lambda_handler
def handler(event, context):
    if event.get("fail"):
        raise ValueError("boom")
    return {"ok": event["n"]}

try:
    handler({"fail": True}, None)
    raised = False
except ValueError:
    raised = True
print(json.dumps({
    "xray_core_loaded": "aws_xray_sdk.core" in sys.modules,
    "provider": type(tracer.provider).__module__,
    "answer": handler({"n": 3}, None),
    "raised": raised,
}))
"""


def _probe(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_TRACE")}
    clean.update(env, PYTHONPATH=LAYER, AWS_DEFAULT_REGION="us-east-1")
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=clean, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def test_with_tracing_off_the_xray_sdk_is_never_loaded_and_handlers_behave_alike() -> None:
    off = _probe(POWERTOOLS_TRACE_DISABLED="true")
    assert off == {
        "xray_core_loaded": False,
        "provider": "toolcall300.service.observability",
        "answer": {"ok": 3},
        "raised": True,
    }


def test_with_tracing_on_the_tracer_is_x_rays() -> None:
    on = _probe()
    assert on["provider"].startswith("aws_xray_sdk") and on["xray_core_loaded"] is True  # type: ignore[union-attr]
    assert (on["answer"], on["raised"]) == ({"ok": 3}, True)
