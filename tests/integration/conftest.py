"""Integration fixtures: the whole service over real HTTP, started once per test session.

``local_stack`` (session-scoped; keep the name, other suites reuse it) yields the handle
returned by ``toolcall300.service.local.stack.start_local_stack``:

- ``local_stack.url``: the local gateway's base URL (``http://127.0.0.1:<port>``);
- ``local_stack.context``: ``LocalStackContext`` with ``state_dir`` (its state folder: the
  SQLite database, ``objects/<bucket>/``, secrets and keys), ``names`` (physical names by
  template logical id, e.g. ``names["CorpusBucket"]``), ``environment`` (what the functions
  see) and ``webhook_secret`` (the stack's Stripe signing secret);
- ``local_stack.stop()``: called for you at the end of the session.

The stack serves a small corpus written to a temporary directory (the real file names,
manifest shape and licence: ``support.corpus.make_corpus``), so the tests do not depend on
``corpus_private/``.
The stack starts its scoring worker pool with it (``stack.context.extra["run_workers"]``).
``buy_licence(tier, team=None)`` buys a licence through the real webhook and returns its key.

The dashboard's fixtures: ``browser`` (one headless Debian chromium through Playwright,
skipped with the reason when it is absent), ``watched_page`` (a page recording every request
and console error), ``contract_api`` (``support.dashboard.ContractApi`` over real HTTP) and
``dashboard_stack`` (``toolcall300 serve`` in its own process on the real 300-case corpus).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.corpus import deltas_subset, private_corpus, stack_corpus
from support.dashboard import CHROMIUM_ARGS, ContractApi, serve_contract_api, wait_for_serve_url
from support.tiers import unavailable

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from toolcall300.service.local.stack import start_local_stack

    corpus_dir = tmp_path_factory.mktemp("corpus")
    stack_corpus(corpus_dir)
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


# ---------------------------------------------------------------- the dashboard in a browser


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless chromium for the session; skipped (with the reason) when it is absent."""
    import shutil

    executable = shutil.which("chromium")
    if executable is None:
        unavailable("chromium is not installed (apt-get install -y chromium; .ci/run does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def watched_page(browser: Any) -> Iterator[Any]:
    """A fresh context and page that records every request URL and every console error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    pg.requests_seen = []
    pg.console_errors = []
    pg.on("request", lambda r: pg.requests_seen.append(r.url))
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


@pytest.fixture
def contract_api() -> Iterator[ContractApi]:
    with serve_contract_api() as api:
        yield api


@pytest.fixture(scope="module")
def dashboard_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``toolcall300 serve`` in its own process, on a free port, serving the real 300-case
    corpus and parallel track with the real deltas track cut to one case of each form and
    wire shape (``deltas_subset``: a hosted run of the whole track, 49,050 streams, takes
    minutes on a loaded machine and the pages need only its figures). A separate process
    keeps its environment (state folder, names) apart from the in-process ``local_stack``
    the other integration suites share."""
    corpus = private_corpus(tmp_path_factory.mktemp("dash") / "corpus")
    shutil.rmtree(corpus / "deltas")
    deltas_subset(corpus / "deltas")
    command = [sys.executable, "-m", "toolcall300", "serve", "--port", "0", "--corpus", str(corpus)]
    command.append("--no-state")  # each session starts empty (and leaves no state folder)
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        yield wait_for_serve_url(proc, timeout_s=60)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
