"""Reading a corpus in the published format: each case checked for shape, never for its labels.

Why a case or a tool declaration cannot be scored (tools.json contract, ``docs/``); the
labels themselves are ``generate --check-only``'s business.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from toolcall300.canonical import loads_strict
from toolcall300.catalog import depth_problem, model_view
from toolcall300.schema import schema_problems
from toolcall300.spec import CATEGORIES, CORPUS_VERSION, REFUSAL_CATEGORIES, no_parameters


class CorpusError(ValueError):
    """A corpus that cannot be scored; the message names the line."""


def _tool_problem(tool: Any, index: int) -> str | None:
    """Why ``tools[index]`` is not a usable declaration (tools.json contract), or None."""
    where = f"tools[{index}]"
    if not isinstance(tool, dict):
        return f"{where} is not an object"
    too_deep = depth_problem(where, tool)
    if too_deep:
        return too_deep  # before schema_problems, which recurses
    if tool.get("type", "function") != "function":
        return f'{where}.type must be "function"'
    fn = tool.get("function")
    if not isinstance(fn, dict):
        return f"{where}.function is not an object"
    if not isinstance(fn.get("name"), str) or not fn["name"]:
        return f"{where}.function.name must be a non-empty string"
    params = fn["parameters"] if "parameters" in fn else no_parameters()  # D6.3
    problems = schema_problems(params)
    if problems:
        return f"{where} ({fn['name']}) parameters: {problems[0].message}"
    return None


def case_problem(case: Any) -> str | None:
    """Why ``case`` is not a well-formed case in the case format (docs/case-format.md), or None.

    >>> case_problem({"id": "x", "category": "cooking", "text": "", "tools": [],
    ...               "expected_kind": "unrecoverable", "expected": None})
    "unknown category 'cooking'"
    """
    if not isinstance(case, dict):
        return "a case must be a JSON object"
    missing = [
        k for k in ("id", "category", "text", "tools", "expected_kind", "expected") if k not in case
    ]
    if missing:
        return "missing field(s): " + ", ".join(missing)
    if not isinstance(case["id"], str) or not case["id"]:
        return "id must be a non-empty string"
    if case["category"] not in CATEGORIES:
        return f"unknown category {case['category']!r}"
    if not isinstance(case["text"], str):
        return "text must be a string"
    tools = case["tools"]
    if not isinstance(tools, list):
        return "tools must be an array"
    for index, tool in enumerate(tools):
        problem = _tool_problem(tool, index)
        if problem:
            return problem
    names = [t["function"]["name"] for t in tools]
    if len(set(names)) != len(names):
        return "tool names must be unique"
    kind, expected = case["expected_kind"], case["expected"]
    if kind == "unrecoverable":
        return (
            None
            if expected is None
            else "expected must be null when expected_kind is unrecoverable"
        )
    if kind != "value":
        return f'expected_kind must be "value" or "unrecoverable", got {kind!r}'
    if case["category"] in REFUSAL_CATEGORIES:
        return f"D2.1: every {case['category']} case expects a refusal"
    if not (
        isinstance(expected, dict)
        and isinstance(expected.get("name"), str)
        and isinstance(expected.get("arguments"), dict)
    ):
        return "expected must be an object with a string name and an object arguments"
    if expected["name"] not in names:
        return f"expected names undeclared tool {expected['name']!r}"
    return None


def parse_corpus(
    data: bytes, *, problem: Callable[[Any], str | None] = case_problem
) -> list[dict[str, Any]]:
    """Cases from JSON Lines bytes; blank lines are skipped; raises :class:`CorpusError` naming
    the line. ``problem`` says why one case is malformed (``scoring.tracks`` passes the reader
    of each case's own track; the default is the single-call track's)."""
    cases: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark from an editor is not JSON
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            case = loads_strict(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise CorpusError(f"line {number}: not UTF-8") from None
        except (ValueError, RecursionError) as exc:
            raise CorpusError(f"line {number}: not valid JSON ({exc})") from None
        wrong = problem(case)
        if wrong:
            raise CorpusError(f"line {number}: {wrong}")
        if case["id"] in seen:
            raise CorpusError(
                f"line {number}: duplicate id {case['id']!r} (first on line {seen[case['id']]})"
            )
        seen[case["id"]] = number
        cases.append(case)
    if not cases:
        raise CorpusError("the corpus has no cases")
    return cases


def adapter_items(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What an adapter is handed for each case: its id, its text, and its tools as a model
    sees them under the catalog contract (``x-*`` fields are pack-only and never reach it)."""
    return [
        {"id": case["id"], "text": case["text"], "tools": [model_view(t) for t in case["tools"]]}
        for case in cases
    ]


