"""An image registry's blob store for tests: config blobs served over real HTTP on 127.0.0.1.

ECR answers GetDownloadUrlForLayer with a presigned S3 link; moto does not implement that
call (``NotImplementedError`` in moto 5), so :func:`moto_download_links` gives moto's ECR the
answer AWS documents (``downloadUrl``, ``layerDigest``), pointing at a :class:`BlobServer`.
moto still authorises the call first (its IAM check runs before the action), so the IAM tier
checks the Runs function's right to it.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest


def config_blob(architecture: str = "amd64", os_name: str = "linux", **extra: Any) -> bytes:
    """An image config (OCI image-spec ``config.md``) naming one platform."""
    doc = {"architecture": architecture, "os": os_name, "config": {}, "rootfs": {}, **extra}
    return json.dumps(doc).encode()


def digest_of(blob: bytes) -> str:
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def single_manifest(
    config: bytes,
    *,
    media: str = "application/vnd.oci.image.manifest.v1+json",
    size: int | None = None,
    digest: str | None = None,
) -> dict[str, Any]:
    """A single image's manifest whose ``config`` descriptor names ``config`` (or lies)."""
    config_media = (
        "application/vnd.oci.image.config.v1+json"
        if "oci" in media
        else "application/vnd.docker.container.image.v1+json"
    )
    return {
        "schemaVersion": 2,
        "mediaType": media,
        "config": {
            "mediaType": config_media,
            "size": len(config) if size is None else size,
            "digest": digest or digest_of(config),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "size": 32654,
                "digest": "sha256:" + "2" * 64,
            }
        ],
    }


class BlobServer:
    """Serves ``blobs[digest]`` at ``/blobs/<digest>``; ``status`` and ``trickle`` (seconds
    between bytes) make it misbehave as a store could."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.status = 200
        self.trickle = 0.0
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                blob = outer.blobs.get(self.path.rsplit("/", 1)[-1].split("?", 1)[0])
                status = outer.status if blob is not None else 404
                body = blob if status == 200 and blob is not None else b"<Error/>"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                # a client that gives up on a slow blob closes the connection, as it should
                with suppress(BrokenPipeError, ConnectionResetError):
                    if outer.trickle:
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(outer.trickle)
                    else:
                        self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def add(self, blob: bytes) -> str:
        digest = digest_of(blob)
        self.blobs[digest] = blob
        return digest

    def url(self, digest: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/blobs/{digest}?X-Amz-Expires=600"

    def __enter__(self) -> BlobServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def moto_download_links(monkeypatch: pytest.MonkeyPatch, server: BlobServer) -> Iterator[None]:
    """moto's ECR answers GetDownloadUrlForLayer with a link to ``server`` (in-process moto or
    a ``ThreadedMotoServer`` in this process)."""
    from moto.core.responses import ActionResult
    from moto.ecr.responses import ECRResponse

    def get_download_url_for_layer(self: Any) -> Any:
        digest = self._get_param("layerDigest")
        return ActionResult({"downloadUrl": server.url(digest), "layerDigest": digest})

    with monkeypatch.context() as patched:
        patched.setattr(ECRResponse, "get_download_url_for_layer", get_download_url_for_layer)
        yield
