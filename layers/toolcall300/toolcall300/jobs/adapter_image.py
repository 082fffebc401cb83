"""An adapter image on a local stack: the OCI image a team pushes for AWS, unpacked safely.

The team hands over the image it builds FROM the harness image, as an OCI image layout (a tar
of it) or an image archive as ``docker save`` or ``skopeo copy ... docker-archive:`` writes
it; :func:`unpack` turns it into a root filesystem the sandbox shows read-only as the
adapter's ``/`` (docs/local-sandbox.md, "An adapter image"). Layers the stack already holds
(the harness image it was started with, :class:`Blobs`) may be left out of the archive, as a
registry push leaves out layers the registry has.

It is a trust boundary, like ``adapter_files``, and everything is checked before anything is
written: the archive and every JSON document within their sizes; every blob against the
digest and size its manifest names, every layer's uncompressed bytes against the config's
``diff_ids``; layers, entries and unpacked bytes within :data:`MAX_LAYERS`,
:data:`MAX_ENTRIES` and :data:`MAX_UNPACKED_BYTES`, counted while decompressing as far as
read. No entry may be absolute, hold ``..``, or lie through a symbolic link of the image; no
device node, FIFO, setuid or setgid file; no hard link outside the image or to what is not a
file; a relative symbolic link may not leave the root, and an absolute one is rewritten
relative to the root (where it points inside a container: Debian has hundreds), so none on
the host points out. Whiteouts (``.wh.`` files, opaque folders) remove only inside the root.
Writing is the standard library's ``data`` extraction filter after those checks, each entry
replacing what a lower layer left there. It does not run anything (``jobs.sandbox`` does).
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import shutil
import tarfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolcall300.canonical import loads_strict

# an extended tar header (pax, GNU long name) is read whole by tarfile: the same bound as a folder's
from toolcall300.jobs.adapter_files import EXTENDED_TYPES, GZIP_MAGIC, MAX_EXTENDED_HEADER

#: The archive as sent (plain or gzip), as ``adapter_files``: base64 in the JSON body.
MAX_ARCHIVE_BYTES = 6 * 1024 * 1024
#: The archive once decompressed (a ``docker save`` archive holds its layers uncompressed).
MAX_ARCHIVE_TAR_BYTES = 256 * 1024 * 1024
#: Files in the archive itself (its layout: blobs, manifests), and each JSON document's size.
MAX_ARCHIVE_ENTRIES = 1024
MAX_JSON_BYTES = 1024 * 1024
#: What the image may unpack to, all layers together (the harness image alone is about
#: 11,400 entries and 210 MiB).
MAX_LAYERS = 64
MAX_ENTRIES = 200_000
MAX_UNPACKED_BYTES = 2 * 1024 * 1024 * 1024
#: A layer's tar stream: its files plus room for their headers.
MAX_LAYER_TAR_BYTES = MAX_UNPACKED_BYTES + 256 * 1024 * 1024
#: Where the harness sits in every image built FROM the harness image (its ENTRYPOINT's last word).
HARNESS_ENTRYPOINT = "/usr/local/bin/toolcall300-harness"
#: What the sandbox needs in the root to start the adapter (its lifeline init is Python).
NEEDED = ("usr/bin/python3",)
#: Folders the sandbox mounts over: made real folders of the root (never links) after unpacking.
MOUNT_POINTS = ("proc", "dev", "tmp", "var/tmp", "opt/toolcall300")

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_WHITEOUT, _OPAQUE = ".wh.", ".wh..wh..opq"


class ImageRefused(ValueError):
    """The archive cannot be the adapter's image; the message says why."""


# ----------------------------------------------------------------------------- the archive


