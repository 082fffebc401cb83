"""Baselines: a run that became one carries ``baseline_set_at``; the history is those runs.

Not a second table. Pure functions over runs, plus the verdict rule that decides whether a
scored run becomes its branch's new baseline.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from typing import Any

from toolcall300.service.domain.runs.record import RUN_ID_RE, BaselineKey, Run, RunStore, Verdict
from toolcall300.service.errors import BadRequest


def short_ref(ref: str) -> str:
    """``refs/heads/main`` and ``main`` name the same branch (a baseline is named by branch)."""
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


# ----------------------------------------------------------------------------- baselines


def team_runs(store: RunStore, team: str, *, limit: int = 50) -> list[Run]:
    """Newest first."""
    runs = [Run.from_item(i) for i in store.by_team(team, limit=limit)]
    return sorted(runs, key=lambda r: (r.created_at, r.run_id), reverse=True)[:limit]


def baseline_history(runs: Iterable[Run]) -> dict[str, list[Run]]:
    """name -> the runs that were that baseline, oldest first (earlier ones stay in history)."""
    out: dict[str, list[Run]] = {}
    for run in sorted(
        (r for r in runs if r.baseline_set_at), key=lambda r: (r.baseline_set_at or "", r.run_id)
    ):
        out.setdefault(run.baseline, []).append(run)
    return out


def baselines_document(team: str, runs: Iterable[Run]) -> dict[str, Any]:
    """The contract's ``GET /teams/{team}/baselines`` body."""
    history = baseline_history(runs)
    return {
        "team": team,
        "baselines": {
            name: [
                {
                    "run_id": r.run_id,
                    "ref": r.ref,
                    "commit": r.commit,
                    "track": r.track,
                    "set_at": r.baseline_set_at,
                    "summary": r.summary,
                }
                for r in entries
            ]
            for name, entries in history.items()
        },
    }


def current_baseline(
    runs: Iterable[Run],
    name: str,
    *,
    corpus_sha256: str | None = None,
    exclude: str | None = None,
    track: str = "single",
) -> Run | None:
    """The latest run of ``track`` set as baseline ``name`` on corpus ``corpus_sha256`` (not
    ``exclude``). Baselines are kept per team, name AND track: a baseline of another track is
    never this run's baseline (docs/tracks.md).

    Only like is compared with like: a baseline scored on another corpus version is not this
    run's baseline. A run stored before runs recorded their corpus (``corpus_sha256`` None)
    stays a candidate; comparing its report then says whether it is comparable.
    """
    entries = [
        r
        for r in baseline_history(runs).get(name, [])
        if r.run_id != exclude
        and r.track == track
        and (corpus_sha256 is None or r.corpus_sha256 in (None, corpus_sha256))
    ]
    return entries[-1] if entries else None


#: ``GET /teams/{team}/baselines``: the page size when none is asked, and the most a page
#: holds (docs/runs-contract.md, baselines). The history grows with every baseline set.
BASELINE_PAGE = 50
MAX_BASELINE_PAGE = 200
#: A cursor this service mints is under 120 characters; anything longer is not one.
MAX_CURSOR_CHARS = 256
_SET_AT_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def encode_cursor(team: str, key: BaselineKey) -> str:
    """The opaque ``next`` cursor: where the page ended, as ``(baseline_set_at, run_id)``
    (the time alone would skip baselines set in the same second), bound to ``team``."""
    raw = json.dumps([team, key[0], key[1]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(team: str, cursor: str) -> BaselineKey:
    """The position ``cursor`` names; ``BadRequest`` (``bad_cursor``) for anything this service
    did not mint for ``team``'s listing, so a hostile cursor is a 400, never a 500 nor a read
    of another team's baselines."""
    bad = BadRequest("cursor is not one this listing gave out", code="bad_cursor")
    if len(cursor) > MAX_CURSOR_CHARS or not re.fullmatch(r"[A-Za-z0-9_-]+", cursor):
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError):
        raise bad from None
    if not (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(v, str) for v in value)
        and _SET_AT_RE.match(value[1])
        and RUN_ID_RE.match(value[2])
    ):
        raise bad
    if value[0] != team:
        raise BadRequest("cursor belongs to another team's listing", code="bad_cursor")
    return value[1], value[2]


def baselines_page(
    store: RunStore, team: str, *, limit: int = BASELINE_PAGE, cursor: str | None = None
) -> tuple[list[Run], str | None]:
    """(up to ``limit`` baselines newest first, the cursor of the next page or None): one
    bounded index read of ``limit + 1`` (the extra one only says whether more exist)."""
    if not 1 <= limit <= MAX_BASELINE_PAGE:
        raise BadRequest(f"limit must be 1..{MAX_BASELINE_PAGE}", code="invalid_request")
    after = decode_cursor(team, cursor) if cursor is not None else None
    items = store.baselines_page(team, limit=limit + 1, after=after)
    page = [Run.from_item(i) for i in items[:limit]]
    last = page[-1] if page else None
    more = len(items) > limit and last is not None and last.baseline_set_at is not None
    next_cursor = (
        encode_cursor(team, (str(last.baseline_set_at), last.run_id)) if more and last else None
    )
    return page, next_cursor


#: How many of a team's newest baselines scoring looks through for the one it compares with.
#: Each scoring read the whole history, which grows with every baseline set; a baseline of a
#: name older than the team's 200 newest baselines (of all names) is no longer compared with,
#: and the run on its ref sets a new one (docs/runs-contract.md, baselines).
BASELINE_WINDOW = 200


def recent_baselines(store: RunStore, team: str, *, limit: int = BASELINE_WINDOW) -> list[Run]:
    """The team's ``limit`` most recently set baselines (a bounded read, one index page)."""
    return [Run.from_item(i) for i in store.baselines_page(team, limit=limit, after=None)]


def decide_verdict(*, regressed: bool | None, on_baseline_ref: bool) -> tuple[Verdict, bool]:
    """(verdict, becomes_baseline) from the comparison (None: no baseline yet) and the ref.

    docs/runs-contract.md, verdicts: a run on the baseline's ref that does not regress becomes the new baseline. With
    no baseline yet, such a run is ``baseline_set``; a run on another ref with nothing to
    compare against passes (there is no regression to report) and sets nothing.
    """
    if regressed is None:
        return ("baseline_set", True) if on_baseline_ref else ("pass", False)
    if regressed:
        return "regression", False
    return "pass", on_baseline_ref
