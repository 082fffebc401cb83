"""``toolcall300 serve``: the whole service on one machine, from one command.

The one-machine edition (docs/local-stack.md): the same Lambda handlers behind the local HTTP
gateway (``service.local.gateway``), on the local adapter set instead of AWS: a SQLite
database, files, secrets and keys under one state folder (``statefolder.folder``; ``serve``
uses ``.toolcall300/state``, ``--no-state`` a temporary folder removed at stop). The names
the functions' settings carry are read from ``template.yaml``; the secrets the template
declares become files of the folder, generated once; ``corpus_private/`` is copied in.
Nothing AWS-shaped runs or listens: the stack opens one TCP port, which also serves the
object links it signs (``statefolder.files``). The stack builds one ``api.wiring.Edition``
and hands that object to its routes (each function's ``dependency_overrides``, ``api.deps``)
and to the scoring worker pool beside the gateway (``service.local.worker``), which it wakes
(``LocalAdapters.wake``); the edition is closed after both have stopped, never under them.
This module is the edition's composition root: it alone of ``service/local`` reads
``api.wiring`` (tests/core/test_import_rules.py), and everything it starts is one
``ExitStack``, closed in reverse by ``stop()``. :func:`start_local_stack` is
the programmatic form the integration tests use. One stack per process at a time: the handlers read their settings
from ``os.environ``, which ``stop()`` restores.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser

#: The API key the local stack's service uses; its calls reach ``sdk.stripe_dev``, never Stripe.
DEV_STRIPE_API_KEY = "sk_test_toolcall300_local_dev_only"
LOCAL_PREFIX = "tc300-local"
#: Fake credentials and region (moto in the tests; on the local stack they make sure that a
#: stray AWS call can never sign as the operator's own AWS account).
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
#: What a running local stack sets in ``os.environ`` to select its one-machine edition in
#: ``api.wiring.choose`` (the state folder, its own URL, adapter_cmd allowed): code in the
#: same process that means to reach AWS (or moto) must not see them.
LOCAL_EDITION_ENV = ("TOOLCALL300_STATE_DIR", "TOOLCALL300_PUBLIC_URL", "TOOLCALL300_LOCAL_STACK")
#: The one-machine edition's own configuration: where it differs from AWS's, a default the
#: operator's variable wins over, as over template.yaml's (``serve`` prints each value and
#: where it came from: ``one machine``).
EDITION_DEFAULTS = {
    "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon here
    "POWERTOOLS_METRICS_DISABLED": "true",  # EMF lines would only be noise on a terminal
    "POWERTOOLS_DEV": "false",
}
#: What makes the edition what it is, never the operator's to change.
_EDITION_FIXED = {
    "TOOLCALL300_LOCAL_STACK": "true",  # accept adapter_cmd (docs/hosted-scoring.md: local only)
    # Nothing AWS-shaped runs here: a stray boto3 call meets a closed port (the discard port),
    # never a real endpoint.
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def _whole_number(text: str, low: int, high: int, what: str) -> int:
    """An integer flag from ``low`` to ``high``; anything else is a usage error, never a
    traceback (``-1``) or a value the layer below would reduce (a port of ``99999``)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a {what}") from None
    if not low <= number <= high:
        raise argparse.ArgumentTypeError(f"{number} is not a {what} ({low} to {high})")
    return number


def port_number(text: str) -> int:
    """``--port``: 0 (any free port) to 65535."""
    return _whole_number(text, 0, 65535, "port number")


def process_count(text: str) -> int:
    """``--processes``: 1 to 64."""
    return _whole_number(text, 1, 64, "number of processes")


