"""How a new run is handed to what runs it: one seam, two deployment modes.

``POST /runs`` asks the launcher the composition root chose (``api.wiring.Edition.run_launcher``)
to admit a submission (:meth:`Launcher.admit`, before a run exists or a quota is taken: 400
with the reason otherwise; it stores nothing), to keep what the run needs once the quota is
taken and just before the run is written (:meth:`Launcher.keep`), and hands it each new run
(:meth:`Launcher.launch`). A refused request (a bad callback, the daily cap) so leaves
nothing behind (docs/local-sandbox.md, "The adapter's own files"). On AWS that is
``service.hosted.flow.BatchLauncher`` (images, checked in ECR, submitted to Batch); on a local
stack it is :class:`LocalQueue` (commands with the team's own files, which the worker pool
claims from the runs table).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from toolcall300.service.domain.runs.objects import adapter_files_key, requirements_key
from toolcall300.service.domain.runs.record import ReportStore, Run
from toolcall300.service.domain.runs.submission import Submission
from toolcall300.service.errors import BadRequest, NotFound, StoreConflict, UpstreamUnavailable

#: When the sandbox's probe did not finish (a busy machine), how soon to submit again.
ISOLATION_RETRY_AFTER_S = 30
#: Installs admitted but not yet kept, held in memory (a request refused after admission
#: leaves its install here until pushed out).
MAX_HELD_INSTALLS = 8


def _need_private_filesystem(sub: Submission) -> None:
    """The adapter's own files or image need bubblewrap (its own filesystem view)."""
    from toolcall300.jobs import sandbox

    try:
        iso = sandbox.probe()
    except sandbox.IsolationUnknown as exc:  # a busy machine: ask again, never guess
        raise UpstreamUnavailable(
            f"{exc}; try again shortly",
            code="isolation_unknown",
            headers={"Retry-After": str(ISOLATION_RETRY_AFTER_S)},
        ) from exc
    if not iso.filesystem_private:
        image = sub.adapter["kind"] == "image_archive"
        raise BadRequest(
            "'adapter_image' needs bubblewrap on the stack's machine to be the adapter's /"
            if image
            else f"'adapter_files' need bubblewrap on the stack's machine to appear at "
            f"{sandbox.ADAPTER_MOUNT}; it has none",
            code="adapter_image_unusable" if image else "adapter_files_unusable",
        )


class Launcher(Protocol):
    def admit(self, sub: Submission, *, team: str) -> None:
        """Raise BadRequest (code and reason) when this deployment cannot run ``sub``; keeps
        nothing."""
        ...

    def keep(self, sub: Submission, *, team: str) -> None:
        """Store what the run will need (called once the run is admitted and counted)."""
        ...

    def launch(self, run: Run, *, now: datetime) -> Run:
        """Start a run just created; returns the run as it now stands (never raises for the
        run's own failures: those end the run)."""
        ...


@dataclass(frozen=True)
class LocalQueue:
    """A local stack: runs wait in the runs table for the worker pool (``service.local.worker``),
    which runs adapter commands in the sandbox with the team's own files, or an adapter image
    sent as an archive; never images from a registry."""

    #: Where the adapter's files are kept for the worker (content-addressed, write-once).
    files: ReportStore
    #: Wakes the pool (``api.wiring.Edition.run_queued``): it takes the run now, not at some poll.
    wake: Callable[[], None]

    #: The layers this stack holds (its harness image's, ``TOOLCALL300_HARNESS_IMAGE``), which
    #: an ``adapter_image`` may leave out; None when it holds none.
    held: Callable[[], Any] = lambda: None
    #: Requirements installed at admission, by where they will be kept (``requirements_key``).
    installed: dict[str, bytes] = field(default_factory=dict)

    def admit(self, sub: Submission, *, team: str) -> None:
        """The local worker's own rules (docs/local-sandbox.md): the files unpack, the command
        can run with them; an image is read and checked whole (``jobs.adapter_image``)."""
        if sub.adapter["kind"] == "image":  # no AWS Batch here to run images on
            raise BadRequest(
                "a local stack runs 'adapter_cmd' or 'adapter_image', not images from a registry",
                code="image_not_supported",
            )
        from toolcall300.jobs import adapter_files, adapter_image, sandbox  # a local stack's

        names = None
        if sub.files is not None:
            _need_private_filesystem(sub)
        if sub.adapter["kind"] == "image_archive":
            try:
                image = adapter_image.read_image(sub.files or b"", self.held())
                adapter_image.check(image)
            except adapter_image.ImageRefused as exc:
                raise BadRequest(f"'adapter_image': {exc}", code="adapter_image_unusable") from exc
            return
        if sub.files is not None:
            try:
                names = adapter_files.listing(sub.files)
                adapter_files.check_unpacks(sub.files)  # as the worker will: no late failure
            except adapter_files.FilesRefused as exc:
                raise BadRequest(f"'adapter_files': {exc}", code="adapter_files_unusable") from exc
        problem = sandbox.command_problem(sub.adapter["command"], files=names)
        if problem is not None:
            raise BadRequest(problem, code="adapter_cmd_unusable")
        if sub.files is not None:
            self._install(sub, team)

    def _install(self, sub: Submission, team: str) -> None:
        """The folder's requirements file, installed now (an unprivileged pip, wheels only,
        hashes required) and held for :meth:`keep`, unless the team has this install already
        (the same requirements by their canonical digest, whichever folder carried them):
        then pip does not run again. A refusal is a 400 naming the line or what pip said
        (docs/local-sandbox.md, "The adapter's dependencies")."""
        from toolcall300.jobs import adapter_requirements

        wanted = adapter_requirements.requirements_of(sub.files or b"")
        if wanted is None:
            return
        try:
            digest = adapter_requirements.digest(wanted)
            key = requirements_key(team, digest)
            if key not in self.installed and not self._kept(key):
                self.installed[key] = adapter_requirements.install(wanted)
        except adapter_requirements.RequirementsRefused as exc:
            raise BadRequest(
                f"'adapter_files': {exc}", code="adapter_requirements_unusable"
            ) from exc
        sub.adapter["files"]["requirements"] = True
        sub.adapter["files"]["requirements_sha256"] = digest
        while len(self.installed) > MAX_HELD_INSTALLS:  # admitted, never kept (a refusal after)
            self.installed.pop(next(iter(self.installed)))

    def _kept(self, key: str) -> bool:
        """Whether an install is kept already (written once, never changed: it is reused)."""
        try:
            self.files.get(key)
        except NotFound:
            return False
        return True

    def keep(self, sub: Submission, *, team: str) -> None:
        """The files (and the requirements they carry, installed), kept for the worker before
        the run that names them exists."""
        if sub.files is not None:
            key = adapter_files_key(team, sub.adapter["files"]["sha256"])
            with suppress(StoreConflict):  # content-addressed: the same archive is already kept
                self.files.put_once(key, sub.files)
            digest = sub.adapter["files"].get("requirements_sha256")
            installed = requirements_key(team, digest) if digest else None
            packed = self.installed.pop(installed, None) if installed else None
            if installed and packed is not None:
                with suppress(StoreConflict):  # the same requirements installed meanwhile
                    self.files.put_once(installed, packed)

    def launch(self, run: Run, *, now: datetime) -> Run:
        self.wake()
        return run
