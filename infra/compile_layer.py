"""Compile the built layer's Python files to bytecode for the Lambda runtime's Python.

``sam build`` copies the layer without ``.pyc`` files (and this machine sets
``PYTHONDONTWRITEBYTECODE``), and the Lambda filesystem is read-only, so without them every
cold start compiles every module it imports (``bench/bench_cold_imports.py`` measures both).
The bytecode must be the runtime's own (``Globals.Function.Runtime`` in ``template.yaml``), so
this refuses to run under another Python. ``unchecked-hash`` pycs are used without comparing
source timestamps, which a layer's zip does not keep exactly; a published layer never changes.

    python3.12 infra/compile_layer.py [.aws-sam/build/ToolcallLayer/python]
"""

from __future__ import annotations

import compileall
import py_compile
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / ".aws-sam" / "build" / "ToolcallLayer" / "python"


def runtime_version(template: Path = ROOT / "template.yaml") -> tuple[int, int]:
    """The ``pythonX.Y`` the template's Globals name, as (X, Y)."""
    found = re.search(r"^\s+Runtime:\s*python(\d+)\.(\d+)", template.read_text(), flags=re.M)
    if not found:
        raise SystemExit("template.yaml names no python runtime")
    return int(found.group(1)), int(found.group(2))


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else DEFAULT
    wanted = runtime_version()
    if sys.version_info[:2] != wanted:
        have = ".".join(map(str, sys.version_info[:2]))
        print(f"compile_layer: run with python{wanted[0]}.{wanted[1]}, not {have}", file=sys.stderr)
        return 2
    if not target.is_dir():
        print(f"compile_layer: no built layer at {target} (run sam build first)", file=sys.stderr)
        return 2
    ok = compileall.compile_dir(
        str(target),
        quiet=1,
        workers=0,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