def repo_root() -> Path:
    """The checkout this package runs from (where template.yaml and functions/ are)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "template.yaml").exists() and (parent / "functions").is_dir():
            return parent
    return Path.cwd()


class StackError(Exception):
    """The stack cannot start as asked; the message is the one line ``serve`` prints."""


@dataclass
class LocalStackContext:
    """What a background service needs to know about the running stack."""

    root: Path
    url: str
    state_dir: Path
    names: dict[str, str]
    environment: dict[str, str]
    template: dict[str, Any]
    webhook_secret: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Folders that hold labels or state: the workers refuse to start if a sandbox shows one.
    protected: tuple[Path, ...] = ()
    restored: bool = False  # the state folder held a database already
    #: The configuration in effect, name -> (value, where from): ``serve`` prints it.
    settings: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The stack's ``api.wiring.Edition``: the one its routes and its worker pool use.
    edition: Any = None


def default_state_dir(root: Path) -> Path:
    return root / ".toolcall300" / "state"


def _check_corpus(corpus_dir: Path, *, explicit: bool) -> bool:
    """Whether there is a corpus to upload; a ``--corpus`` that is not one is a StackError."""
    if (corpus_dir / "manifest.json").is_file():
        return True
    if explicit:
        raise StackError(
            f"--corpus {corpus_dir}: no manifest.json there; give a corpus folder as "
            "`toolcall300 generate --out` or `toolcall300 download --out` writes it"
        )
    return False


@dataclass
class LocalStack:
    """A running local stack: ``.url`` to talk to, ``.stop()`` to end it."""

    url: str
    context: LocalStackContext
    _stops: contextlib.ExitStack

    def stop(self) -> None:
        """Close what the start opened, last first; ``ExitStack`` goes on past a failed close,
        so one failed stop never keeps the rest running. A second call does nothing."""
        with contextlib.suppress(Exception):
            self._stops.close()


def layered_environment(
    template_env: dict[str, str],
    owned: frozenset[str],
    operator: dict[str, str],
    edition: dict[str, str] | None = None,
) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The functions' environment with the operator's variables over template.yaml's defaults
    and the edition's own (``edition``: :data:`EDITION_DEFAULTS`), and what was used (name ->
    (value, source)) for every variable the operator may set.

    The names of the stack's own resources (``owned``: tables, buckets, secrets, keys) are
    the stack's; everything else the template sets (``REPORT_KEY_GENERATIONS``,
    ``DOWNLOADS_PER_DAY``, the log level) or the edition sets is a default the operator's
    variable overrides, as a parameter override does on AWS (docs/local-stack.md,
    "Configuration").

    >>> env, used = layered_environment({"T": "t", "N": "1"}, frozenset({"T"}), {"T": "x", "N": "2"})
    >>> env, used
    ({'T': 't', 'N': '2'}, {'N': ('2', 'yours')})
    >>> layered_environment({}, frozenset(), {"P": "no"}, {"P": "yes", "Q": "1"})[1]
    {'P': ('no', 'yours'), 'Q': ('1', 'one machine')}
    """
    env = {**(edition or {}), **template_env}
    used: dict[str, tuple[str, str]] = {}
    for defaults, source in (((edition or {}), "one machine"), (template_env, "template.yaml")):
        for name, value in sorted(defaults.items()):
            if name in owned:
                continue
            env[name] = operator.get(name, value)
            used[name] = (operator[name], "yours") if name in operator else (value, source)
    return env, used


def _check_settings() -> None:
    """Every function's settings build from the environment now, or a StackError naming the
    variable: an operator's bad value is refused at start, not at the first request."""
    from pydantic import ValidationError
    from pydantic_settings import BaseSettings

    from toolcall300.service import settings as conf

    kinds: tuple[type[BaseSettings], ...] = (
        conf.WebhookSettings, conf.CorpusSettings, conf.ArgcheckSettings, conf.RunsSettings,
        conf.CheckLedgerSettings, conf.LocalWorkerSettings,
    )  # fmt: skip
    for kind in kinds:
        try:
            kind()
        except ValidationError as exc:
            error = exc.errors()[0]
            prefix = kind.model_config.get("env_prefix") or ""
            name = (prefix + str(error["loc"][0] if error["loc"] else "")).upper()
            raise StackError(f"{name}: {error['msg']}") from None


