"""Build the free kit: the standard-library-only suite, the public sample and the demo catalog.

The kit is what the suite's README promises: ``python3 score.py ...``, ``python3 generate.py ...``
and ``python3 toolshim.py`` from an unpacked folder with nothing installed (``-I`` included:
each entry script puts its own folder on ``sys.path``, since isolated mode will not). It
is the package minus ``toolcall300/service`` (everything outside ``service/`` is standard
library only, a rule ``tests/core/test_import_rules.py`` checks) and never contains anything
from ``corpus_private/`` except the 30-case public sample.

    python3 infra/build_kit.py --out dist/toolcall300-kit [--zip]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "layers" / "toolcall300" / "toolcall300"

ENTRY = '''"""TOOLCALL-300 free kit (CC0): `python3 {name}.py --help`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolcall300.cli import main  # noqa: E402

main(["{command}", *sys.argv[1:]])
'''

ENTRIES = {"score": "score", "generate": "generate", "toolshim": "toolshim", "check": "check"}

KIT_README = """# TOOLCALL-300 free kit (CC0 1.0)

Nothing to install: Python 3.11 or newer, standard library only.

    python3 score.py --corpus sample30.jsonl --adapter yourmodule:normalise
    python3 score.py --corpus sample30.jsonl --adapter naive      # control C1: parse and pass on
    python3 score.py --corpus sample30.jsonl --adapter integrator # control C2: what an SDK's docs get
    python3 score.py --corpus sample30.jsonl --adapter toolshim:normalise  # the reference (in-sample)
    python3 score.py --corpus sample30.jsonl --adapter naive --adapter yourmodule:normalise  # side by side
    python3 score.py --corpus parallel-sample24.jsonl --adapter toolshim  # several calls a turn (parallel track)
    python3 score.py --corpus deltas-sample.jsonl --adapter toolshim  # one call streamed in pieces (deltas track)
    python3 score.py --spec                                       # the grading contract
    python3 score.py --selftest                                   # the grader's own checks
    python3 generate.py --out my-corpus --tools demo_tools.json  # a corpus for your own tools
    python3 check.py --selftest                                   # tool-argument/v1 vectors

`python3 -m toolcall300 COMMAND ...` works too from this folder.

`toolshim` (python3 toolshim.py) is the reference normaliser. It and the corpus were written by
the same team from the same rulebook: its score on these cases is in-sample and proves little.

Everything in this folder is CC0 1.0 Universal: `LICENSE` is its legal code. The other 270
cases, their per-case rationale and the inputs they were generated from are licensed per
purchase (`LICENSE-COMMERCIAL.txt`, delivered with them by `toolcall300 download`), as are the
parallel track's other 276 turns and their rationale, and the deltas track's other 589 streamed calls
and their rationale.
"""


def _not_in_kit(folder: str, names: list[str]) -> set[str]:
    """``shutil.copytree`` filter: the service package and bytecode stay out of the kit."""
    here = Path(folder).resolve()
    return {
        n
        for n in names
        if n == "__pycache__" or n.endswith(".pyc") or (here == PACKAGE and n == "service")
    }


def build(out: Path) -> Path:
    """Write the kit folder at ``out`` (replacing it) and return it."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(PACKAGE, out / "toolcall300", ignore=_not_in_kit)
    for name, command in ENTRIES.items():
        (out / f"{name}.py").write_text(ENTRY.format(name=name, command=command), encoding="utf-8")
    for public in (
        "sample30.jsonl",
        "parallel-sample24.jsonl",
        "deltas-sample.jsonl",
        "demo_tools.json",
        "demo_pools.json",
    ):
        if (PACKAGE / "data" / public).exists():
            shutil.copy2(PACKAGE / "data" / public, out / public)
    (out / "README.md").write_text(KIT_README, encoding="utf-8")
    shutil.copy2(ROOT / "LICENSE", out / "LICENSE")  # the CC0 1.0 legal code, verbatim
    return out


def zip_kit(folder: Path) -> Path:
    """Zip the kit folder deterministically (sorted names, fixed timestamps)."""
    target = folder.with_suffix(".zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(
                str(Path(folder.name) / path.relative_to(folder)), (1980, 1, 1, 0, 0, 0)
            )
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "toolcall300-kit")
    parser.add_argument("--zip", action="store_true", help="also write OUT.zip")
    args = parser.parse_args(argv)
    folder = build(args.out)
    print(folder)
    if args.zip:
        print(zip_kit(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
