"""The repository explains itself: nothing cites a file outside it, and every page cited exists.

Code, docs and tests cite the contracts in ``docs/`` (or the module that holds a rule), never
a planning document, a ticket or a path on someone's machine; and every ``docs/*.md`` a file
names, and every relative link in a Markdown page, resolves inside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED_DIRS = ("layers", "functions", "infra", "tests", "docs", "bench", "peers", ".ci")
SCANNED_FILES = ("README.md", "Makefile", "pyproject.toml", "template.yaml", "action.yml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".sh", ".js", ".mjs", ".html", ""}
SKIPPED_PARTS = {"data", "node_modules", "__pycache__", ".venv", "screenshots", "node"}
#: The tests that spell the forbidden citations in order to find them (this one, and
#: test_self_contained.py, which checks the paths code reads rather than the text it cites).
GUARDS = {Path(__file__).resolve(), ROOT / "tests" / "core" / "test_self_contained.py"}

#: Citations of things that are not in the repository.
OUTSIDE = {
    "a planning document": re.compile(r"\bDESIGN\.md\b|\bCONVENTIONS\.md\b|\bENVIRONMENT\.md\b"),
    "a shared folder": re.compile(r"\.\./shared\b|/work[/]shared\b|\bseeds/"),
    "a temporary file": re.compile(r"/tmp/runs_contract"),
    "a seed by number": re.compile(r"\bseed 00\d\b", re.IGNORECASE),
    "a ticket": re.compile(r"\bissues? #?\d+\b", re.IGNORECASE),
}
DOC_PATH = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)\b")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def scanned() -> list[Path]:
    out = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for folder in SCANNED_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT).parts
            if path.is_file() and path.suffix in SUFFIXES and not SKIPPED_PARTS & set(rel[:-1]):
                out.append(path)
    return [p for p in out if p not in GUARDS]


def test_the_scan_covers_the_code_and_the_docs() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in scanned()}
    assert {"README.md", "docs/api.md", "layers/toolcall300/toolcall300/spec.py"} <= names


@pytest.mark.parametrize("what", sorted(OUTSIDE))
def test_nothing_cites_a_file_outside_the_repository(what: str) -> None:
    pattern = OUTSIDE[what]
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for path in scanned()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == [], f"cites {what}:\n" + "\n".join(hits)


def test_every_docs_page_cited_exists() -> None:
    missing = [
        f"{path.relative_to(ROOT)}: docs/{name}"
        for path in scanned()
        for name in DOC_PATH.findall(path.read_text(encoding="utf-8", errors="replace"))
        if not (ROOT / "docs" / name).is_file()
    ]
    assert missing == []


def test_every_relative_markdown_link_resolves() -> None:
    broken = []
    for path in scanned():
        if path.suffix != ".md":
            continue
        for target in MD_LINK.findall(path.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_api_md_lists_every_route_of_the_template() -> None:
    """Each route the SAM template declares has its own row in docs/api.md's table."""
    routes = re.findall(
        r'Path: "?(/[^,"\s]+)"?, Method: ([A-Z]+)', (ROOT / "template.yaml").read_text("utf-8")
    )
    assert len(routes) > 10
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rows = [line for line in api.splitlines() if line.startswith("| `")]
    missing = [
        f"{method} {path}"
        for path, method in routes
        if not any(row.startswith(f"| `{method} {path}") for row in rows)
    ]
    assert missing == [], "docs/api.md does not list: " + ", ".join(missing)