def _restore_environment(saved: dict[str, str]) -> None:
    """Undo what a stack set (endpoint, names), so a later stack in this process starts clean."""
    os.environ.clear()
    os.environ.update(saved)


def start_local_stack(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    corpus_dir: Path | None = None,
    root: Path | None = None,
    background: bool = True,
    state_dir: Path | None = None,
    dev_checkout: bool | None = None,
    processes: int = 1,
) -> LocalStack:
    """Open the state folder (``None``: a temporary one, removed at stop), copy the corpus
    in, serve the functions. Raises StackError (having stopped what it started).

    ``dev_checkout``: serve the free checkout page (``service.local.dev_checkout``, which pays
    any session, so anyone who reaches it gets a licence); None serves it on a loopback
    ``host`` only, so a stack bound to a public address gives nothing away unless the
    operator says so (``serve --dev-checkout``). ``processes``: how many processes serve
    the HTTP port on the one database (``serve --processes``; this one and its siblings)."""
    stops = contextlib.ExitStack()
    free = is_loopback(host) if dev_checkout is None else dev_checkout
    try:
        return _start(
            host, port, corpus_dir, root or repo_root(), background, state_dir, stops, free,
            processes,
        )  # fmt: skip
    except BaseException:
        LocalStack("", LocalStackContext(Path("."), "", Path("."), {}, {}, {}), stops).stop()
        raise


def _start(
    host: str,
    port: int,
    corpus_arg: Path | None,
    root: Path,
    background: bool,
    state_arg: Path | None,
    stops: contextlib.ExitStack,
    free_checkout: bool = True,
    processes: int = 1,
) -> LocalStack:
    saved_env = dict(os.environ)
    stops.callback(lambda: _restore_environment(saved_env))
    # Before the handlers' modules load: observability reads POWERTOOLS_TRACE_DISABLED at import
    # (an untraced stack never loads the X-Ray SDK).
    os.environ.update(
        {**layered_environment({}, frozenset(), saved_env, EDITION_DEFAULTS)[0], **_EDITION_FIXED}
    )
    from toolcall300.service.api import wiring as ports
    from toolcall300.service.local import gateway
    from toolcall300.service.local.provision import stack_owned

    corpus_dir = corpus_arg if corpus_arg is not None else root / "corpus_private"
    has_corpus = _check_corpus(corpus_dir, explicit=corpus_arg is not None)
    state_dir, was_restored = _hold_state(state_arg, stops)
    template, made, webhook = _provision(state_dir, root)
    functions_env, used = layered_environment(
        made.environment, stack_owned(template), saved_env, EDITION_DEFAULTS
    )
    os.environ.update({**FAKE_AWS_ENV, **_EDITION_FIXED, **functions_env})
    os.environ["TOOLCALL300_STATE_DIR"] = str(state_dir)
    _check_settings()
    routes = gateway.bind_routes(root, template)
    server = gateway.GatewayServer((host, port), routes)
    stops.callback(server.server_close)
    url = f"http://{host}:{server.server_address[1]}"
    os.environ["TOOLCALL300_PUBLIC_URL"] = url  # where the signed object links point
    edition = ports.choose()  # from the environment just set: the state folder's edition
    stops.callback(edition.close)  # closed last: after the pool and the server have stopped
    if has_corpus:
        bucket = edition.adapters.corpus(made.names["CorpusBucket"])
        _copy_corpus(corpus_dir, bucket, was_restored)
    sibling = {"root": str(root), "names": made.names, "free_checkout": free_checkout}
    local = _serve(server, edition, sibling, stops)
    if processes > 1:  # local.wake is looked up at each wake: the pool sets it below
        stops.callback(start_siblings(processes - 1, server.socket, sibling, lambda: local.wake()))
    protected = tuple(p for p in (corpus_dir, state_dir) if p is not None)
    context = LocalStackContext(
        root, url, state_dir, made.names, made.environment, template,
        webhook_secret=str(webhook["current"]), protected=protected, restored=was_restored,
        settings=used, extra={"sibling": sibling}, edition=edition,
    )  # fmt: skip
    if background:
        _start_workers(context, edition, stops)
    return LocalStack(url, context, stops)


