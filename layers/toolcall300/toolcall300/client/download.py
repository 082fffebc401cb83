"""``toolcall300 download --api URL --out DIR``: fetch the licensed corpus and verify every pin.

The key comes from ``TOOLCALL300_LICENCE`` or a hidden prompt (never a flag: flags land in
shell history). Each file is streamed to a temporary file while its sha256 is computed, with a
progress bar on stderr; a file whose hash (or size) does not match the pin from ``GET /corpus``
is deleted and the command fails; only a matching file is moved into place. Standard library
only.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from toolcall300.client.http import TIMEOUT_S, ApiError, check_transport, request_json
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser

CHUNK = 64 * 1024


class PinMismatch(Exception):
    """A downloaded file does not match its sha256 (or size) pin."""


def read_key(
    env: dict[str, str], prompt: Any = getpass.getpass, interactive: bool | None = None
) -> str:
    """The licence key: ``TOOLCALL300_LICENCE``, else asked for without echo on a terminal.

    With no terminal (CI, a pipe) there is no one to ask: a ValueError says which variable to
    set, instead of the prompt's EOFError.
    """
    key = env.get("TOOLCALL300_LICENCE", "").strip()
    if key:
        return key
    if interactive is None:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    missing = "set TOOLCALL300_LICENCE to your licence key"
    if not interactive:
        raise ValueError(f"no licence key: {missing} (there is no terminal to ask on)")
    try:
        key = str(prompt("TOOLCALL-300 licence key: ")).strip()
    except EOFError:
        raise ValueError(f"no licence key: {missing}") from None
    if not key:
        raise ValueError(f"no licence key given: {missing}, or type it at the prompt")
    return key


def progress_line(name: str, done: int, total: int | None, width: int = 30) -> str:
    """``name [#####.....]  42%  1.2 MB`` (no bar when the size is unknown)."""
    mb = f"{done / 1e6:.1f} MB"
    if not total:
        return f"\r{name} {mb}"
    frac = min(1.0, done / total)
    bar = "#" * int(frac * width) + "." * (width - int(frac * width))
    return f"\r{name} [{bar}] {frac:4.0%} {mb}"


def fetch_verified(
    url: str, dest: Path, *, sha256: str, size: int | None, name: str, progress: TextIO
) -> None:
    """Download ``url`` to ``dest`` only if its sha256 (and size) match the pins."""
    digest = hashlib.sha256()
    done = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            total = size or int(resp.headers.get("Content-Length") or 0) or None
            while chunk := resp.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
                done += len(chunk)
                progress.write(progress_line(name, done, total))
        progress.write("\n")
        if digest.hexdigest() != sha256 or (size is not None and done != size):
            raise PinMismatch(
                f"{name}: sha256 {digest.hexdigest()[:16]}... does not match the pin {sha256[:16]}..."
            )
        tmp.chmod(0o644)  # mkstemp makes it private; the corpus is an ordinary data file
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def download(api: str, key: str, out: Path, progress: TextIO) -> dict[str, Any]:
    """Fetch ``GET /corpus`` and every file it lists; returns the corpus description."""
    check_transport(api)
    _, _, corpus = request_json("GET", f"{api}/corpus", headers={"Authorization": f"Bearer {key}"})
    out.mkdir(parents=True, exist_ok=True)
    for f in corpus["files"]:
        name = Path(str(f["name"])).name  # never a path from the server
        fetch_verified(
            f["url"],
            out / name,
            sha256=f["sha256"],
            size=f.get("bytes"),
            name=name,
            progress=progress,
        )
    return dict(corpus)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(
        prog="toolcall300 download", description="Download the licensed corpus and verify its pins."
    )
    parser.add_argument("--api", required=True, help="the service's base URL")
    parser.add_argument("--out", type=Path, required=True, help="directory to write the files to")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    try:
        key = read_key(dict(os.environ))
        corpus = download(args.api.rstrip("/"), key, args.out, stderr)
    except (ApiError, PinMismatch, ValueError, OSError, KeyError) as exc:
        stderr.write(f"toolcall300 download: {exc}\n")
        return EXIT_ERROR
    for f in corpus["files"]:
        stdout.write(f"{f['sha256']}  {args.out / Path(f['name']).name}\n")
    stdout.write(f"corpus {corpus['version']}: {len(corpus['files'])} files verified\n")
    return EXIT_OK