#: The manifest the generator writes beside every corpus it builds.
MANIFEST_NAME = "manifest.json"


#: The pins of every corpus this suite published, per file and version (packaged data).
PUBLISHED = "published_corpora.json"


def _packaged_sample_sha256() -> str:
    return hashlib.sha256(
        resources.files("toolcall300").joinpath("data", "sample30.jsonl").read_bytes()
    ).hexdigest()


def published_versions() -> dict[str, str]:
    """sha256 -> corpus version of every corpus this suite published (``data/`` lists them,
    a new version adds its pins there), the packaged sample's included."""
    raw = resources.files("toolcall300").joinpath("data", PUBLISHED).read_bytes()
    listed = loads_strict(raw.decode("utf-8"))
    found = {
        pin: version
        for name, versions in listed.items()
        if name != "about" and isinstance(versions, dict)
        for version, pin in versions.items()
    }
    found[_packaged_sample_sha256()] = CORPUS_VERSION
    return found


def _manifest_pinning(path: str | Path, sha256: str) -> dict[str, Any] | None:
    """The generator's manifest beside ``path`` when it pins exactly these bytes, else None."""
    try:
        manifest = loads_strict((Path(path).parent / MANIFEST_NAME).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(manifest, dict) or "generator_version" not in manifest:
        return None
    files = manifest.get("files")
    pins = files.values() if isinstance(files, dict) else []
    pinned = any(isinstance(pin, dict) and pin.get("sha256") == sha256 for pin in pins)
    return manifest if pinned else None


#: The rationale file the generator writes beside every corpus it builds.
RATIONALE_NAME = "rationale.jsonl"


def corpus_in(folder: str | Path) -> Path:
    """The corpus file of a corpus folder (``score --corpus DIR``): its one ``.jsonl`` that is
    neither the rationale nor a sample. Raises ``ValueError`` saying which files to choose
    from when there is none or more than one.

    >>> corpus_in("/nowhere")
    Traceback (most recent call last):
    ...
    ValueError: /nowhere holds no corpus file (*.jsonl): name the file
    """
    found = sorted(
        p
        for p in Path(folder).glob("*.jsonl")
        if p.name != RATIONALE_NAME and "sample" not in p.name and p.is_file()
    )
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"{folder} holds no corpus file (*.jsonl): name the file")
    names = ", ".join(p.name for p in found)
    raise ValueError(f"{folder} holds several corpus files ({names}): name one")


def rationale_beside(path: str | Path, sha256: str) -> dict[str, dict[str, Any]]:
    """The corpus's rationale rows, id -> {rule, rationale}, from ``rationale.jsonl`` beside
    ``path`` when the manifest beside it pins both the corpus's bytes and that file's (so a
    stale or foreign rationale is never shown as this corpus's); else none. Unreadable rows
    are skipped: the rationale explains, it never grades."""
    manifest = _manifest_pinning(path, sha256)
    files = manifest.get("files") if manifest else None
    pin = files.get(RATIONALE_NAME) if isinstance(files, dict) else None
    if not isinstance(pin, dict):
        return {}
    try:
        data = (Path(path).parent / RATIONALE_NAME).read_bytes()
    except OSError:
        return {}
    if hashlib.sha256(data).hexdigest() != pin.get("sha256"):
        return {}
    rows: dict[str, dict[str, Any]] = {}
    for raw in data.split(b"\n"):
        try:
            row = loads_strict(raw.decode("utf-8")) if raw.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            rows[row["id"]] = row
    return rows


def corpus_version(path: str | Path, sha256: str) -> str | None:
    """The version of the corpus at ``path``: a published corpus's wherever it was copied
    (:func:`published_versions`; the packaged sample's is ``spec.CORPUS_VERSION``), a
    generated corpus's is its manifest's; None for any other.

    >>> corpus_version("/nowhere/cases.jsonl", "0" * 64) is None
    True
    """
    published = published_versions().get(sha256)
    if published is not None:
        return published
    manifest = _manifest_pinning(path, sha256)
    version = manifest.get("version") if manifest else None
    return version if isinstance(version, str) else None


def built_by_this_suite(path: str | Path, sha256: str) -> bool:
    """Whether the corpus at ``path`` (whose bytes hash to ``sha256``) came from this suite's
    generator, so it follows the same rulebook as the reference normaliser.

    True for every corpus this suite published, wherever it was copied (a downloaded private
    corpus has no manifest beside it), and for a corpus whose ``manifest.json`` beside it
    (written by ``generate``) pins exactly these bytes and names a generator version. Any
    other corpus, a third party's, is out of sample.
    """
    return sha256 in published_versions() or _manifest_pinning(path, sha256) is not None