def _provision(state_dir: Path, root: Path) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """template.yaml, the stack's names for its resources, and the secrets it declares made
    files of the state folder (generated once, kept across restarts); and the webhook's."""
    from toolcall300.service.local.cfn import load_template
    from toolcall300.service.local.provision import local_secrets, restored
    from toolcall300.service.statefolder.folder import StateFolder

    folder = StateFolder(state_dir)
    folder.make_keys()
    template = load_template(root / "template.yaml")
    made = restored(template, prefix=LOCAL_PREFIX)
    for name, value in local_secrets(template, made.names, DEV_STRIPE_API_KEY).items():
        folder.put_secret(name, value, replace=False)
    return template, made, folder.secret(made.names["StripeWebhookSecret"])


def _serve(server: Any, edition: Any, sibling: dict[str, Any], stops: contextlib.ExitStack) -> Any:
    """Serve the routes, the signed object links and (when ``free_checkout``) the dev checkout
    page on ``server`` from a thread of this process, every route on ``edition`` (set on each
    function's resolver: ``dependency_overrides[deps.edition]``); its adapters. The same in
    the stack's first process and in each of its siblings."""
    from toolcall300.service.api import deps
    from toolcall300.service.api.resolver import CONSTANT_DOCUMENTS
    from toolcall300.service.local import dev_checkout, documents, gateway
    from toolcall300.service.sdk import stripe_dev
    from toolcall300.service.statefolder.files import serve_link
    from toolcall300.service.statefolder.folder import LocalAdapters

    local = edition.adapters
    assert isinstance(local, LocalAdapters)
    names, routes = sibling["names"], server.routes
    for app in {id(b.app): b.app for b in routes if b.app is not None}.values():
        app.dependency_overrides[deps.edition] = lambda: edition
    url = os.environ["TOOLCALL300_PUBLIC_URL"]
    webhook = local.secret_json(names["StripeWebhookSecret"])
    dev_stripe, replaced = stripe_dev.install(url + dev_checkout.PATH, local.checkout_sessions)
    stops.callback(lambda: stripe_dev.uninstall(replaced))
    checkout = dev_checkout.local_routes(
        dev_stripe,
        secret=str(webhook["current"]),
        forward=lambda method, target, headers, body: gateway.invoke(
            routes, method=method, target=target, headers=headers, body=body, source_ip="127.0.0.1"
        ),
    )
    links = serve_link(local.signer, local.buckets([names["CorpusBucket"], names["ReportsBucket"]]))
    free = bool(sibling["free_checkout"])
    server.local_routes = lambda method, target, body: (
        links(method, target, body) or (checkout(method, target, body) if free else None)
    )
    server.application = documents.ConstantDocuments(
        server.application, documents.routed(routes, CONSTANT_DOCUMENTS)
    )
    thread = threading.Thread(target=server.serve_forever, name="tc300-gateway", daemon=True)
    thread.start()
    stops.callback(server.server_close)
    stops.callback(server.shutdown)
    return local


#: A sibling: one more process serving the stack's listening socket (``serve --processes``).
_SIBLING = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from toolcall300.service.local.stack import serve_sibling; serve_sibling(sys.argv[2:])"
)


