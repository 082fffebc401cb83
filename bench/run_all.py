"""Run every benchmark under bench/ in turn, each in its own interpreter, and echo its figures.

`make bench` calls this. Each bench script prints its own medians and ratios against a peer
measured in the same run; this runner adds nothing but the order and a header per script.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(
            f"\n=== {script.name}  ({sys.executable} {script.relative_to(HERE.parent)})", flush=True
        )
        if subprocess.run([sys.executable, str(script)], cwd=HERE.parent, check=False).returncode:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
