"""``toolcall300 download --api URL --out DIR``: fetch the licensed corpus and verify every pin.

The key comes from ``TOOLCALL300_LICENCE`` or a hidden prompt (never a flag: flags land in
shell history). ``GET /corpus`` lists the manifest (pinned by its sha256), the files it pins
and the generator's recorded inputs (``inputs/``); the manifest is fetched and checked first,
then every file and input is held to the manifest's own pin (and its size), so the folder is
what ``generate --check-only`` and ``--rebuild`` need (README, "The generator and the corpus").
Each file is streamed to a temporary file while its sha256 is computed, with a progress bar (a
terminal only; a log gets one line per file) on
stderr; a mismatch deletes it and fails the command; only a matching file is moved into place.
The licensed corpus is private to its buyer: the folders are 0700 and the files 0600. Standard
library only.
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

from toolcall300.canonical import loads_strict
from toolcall300.client.http import TIMEOUT_S, ApiError, check_key, check_transport, request_json
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser

CHUNK = 64 * 1024
MANIFEST = "manifest.json"
RECIPE = "inputs/recipe.json"


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
        return check_key(key)
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
    return check_key(key)


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
    isatty = getattr(progress, "isatty", None)
    live = bool(isatty and isatty())  # a bar redrawn in place on a terminal; one line in a log
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            total = size or int(resp.headers.get("Content-Length") or 0) or None
            while chunk := resp.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
                done += len(chunk)
                if live:
                    progress.write(progress_line(name, done, total))
        progress.write("\n" if live else progress_line(name, done, total).lstrip("\r") + "\n")
        if digest.hexdigest() != sha256 or (size is not None and done != size):
            raise PinMismatch(
                f"{name}: sha256 {digest.hexdigest()[:16]}... does not match the pin {sha256[:16]}..."
            )
        tmp.chmod(0o600)  # the licensed corpus is its buyer's alone (mkstemp's mode, said)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def private_folder(path: Path) -> Path:
    """``path``, created if missing, readable by its owner only (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def manifest_pins(manifest: dict[str, Any]) -> dict[str, str]:
    """name -> sha256 for every file and generator input a manifest pins (the inputs named
    as they lie beside the corpus: ``inputs/tools.json``)."""
    files = manifest.get("files") or {}
    entries = files.items() if isinstance(files, dict) else ((f["name"], f) for f in files)
    pins = {str(name): str(meta["sha256"]) for name, meta in entries}
    for field in ("catalog", "pools"):
        pin = manifest.get(field)
        if isinstance(pin, dict) and "name" in pin:
            pins[f"inputs/{Path(str(pin['name'])).name}"] = str(pin["sha256"])
    return pins


def download(api: str, key: str, out: Path, progress: TextIO) -> dict[str, Any]:
    """Fetch ``GET /corpus``, the manifest it pins, then every file and input the manifest
    pins, each held to the manifest's own pin; returns the corpus description."""
    check_transport(api)
    _, _, corpus = request_json("GET", f"{api}/corpus", headers={"Authorization": f"Bearer {key}"})
    private_folder(out)
    listed = corpus.get("manifest")
    if not isinstance(listed, dict):
        raise PinMismatch("the service lists no manifest.json: it cannot be checked or rebuilt")
    fetch_verified(
        listed["url"],
        out / MANIFEST,
        sha256=listed["sha256"],
        size=listed.get("bytes"),
        name=MANIFEST,
        progress=progress,
    )
    manifest = loads_strict((out / MANIFEST).read_bytes())
    pins = manifest_pins(manifest)
    listed_inputs: list[dict[str, Any]] = list(corpus.get("inputs") or [])
    recipe_pin = next((f for f in listed_inputs if f["name"] == RECIPE), None)
    for f in [*corpus["files"], *listed_inputs]:
        parts = Path(str(f["name"])).parts  # a plain name, or inputs/<name>: never a path
        inside = parts[0] == "inputs" and len(parts) == 2
        name = f"inputs/{parts[-1]}" if inside else parts[-1]
        pin = pins.get(name)
        if pin is None and name == RECIPE:  # the manifest cannot pin it: the listing does
            pin = str(f["sha256"])
        if pin is None:
            raise PinMismatch(f"{name}: the manifest pins no such file")
        folder = private_folder(out / "inputs") if inside else out
        fetch_verified(
            f["url"],
            folder / parts[-1],
            sha256=pin,
            size=f.get("bytes"),
            name=name,
            progress=progress,
        )
    if recipe_pin is not None:
        recipe = loads_strict((out / RECIPE).read_bytes())
        if recipe.get("seed") != manifest.get("seed"):
            raise PinMismatch(f"{RECIPE}: its seed is not the manifest's")
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
    listed = [corpus["manifest"], *corpus["files"], *(corpus.get("inputs") or [])]
    for f in listed:
        stdout.write(f"{f['sha256']}  {args.out / f['name']}\n")
    stdout.write(
        f"corpus {corpus['version']}: {len(listed)} files verified (folder 0700, files 0600)\n"
    )
    if corpus.get("inputs"):
        stdout.write(
            f"check every pin:    toolcall300 generate --check-only --out {args.out}\n"
            f"rebuild it exactly: toolcall300 generate --rebuild {args.out} --out REBUILT\n"
        )
    return EXIT_OK