def start_sibling(
    sock: Any, sibling: dict[str, Any], *, wake_fd: int, life_fd: int
) -> subprocess.Popen[bytes]:
    """One more process serving ``sock`` with the stack's routes on the same state folder (its
    environment is this one's: the stack's). It takes no lock and runs no scoring worker: a run
    it queues wakes the first process's pool through ``wake_fd``; it stops when ``life_fd``
    reads end of file (the first process stopped or died). Tests give it a socket of its own
    to reach one process and then the other."""
    package_parent = str(Path(__file__).resolve().parents[3])
    fds = [sock.fileno(), wake_fd, life_fd]
    return subprocess.Popen(
        [sys.executable, "-c", _SIBLING, package_parent, json.dumps(sibling), *map(str, fds)],
        pass_fds=fds,
        stdin=subprocess.DEVNULL,
        cwd=sibling["root"],
        env=dict(os.environ),
    )


def start_siblings(
    count: int, sock: Any, sibling: dict[str, Any], wake: Callable[[], None]
) -> Callable[[], None]:
    """``count`` siblings serving ``sock`` (the first process's listening socket: the kernel
    gives each connection to one process), and the thread that calls ``wake`` (the worker
    pool's) when a sibling queues a run. Returns their stop: the life pipe closed, then each
    waited for."""
    wake_r, wake_w = os.pipe()
    life_r, life_w = os.pipe()
    procs = [start_sibling(sock, sibling, wake_fd=wake_w, life_fd=life_r) for _ in range(count)]
    os.close(wake_w)
    os.close(life_r)

    def wakes() -> None:
        with contextlib.suppress(OSError):
            while os.read(wake_r, 64):  # end of file: every sibling has gone
                wake()
        os.close(wake_r)

    threading.Thread(target=wakes, name="tc300-sibling-wakes", daemon=True).start()

    def stop() -> None:
        os.close(life_w)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    return stop


def serve_sibling(argv: list[str]) -> None:
    """A sibling's main (:func:`start_sibling`): serve the inherited socket until the life
    pipe ends, then stop what it started."""
    sibling, (listen_fd, wake_fd, life_fd) = json.loads(argv[0]), map(int, argv[1:4])
    from toolcall300.service.api import wiring as ports
    from toolcall300.service.local import gateway
    from toolcall300.service.local.cfn import load_template

    os.set_blocking(wake_fd, False)

    def wake() -> None:
        with contextlib.suppress(BlockingIOError):  # a full pipe: the pool is woken already
            os.write(wake_fd, b"w")

    root = Path(sibling["root"])
    routes = gateway.bind_routes(root, load_template(root / "template.yaml"))
    server = gateway.GatewayServer(("127.0.0.1", 0), routes, sock=socket.socket(fileno=listen_fd))
    with contextlib.ExitStack() as stops:
        local = _serve(server, ports.choose(), sibling, stops)  # the stack's environment
        local.wake = wake
        with contextlib.suppress(KeyboardInterrupt, OSError):
            os.read(life_fd, 1)
    # The database is left open, to the operating system: SQLite's last connection to close
    # checkpoints and deletes the WAL and its index, and a sibling must never be the one to
    # do that under the first process (whose locks a stray close of the file in that process
    # can drop, so the test is not reliable); the first process, or the next start, does it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _hold_state(state_arg: Path | None, stops: contextlib.ExitStack) -> tuple[Path, bool]:
    """The state folder, held for this stack (``None``: a temporary one, removed at stop),
    and whether it held a database already."""
    from toolcall300.service.local import state

    if state_arg is None:
        state_dir = Path(tempfile.mkdtemp(prefix="tc300-state-"))
        stops.callback(lambda: shutil.rmtree(state_dir, ignore_errors=True))
    else:
        state_dir = state_arg
    try:
        held = state.open_state(state_dir)
    except state.StateInUse as exc:
        raise StackError(f"--state {exc}; stop it first, or give another --state") from None
    except state.LegacyState as exc:
        raise StackError(f"--state {exc}") from None
    stops.callback(lambda: state.close_state(held))
    return state_dir, state_arg is not None and state.has_state(state_dir)


