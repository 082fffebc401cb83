"""The licence texts the repository ships (README, "Licence"): CC0 1.0 for the free parts, the
commercial licence pinned in the private corpus's manifest so it travels with the files it
governs (``upload_corpus`` and ``download`` carry whatever the manifest pins)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

from toolcall300.cli import dispatch

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = ROOT / "corpus_private"
COMMERCIAL = "LICENSE-COMMERCIAL.txt"

#: sha256 of the CC0 1.0 Universal legal code as Debian's base-files ships it
#: (/usr/share/common-licenses/CC0-1.0), the text LICENSE holds verbatim.
CC0_SHA256 = "a2010f343487d3f7618affe54f789f5487602331c0a8d03f49e9a7c547cf0499"


def generate(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["generate", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_root_licence_is_the_cc0_legal_code_verbatim() -> None:
    text = (ROOT / "LICENSE").read_bytes()
    assert text.startswith(b"Creative Commons Legal Code\n\nCC0 1.0 Universal\n")
    for section in (
        b"Statement of Purpose",
        b"1. Copyright and Related Rights.",
        b"2. Waiver.",
        b"3. Public License Fallback.",
        b"4. Limitations and Disclaimers.",
    ):
        assert section in text
    assert hashlib.sha256(text).hexdigest() == CC0_SHA256


def test_the_private_manifest_pins_the_commercial_licence() -> None:
    manifest = json.loads((PRIVATE / "manifest.json").read_text(encoding="utf-8"))
    data = (PRIVATE / COMMERCIAL).read_bytes()
    assert manifest["files"][COMMERCIAL]["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["files"][COMMERCIAL]["bytes"] == len(data)
    assert b"Licensed per purchase" in data


def test_the_rebuild_writes_the_licence_the_recipe_names(tmp_path: Path) -> None:
    code, _, err = generate("--rebuild", str(PRIVATE), "--out", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / COMMERCIAL).read_bytes() == (PRIVATE / COMMERCIAL).read_bytes()
    assert (tmp_path / "manifest.json").read_bytes() == (PRIVATE / "manifest.json").read_bytes()


def test_check_only_names_an_edited_or_missing_licence(tmp_path: Path) -> None:
    shutil.copytree(PRIVATE, tmp_path / "c")
    with (tmp_path / "c" / COMMERCIAL).open("a", encoding="utf-8") as fh:
        fh.write("Redistribution is permitted.\n")
    code, _, err = generate("--check-only", "--out", str(tmp_path / "c"))
    assert code == 1
    assert f"FAIL manifest_pins: {COMMERCIAL} sha256 does not match its pin" in err
    (tmp_path / "c" / COMMERCIAL).unlink()
    code, _, err = generate("--check-only", "--out", str(tmp_path / "c"))
    assert code == 1 and f"FAIL manifest_pins: {COMMERCIAL} is pinned but missing" in err
