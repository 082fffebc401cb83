"""A team's README badge: the latest scored run of one branch and track, drawn as an SVG.

``GET /badges/{team}/{branch}.svg`` (docs/runs-contract.md, "Badges") answers it when the
team has made its badge public (``licences.badge_public``). The branch is matched as
baselines match it (``refs/heads/main`` and ``main`` are one branch, ``short_ref``), among the
team's :data:`BADGE_WINDOW` newest runs: one bounded index read however long the history.
Every text the image draws is escaped here (``xml.sax.saxutils``), so a branch name or any
other input cannot become markup; the SVG draws no script, link or external resource.
Standard library only. This module does not read the stores' settings or authenticate.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from toolcall300.service.domain.runs.baselines import short_ref
from toolcall300.service.domain.runs.record import Run
from toolcall300.service.domain.runs.submission import DEFAULT_TRACK

#: How many of a team's newest runs the badge looks through for its branch's latest scored
#: run: a branch with no scored run among them shows "no scored run".
BADGE_WINDOW = 100
LABEL = "TOOLCALL-300"
#: The branch as the badge's title says it, at most this many characters.
MAX_TITLE_BRANCH = 80
SUFFIX = ".svg"

GREEN, RED, GREY = "#2e7d32", "#c62828", "#616161"
#: A verdict -> (what the badge says, its colour). ``baseline_set`` passed by definition.
VERDICT_LOOK = {
    "pass": ("pass", GREEN),
    "baseline_set": ("pass", GREEN),
    "regression": ("regression", RED),
}


def latest_scored(runs: Iterable[Run], branch: str, track: str) -> Run | None:
    """The newest scored run of ``track`` on ``branch`` (None when there is none)."""
    found = [
        r
        for r in runs
        if r.status == "scored" and r.track == track and short_ref(r.ref) == short_ref(branch)
    ]
    return max(found, key=lambda r: (r.finished_at or "", r.created_at, r.run_id), default=None)


def figure(run: Run) -> str:
    """The run's exact figure as the dashboard shows it: exact (or exact turns) of cases."""
    summary = run.summary or {}
    exact = summary.get("exact", summary.get("exact_turns"))
    cases = summary.get("cases")
    if not isinstance(exact, int) or not isinstance(cases, int):
        return ""
    return f"{exact}/{cases} exact"


def message_of(run: Run | None) -> tuple[str, str]:
    """(what the badge's right half says, its colour) for the branch's latest scored run."""
    if run is None:
        return "no scored run", GREY
    verdict, colour = VERDICT_LOOK.get(str(run.verdict), (str(run.verdict or "scored"), GREY))
    shown = figure(run)
    return (f"{verdict} · {shown}" if shown else verdict), colour


#: What XML 1.0 cannot carry even escaped (control characters, surrogates, U+FFFE/U+FFFF).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(text: str) -> str:
    """``text`` as character data: escaped, and what XML cannot hold at all replaced."""
    return escape(_NOT_XML.sub("\ufffd", text))


def _text_width(text: str) -> int:
    """The drawn width of ``text`` in 11 px Verdana, approximately (narrow and wide letters
    told apart), so the two halves fit their words without measuring fonts."""
    narrow, wide = set("fijlrt.,:;!|/ ()'1"), set("mwMW@%")
    width = 0.0
    for ch in text:
        width += 3.6 if ch in narrow else 9.6 if ch in wide else 7.2 if ch.isupper() else 6.6
    return int(width) + 1


@dataclass(frozen=True)
class Badge:
    """One drawn badge: the SVG text and its strong ETag (a hash of the text)."""

    svg: str

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.svg.encode("utf-8")).hexdigest()[:32] + '"'


def render(label: str, message: str, colour: str, *, title: str) -> Badge:
    """A flat two-part badge (the label on grey, the message on ``colour``), every text
    escaped; ``title`` is its accessible name and tooltip."""
    left, right = _text_width(label) + 12, _text_width(message) + 12
    name = quoteattr(_NOT_XML.sub("\ufffd", f"{label}: {message}"))
    width = left + right
    texts = [(left / 2, label), (left + right / 2, message)]
    drawn = "".join(
        f'<text x="{x:.1f}" y="15" fill="#010101" fill-opacity=".3">{_text(t)}</text>'
        f'<text x="{x:.1f}" y="14">{_text(t)}</text>'
        for x, t in texts
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" '
        f'role="img" aria-label={name}>'
        f"<title>{_text(title)}</title>"
        f'<rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" text-anchor="middle" '
        f'font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">{drawn}</g>'
        "</svg>"
    )
    return Badge(svg)


def badge_for(run: Run | None, *, branch: str, track: str) -> Badge:
    """The badge of ``branch``'s latest scored run of ``track`` (``run``; None: none yet)."""
    message, colour = message_of(run)
    shown = branch if len(branch) <= MAX_TITLE_BRANCH else branch[: MAX_TITLE_BRANCH - 1] + "…"
    on_track = "" if track == DEFAULT_TRACK else f" ({track} track)"
    return render(LABEL, message, colour, title=f"{LABEL} on {shown}{on_track}: {message}")


def branch_of(path_branch: str) -> str | None:
    """The branch a badge path names (``feature/x.svg`` -> ``feature/x``), or None when the
    path does not end in ``.svg`` or names nothing."""
    if not path_branch.endswith(SUFFIX):
        return None
    branch = path_branch[: -len(SUFFIX)]
    return branch or None