def _copy_corpus(corpus_dir: Path, objects: Any, was_restored: bool) -> None:
    """Copy the corpus into the edition's corpus bucket, unless a restored folder holds it."""
    from toolcall300.service.sdk.s3 import upload_corpus

    try:
        if not (was_restored and _same_manifest(objects, corpus_dir)):
            upload_corpus(corpus_dir, objects)
    except (ValueError, OSError) as exc:
        raise StackError(f"--corpus {corpus_dir}: {exc}") from exc


def _start_workers(context: LocalStackContext, edition: Any, stops: contextlib.ExitStack) -> None:
    """The scoring worker pool on the edition's stores (the routes' edition), woken through
    its adapters after each queued run (``Edition.run_queued``), with the settings of
    ``LocalWorkerSettings`` (workers, runs per team at once, seconds per run, memory)."""
    from toolcall300.jobs import harness, sandbox
    from toolcall300.service.local import worker
    from toolcall300.service.settings import LocalWorkerSettings

    conf, local = edition.runs_settings, edition.settings(LocalWorkerSettings)
    deps = worker.WorkerDeps(
        store=edition.runs,
        reports=edition.report_store,
        corpus=worker.cached_corpus(edition.corpus_objects.read),
        track_corpus=worker.cached_track_corpus(edition.corpus_objects.read),
        notify=edition.run_notifier,
        lease_s=local.lease_s,
        job_limits=harness.Limits(total_timeout=float(local.run_timeout_s)),
        sandbox_limits=sandbox.Limits(memory_bytes=local.adapter_memory_mb * 2**20),
        max_attempts=conf.max_attempts,
        team_limit=local.team_runs,
        adapter_files=edition.report_store.get,
        held_layers=lambda: sandbox.held_layers(local.harness_image),
    )
    stops.callback(worker.start_local(context, deps, workers=local.workers))
    edition.adapters.wake = lambda: context.extra["run_workers"].wake()
    stops.callback(setattr, edition.adapters, "wake", lambda: None)


