"""Objects as plain files under the state folder, and the links the stack signs for them.

The one-machine edition's counterpart of ``sdk.s3.CorpusObjects`` and ``sdk.runs.ReportObjects``:
one folder per bucket, one file per key (written whole to a temporary name, then renamed, so
a reader never sees half an object; ``put_once`` links the new file in and fails if the key
exists). A presigned S3 link becomes ``<stack>/objects/<bucket>/<key>?expires=<unix>&signature=<hex>``:
an HMAC-SHA-256 under the stack's link key (a file of the state folder) over the bucket, the
key and the expiry, served by the stack on its one port (:func:`serve_link`), refused once
expired or when any part was changed. Keys are checked before they touch the file system:
plain relative names only, never ``..``, absolute paths or hidden parts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from toolcall300.service.domain.corpus import content_type
from toolcall300.service.errors import NotFound, PayloadTooLarge, StoreConflict

#: Where the stack serves signed links.
LINK_PATH = "/objects/"
_PART = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9._@=+-]{0,199}\Z")
_BUCKET = re.compile(r"\A[a-z0-9][a-z0-9.-]{1,62}\Z")

Answer = tuple[int, dict[str, str], bytes]


def key_path(root: Path, key: str) -> Path:
    """The file that holds ``key`` under ``root``; ``ValueError`` for anything but a plain
    relative key (``a/b.json``)."""
    parts = key.split("/")
    if not key or len(parts) > 8 or not all(_PART.match(p) for p in parts):
        raise ValueError(f"not an object key: {key!r}")
    return root.joinpath(*parts)


@dataclass(frozen=True)
class LinkSigner:
    """Signs and checks the stack's object links (``secret``: the state folder's link key)."""

    secret: bytes
    base_url: Callable[[], str]
    clock: Callable[[], float] = field(default=time.time)

    def _mac(self, bucket: str, key: str, expires: int) -> str:
        message = f"{bucket}\n{key}\n{expires}".encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def sign(self, bucket: str, key: str, *, seconds: int) -> str:
        expires = int(self.clock()) + seconds
        path = f"{LINK_PATH}{bucket}/{quote(key, safe='/')}"
        return f"{self.base_url().rstrip('/')}{path}?expires={expires}&signature={self._mac(bucket, key, expires)}"

    def check(self, target: str) -> tuple[str, str] | str:
        """(bucket, key) of a valid unexpired link; otherwise why not (one short reason)."""
        split = urlsplit(target)
        rest = unquote(split.path[len(LINK_PATH) :]) if split.path.startswith(LINK_PATH) else ""
        bucket, _, key = rest.partition("/")
        query = parse_qs(split.query)
        expires_s, signature = query.get("expires", [""])[0], query.get("signature", [""])[0]
        if not (bucket and key and expires_s.isdigit() and signature):
            return "not a signed link"
        expires = int(expires_s)
        if not hmac.compare_digest(self._mac(bucket, key, expires), signature):
            return "the link's signature does not match"
        if self.clock() > expires:
            return "the link has expired"
        return bucket, key


class FileBucket:
    """One bucket as a folder; the counterpart of ``sdk.aws.LazyBucket``."""

    def __init__(self, root: Path, bucket: str, signer: LinkSigner | None = None) -> None:
        if not _BUCKET.match(bucket):
            raise ValueError(f"not a bucket name: {bucket!r}")
        self.root = root / bucket
        self.bucket = bucket
        self._signer = signer

    def _path(self, key: str) -> Path:
        try:
            return key_path(self.root, key)
        except ValueError:
            raise NotFound("no such object", code="not_found") from None

    def put(self, key: str, body: bytes, content_type: str = "") -> None:
        """Write ``key`` whole (replacing it), atomically."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def put_once(self, key: str, body: bytes) -> None:
        """Write ``key`` only if it does not exist (``StoreConflict`` if it does)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.link(tmp, path)  # fails when the key exists: write once
        except FileExistsError:
            raise StoreConflict(f"object {key} already stored") from None
        finally:
            Path(tmp).unlink(missing_ok=True)

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        path = self._path(key)
        try:
            with path.open("rb") as fh:
                if max_bytes is not None and os.fstat(fh.fileno()).st_size > max_bytes:
                    raise PayloadTooLarge(
                        f"{key} is larger than {max_bytes} bytes", code="too_large"
                    )
                return fh.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(f"{self.bucket}: not found", code="not_found") from None

    def read(self, key: str) -> bytes:
        return self.get(key)

    def link(self, key: str, *, seconds: int) -> str:
        if self._signer is None:
            raise ValueError("this bucket signs no links")
        self._path(key)
        return self._signer.sign(self.bucket, key, seconds=seconds)


class FileCorpus(FileBucket):
    """``corpus.ObjectStore`` on files: ``read`` and ``presign`` (a link the stack signs)."""

    def read(self, key: str) -> bytes:
        try:
            return self.get(key)
        except NotFound:
            raise NotFound("the corpus is not published yet", code="corpus_missing") from None

    def presign(self, key: str, *, seconds: int) -> str:
        return self.link(key, seconds=seconds)


class FileReports(FileBucket):
    """``runs.ReportStore`` on files: write-once reports, GET links."""

    def presign(self, method: str, key: str, *, seconds: int) -> str:
        if method != "GET":  # a PUT link is for a Batch job; the local worker writes directly
            raise ValueError("the one-machine edition signs GET links only")
        return self.link(key, seconds=seconds)


def serve_link(
    signer: LinkSigner, buckets: dict[str, FileBucket]
) -> Callable[[str, str, bytes], Answer | None]:
    """The stack's route for its signed links: (method, target, body) -> the answer, or None
    when ``target`` is not a link. Only GET and HEAD; a wrong, changed or expired link is 403."""

    def serve(method: str, target: str, _body: bytes) -> Answer | None:
        if not target.startswith(LINK_PATH):
            return None
        if method not in ("GET", "HEAD"):
            return _error(405, "method_not_allowed", "signed links are read with GET")
        checked = signer.check(target)
        if isinstance(checked, str):
            return _error(403, "link_refused", checked)
        bucket, key = checked
        found = buckets.get(bucket)
        if found is None:
            return _error(404, "not_found", "no such object")
        try:
            data = found.get(key)
        except NotFound:
            return _error(404, "not_found", "no such object")
        headers = {"content-type": content_type(key), "cache-control": "no-store"}
        return 200, headers, b"" if method == "HEAD" else data

    return serve


def _error(status: int, code: str, message: str) -> Answer:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, {"content-type": "application/json"}, body
