"""Unpacking an adapter image is a trust boundary: hostile archives, built here, each refused
with its reason before anything is written, and honest ones unpacked as a container sees them."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolcall300.jobs import adapter_image as ai
from toolcall300.jobs.adapter_image import ImageRefused

Member = tuple[tarfile.TarInfo, bytes]


def entry(name: str, data: bytes = b"x", **attrs: Any) -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = attrs.pop("mode", 0o644)
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, data


def folder(name: str) -> Member:
    return entry(name, b"", type=tarfile.DIRTYPE, mode=0o755)


def link(name: str, target: str, *, hard: bool = False) -> Member:
    kind = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    return entry(name, b"", type=kind, linkname=target, mode=0o777)


def layer_tar(members: list[Member]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


BASE = [folder("usr"), folder("usr/bin"), entry("usr/bin/python3", b"#!", mode=0o755)]
ENTRYPOINT = ["python3", ai.HARNESS_ENTRYPOINT]


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def oci_archive(
    layers: list[list[Member]],
    *,
    cmd: list[str] | None = None,
    leave_out: int = 0,
    tamper: Callable[[dict[str, bytes]], None] | None = None,
    raw_layers: list[bytes] | None = None,
) -> bytes:
    """An OCI layout's tar: one gzip layer per list; the first ``leave_out`` layers' blobs
    are not in it (a stack may hold them)."""
    tars = raw_layers or [layer_tar(members) for members in layers]
    blobs = [gzip.compress(t, mtime=0) for t in tars]
    config = {
        "os": "linux",
        "architecture": ai.machine_arch(),
        "config": {
            "Entrypoint": ENTRYPOINT,
            "Cmd": ["python3", "/opt/a.py"] if cmd is None else cmd,
        },
        "rootfs": {"type": "layers", "diff_ids": [digest(t) for t in tars]},
    }
    config_bytes = json.dumps(config).encode()
    manifest = {
        "schemaVersion": 2,
        "config": {"digest": digest(config_bytes), "size": len(config_bytes)},
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": digest(b),
                "size": len(b),
            }
            for b in blobs
        ],
    }
    manifest_bytes = json.dumps(manifest).encode()
    index = {"manifests": [{"digest": digest(manifest_bytes), "size": len(manifest_bytes)}]}
    files = {
        "oci-layout": b'{"imageLayoutVersion":"1.0.0"}',
        "index.json": json.dumps(index).encode(),
    }
    for data in [config_bytes, manifest_bytes, *blobs[leave_out:]]:
        files["blobs/sha256/" + digest(data)[7:]] = data
    if tamper is not None:
        tamper(files)
    return layer_tar([entry(name, data) for name, data in files.items()])


def unpacked(tmp_path: Path, archive: bytes, held: ai.Blobs | None = None) -> Path:
    return ai.unpack(ai.read_image(archive, held), tmp_path / "root")


def refused(tmp_path: Path, archive: bytes, held: ai.Blobs | None = None) -> str:
    tmp_path.mkdir(exist_ok=True)
    with pytest.raises(ImageRefused) as caught:
        unpacked(tmp_path, archive, held)
    assert not (tmp_path / "root").exists()  # refused before anything was written
    return str(caught.value)


# ----------------------------------------------------------------------------- honest images


def test_layers_apply_in_order_with_whiteouts_and_opaque_folders(tmp_path: Path) -> None:
    lower = [
        *BASE,
        folder("opt"),
        entry("opt/a.py", b"print(1)"),
        entry("opt/gone.txt"),
        folder("etc"),
        folder("etc/old"),
        entry("etc/old/x"),
    ]
    upper = [
        entry("opt/.wh.gone.txt", b""),
        folder("etc/old"),
        entry("etc/old/.wh..wh..opq", b""),
        entry("etc/old/y"),
        entry("opt/a.py", b"print(2)"),
    ]
    root = unpacked(tmp_path, oci_archive([lower, upper]))
    assert (root / "opt/a.py").read_bytes() == b"print(2)"
    assert not (root / "opt/gone.txt").exists()
    assert sorted(os.listdir(root / "etc/old")) == ["y"]
    assert not any(name.startswith(".wh.") for _, _, names in os.walk(root) for name in names)
    assert all((root / p).is_dir() for p in ai.MOUNT_POINTS)


def test_a_layer_written_as_several_gzip_members_is_read_whole(tmp_path: Path) -> None:
    tar = layer_tar([*BASE, entry("usr/bin/late", b"at the end")])
    half = len(tar) // 2
    blob = gzip.compress(tar[:half], mtime=0) + gzip.compress(tar[half:], mtime=0)

    def two_members(named: dict[str, bytes]) -> None:  # the layer blob as pigz writes it
        for name, data in list(named.items()):
            if data.startswith(b"\x1f\x8b"):
                del named[name]
                named["blobs/sha256/" + digest(blob)[7:]] = blob
        for name, data in list(named.items()):
            if b'"schemaVersion"' in data and name != "index.json":
                manifest = json.loads(data)
                manifest["layers"][0].update(digest=digest(blob), size=len(blob))
                del named[name]
                new = json.dumps(manifest).encode()
                named["blobs/sha256/" + digest(new)[7:]] = new
                named["index.json"] = json.dumps(
                    {"manifests": [{"digest": digest(new), "size": len(new)}]}
                ).encode()

    root = unpacked(tmp_path, oci_archive([], raw_layers=[tar], tamper=two_members))
    assert (root / "usr/bin/late").read_bytes() == b"at the end"


def test_an_absolute_link_points_inside_the_root_as_in_a_container(tmp_path: Path) -> None:
    layer = [*BASE, folder("lib64"), link("lib64/ld.so", "/usr/bin/python3")]
    root = unpacked(tmp_path, oci_archive([layer]))
    assert os.readlink(root / "lib64/ld.so") == "../usr/bin/python3"
    assert (root / "lib64/ld.so").resolve() == (root / "usr/bin/python3").resolve()


def test_a_replaced_hard_linked_file_leaves_its_twin_alone(tmp_path: Path) -> None:
    lower = [*BASE, entry("usr/bin/a", b"old"), link("usr/bin/b", "usr/bin/a", hard=True)]
    upper = [entry("usr/bin/a", b"new")]
    root = unpacked(tmp_path, oci_archive([lower, upper]))
    assert (root / "usr/bin/a").read_bytes() == b"new"
    assert (root / "usr/bin/b").read_bytes() == b"old"


def test_layers_the_stack_holds_may_be_left_out(tmp_path: Path) -> None:
    base = oci_archive([BASE])
    archive = oci_archive([BASE, [entry("usr/bin/adapter", b"a")]], leave_out=1)
    root = unpacked(tmp_path, archive, ai.held_blobs(base))
    assert (root / "usr/bin/adapter").read_bytes() == b"a"
    message = refused(tmp_path / "again", archive)
    assert "layer 0" in message and "neither in the archive nor among the layers" in message


def test_a_docker_save_archive_is_read_and_its_layers_checked(tmp_path: Path) -> None:
    tars = [layer_tar(BASE), layer_tar([entry("usr/bin/adapter", b"a")])]
    config = {
        "os": "linux",
        "architecture": ai.machine_arch(),
        "config": {"Entrypoint": ENTRYPOINT, "Cmd": ["adapter"], "Env": ["A=1", "B"]},
        "rootfs": {"type": "layers", "diff_ids": [digest(t) for t in tars]},
    }
    config_bytes = json.dumps(config).encode()
    config_name = digest(config_bytes)[7:] + ".json"
    manifest = [{"Config": config_name, "Layers": ["l0/layer.tar", "l1/layer.tar"]}]
    files = {
        "manifest.json": json.dumps(manifest).encode(),
        config_name: config_bytes,
        "l0/layer.tar": tars[0],
        "l1/layer.tar": tars[1],
    }
    image = ai.read_image(layer_tar([entry(n, d) for n, d in files.items()]))
    assert ai.adapter_command(image) == ["adapter"] and image.env == {"A": "1"}
    assert (ai.unpack(image, tmp_path / "r") / "usr/bin/adapter").read_bytes() == b"a"
    files["l1/layer.tar"] = layer_tar([entry("usr/bin/adapter", b"b")])
    swapped = layer_tar([entry(n, d) for n, d in files.items()])
    assert "does not match its diff_id" in refused(tmp_path, swapped)


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ([entry("/etc/passwd")], "is an absolute name"),
        ([entry("usr/../../etc/passwd")], "holds '..'"),
        ([link("usr/out", "../../etc")], "points outside the image"),
        ([link("usr/bin/h", "../../../x", hard=True)], "holds '..'"),
        ([link("usr/bin/h", "usr/bin", hard=True)], "not a file of the image"),
        ([link("usr/bin/h", "/etc/shadow", hard=True)], "is an absolute name"),
        ([link("usr/l", "bin"), entry("usr/l/evil")], "lies through the symbolic link 'usr/l'"),
        ([entry("dev/sda", b"", type=tarfile.BLKTYPE)], "is a device node"),
        ([entry("dev/null", b"", type=tarfile.CHRTYPE)], "is a device node"),
        ([entry("tmp/f", b"", type=tarfile.FIFOTYPE)], "is a FIFO"),
        ([entry("usr/bin/su", b"su", mode=0o4755)], "is setuid or setgid"),
        ([entry("usr/bin/wall", b"w", mode=0o2755)], "is setuid or setgid"),
        ([entry("usr/.wh..")], "whites out nothing"),
    ],
    ids=[
        "absolute-name",
        "dotdot-name",
        "symlink-escapes",
        "hardlink-escapes",
        "hardlink-to-folder",
        "hardlink-absolute",
        "through-a-symlink",
        "block-device",
        "char-device",
        "fifo",
        "setuid",
        "setgid",
        "empty-whiteout",
    ],
)
def test_a_hostile_entry_is_refused_with_its_reason(
    tmp_path: Path, members: list[Member], says: str
) -> None:
    assert says in refused(tmp_path, oci_archive([[*BASE, *members]]))


def test_a_whiteout_through_a_link_is_refused(tmp_path: Path) -> None:
    lower = [*BASE, link("usr/up", "..")]
    upper = [entry("usr/up/.wh.usr", b"")]
    assert "lies through 'usr/up'" in refused(tmp_path, oci_archive([lower, upper]))


def test_bounds_are_checked_while_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ai, "MAX_ENTRIES", 5)
    many = [*BASE, *(entry(f"usr/bin/f{i}") for i in range(5))]
    assert "over 5 entries" in refused(tmp_path, oci_archive([many]))
    monkeypatch.setattr(ai, "MAX_ENTRIES", 100)
    monkeypatch.setattr(ai, "MAX_UNPACKED_BYTES", 1000)
    big = [*BASE, entry("usr/bin/big", b"\0" * 2000)]
    assert "unpacks to over 1000 bytes" in refused(tmp_path, oci_archive([big]))
    monkeypatch.setattr(ai, "MAX_LAYERS", 1)
    assert "over 1 layers" in refused(tmp_path, oci_archive([BASE, BASE]))


def test_a_bomb_is_refused_as_it_decompresses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ai, "MAX_LAYER_TAR_BYTES", 64 * 1024)
    bomb = layer_tar([*BASE, entry("usr/bin/zeros", b"\0" * (1024 * 1024))])
    archive = oci_archive([], raw_layers=[bomb])
    assert len(archive) < 64 * 1024
    assert "decompresses to over 65536 bytes" in refused(tmp_path, archive)


def test_a_huge_extended_header_is_refused_from_its_header_block(tmp_path: Path) -> None:
    info = tarfile.TarInfo("usr/bin/x")
    info.pax_headers = {"comment": "y" * (ai.MAX_EXTENDED_HEADER + 10)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(b""))
    archive = oci_archive([], raw_layers=[layer_tar(BASE) + b"", out.getvalue()])
    assert "an extended tar header of" in refused(tmp_path, archive)


def test_a_blob_that_does_not_match_its_digest_is_refused(tmp_path: Path) -> None:
    def swap_layer(files: dict[str, bytes]) -> None:
        for name, data in files.items():
            if data.startswith(b"\x1f\x8b"):
                files[name] = gzip.compress(layer_tar([*BASE, entry("usr/bin/evil")]), mtime=0)

    message = refused(tmp_path, oci_archive([BASE], tamper=swap_layer))
    assert "layer 0 is" in message or "does not match its digest" in message


def test_an_archive_with_a_link_or_over_its_size_is_refused(tmp_path: Path) -> None:
    linked = layer_tar([link("index.json", "/etc/passwd")])
    assert "not a file or folder" in refused(tmp_path, linked)
    with pytest.raises(ImageRefused, match="archive is over"):
        ai.read_image(b"\0" * (ai.MAX_ARCHIVE_BYTES + 1))
    assert "not an image" in refused(tmp_path, layer_tar([entry("README", b"hi")]))


def test_an_image_not_built_from_the_harness_image_is_refused(tmp_path: Path) -> None:
    assert "no /usr/bin/python3" in refused(tmp_path, oci_archive([[folder("opt")]]))
    image = ai.read_image(oci_archive([BASE], cmd=[]))
    with pytest.raises(ImageRefused, match="no CMD"):
        ai.adapter_command(image)


@pytest.mark.parametrize(
    "run",
    [["not", "an", "object"], {"Cmd": "python3 a.py"}, {"Env": [1]}, {"Entrypoint": [None]}],
)
def test_a_config_of_the_wrong_shape_is_refused_not_a_crash(tmp_path: Path, run: Any) -> None:
    def reshape(files: dict[str, bytes]) -> None:
        for name, data in list(files.items()):
            if b'"rootfs"' in data:
                config = json.loads(data)
                config["config"] = run
                new = json.dumps(config).encode()
                del files[name]
                files["blobs/sha256/" + digest(new)[7:]] = new
                for other, raw in list(files.items()):
                    if raw.startswith(b'{"schemaVersion"'):
                        manifest = json.loads(raw)
                        manifest["config"] = {"digest": digest(new), "size": len(new)}
                        body = json.dumps(manifest).encode()
                        del files[other]
                        files["blobs/sha256/" + digest(body)[7:]] = body
                        files["index.json"] = json.dumps(
                            {"manifests": [{"digest": digest(body), "size": len(body)}]}
                        ).encode()

    message = refused(tmp_path, oci_archive([BASE], tamper=reshape))
    assert "is not a list of strings" in message or "no run configuration object" in message


def test_an_image_a_run_is_using_is_never_removed_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker keeps the last few unpacked images; one more unpacked while the oldest is
    still in use must not delete that one under its run: it goes once the run ends."""
    from toolcall300.jobs import sandbox

    monkeypatch.setattr(sandbox, "_images", {})
    monkeypatch.setattr(sandbox, "_image_uses", {})
    monkeypatch.setattr(sandbox, "_scratch_root", lambda: tmp_path)
    images = [oci_archive([[*BASE, entry("opt/a.py", f"print({n})".encode())]]) for n in range(7)]
    with sandbox.image_in_use(images[0]) as oldest:
        for archive in images[1:6]:
            with sandbox.image_in_use(archive) as image:
                assert (image.root / "opt/a.py").is_file()
        assert (oldest.root / "opt/a.py").read_bytes() == b"print(0)"  # still there
        assert len(sandbox._images) == sandbox._IMAGES_KEPT
    with sandbox.image_in_use(images[6]):  # one more: the least recently used unused goes
        assert not oldest.root.exists()
        assert len(sandbox._images) == sandbox._IMAGES_KEPT
    with sandbox.image_in_use(images[5]) as again:  # a kept one is not unpacked again
        assert again.root.exists() and len(sandbox._images) == sandbox._IMAGES_KEPT
