"""The team dashboard page: one self-contained HTML document and the strict CSP that pins it.

``static/dashboard.html`` carries three markers, ``{{style}}``, ``{{script}}`` and
``{{facts}}``; the CSS and JS files are inlined there, and the server's facts the page needs
(the categories in order, each failure reason in words, each track's categories and which
way each of its gated figures is better) go in as one JSON data block, so the script never
restates them; and the Content-Security-Policy allows exactly those two blocks by their
sha256 and nothing else: no other script or style, no external host, no form
submission, no framing, and network calls to this API's own origin only. The page loads
without a key; every data call it makes carries ``Authorization: Bearer`` (runs contract).
Standard library only. This module does not authenticate or serve data: it builds one page.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from toolcall300.jobs.failures import FAILURE_TEXT
from toolcall300.scoring.report import BETTER_WHEN
from toolcall300.spec import CATEGORIES, PARALLEL_CATEGORIES

STYLE_MARK = "{{style}}"
SCRIPT_MARK = "{{script}}"
FACTS_MARK = "{{facts}}"
_MARKS = re.compile(r"\{\{(?:style|script|facts)\}\}")


def track_facts() -> dict[str, dict[str, Any]]:
    """Each track's categories in report order and which way each of its gated figures is
    better, from the track's own scorer (docs/tracks.md): the page draws a track's runs with
    its own figures, never another's."""
    from toolcall300.scoring.tracks import deltas, parallel

    return {
        "single": {"categories": list(CATEGORIES), "better_when": dict(BETTER_WHEN)},
        "parallel": {
            "categories": list(PARALLEL_CATEGORIES),
            "better_when": {
                **dict.fromkeys(parallel.MUST_NOT_FALL, "up"),
                **dict.fromkeys(parallel.MUST_NOT_RISE, "down"),
            },
        },
        "deltas": {"categories": list(CATEGORIES), "better_when": dict(deltas.BETTER_WHEN)},
    }


def server_facts() -> dict[str, Any]:
    """What the page shows that the server decides: one source, so the two never disagree."""
    return {
        "categories": list(CATEGORIES),
        "failure_text": dict(FAILURE_TEXT),
        "tracks": track_facts(),
    }


def facts_block(facts: dict[str, Any]) -> str:
    r"""``facts`` as JSON safe inside ``<script type="application/json">`` (no ``<`` at all).

    >>> facts_block({"a": "</script>"})
    '{"a":"\\u003c/script>"}'
    """
    return json.dumps(facts, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")


@dataclass(frozen=True)
class Page:
    """The page's HTML and the response headers it must be served with."""

    html: str
    headers: dict[str, str]


def source_hash(text: str) -> str:
    """A CSP hash source for an inline block: ``'sha256-<base64 of the UTF-8 text>'``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(style: str, script: str) -> str:
    """The CSP for a page whose only style and script are ``style`` and ``script``.

    ``connect-src 'self'`` is what lets the page call the API it was served by (and a
    ``blob:`` download needs no fetch); ``img-src blob:`` lets it show the team's badge it
    fetched so (no image from an address, so no favicon request either). ``form-action
    'none'`` makes sure that a sign-in form can never be submitted the browser's way, which
    would put the key in a URL.
    """
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {source_hash(script)}",
            f"style-src {source_hash(style)}",
            "connect-src 'self'",
            "img-src blob:",  # the README badge's preview, fetched from the API it was served by
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "require-trusted-types-for 'script'",
        ]
    )


def assemble(template: str, style: str, script: str, facts: str = "{}") -> str:
    """Inline ``style``, ``script`` and the ``facts`` JSON into ``template`` at their markers.

    Refuses text that could end its element early, since the CSP hash would then no longer
    cover what the browser runs. The facts block is data (``type="application/json"``): the
    browser never runs it, so the CSP needs no hash for it.
    """
    marks = (STYLE_MARK, SCRIPT_MARK, FACTS_MARK)
    if any(template.count(mark) != 1 for mark in marks):
        raise ValueError("the page template needs exactly one style, script and facts marker")
    if "</style" in style.lower() or "</script" in script.lower() or "<" in facts:
        raise ValueError("inline style, script or facts would close its own element")
    parts = {STYLE_MARK: style, SCRIPT_MARK: script, FACTS_MARK: facts}
    return _MARKS.sub(lambda m: parts[m.group(0)], template)  # one pass: no text is re-read


def page_headers(style: str, script: str) -> dict[str, str]:
    """Response headers: the CSP plus the usual hardening for a page that handles a key."""
    return {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Security-Policy": content_security_policy(style, script),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cache-Control": "no-cache",
    }


def build_page(template: str, style: str, script: str, facts: str = "{}") -> Page:
    """The page and its headers from the source texts and the facts block (pure)."""
    return Page(assemble(template, style, script, facts), page_headers(style, script))


def _static(name: str) -> str:
    return (resources.files("toolcall300.service") / "static" / name).read_text(encoding="utf-8")


@cache
def page() -> Page:
    """The dashboard as shipped in the package (read once per process)."""
    return build_page(
        _static("dashboard.html"),
        _static("dashboard.css"),
        _static("dashboard.js"),
        facts_block(server_facts()),
    )