class _Stream(io.RawIOBase):
    """``data`` (gzip or plain) as a stream decompressed only as far as it is read, never past
    ``limit`` bytes, hashing what it gives (a layer's ``diff_id``). Input is fed in small
    pieces, so no read copies what remains of a large blob."""

    _PIECE = 64 * 1024

    def __init__(self, data: bytes, limit: int, what: str) -> None:
        super().__init__()
        if data.startswith(_ZSTD_MAGIC):
            raise ImageRefused(f"{what} is zstd-compressed: build the image with gzip layers")
        self._gzip = data.startswith(GZIP_MAGIC)
        self._data, self._at, self._tail = memoryview(data), 0, b""
        self._limit, self._what = limit, what
        self._inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self.total = 0
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def _inflated(self, want: int) -> bytes:
        """Up to ``want`` bytes, across the members of a multi-member gzip stream (umoci and
        pigz write those)."""
        chunks, got = [], 0
        while got < want:
            if self._inflate.eof:
                self._tail = self._inflate.unused_data + self._tail
                if not self._tail and self._at >= len(self._data):
                    break
                self._inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            if not self._tail:
                if self._at >= len(self._data):
                    break
                self._tail = bytes(self._data[self._at : self._at + self._PIECE])
                self._at += self._PIECE
            try:
                piece = self._inflate.decompress(self._tail, min(want - got, 1 << 20))
            except zlib.error as exc:
                raise ImageRefused(f"{self._what} is damaged: {exc}") from exc
            self._tail = self._inflate.unconsumed_tail
            chunks.append(piece)
            got += len(piece)
        return b"".join(chunks)

    def read(self, size: int | None = -1) -> bytes:
        want = self._limit + 1 if size is None or size < 0 else size
        if self._gzip:
            out = self._inflated(want)
        else:
            out = bytes(self._data[self._at : self._at + want])
            self._at += len(out)
        self.total += len(out)
        if self.total > self._limit:
            raise ImageRefused(f"{self._what} decompresses to over {self._limit} bytes")
        self.sha.update(out)
        return out

    def drain(self) -> None:
        while self.read(1 << 20):
            pass


class _BoundedInfo(tarfile.TarInfo):
    """A member whose extended header is refused past :data:`MAX_EXTENDED_HEADER` from its
    header block alone, before tarfile reads it into memory."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in EXTENDED_TYPES and self.size > MAX_EXTENDED_HEADER:
            raise ImageRefused(
                f"an extended tar header of {self.size} bytes (at most {MAX_EXTENDED_HEADER})"
            )
        member: tarfile.TarInfo = super()._proc_member(tar)  # type: ignore[misc]
        return member


@contextmanager
def _tar(stream: _Stream, what: str) -> Iterator[tarfile.TarFile]:
    try:
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=_BoundedInfo) as tar:
            yield tar
    except (tarfile.TarError, EOFError) as exc:
        raise ImageRefused(f"{what} is not a readable tar archive: {exc}") from exc


def read_archive(archive: bytes, *, limit: int = MAX_ARCHIVE_BYTES) -> dict[str, bytes]:
    """The archive's files by name (``./`` dropped), checked: within its sizes and entries,
    regular files and folders only (no links: no layout needs one)."""
    if len(archive) > limit:
        raise ImageRefused(f"the image archive is over {limit} bytes")
    files: dict[str, bytes] = {}
    entries = 0
    stream = _Stream(archive, max(MAX_ARCHIVE_TAR_BYTES, 4 * limit), "the image archive")
    with _tar(stream, "the image archive") as tar:
        for member in tar:
            entries += 1
            if entries > MAX_ARCHIVE_ENTRIES:
                raise ImageRefused(f"the image archive has over {MAX_ARCHIVE_ENTRIES} entries")
            name = posixpath.normpath(member.name)
            if member.isdir():
                continue
            if not member.isfile():
                raise ImageRefused(f"the image archive's {member.name!r} is not a file or folder")
            if name.startswith(("/", "../")) or name == "..":
                raise ImageRefused(f"the image archive's {member.name!r} lies outside it")
            read = tar.extractfile(member)
            files[name] = read.read() if read is not None else b""
    if not files:
        raise ImageRefused("the image archive is empty")
    return files


# ----------------------------------------------------------------------------- blobs


@dataclass
class Blobs:
    """Blobs by digest, and layers by their uncompressed digest (``diff_id``): what an image
    may leave out because the stack already holds it (the harness image's)."""

    by_digest: dict[str, bytes] = field(default_factory=dict)
    by_diff_id: dict[str, bytes] = field(default_factory=dict)

    def get(self, digest: str) -> bytes | None:
        return self.by_digest.get(digest) or self.by_diff_id.get(digest)


def _json(data: bytes, what: str) -> dict[str, Any]:
    if len(data) > MAX_JSON_BYTES:
        raise ImageRefused(f"{what} is over {MAX_JSON_BYTES} bytes")
    try:
        value = loads_strict(data)
    except (ValueError, RecursionError) as exc:
        raise ImageRefused(f"{what} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ImageRefused(f"{what} is not a JSON object")
    return value


def _verified(data: bytes, digest: str, size: int | None, what: str) -> bytes:
    if size is not None and len(data) != size:
        raise ImageRefused(f"{what} is {len(data)} bytes, its manifest says {size}")
    if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
        raise ImageRefused(f"{what} does not match its digest {digest}")
    return data


def _descriptor(value: Any, what: str) -> tuple[str, int, str]:
    if not isinstance(value, dict):
        raise ImageRefused(f"{what} is not a descriptor")
    digest, size, media = value.get("digest"), value.get("size"), value.get("mediaType", "")
    if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
        raise ImageRefused(f"{what} names no sha256 digest")
    if not isinstance(size, int) or size < 0:
        raise ImageRefused(f"{what} has no size")
    return digest, size, str(media)


@dataclass(frozen=True)
class Layer:
    """One layer: its bytes (verified against the manifest), and its uncompressed digest."""

    data: bytes
    diff_id: str
    what: str


@dataclass(frozen=True)
class Image:
    """An image read from an archive: its layers, bottom first, and its configuration."""

    layers: tuple[Layer, ...]
    config: dict[str, Any]

    @property
    def command(self) -> list[str]:
        return list(self.config.get("config", {}).get("Cmd") or [])

    @property
    def entrypoint(self) -> list[str]:
        return list(self.config.get("config", {}).get("Entrypoint") or [])

    @property
    def env(self) -> dict[str, str]:
        """The image's own environment (``KEY=value`` entries), as the job starts with."""
        pairs = (e.partition("=") for e in self.config.get("config", {}).get("Env") or [])
        return {k: v for k, sep, v in pairs if sep and k}


def _diff_ids(config: dict[str, Any], layers: int) -> list[str]:
    rootfs = config.get("rootfs")
    ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(ids, list) or len(ids) != layers:
        raise ImageRefused("the image's config does not list one diff_id per layer")
    if not all(isinstance(i, str) and _DIGEST_RE.fullmatch(i) for i in ids):
        raise ImageRefused("the image's config lists a diff_id that is not a sha256 digest")
    return ids


def _blob(files: Mapping[str, bytes], held: Blobs | None, digest: str) -> bytes | None:
    name = "blobs/" + digest.replace(":", "/")
    if name in files:
        return files[name]
    return held.get(digest) if held is not None else None


def _pick_manifest(files: Mapping[str, bytes], index: dict[str, Any], arch: str) -> dict[str, Any]:
    """The one image the layout's index names: the only one, or the one for ``linux/<arch>``
    through at most one nested index."""
    for depth in range(2):
        manifests = index.get("manifests")
        if not isinstance(manifests, list) or not manifests:
            raise ImageRefused("the image index names no manifest")
        chosen = manifests[0]
        if len(manifests) > 1:
            fits = [
                m
                for m in manifests
                if isinstance(m, dict)
                and isinstance(m.get("platform"), dict)
                and m["platform"].get("os") == "linux"
                and m["platform"].get("architecture") == arch
            ]
            if len(fits) != 1:
                raise ImageRefused(
                    f"the image index names {len(manifests)} manifests and not one for linux/{arch}"
                )
            chosen = fits[0]
        digest, size, media = _descriptor(chosen, "the index's manifest")
        data = files.get("blobs/" + digest.replace(":", "/"))
        if data is None:
            raise ImageRefused(f"the manifest {digest} is not in the archive")
        document = _json(_verified(data, digest, size, "the manifest"), "the manifest")
        if media not in _INDEX_TYPES and document.get("mediaType") not in _INDEX_TYPES:
            return document
        if depth == 1:
            break
        index = document
    raise ImageRefused("the image index nests deeper than one index")


def _oci(files: Mapping[str, bytes], held: Blobs | None, arch: str) -> Image:
    manifest = _pick_manifest(files, _json(files["index.json"], "index.json"), arch)
    digest, size, _media = _descriptor(manifest.get("config"), "the manifest's config")
    data = _blob(files, held, digest)
    if data is None:
        raise ImageRefused(f"the config {digest} is not in the archive")
    config = _json(_verified(data, digest, size, "the config"), "the config")
    descriptors = manifest.get("layers")
    if not isinstance(descriptors, list):
        raise ImageRefused("the manifest lists no layers")
    if len(descriptors) > MAX_LAYERS:
        raise ImageRefused(f"the image has over {MAX_LAYERS} layers")
    ids = _diff_ids(config, len(descriptors))
    layers = []
    for i, value in enumerate(descriptors):
        digest, size, media = _descriptor(value, f"layer {i}")
        if "zstd" in media:
            raise ImageRefused(f"layer {i} is zstd-compressed: build the image with gzip layers")
        blob = _blob(files, held, digest)
        if blob is None:
            raise ImageRefused(
                f"layer {i} ({digest}) is neither in the archive nor among the layers this "
                "stack holds (its harness image's)"
            )
        layers.append(Layer(_verified(blob, digest, size, f"layer {i}"), ids[i], f"layer {i}"))
    return Image(tuple(layers), config)


def _docker(files: Mapping[str, bytes], held: Blobs | None) -> Image:
    """``docker save`` / ``skopeo copy docker-archive:``: ``manifest.json`` names the config
    file (named by its digest) and the layer files, checked against the config's diff_ids."""
    try:
        entries = loads_strict(files["manifest.json"])
    except (ValueError, RecursionError) as exc:
        raise ImageRefused(f"manifest.json is not JSON: {exc}") from exc
    if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
        raise ImageRefused("manifest.json must name exactly one image")
    entry = entries[0]
    config_name, layer_names = entry.get("Config"), entry.get("Layers")
    if not isinstance(config_name, str) or config_name not in files:
        raise ImageRefused("manifest.json names no config file in the archive")
    hexdigest = posixpath.basename(config_name).removesuffix(".json")
    data = _verified(files[config_name], f"sha256:{hexdigest}", None, "the config")
    config = _json(data, "the config")
    if not isinstance(layer_names, list) or not all(isinstance(n, str) for n in layer_names):
        raise ImageRefused("manifest.json lists no layers")
    if len(layer_names) > MAX_LAYERS:
        raise ImageRefused(f"the image has over {MAX_LAYERS} layers")
    ids = _diff_ids(config, len(layer_names))
    layers = []
    for i, name in enumerate(layer_names):
        blob = files.get(posixpath.normpath(name))
        if blob is None and held is not None:
            blob = held.get(ids[i])
        if blob is None:
            raise ImageRefused(
                f"layer {i} ({name}) is neither in the archive nor among the layers this stack "
                "holds (its harness image's)"
            )
        layers.append(Layer(blob, ids[i], f"layer {i}"))
    return Image(tuple(layers), config)


def _check_config(config: dict[str, Any]) -> None:
    """The run configuration's shape: ``config`` an object, ``Entrypoint``, ``Cmd`` and
    ``Env`` lists of strings when present."""
    run = config.get("config", {})
    if not isinstance(run, dict):
        raise ImageRefused("the image's config has no run configuration object")
    for key in ("Entrypoint", "Cmd", "Env"):
        value = run.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise ImageRefused(f"the image's config {key} is not a list of strings")


def machine_arch() -> str:
    """This machine's architecture as OCI names it (the image must be for it)."""
    machine = os.uname().machine
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def read_image(
    archive: bytes, held: Blobs | None = None, *, limit: int = MAX_ARCHIVE_BYTES
) -> Image:
    """The image in ``archive`` (an OCI layout's tar or a ``docker save`` archive), its blobs
    verified; layers left out are taken from ``held`` by digest or diff_id."""
    files = read_archive(archive, limit=limit)
    arch = machine_arch()
    if "index.json" in files:
        image = _oci(files, held, arch)
    elif "manifest.json" in files:
        image = _docker(files, held)
    else:
        raise ImageRefused(
            "not an image: no index.json (an OCI layout) or manifest.json (docker save)"
        )
    _check_config(image.config)
    platform = f"{image.config.get('os')}/{image.config.get('architecture')}"
    if platform != f"linux/{arch}":
        raise ImageRefused(f"the image is for {platform}; this stack runs linux/{arch}")
    return image


def held_blobs(archive: bytes) -> Blobs:
    """The blobs of a trusted image archive (the stack's harness image), by digest and by
    diff_id, each checked as any image's are."""
    image = read_image(archive, limit=len(archive))
    blobs = Blobs()
    for layer in image.layers:  # one copy of each layer, by either digest
        blobs.by_digest["sha256:" + hashlib.sha256(layer.data).hexdigest()] = layer.data
        blobs.by_diff_id[layer.diff_id] = layer.data
    return blobs


# ----------------------------------------------------------------------------- layers


@dataclass
class _Plan:
    """What a layer does, found by reading it once before anything is written."""

    removed: list[str] = field(default_factory=list)  # whiteouts: names to remove
    opaque: list[str] = field(default_factory=list)  # folders whose lower contents go
    links: dict[str, str] = field(default_factory=dict)  # symlink name -> target to write


@dataclass
class _Tree:
    """The image's entries so far (name -> "d", "f" or "l") and the totals counted."""

    kinds: dict[str, str] = field(default_factory=dict)
    entries: int = 0
    bytes: int = 0

    def remove(self, name: str, *, keep_self: bool = False) -> None:
        prefix = name + "/" if name else ""
        for key in [k for k in self.kinds if k.startswith(prefix)]:
            del self.kinds[key]
        if not keep_self:
            self.kinds.pop(name, None)

    def through_link(self, name: str) -> str | None:
        parts = name.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if self.kinds.get(folder) == "l":
                return folder
        return None


def _entry_name(member: tarfile.TarInfo, what: str) -> str:
    raw = member.name
    while raw.startswith("./"):
        raw = raw[2:]
    if raw.startswith("/"):
        raise ImageRefused(f"{what}: {member.name!r} is an absolute name")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageRefused(f"{what}: {member.name!r} holds '..'")
    return "/".join(parts)


def _symlink_target(name: str, linkname: str, what: str) -> str:
    """The link as written on the host: relative, inside the root (an absolute one is
    rewritten relative to the root, where a container resolves it)."""
    folder = posixpath.dirname(name)
    if linkname.startswith("/"):
        inside = posixpath.normpath("/" + linkname.lstrip("/"))
        return posixpath.relpath(inside, "/" + folder) if inside != "/" + folder else "."
    resolved = posixpath.normpath(posixpath.join(folder, linkname))
    if resolved == ".." or resolved.startswith("../"):
        raise ImageRefused(f"{what}: the link {name!r} points outside the image ({linkname!r})")
    return linkname


def _check_member(member: tarfile.TarInfo, name: str, tree: _Tree, what: str) -> None:
    if member.ischr() or member.isblk():
        raise ImageRefused(f"{what}: {name!r} is a device node; an adapter image holds none")
    if member.isfifo():
        raise ImageRefused(f"{what}: {name!r} is a FIFO; an adapter image holds none")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise ImageRefused(f"{what}: {name!r} is not a file, folder or link")
    if (member.isfile() or member.islnk()) and member.mode & 0o6000:
        raise ImageRefused(
            f"{what}: {name!r} is setuid or setgid; the adapter runs unprivileged and its "
            "image may carry no such file"
        )
    if member.isfile():
        tree.bytes += member.size
        if tree.bytes > MAX_UNPACKED_BYTES:
            raise ImageRefused(f"the image unpacks to over {MAX_UNPACKED_BYTES} bytes")


def _plan_layer(layer: Layer, tree: _Tree) -> _Plan:
    """Read one layer (its digest checked) and check every entry against the image so far."""
    plan = _Plan()
    written: list[tuple[str, str, str | None]] = []  # (name, kind, hard link target)
    stream = _Stream(layer.data, MAX_LAYER_TAR_BYTES, layer.what)
    with _tar(stream, layer.what) as tar:
        for member in tar:
            tree.entries += 1
            if tree.entries > MAX_ENTRIES:
                raise ImageRefused(f"the image has over {MAX_ENTRIES} entries")
            name = _entry_name(member, layer.what)
            base = posixpath.basename(name)
            if base.startswith(_WHITEOUT):
                folder = posixpath.dirname(name)
                if base == _OPAQUE:
                    plan.opaque.append(folder)
                elif base[len(_WHITEOUT) :] in ("", ".", ".."):
                    raise ImageRefused(f"{layer.what}: {member.name!r} whites out nothing")
                else:
                    plan.removed.append(posixpath.join(folder, base[len(_WHITEOUT) :]))
                continue
            if not name:
                continue  # the root itself
            _check_member(member, name, tree, layer.what)
            hard = None
            if member.issym():
                plan.links[name] = _symlink_target(name, member.linkname, layer.what)
            elif member.islnk():
                hard = _entry_name(tarfile.TarInfo(member.linkname), layer.what)
                if not hard:
                    raise ImageRefused(f"{layer.what}: the hard link {name!r} names the root")
            kind = "d" if member.isdir() else "l" if member.issym() else "f"
            written.append((name, kind, hard))
        stream.drain()
    if "sha256:" + stream.sha.hexdigest() != layer.diff_id:
        raise ImageRefused(f"{layer.what} does not match its diff_id {layer.diff_id}")
    _settle(plan, written, tree, layer.what)
    return plan


def _settle(
    plan: _Plan, written: list[tuple[str, str, str | None]], tree: _Tree, what: str
) -> None:
    """The image once the layer is applied: its whiteouts, then its entries in order, each
    checked against the image as it then stands (no name or hard link through a link)."""
    for folder in plan.opaque:
        tree.remove(folder, keep_self=True)
    for name in plan.removed:
        if (link := tree.through_link(name)) is not None:
            raise ImageRefused(f"{what}: the whiteout of {name!r} lies through {link!r}")
        tree.remove(name)
    for name, kind, hard in written:
        for path in (name, hard) if hard else (name,):
            if (link := tree.through_link(path)) is not None:
                raise ImageRefused(f"{what}: {path!r} lies through the symbolic link {link!r}")
        if hard is not None and tree.kinds.get(hard) != "f":
            raise ImageRefused(
                f"{what}: the hard link {name!r} names {hard!r}, not a file of the image"
            )
        if kind != "d" and tree.kinds.get(name) == "d":
            tree.remove(name)  # a folder replaced: what was under it goes with it
        tree.kinds[name] = kind


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def _write_layer(layer: Layer, plan: _Plan, root: Path) -> None:
    """Apply a planned layer: its whiteouts inside the root, then its entries through the
    ``data`` filter, each replacing what a lower layer left at its name."""
    for folder in plan.opaque:
        where = root / folder
        if where.is_dir() and not where.is_symlink():
            for child in list(where.iterdir()):
                _remove(str(child))
    for name in plan.removed:
        _remove(str(root / name))

    def place(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        name = _entry_name(member, layer.what)
        if not name or posixpath.basename(name).startswith(_WHITEOUT):
            return None
        changes: dict[str, Any] = {"name": name}
        if member.issym():
            changes["linkname"] = plan.links[name]
        elif member.islnk():
            changes["linkname"] = _entry_name(tarfile.TarInfo(member.linkname), layer.what)
        target = os.path.join(dest, name)
        if os.path.lexists(target) and not (member.isdir() and os.path.isdir(target)):
            _remove(target)  # a new inode: never write through a lower layer's file or link
        return tarfile.data_filter(member.replace(**changes, deep=False), dest)

    stream = _Stream(layer.data, MAX_LAYER_TAR_BYTES, layer.what)
    with _tar(stream, layer.what) as tar:
        try:
            tar.extractall(root, filter=place)
        except (tarfile.TarError, OSError, KeyError) as exc:
            raise ImageRefused(f"{layer.what} cannot be unpacked: {exc}") from exc


def check(image: Image) -> list[_Plan]:
    """Read and check every layer of ``image`` and what it must hold, writing nothing (what
    ``POST /runs`` does before a run exists); the plans :func:`unpack` follows."""
    tree = _Tree()
    plans = [_plan_layer(layer, tree) for layer in image.layers]
    for needed in NEEDED:
        if needed not in tree.kinds:
            raise ImageRefused(
                f"the image has no /{needed}: build it FROM the harness image "
                "(docs/hosted-scoring.md, the adapter image)"
            )
    adapter_command(image)
    return plans


def unpack(image: Image, into: Path) -> Path:
    """Write ``image``'s root filesystem into ``into`` (created; must not exist): every layer
    is read and checked before the first is written. Folders end 0755, entries owned by this
    process's user; the mount points the sandbox needs are real folders."""
    plans = check(image)
    into.mkdir(mode=0o755)
    for layer, plan in zip(image.layers, plans, strict=True):
        _write_layer(layer, plan, into)
    for point in MOUNT_POINTS:
        path = into / point
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            _remove(str(path))
        path.mkdir(parents=True, exist_ok=True)
    for folder, _dirs, _files in os.walk(into):
        os.chmod(folder, 0o755)
    return into


def adapter_command(image: Image) -> list[str]:
    """The adapter's command: the image's CMD, under the harness's ENTRYPOINT as on AWS."""
    entrypoint = image.entrypoint
    if not entrypoint or entrypoint[-1] != HARNESS_ENTRYPOINT:
        raise ImageRefused(
            f"the image's ENTRYPOINT is {entrypoint!r}, not the harness's "
            f"(… {HARNESS_ENTRYPOINT}): build it FROM the harness image and set only CMD"
        )
    if not image.command:
        raise ImageRefused("the image has no CMD (the adapter command)")
    return image.command
