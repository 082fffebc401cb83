"""Integration fixtures: the whole service over real HTTP, started once per test session.

``local_stack`` (session-scoped; keep the name, other suites reuse it) yields the handle
returned by ``toolcall300.service.local.stack.start_local_stack``:

- ``local_stack.url``: the local gateway's base URL (``http://127.0.0.1:<port>``);
- ``local_stack.context``: ``LocalStackContext`` with ``aws_endpoint`` (moto's server),
  ``names`` (physical names by template logical id, e.g. ``names["RunsTable"]``),
  ``environment`` (what the functions see) and ``webhook_secret`` (the dev signing secret);
- ``local_stack.stop()``: called for you at the end of the session.

The stack serves a small corpus written to a temporary directory (the real file names and
manifest shape, see ``make_corpus``), so the tests do not depend on ``corpus_private/``.
Background services registered through ``localstack.register_background`` start with it.
``buy_licence(tier, team=None)`` buys a licence through the real webhook and returns its key.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CASES = [
    {
        "id": f"tc300-{i:04d}",
        "category": "truncated",
        "text": "{",
        "tools": [],
        # a full case (docs/case-format.md), so hosted runs on this stack can be scored
        "expected_kind": "unrecoverable",
        "expected": None,
    }
    for i in range(1, 6)
]
RATIONALE = [{"id": f"tc300-{i:04d}", "rule": 11, "rationale": f"why {i}"} for i in range(1, 6)]


def make_corpus(directory: Path) -> dict[str, Any]:
    """Write a small corpus with the real file names and manifest shape; return the manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "toolcall300.jsonl": "".join(json.dumps(c) + "\n" for c in CASES).encode(),
        "rationale.jsonl": "".join(json.dumps(r) + "\n" for r in RATIONALE).encode(),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    manifest = {
        "version": "test-1",
        "files": [
            {"name": n, "sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)}
            for n, d in files.items()
        ],
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from toolcall300.service.local.stack import start_local_stack

    corpus_dir = tmp_path_factory.mktemp("corpus")
    make_corpus(corpus_dir)
    stack = start_local_stack(port=0, corpus_dir=corpus_dir)
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def buy_licence(local_stack: Any) -> Callable[..., str]:
    """Buy a licence through ``toolcall300 dev purchase`` and return the key (its last line)."""
    from toolcall300.client import dev as devtools

    def buy(tier: str = "single", team: str | None = None) -> str:
        argv = [
            "purchase",
            "--api",
            local_stack.url,
            "--tier",
            tier,
            *(["--team", team] if team else []),
        ]
        out, err = io.StringIO(), io.StringIO()
        assert devtools.run(devtools.parse_args(argv), out, err) == 0, err.getvalue()
        return out.getvalue().splitlines()[-1]

    return buy
