"""Baselines: a run that became one carries ``baseline_set_at``; the history is those runs.

Not a second table. Pure functions over runs, plus the verdict rule that decides whether a
scored run becomes its branch's new baseline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolcall300.service.domain.runs.record import Run, RunStore, Verdict


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
) -> Run | None:
    """The latest run set as baseline ``name`` on corpus ``corpus_sha256`` (not ``exclude``).

    Only like is compared with like: a baseline scored on another corpus version is not this
    run's baseline. A run stored before runs recorded their corpus (``corpus_sha256`` None)
    stays a candidate; comparing its report then says whether it is comparable.
    """
    entries = [
        r
        for r in baseline_history(runs).get(name, [])
        if r.run_id != exclude
        and (corpus_sha256 is None or r.corpus_sha256 in (None, corpus_sha256))
    ]
    return entries[-1] if entries else None


def team_baselines(store: RunStore, team: str) -> list[Run]:
    """Every run of ``team`` that became a baseline (the whole history, not a recent page)."""
    return [Run.from_item(i) for i in store.baselines(team)]


#: How many of a team's newest baselines scoring looks through for the one it compares with.
#: Each scoring read the whole history, which grows with every baseline set; a baseline of a
#: name older than the team's 200 newest baselines (of all names) is no longer compared with,
#: and the run on its ref sets a new one (docs/runs-contract.md, baselines).
BASELINE_WINDOW = 200


def recent_baselines(store: RunStore, team: str, *, limit: int = BASELINE_WINDOW) -> list[Run]:
    """The team's ``limit`` most recently set baselines (a bounded read, one index page)."""
    return [Run.from_item(i) for i in store.recent_baselines(team, limit=limit)]


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
