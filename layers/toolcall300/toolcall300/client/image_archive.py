"""The adapter image as ``toolcall300 ci --adapter-image`` sends it to a local stack.

A team's image is the harness image plus its own layers. The stack holds the harness image
(``TOOLCALL300_HARNESS_IMAGE``), so, as a registry push skips the layers a registry has, the
layers of ``--base-image`` (the harness image archive the team built FROM) are left out of
what is sent: an OCI layout's layer blobs by digest, a ``docker save`` archive's layer files
by their uncompressed digest (the base's ``diff_ids``). What remains is packed as a gzip tar
(sorted, no owners or times: the same image gives the same bytes and idempotency key). The
stack checks everything again (``jobs.adapter_image``, which this package may not import);
this only reads what the team built.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from typing import Any

from toolcall300.canonical import loads_strict

#: What ``POST /runs`` takes (docs/runs-contract.md), as for ``adapter_files``.
MAX_ARCHIVE_BYTES = 6 * 1024 * 1024


class ImageArchiveError(ValueError):
    """The image cannot be sent; the message says why and what to do."""


def _files(path: str) -> dict[str, bytes]:
    """The layout's or archive's regular files by name (``./`` dropped)."""
    files: dict[str, bytes] = {}
    if os.path.isdir(path):
        for folder, _dirs, names in os.walk(path):
            for name in names:
                full = os.path.join(folder, name)
                if os.path.isfile(full) and not os.path.islink(full):
                    with open(full, "rb") as handle:
                        files[os.path.relpath(full, path).replace(os.sep, "/")] = handle.read()
        return files
    try:
        with tarfile.open(path, mode="r:*") as tar:
            for member in tar:
                read = tar.extractfile(member) if member.isfile() else None
                if read is not None:
                    files[os.path.normpath(member.name)] = read.read()
    except (tarfile.TarError, EOFError) as exc:
        raise ImageArchiveError(f"{path} is not an OCI layout or image archive: {exc}") from exc
    return files


def _json(files: dict[str, bytes], name: str) -> Any:
    try:
        return loads_strict(files[name])
    except (KeyError, ValueError, RecursionError) as exc:
        raise ImageArchiveError(f"the base image has no readable {name}") from exc


def _blob(files: dict[str, bytes], digest: str) -> Any:
    return _json(files, "blobs/" + str(digest).replace(":", "/"))


def base_layers(path: str) -> tuple[set[str], set[str]]:
    """The base image's layer blob names (an OCI layout) and layer diff_ids."""
    files = _files(path)
    if "index.json" in files:
        manifest = _blob(files, _json(files, "index.json")["manifests"][0]["digest"])
        blobs = {"blobs/" + d["digest"].replace(":", "/") for d in manifest.get("layers", [])}
        config = _blob(files, manifest["config"]["digest"])
    else:
        entry = _json(files, "manifest.json")[0]
        blobs = set()
        config = _json(files, entry["Config"])
    return blobs, set(config.get("rootfs", {}).get("diff_ids", []))


def _leaves_out(name: str, data: bytes, blobs: set[str], diff_ids: set[str]) -> bool:
    if name in blobs:
        return True
    is_layer = name.endswith(".tar") or name.startswith("blobs/")
    return is_layer and "sha256:" + hashlib.sha256(data).hexdigest() in diff_ids


def image_archive(path: str, base: str | None = None) -> bytes:
    """The image at ``path`` (an OCI layout folder or tar, or a ``docker save`` archive) as
    ``adapter_image`` takes it, without the layers of ``base``."""
    if not os.path.exists(path):
        raise ImageArchiveError(f"{path}: no such folder or file")
    files = _files(path)
    if base is not None:
        try:
            blobs, diff_ids = base_layers(base)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ImageArchiveError(f"the base image {base} is not an image: {exc!r}") from exc
        files = {n: d for n, d in files.items() if not _leaves_out(n, d, blobs, diff_ids)}
    out = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(files[name]), 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    archive = out.getvalue()
    if len(archive) > MAX_ARCHIVE_BYTES:
        hint = (
            ""
            if base
            else ": pass --base-image the harness image archive it was built FROM "
            "(the stack holds its layers)"
        )
        raise ImageArchiveError(
            f"{path} packs to {len(archive)} bytes, over the {MAX_ARCHIVE_BYTES} a run takes{hint}"
        )
    return archive
