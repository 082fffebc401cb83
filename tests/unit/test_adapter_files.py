"""The adapter's own files: what an archive may hold, and the copy a run gets of it."""

from __future__ import annotations

import io
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from toolcall300.jobs import adapter_files


def archive(*members: tuple[tarfile.TarInfo, bytes], gz: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


def entry(
    name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    return info


def test_a_folder_unpacks_read_only_with_its_exec_bits(tmp_path: Path) -> None:
    data = archive(
        (entry("./bin", tarfile.DIRTYPE, 0o700), b""),
        (entry("./bin/run", mode=0o700), b"#!/bin/sh\n"),
        (entry("./lib/data.json", mode=0o600), b"{}"),
        (entry("./lib/alias.json", tarfile.SYMTYPE, link="data.json"), b""),
    )
    names = adapter_files.listing(data)
    assert set(names) == {"bin", "bin/run", "lib/data.json", "lib/alias.json"}
    copy = adapter_files.unpack(data, tmp_path / "adapter")
    modes = {
        p.relative_to(copy).as_posix(): stat.S_IMODE(p.lstat().st_mode)
        for p in copy.rglob("*")
        if not p.is_symlink()
    }
    assert modes == {"bin": 0o755, "bin/run": 0o755, "lib": 0o755, "lib/data.json": 0o644}
    assert (copy / "lib" / "alias.json").read_text() == "{}"


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ([(entry("/etc/passwd"), b"x")], "outside the folder"),
        ([(entry("../up.txt"), b"x")], "outside the folder"),
        ([(entry("a/../../up.txt"), b"x")], "outside the folder"),
        ([(entry("ln", tarfile.SYMTYPE, link="/etc/passwd"), b"")], "links outside"),
        ([(entry("d/ln", tarfile.SYMTYPE, link="../../x"), b"")], "links outside"),
        ([(entry("hard", tarfile.LNKTYPE, link="../corpus.jsonl"), b"")], "links outside"),
        ([(entry("dev", tarfile.CHRTYPE), b"")], "not a file, folder or link"),
        ([(entry("fifo", tarfile.FIFOTYPE), b"")], "not a file, folder or link"),
        ([], "empty"),
    ],
)
def test_an_archive_that_is_not_a_plain_folder_is_refused(
    members: list[tuple[tarfile.TarInfo, bytes]], says: str
) -> None:
    with pytest.raises(adapter_files.FilesRefused, match=says):
        adapter_files.listing(archive(*members))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: b"not a tar at all", "not a tar archive"),
        (lambda: b"\0" * (adapter_files.MAX_ARCHIVE_BYTES + 1), "over"),
        (
            lambda: archive(*[(entry(f"f{i}"), b"") for i in range(adapter_files.MAX_FILES + 1)]),
            "entries",
        ),
    ],
)
def test_archives_over_the_caps_or_damaged_are_refused(
    make: Callable[[], bytes], says: str
) -> None:
    with pytest.raises(adapter_files.FilesRefused, match=says):
        adapter_files.listing(make())


def test_a_small_archive_that_would_unpack_too_large_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(adapter_files, "MAX_UNPACKED_BYTES", 1000)
    zeros = archive((entry("a"), b"\0" * 600), (entry("b"), b"\0" * 600))
    with pytest.raises(adapter_files.FilesRefused, match="unpacks to over 1000 bytes"):
        adapter_files.listing(zeros)


def test_one_name_repeated_past_the_entry_cap_is_refused() -> None:
    # a name repeated is one name but as many entries (each read, listed and unpacked again):
    # a few hundred KiB of gzip could otherwise hold millions of them
    same = archive(*[(entry("a"), b"") for _ in range(adapter_files.MAX_FILES + 1)])
    with pytest.raises(adapter_files.FilesRefused, match=f"more than {adapter_files.MAX_FILES}"):
        adapter_files.listing(same)


def test_a_gzip_bomb_is_refused_before_tarfile_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # a pax header tarfile reads whole into memory: 300 MB of it gzip to 300 KB
    monkeypatch.setattr(adapter_files, "MAX_TAR_BYTES", 64 * 1024)
    bomb = entry("a")
    bomb.pax_headers = {"comment": "x" * (128 * 1024)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(bomb, io.BytesIO(b""))
    assert len(out.getvalue()) < 4096
    with pytest.raises(adapter_files.FilesRefused, match="decompresses to over 65536 bytes"):
        adapter_files.listing(out.getvalue())
    # a folder of ordinary size still passes
    assert adapter_files.listing(archive((entry("adapter.py"), b"print(1)\n"))) == {
        "adapter.py": 0o644
    }


@pytest.mark.parametrize(
    "members",
    [
        # "t" reads as a/b but resolves through s (the folder itself) to the folder's parent
        [
            (entry("a/b/s", tarfile.SYMTYPE, link="../.."), b""),
            (entry("a/b/t", tarfile.SYMTYPE, link="s/.."), b""),
        ],
        # a file written through a link: where it lands is not where its name says
        [(entry("s", tarfile.SYMTYPE, link="a"), b""), (entry("s/x.py"), b"x")],
        # the link may come after the entry that goes through it
        [(entry("s/x.py"), b"x"), (entry("s", tarfile.SYMTYPE, link="a"), b"")],
        # a hard link whose target is named through a link
        [
            (entry("up", tarfile.SYMTYPE, link="."), b""),
            (entry("h", tarfile.LNKTYPE, link="up/../adapter.py"), b""),
        ],
    ],
)
def test_an_entry_or_link_through_a_symbolic_link_is_refused(
    members: list[tuple[tarfile.TarInfo, bytes]],
) -> None:
    # judged as written, each of these is inside the folder; only the data filter's realpath
    # stood between them and the host (and the run then ended infra_error, not refused)
    with pytest.raises(adapter_files.FilesRefused, match="through the symbolic link"):
        adapter_files.listing(archive((entry("adapter.py"), b"print(1)\n"), *members))


def test_a_huge_extended_header_hidden_in_a_small_gzip_is_refused_before_it_is_decompressed() -> (
    None
):
    """Before: a 95 KB upload hiding a 70 MiB pax header was decompressed whole, then read
    and parsed by tarfile: about 280 MB and seconds per archive, ten at once took a stack to
    2.8 GB. Now its header block alone refuses it."""
    import tracemalloc

    bomb = entry("a")
    bomb.pax_headers = {"comment": "x" * (70 * 1024 * 1024)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(bomb, io.BytesIO(b""))
    small = out.getvalue()
    assert len(small) < 200 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(adapter_files.FilesRefused, match="extended header"):
            adapter_files.listing(small)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak  # the old code: hundreds of MB


def test_unpacking_never_holds_the_whole_tar_in_memory() -> None:
    """Submission now unpacks each archive once (``check_unpacks``), as the worker does: read
    as a stream, so ten at once cost ten buffers, not ten copies of up to 72 MiB of tar."""
    import tracemalloc

    big = archive((entry("data.bin"), b"\0" * (24 * 1024 * 1024)))
    tracemalloc.start()
    try:
        adapter_files.check_unpacks(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
