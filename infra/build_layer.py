"""Build the shared Lambda layer as ``sam build`` does, and import every handler from it alone.

``sam build`` (BuildMethod ``python3.12``, BuildArchitecture ``arm64``) installs the layer's
``requirements.txt`` from binary wheels for the template's platform (``manylinux2014_aarch64``
for arm64, CPython of the runtime's version) and copies the ``toolcall300`` package beside
them under ``python/``, which Lambda puts on ``sys.path`` as ``/opt/python``. A dependency the
requirements forget is only found on AWS, when a handler imports it: ``cryptography`` once
was, and every paid ``POST /check`` would have failed. So CI does two things here
(``tests/integration/test_layer.py``):

- ``resolve``: pip resolves the requirements for the template's platform, binary wheels only
  (``--dry-run``: nothing is installed; a package with no arm64 wheel fails here).
- ``build`` + ``import_check``: the same install for this machine's platform, then each
  function's ``app`` module and every module of the package the functions may import lazily
  (all but the one-machine edition, ``toolcall300.service.local``) are imported by an
  interpreter started with ``-I -S`` (no site-packages, no user site, no PYTHON* variables)
  whose path is the function's code folder, the layer and the standard library: what
  Lambda gives it.

    python infra/build_layer.py [--out build/layer-native]   # build for here, then import-check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER_SOURCE = ROOT / "layers" / "toolcall300"
REQUIREMENTS = LAYER_SOURCE / "requirements.txt"
PACKAGE = "toolcall300"

#: The pip platform tag ``sam build`` installs wheels for, per Lambda architecture.
PIP_PLATFORMS = {"arm64": "manylinux2014_aarch64", "x86_64": "manylinux2014_x86_64"}
#: Modules that are not part of what Lambda runs: the one-machine edition (gateway, worker, YAML).
NOT_ON_LAMBDA = ("toolcall300.service.local",)


@dataclass(frozen=True)
class Target:
    """What a layer is built for: a Lambda architecture and a CPython version."""

    architecture: str  # arm64 or x86_64
    python: tuple[int, int]

    @property
    def pip_args(self) -> list[str]:
        version = f"{self.python[0]}.{self.python[1]}"
        return [
            "--platform", PIP_PLATFORMS[self.architecture], "--implementation", "cp",
            "--python-version", version, "--only-binary=:all:",
        ]  # fmt: skip


def template_target(template: Path = ROOT / "template.yaml") -> Target:
    """The layer's BuildArchitecture and the Globals runtime, read from the template's text."""
    text = template.read_text()
    runtime = re.search(r"^\s+Runtime:\s*python(\d+)\.(\d+)", text, flags=re.M)
    arch = re.search(r"^\s+BuildArchitecture:\s*(\w+)", text, flags=re.M)
    if not runtime or not arch:
        raise SystemExit("template.yaml names no python runtime or layer BuildArchitecture")
    return Target(arch.group(1), (int(runtime.group(1)), int(runtime.group(2))))


def machine_architecture() -> str:
    machine = platform.machine().lower()
    return "arm64" if machine in ("aarch64", "arm64") else "x86_64"


def _pip(python: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""}
    return subprocess.run(
        [python, "-m", "pip", *args], capture_output=True, text=True, env=env, check=False
    )


def _key(target: Target) -> str:
    """The requirements and the target: what a built or resolved layer depends on."""
    return hashlib.sha256(REQUIREMENTS.read_bytes() + repr(target).encode()).hexdigest()[:16]


def resolve(
    target: Target, *, python: str = sys.executable, out: Path = ROOT / "build"
) -> list[str]:
    """The distributions pip picks for ``target`` (binary wheels only), or SystemExit saying
    what pip said. Nothing is installed (``--dry-run``); a resolution is kept in ``out`` while
    the requirements are unchanged."""
    kept = out / f"layer-resolved-{_key(target)}.json"
    if kept.exists():
        return list(json.loads(kept.read_text()))
    proc = _pip(
        python,
        [
            "install", "--dry-run", "--quiet", "--report", "-", "--ignore-installed",
            "--target", str(out / "layer-resolve"), *target.pip_args,
            "-r", str(REQUIREMENTS),
        ],
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"pip cannot resolve the layer for {target}:\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout)
    names = sorted(item["metadata"]["name"].lower() for item in report["install"])
    out.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(names))
    return names


def build(target: Target, out: Path, *, python: str = sys.executable) -> Path:
    """The layer's ``python/`` folder for ``target``: its dependencies, installed once while
    the requirements and the target are unchanged (the folder is named by their hash), with
    the package copied in fresh every time."""
    layer = out / f"python-{_key(target)}"
    if not (layer / ".complete").exists():
        shutil.rmtree(layer, ignore_errors=True)
        proc = _pip(
            python,
            ["install", "--quiet", "--no-compile", "--target", str(layer), *target.pip_args,
             "-r", str(REQUIREMENTS)],
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"pip install for {target} failed:\n{proc.stderr[-3000:]}")
        (layer / ".complete").touch()
    shutil.rmtree(layer / PACKAGE, ignore_errors=True)
    shutil.copytree(
        LAYER_SOURCE / PACKAGE, layer / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
    )
    return layer


def layer_modules(layer: Path) -> list[str]:
    """Every module of the package in ``layer`` that Lambda may import (not the local edition)."""
    found = []
    for path in sorted((layer / PACKAGE).rglob("*.py")):
        parts = path.relative_to(layer).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name == f"{PACKAGE}.__main__" or name.startswith(NOT_ON_LAMBDA):
            continue
        found.append(name)
    return found


_IMPORT_ALL = """
import importlib, importlib.util, sys, traceback
layer, apps, modules = sys.argv[1], sys.argv[2].split(",") if sys.argv[2] else [], sys.argv[3].split(",") if sys.argv[3] else []
sys.path.insert(0, layer)
failed = []
for name in modules:
    try:
        importlib.import_module(name)
    except BaseException:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
