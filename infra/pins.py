"""Every dependency the project installs, pinned: what ``make`` and ``.ci/run`` install from.

A fresh clone once went red with no change in the repository: moto 5.2.6 reached the index and
``pip install -e '.[dev]'`` took it. Since then nothing is installed by range alone:

========================================  ==================================================
``constraints.txt``                        ``.venv`` (``make venv``): the package's extras
                                           ``[dev]`` (service, local, tests, lint), pip and
                                           setuptools (``PIP_CONSTRAINT`` also pins the
                                           editable build's own environment)
``infra/sam-constraints.txt``              ``.sam-venv`` (``make sam-venv``): the SAM CLI
``peers/constraints.txt``                  ``peers/.venv`` (``make peers``): the peer libraries
``peers/node/package-lock.json``           ``npm ci`` in ``peers/node`` (``make peers``)
``layers/toolcall300/requirements.txt``    the Lambda layer (``sam build``): exact versions,
                                           resolved for the template's platform
========================================  ==================================================

Updating is done on purpose, in a commit of its own, after the full test run:

    python3 infra/pins.py update     # fresh environments with no pins, newest versions, written back
    make clean test                  # the whole suite on what was written
    git commit -m "pins: ..." constraints.txt infra/sam-constraints.txt peers/ layers/toolcall300/requirements.txt

``python3 infra/pins.py check`` (also a test, ``tests/core/test_pins.py``) fails when a
dependency the project names has no exact pin. Standard library only: it runs before any
environment exists.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
SAM_CONSTRAINTS = ROOT / "infra" / "sam-constraints.txt"
PEERS_CONSTRAINTS = ROOT / "peers" / "constraints.txt"
PEERS_REQUIREMENTS = ROOT / "peers" / "requirements.txt"
NODE_DIR = ROOT / "peers" / "node"
LAYER_REQUIREMENTS = ROOT / "layers" / "toolcall300" / "requirements.txt"

#: What the SAM CLI environment installs (its own venv: it pins boto3, click and cfn-lint
#: versions that clash with the app's).
SAM_REQUIREMENTS = ["aws-sam-cli"]
#: What installs the installers: pinned too, so a new pip cannot change how the rest resolves.
TOOLING = ["pip", "setuptools"]
#: The layer's direct requirements, before resolution (the layer is built for Lambda's platform).
LAYER_DIRECT = [
    "boto3",
    "aws-lambda-powertools[tracer]",
    "pydantic",
    "pydantic-settings",
    "stripe",
    "cryptography",
]

#: Versions held back on purpose, with the reason: ``update`` writes these instead of the
#: newest. Remove a line once the reason is gone (and say so in the pins commit).
HELD = {
    "moto": (
        "5.2.5",
        "5.2.6 authorises S3 by operation name (docs/runs-contract.md); the IAM tier passes on "
        "it too, its minimal case as a strict xfail, but 5.2.5 is where CI was last green",
    ),
}

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    """PEP 503 normalised name: ``Foo_Bar.baz`` and ``foo-bar-baz`` are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(lines: list[str]) -> set[str]:
    """Project names in requirement strings (extras, markers and versions ignored)."""
    names = set()
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        found = _NAME.match(line)
        if found:
            names.add(canonical(found.group(1)))
    return names


def pins(path: Path) -> dict[str, str]:
    """``name == version`` lines of a constraints or requirements file, by canonical name."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ValueError(f"{path.name}: {line!r} is not an exact pin (name==version)")
        name = name.split("[", 1)[0].strip()
        found[canonical(name)] = version.split(";", 1)[0].strip()
    return found


def dev_requirements() -> set[str]:
    """Every project the package's extras name (the dev extra pulls in all the others)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names: set[str] = set()
    for extra in project.get("optional-dependencies", {}).values():
        names |= requirement_names([r for r in extra if not r.startswith("toolcall300")])
    return names


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def problems() -> list[str]:
    """What is installed somewhere without an exact pin; empty when every install is pinned."""
    out: list[str] = []
    wanted = [
        (CONSTRAINTS, dev_requirements() | set(TOOLING)),
        (SAM_CONSTRAINTS, {canonical(n) for n in SAM_REQUIREMENTS} | set(TOOLING)),
        (
            PEERS_CONSTRAINTS,
            requirement_names(PEERS_REQUIREMENTS.read_text().splitlines()) | set(TOOLING),
        ),
        (LAYER_REQUIREMENTS, requirement_names(LAYER_DIRECT)),
    ]
    for path, names in wanted:
        if not path.exists():
            out.append(f"{_shown(path)} is missing (python3 infra/pins.py update)")
            continue
        try:
            pinned = pins(path)
        except ValueError as exc:
            out.append(str(exc))
            continue
        out += [
            f"{_shown(path)} has no exact pin for {name}" for name in sorted(names - set(pinned))
        ]
    lock = NODE_DIR / "package-lock.json"
    if not lock.exists():
        out.append("peers/node/package-lock.json is missing (npm install --package-lock-only)")
    else:
        declared = json.loads((NODE_DIR / "package.json").read_text()).get("dependencies", {})
        locked = json.loads(lock.read_text()).get("packages", {})
        out += [
            f"peers/node/package-lock.json does not lock {name}"
            for name in sorted(declared)
            if f"node_modules/{name}" not in locked
        ]
    return out


# --------------------------------------------------------------------------- update


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    import os

    env = {**os.environ, **env, "PYTHONPATH": ""}
    env.pop("PIP_CONSTRAINT", None)
    return subprocess.run(args, check=True, text=True, capture_output=True, env=env, **kwargs)  # type: ignore[call-overload, no-any-return]


def _fresh_freeze(python: str, install: list[str], where: Path) -> list[str]:
    """``pip freeze`` of a new venv after installing ``install`` with no pins at all."""
    venv = where / "venv"
    _run([python, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    _run([*pip, "install", "-q", "--upgrade", *TOOLING])
    _run([*pip, "install", "-q", *install], cwd=ROOT)
    frozen = _run([*pip, "freeze", "--all", "--exclude-editable"]).stdout.splitlines()
    shutil.rmtree(venv)
    return sorted(
        (line for line in frozen if "==" in line and not line.startswith("toolcall300")),
        key=lambda s: canonical(s.split("==")[0]),
    )


def _held(line: str) -> str:
    name = canonical(line.split("==")[0])
    return f"{line.split('==')[0]}=={HELD[name][0]}" if name in HELD else line


def _write(path: Path, header: str, lines: list[str]) -> None:
    body = "".join(f"# {h}\n" if h else "#\n" for h in header.splitlines()) + "\n".join(lines)
    path.write_text(body + "\n")
    print(f"wrote {path.relative_to(ROOT)}: {len(lines)} pins")


HEADER = """Exact versions of everything {what} installs; written by `python3 infra/pins.py update`.
Update on purpose, in a commit of its own, after the full test run (README: Running the tests)."""


def update(python: str) -> None:
    """Newest versions in fresh environments, written back to every pin file."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dev = [_held(line) for line in _fresh_freeze(python, ["-e", ".[dev]"], work)]
        held = "".join(f"\n{n}=={v} is held: {why}." for n, (v, why) in sorted(HELD.items()))
        _write(CONSTRAINTS, HEADER.format(what="`make venv` (.venv)") + held, dev)
        sam = _fresh_freeze(python, SAM_REQUIREMENTS, work)
        _write(SAM_CONSTRAINTS, HEADER.format(what="`make sam-venv` (.sam-venv)"), sam)
        peers = _fresh_freeze(python, ["-e", ".", "-r", str(PEERS_REQUIREMENTS)], work)
        _write(PEERS_CONSTRAINTS, HEADER.format(what="`make peers` (peers/.venv)"), peers)
    update_layer(python)
    (NODE_DIR / "package-lock.json").unlink(missing_ok=True)
    _run(["npm", "install", "--package-lock-only", "--no-audit", "--no-fund"], cwd=NODE_DIR)
    print("wrote peers/node/package-lock.json")


def update_layer(python: str) -> None:
    """The layer's requirements, every distribution pinned as pip resolves them for the
    template's platform under ``constraints.txt`` (so the layer and the tests agree)."""
    sys.path.insert(0, str(ROOT / "infra"))
    import build_layer

    target = build_layer.template_target()
    with tempfile.TemporaryDirectory() as tmp:
        direct = Path(tmp) / "direct.txt"
        direct.write_text("\n".join(LAYER_DIRECT) + "\n")
        proc = _run(
            [python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
             "--ignore-installed", "--target", str(Path(tmp) / "t"), *target.pip_args,
             "-c", str(CONSTRAINTS), "-r", str(direct)]
        )  # fmt: skip
    report = json.loads(proc.stdout)
    resolved = sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}" for item in report["install"]
    )
    by_name = {canonical(r.split("==")[0]): r for r in resolved}
    header = (
        "What the shared layer installs for the functions (sam build), every distribution pinned\n"
        f"as pip resolves it for {target} under constraints.txt; written by\n"
        "`python3 infra/pins.py update`. The toolcall300 package itself is the directory beside\n"
        "this file; boto3 is provided by the Lambda runtime but pinned here so the layer and the\n"
        "tests agree; cryptography signs the argument-check reports (service/sdk/signing.py)."
    )
    _write(LAYER_REQUIREMENTS, header, [by_name[k] for k in sorted(by_name)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["check", "update"])
    parser.add_argument("--python", default=sys.executable, help="the interpreter to build with")
    args = parser.parse_args(argv)
    if args.action == "update":
        update(args.python)
    found = problems()
    for line in found:
        print(f"pins: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
