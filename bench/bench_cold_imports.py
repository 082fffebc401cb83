"""Cold import of each Lambda handler from the built layer, with and without bytecode.

What a cold start pays before the handler runs: a fresh ``python3.12 -c "import app"`` with
the layer and the function's folder on the path, as Lambda lays them out, under
``PYTHONDONTWRITEBYTECODE`` (Lambda's filesystem is read-only, so nothing compiled at import
is kept). Measured twice on copies of the layer: as ``sam build`` leaves it (no ``.pyc``) and
after ``infra/compile_layer.py``. The peer in the same run is the floor every handler pays:
importing Powertools' logger, metrics, tracer and HTTP resolver and boto3 from the same layer.

    python3.12 bench/bench_cold_imports.py [--layer .aws-sam/build/ToolcallLayer/python] [--repeat 5]

Without ``--layer`` it uses ``.aws-sam/build/ToolcallLayer/python`` (``make build``) or, failing
that, ``build/layer-py312/python`` (``pip install --target`` of the layer's requirements), and
copies the package source into the copy it measures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "infra"))
import compile_layer  # noqa: E402  (infra/ is not a package)

FLOOR = (
    "from aws_lambda_powertools import Logger, Metrics, Tracer\n"
    "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver\n"
    "import boto3\n"
    "Logger(); Metrics(namespace='bench'); Tracer(); APIGatewayHttpResolver(enable_validation=True)\n"
)


def functions() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "functions").glob("*/app.py"))


def cold(layer: Path, folder: Path | None, code: str) -> float:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(str(p) for p in (folder, layer) if p),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "bench",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "bench",
    }
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd="/")
    return time.perf_counter() - started


def layer_copy(source: Path, into: Path) -> Path:
    target = into / "python"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not (target / "toolcall300").is_dir():
        shutil.copytree(
            ROOT / "layers" / "toolcall300" / "toolcall300",
            target / "toolcall300",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    return target


def median_of(repeat: int, layer: Path, folder: Path | None, code: str) -> float:
    return statistics.median(cold(layer, folder, code) for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layer", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    wanted = compile_layer.runtime_version()
    if sys.version_info[:2] != wanted:  # make bench runs us with the venv's Python: re-run
        runtime = shutil.which(f"python{wanted[0]}.{wanted[1]}")
        usable = (
            runtime
            and subprocess.run([runtime, "-c", ""], capture_output=True, check=False).returncode
            == 0
        )
        if not usable:
            print(
                f"skipped: no working python{wanted[0]}.{wanted[1]} on PATH (the Lambda runtime's)"
            )
            return 0
        os.execv(str(runtime), [str(runtime), __file__, *sys.argv[1:]])
    source = args.layer or next(
        (
            p
            for p in (
                ROOT / ".aws-sam/build/ToolcallLayer/python",
                ROOT / "build/layer-py312/python",
            )
            if p.is_dir()
        ),
        None,
    )
    if source is None:
        print(
            "skipped: no built layer (make build, or pip install --target build/layer-py312/python)"
        )
        return 0
    with tempfile.TemporaryDirectory(prefix="tc300-cold-") as tmp:
        layer = layer_copy(source, Path(tmp))
        rows = []
        floor_plain = median_of(args.repeat, layer, None, FLOOR)
        plain = {f.name: median_of(args.repeat, layer, f, "import app") for f in functions()}
        assert compile_layer.main([str(layer)]) == 0
        floor_compiled = median_of(args.repeat, layer, None, FLOOR)
        for f in functions():
            compiled = median_of(args.repeat, layer, f, "import app")
            rows.append((f.name, plain[f.name], compiled))
    print(
        f"cold import, median of {args.repeat} fresh interpreters ({sys.executable}, {os.cpu_count()} cores)"
    )
    print(f"{'handler':16} {'no .pyc':>9} {'with .pyc':>10} {'speed-up':>9} {'vs floor':>9}")
    for name, plain_s, compiled_s in rows:
        print(
            f"{name:16} {plain_s:8.2f}s {compiled_s:9.2f}s {plain_s / compiled_s:8.1f}x {compiled_s / floor_compiled:8.2f}x"
        )
    print(
        f"{'floor (Powertools + boto3)':27} {floor_plain:.2f}s -> {floor_compiled:.2f}s with .pyc"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