for path in apps:  # each function's app.py, by its file (Lambda: /var/task/app.py)
    try:
        spec = importlib.util.spec_from_file_location("app_" + str(len(failed)), path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except BaseException:
        failed.append(path + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def import_check(layer: Path, apps: list[Path], modules: list[str], *, python: str) -> list[str]:
    """Import ``modules`` and each handler file in ``apps`` as Lambda would: ``python -I -S``
    (no site-packages, no user site, no PYTHON* variables), its path the layer and the
    standard library; a handler imports nothing from its own folder but itself. One process
    for all of them (a handler's imports are a subset of the package's). The failures."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "toolcall300",
        "POWERTOOLS_METRICS_NAMESPACE": "TOOLCALL300",
    }
    proc = subprocess.run(
        [python, "-I", "-S", "-c", _IMPORT_ALL, str(layer), ",".join(map(str, apps)),
         ",".join(modules)],
        capture_output=True,
        text=True,
        env=env,
        cwd=layer,
        check=False,
    )  # fmt: skip
    if proc.returncode == 0:
        return []
    return [line for line in proc.stdout.splitlines() if line] or [proc.stderr[-2000:]]


def handler_files(functions: Path = ROOT / "functions") -> list[Path]:
    """Every function's handler module (the template's ``Handler: app.handler``)."""
    return sorted(functions.glob("*/app.py"))


def interpreter(version: tuple[int, int]) -> str | None:
    """A CPython of ``version`` on this machine (the runtime's), or None."""
    name = f"python{version[0]}.{version[1]}"
    candidates = [shutil.which(name), *sorted(Path.home().glob(f".pyenv/versions/*/bin/{name}"))]
    for exe in filter(None, candidates):
        probe = subprocess.run(
            [str(exe), "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.split() == [str(v) for v in version]:
            return str(exe)
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "layer")
    args = parser.parse_args(argv)
    wanted = template_target()
    python = interpreter(wanted.python) or sys.executable
    version = tuple(int(v) for v in subprocess.check_output(
        [python, "-c", "import sys; print(*sys.version_info[:2])"], text=True
    ).split())  # fmt: skip
    print(f"resolving for {wanted}: {', '.join(resolve(wanted))}")
    here = Target(machine_architecture(), (version[0], version[1]))
    layer = build(here, args.out)
    failures = import_check(layer, handler_files(), layer_modules(layer), python=python)
    print("\n".join(failures) or f"every handler imports from the layer built for {here}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