def _same_manifest(objects: Any, corpus_dir: Path) -> bool:
    """The restored corpus is the one on disk (so the upload is not recorded again)."""
    try:
        return bool(objects.read("manifest.json") == (corpus_dir / "manifest.json").read_bytes())
    except Exception:  # not there (a bucket emptied by hand): upload it
        return False


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgParser(prog="toolcall300 serve", description="Run the whole service locally.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port_number, default=8300, help="0 to 65535 (0: any free)")
    parser.add_argument(
        "--dev-checkout",
        action="store_true",
        help="serve the free dev checkout page even on a --host that is not loopback "
        "(anyone who reaches it gets a licence)",
    )
    parser.add_argument(
        "--corpus", type=Path, default=None, help="corpus directory (default corpus_private/)"
    )
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        help="state folder: keys, runs and reports survive a restart (default .toolcall300/state)",
    )
    parser.add_argument(
        "--migrate",
        action="store_true",
        help="first bring the state folder's moto recording (an earlier version's) into its database",
    )
    parser.add_argument(
        "--no-state", action="store_true", help="keep state in a temporary folder (removed at exit)"
    )
    parser.add_argument(
        "--processes",
        type=process_count,
        default=os.cpu_count() or 1,
        help="processes serving HTTP on the one database (default: the cores, "
        f"{os.cpu_count() or 1} here)",
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    root = repo_root()
    state_dir = None if args.no_state else (args.state or default_state_dir(root))
    if args.migrate and state_dir is not None and not _migrate(state_dir, root, stdout, stderr):
        return EXIT_ERROR
    try:
        stack = start_local_stack(
            host=args.host,
            port=args.port,
            corpus_dir=args.corpus,
            root=root,
            state_dir=state_dir,
            dev_checkout=True if args.dev_checkout else None,
            processes=args.processes,
        )
    except StackError as exc:
        stderr.write(f"toolcall300 serve: {exc}\n")
        return EXIT_ERROR
    except OSError as exc:
        stderr.write(f"toolcall300 serve: cannot start: {exc}\n")
        return EXIT_ERROR
    _print_banner(args, stack, state_dir, stdout)
    stdout.flush()
    _serve_until_stopped(stack, stderr)
    return EXIT_OK


def _migrate(state_dir: Path, root: Path, stdout: TextIO, stderr: TextIO) -> bool:
    """``serve --migrate``: an earlier version's moto recording into ``state_dir``'s database
    first (``migrate``); False, the reason written to ``stderr``, when it cannot."""
    from toolcall300.service.local import migrate
    from toolcall300.service.local.cfn import load_template

    try:
        copied = migrate.migrate(state_dir, load_template(root / "template.yaml"))
    except migrate.MigrationError as exc:
        stderr.write(f"toolcall300 serve --migrate: {exc}\n")
        return False
    moved = ", ".join(f"{n} {what}" for what, n in copied.items())
    stdout.write(f"migrated {state_dir}: {moved}\n")
    return True


def _print_banner(
    args: argparse.Namespace, stack: LocalStack, state_dir: Path | None, stdout: TextIO
) -> None:
    """Where the stack listens, how to buy a test licence and download, and what it runs with."""
    env = os.environ.get
    kept = (
        f"state in {state_dir} ({'kept from the last start' if stack.context.restored else 'new'}); "
        "`--no-state` keeps it in a temporary folder"
        if state_dir is not None
        else f"state in {stack.context.state_dir}, removed at exit"
    )
    stdout.write(
        f"TOOLCALL-300 local stack at {stack.url}\n"
        f"  OpenAPI:      {stack.url}/openapi.json\n"
        f"  dashboard:    {stack.url}/dashboard (sign in with a team licence key)\n"
        + (
            f"  buy a test licence (POST /checkout, then the dev checkout page pays it; prints "
            f"the key):\n"
            f"    toolcall300 dev purchase --api {stack.url} --tier single\n"
            f"    toolcall300 dev purchase --api {stack.url} --tier team --team 'My team'\n"
            if args.dev_checkout or is_loopback(args.host)
            else f"  the free dev checkout page is not served on {args.host} (not loopback; "
            "--dev-checkout serves it); issue licences with toolcall300 admin licence issue\n"
        )
        + f"  then: TOOLCALL300_LICENCE=<key> toolcall300 download --api {stack.url} --out corpus/\n"
        f"  HTTP: {args.processes} process(es) on the one database (--processes)\n"
        f"  hosted runs: {env('TOOLCALL300_WORKERS', '2')} workers, "
        f"{env('TOOLCALL300_TEAM_RUNS', '1')} run(s) per team at once, "
        f"{env('TOOLCALL300_RUN_TIMEOUT_S', '900')} s per run; adapters run in the sandbox "
        "(docs/local-sandbox.md)\n"
        f"  settings (yours over the defaults of template.yaml and of one machine): "
        f"{_settings_line(stack.context)}\n"
        f"Ctrl-C stops it ({kept}).\n"
    )


def _serve_until_stopped(stack: LocalStack, stderr: TextIO) -> None:
    """Serve until Ctrl-C (or SIGTERM, read as Ctrl-C), then stop the stack once, whole."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main else None  # as Ctrl-C does
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        if main:  # the stop takes seconds; a second Ctrl-C must not leave it half done
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            stderr.write("toolcall300 serve: stopping (ending running runs)\n")
        stack.stop()
        if main:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _settings_line(context: LocalStackContext) -> str:
    """``NAME=value (yours|template.yaml|one machine)``, comma-separated: what ``serve``
    configured."""
    return ", ".join(f"{k}={v} ({src})" for k, (v, src) in context.settings.items())


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt
