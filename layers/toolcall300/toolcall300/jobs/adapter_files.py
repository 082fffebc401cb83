"""The adapter's own files on a local stack: a folder the team hands over with its run.

The local counterpart of the AWS path's image (docs/local-sandbox.md, "The adapter's own
files"): the team sends its adapter's folder as a tar archive (``toolcall300 ci
--adapter-dir`` makes one), the service keeps the bytes, and the worker unpacks a fresh copy
for each run, which the sandbox shows read-only at ``/adapter``. Nothing of the host is named
or mounted on the team's behalf, so what the adapter can read is, by construction, the
system, the kit and what the team sent.

:func:`listing` checks an archive before a run exists (``400 adapter_files_unusable``):
regular files, folders and links inside the folder only, within :data:`MAX_FILES` entries and
:data:`MAX_UNPACKED_BYTES`, read as a stream (a gzip archive decompressed only as far as it is
read, within :data:`MAX_TAR_BYTES`; an extended header past :data:`MAX_EXTENDED_HEADER` refused
from its header block, before it is decompressed).
:func:`unpack` writes it with the standard library's ``data`` extraction filter and then owns every entry itself (root-owned when run as root, folders
0755, files 0644 or 0755), so the adapter can read but never change its own copy.
"""

from __future__ import annotations

import io
import os
import posixpath
import tarfile
import tempfile
import zlib
from pathlib import Path

#: The archive as sent (gzip allowed); base64 in the JSON body keeps it under the gateway's
#: 10 MiB request limit.
MAX_ARCHIVE_BYTES = 6 * 1024 * 1024
#: What it may unpack to: entries and bytes (a small archive must not fill the disk).
MAX_FILES = 4096
MAX_UNPACKED_BYTES = 64 * 1024 * 1024
#: The tar stream a gzip archive may decompress to: the files plus room for their headers.
#: Checked while decompressing, which happens only as far as tarfile reads.
MAX_TAR_BYTES = MAX_UNPACKED_BYTES + 8 * 1024 * 1024
#: An extended header (pax records, a GNU long name or link): tarfile reads one whole into
#: memory, so its size is checked from its header block, before a byte of it is decompressed.
#: Real ones hold a few names and times; a small gzip can hide one of 70 MiB.
MAX_EXTENDED_HEADER = 1024 * 1024
#: The tar member types that carry an extended header (also read by ``jobs.adapter_image``).
EXTENDED_TYPES = frozenset(
    {
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
    }
)
GZIP_MAGIC = b"\x1f\x8b"


class FilesRefused(ValueError):
    """The archive cannot be the adapter's folder; the message says why."""


def _name(member: tarfile.TarInfo) -> str:
    return posixpath.normpath(member.name)


class _Inflating(io.RawIOBase):
    """The tar stream of ``archive``, decompressed (when it is gzip) only as far as it is read
    and never past :data:`MAX_TAR_BYTES`: tarfile reading it in stream mode pays for what it
    reads, so a header refused early costs its 512 bytes, not the megabytes behind it."""

    def __init__(self, archive: bytes) -> None:
        super().__init__()
        self._gzip = archive.startswith(GZIP_MAGIC)
        self._pending = archive
        self._inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self.total = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = MAX_TAR_BYTES + 1 if size is None or size < 0 else size
        if not self._gzip:
            out, self._pending = self._pending[:want], self._pending[want:]
            return out
        chunks = []
        got = 0
        while got < want and self._pending and not self._inflate.eof:
            try:
                piece = self._inflate.decompress(self._pending, min(want - got, 1 << 20))
            except zlib.error as exc:
                raise FilesRefused(f"not a tar archive (plain or gzip): {exc}") from exc
            self._pending = self._inflate.unconsumed_tail
            chunks.append(piece)
            got += len(piece)
            self.total += len(piece)
            if self.total > MAX_TAR_BYTES:
                raise FilesRefused(f"it decompresses to over {MAX_TAR_BYTES} bytes")
        return b"".join(chunks)


class _BoundedInfo(tarfile.TarInfo):
    """A member whose extended header (pax, GNU long name or link) is refused past
    :data:`MAX_EXTENDED_HEADER` from its header block alone, before tarfile reads that many
    bytes into memory and parses them (about four times their size)."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in EXTENDED_TYPES and self.size > MAX_EXTENDED_HEADER:
            raise FilesRefused(
                f"an extended header of {self.size} bytes (at most {MAX_EXTENDED_HEADER})"
            )
        member: tarfile.TarInfo = super()._proc_member(tar)  # type: ignore[misc]
        return member


def _open(archive: bytes) -> tarfile.TarFile:
    """The archive as a stream, decompressed as tarfile reads it (``listing`` and ``unpack``
    alike: never the whole tar in memory, however many archives are checked at once)."""
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise FilesRefused(f"the archive is over {MAX_ARCHIVE_BYTES} bytes")
    try:
        return tarfile.open(fileobj=_Inflating(archive), mode="r|", tarinfo=_BoundedInfo)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise FilesRefused(f"not a tar archive (plain or gzip): {exc}") from exc


def _through_a_link(path: str, links: set[str]) -> str | None:
    """The first folder on ``path`` (as the system walks it, before any ``..`` is folded)
    that is a symbolic link of the archive; None when it passes through none."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        folder = posixpath.normpath("/".join(parts[:i]))
        if folder in links:
            return folder
    return None


def listing(archive: bytes) -> dict[str, int]:
    """Every entry of the folder (relative name -> mode), or :class:`FilesRefused`.

    Names and link targets are judged as written, so no entry may lie or point *through* a
    symbolic link of the archive: ``t -> s/..`` with ``s -> ../..`` reads as inside but
    resolves to the folder's parent. With that refused, where a name is written is where it
    lands, and the ``data`` filter's own check (``realpath``, bypassed on older Pythons:
    CVE-2025-4517) is never the only one.
    """
    names: dict[str, int] = {}
    links: set[str] = set()
    walked: list[tuple[str, str]] = []  # (entry, path the system walks to make or follow it)
    total = entries = 0
    try:
        with _open(archive) as tar:
            for member in tar:
                entries += 1  # every entry, not every name: a name repeated is unpacked again
                if entries > MAX_FILES:
                    raise FilesRefused(f"more than {MAX_FILES} entries")
                name = _name(member)
                if name == ".":
                    continue
                if member.name.startswith("/") or name == ".." or name.startswith("../"):
                    raise FilesRefused(f"{member.name!r} lies outside the folder")
                walked.append((member.name, member.name))
                if member.isfile():
                    total += member.size
                    if total > MAX_UNPACKED_BYTES:
                        raise FilesRefused(f"it unpacks to over {MAX_UNPACKED_BYTES} bytes")
                elif member.issym() or member.islnk():
                    target = member.linkname
                    if member.issym():
                        links.add(name)
                        target = posixpath.join(posixpath.dirname(member.name), target)
                    walked.append((member.name, target))
                    target = posixpath.normpath(target)
                    if (
                        member.linkname.startswith("/")
                        or target == ".."
                        or target.startswith("../")
                    ):
                        raise FilesRefused(
                            f"{member.name!r} links outside the folder ({member.linkname!r})"
                        )
                elif not member.isdir():
                    raise FilesRefused(f"{member.name!r} is not a file, folder or link")
                names[name] = member.mode
    except tarfile.TarError as exc:
        raise FilesRefused(f"the archive is damaged: {exc}") from exc
    if not names:
        raise FilesRefused("the archive is empty")
    for entry, path in walked:
        if (link := _through_a_link(path, links)) is not None:
            raise FilesRefused(
                f"{entry!r} lies or points through the symbolic link {link!r}: name the "
                "real folder instead"
            )
    return names


def unpack(archive: bytes, into: Path) -> Path:
    """Unpack a checked archive into ``into`` (created, must not exist); entries are then
    owned by this process's user, folders 0755, files 0644 or 0755 (executable if the
    archive said so for anyone), so the adapter reads its copy and cannot change it."""
    modes = listing(archive)
    into.mkdir(mode=0o755)
    with _open(archive) as tar:
        try:
            tar.extractall(into, filter="data")
        except (tarfile.TarError, OSError, KeyError) as exc:  # the data filter's last word,
            # or a hard link to an entry not yet unpacked (KeyError), said as is
            raise FilesRefused(f"it cannot be unpacked: {exc}") from exc
    uid, gid = os.geteuid(), os.getegid()
    for folder, dirs, files in os.walk(into):
        os.chown(folder, uid, gid)
        os.chmod(folder, 0o755)
        for entry in (*dirs, *files):
            path = os.path.join(folder, entry)
            os.lchown(path, uid, gid)
            if os.path.islink(path) or os.path.isdir(path):
                continue
            mode = modes.get(os.path.relpath(path, into), 0o644)
            os.chmod(path, 0o755 if mode & 0o111 else 0o644)
    return into


def check_unpacks(archive: bytes) -> None:
    """Unpack ``archive`` into a temporary folder, removed at once, or :class:`FilesRefused`.

    :func:`listing` judges each entry alone; some archives pass it and still cannot be
    unpacked (a hard link before the file it names, a file where a folder of the same name
    was unpacked). Checked at submission, such an archive is a 400 with the reason rather than
    a run that fails in the worker as ``infra_error``. Bounded as unpacking is (64 MiB)."""
    with tempfile.TemporaryDirectory(prefix="tc300-unpack-check-") as holder:
        unpack(archive, Path(holder) / "adapter")


def read_file(archive: bytes, name: str, limit: int) -> bytes | None:
    """The file ``name`` of a checked archive (its first ``limit`` bytes), or None."""
    with _open(archive) as tar:
        for member in tar:
            if _name(member) == name and member.isfile():
                read = tar.extractfile(member)
                return read.read(limit) if read is not None else b""
    return None
