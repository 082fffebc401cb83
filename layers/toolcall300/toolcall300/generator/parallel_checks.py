"""The parallel track corpus's integrity checks: every label re-derived, no freebie.

Each turn's expected list is derived again from the rationale's sources alone: each call's
label is its main-corpus case's (proven by that corpus's own checks) or ``null`` by the
decision its role names, its written name resolves under the turn's catalog as it did under
its source's (rule 3), and P7 applied to those labels with the repeat statements read from
the turn's own tools gives the expected list. The controls C1 and C3 pass no turn, and each
category's turn shows the structure its decision is about. Pure: files in, failures out.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

from toolcall300.canonical import canonical, loads_strict, raw_decode_strict
from toolcall300.controls import integrator_all, naive
from toolcall300.generator.parallel import (
    CORPUS_FILE,
    MANIFEST_FILE,
    PER_CATEGORY,
    RATIONALE_FILE,
    REFUSAL_SOURCES,
    SAMPLE_FILE,
    SAMPLE_PER_CATEGORY,
    TRACK,
    VALUE_SOURCES,
)
from toolcall300.rules import repeat_matters, resolve_tool_name, tool_name_matches
from toolcall300.schema import is_valid
from toolcall300.spec import (
    CALLS_KEY,
    PARALLEL_CATEGORIES,
    PARALLEL_CORPUS_VERSION,
    decision_ids,
)

#: Which label each role of a call carries (None: refused by that decision).
_REFUSED_ROLES = {"refusal": "P9", "ambiguous": "P8", "unsplit": "P4"}
_VALUE_ROLES = {"value", "copy", "clean_copy", "cut"}

CHECKS = (
    "shape: 25 turns per category, ids in order, track, texts unique, 2 to 6 calls attempted",
    "pins: the manifest pins the corpus, the rationale and the main corpus it was built from",
    "labels: every call's label re-derived from its source; the expected list by P7",
    "names: every written name resolves under the turn's catalog as under its source's",
    "valid: every expected call is one its declared schema accepts",
    "freebies: the controls C1 and C3 pass no turn",
    "structure: each category's turn shows its decision's structure",
    "rationale: one per turn, citing published decisions",
    "sample: the first two turns of each category, lines of the corpus as they are",
)


def _jsonl(data: bytes) -> list[dict[str, Any]]:
    return [loads_strict(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def check_files(files: dict[str, bytes], main_corpus: bytes) -> list[str]:
    """Every failure of the track's corpus ``files`` built from ``main_corpus`` (empty: holds)."""
    try:
        cases = _jsonl(files[CORPUS_FILE])
        rationale = {r["id"]: r for r in _jsonl(files[RATIONALE_FILE])}
        manifest = loads_strict(files[MANIFEST_FILE].decode("utf-8"))
        main = {c["id"]: c for c in _jsonl(main_corpus)}
    except (KeyError, ValueError, UnicodeDecodeError) as exc:
        return [f"unreadable: {exc}"]
    out = list(_pins(files, main_corpus, manifest))
    out += _shape(cases)
    out += _sample(files, cases)
    for case in cases:
        why = rationale.get(case["id"])
        if why is None:
            out.append(f"{case['id']}: no rationale")
            continue
        out += [f"{case['id']}: {msg}" for msg in _turn(case, why, main)]
    return out


def _pins(files: dict[str, bytes], main_corpus: bytes, manifest: Any) -> Iterator[str]:
    if not isinstance(manifest, dict) or manifest.get("track") != TRACK:
        yield "manifest: not the parallel track's"
        return
    if manifest.get("version") != PARALLEL_CORPUS_VERSION:
        yield f"manifest: version {manifest.get('version')!r}, expected {PARALLEL_CORPUS_VERSION}"
    source = manifest.get("source", {}).get("sha256")
    if source != hashlib.sha256(main_corpus).hexdigest():
        yield "manifest: built from another main corpus (stale: rebuild the track's corpus)"
    for name in (CORPUS_FILE, RATIONALE_FILE, SAMPLE_FILE):
        pin = manifest.get("files", {}).get(name, {}).get("sha256")
        if pin != hashlib.sha256(files[name]).hexdigest():
            yield f"manifest: {name} does not match its pin"


def _sample(files: dict[str, bytes], cases: list[dict[str, Any]]) -> list[str]:
    lines = files.get(SAMPLE_FILE, b"").splitlines()
    corpus = files[CORPUS_FILE].splitlines()
    seen: Counter[str] = Counter()
    want = []
    for case, line in zip(cases, corpus, strict=True):
        seen[case["category"]] += 1
        if seen[case["category"]] <= SAMPLE_PER_CATEGORY:
            want.append(line)
    return [] if lines == want else [f"{SAMPLE_FILE}: not the first two turns of each category"]


def _shape(cases: list[dict[str, Any]]) -> list[str]:
    out = []
    counts = Counter(c.get("category") for c in cases)
    for category in PARALLEL_CATEGORIES:
        if counts[category] != PER_CATEGORY:
            out.append(f"category {category}: {counts[category]} turns, expected {PER_CATEGORY}")
    if set(counts) - set(PARALLEL_CATEGORIES):
        out.append(f"unknown categories {sorted(map(str, set(counts) - set(PARALLEL_CATEGORIES)))}")
    for number, case in enumerate(cases, 1):
        if case.get("id") != f"tcp-{number:04d}":
            out.append(f"line {number}: id {case.get('id')!r} out of order")
        if case.get("track") != TRACK:
            out.append(f"{case.get('id')}: track is not {TRACK!r}")
    if len({c["text"] for c in cases}) != len(cases):
        out.append("texts are not unique")
    return out


def _turn(case: dict[str, Any], why: dict[str, Any], main: dict[str, Any]) -> Iterator[str]:
    calls = why.get("calls", [])
    if not 2 <= len(calls) <= 6:
        yield f"{len(calls)} calls attempted, expected 2 to 6"
    names = [t["function"]["name"] for t in case["tools"]]
    repeat = {t["function"]["name"] for t in case["tools"] if repeat_matters(t)}
    if sorted(repeat) != why.get("repeat"):
        yield "the tools' repeat statements differ from the rationale's"
    labels: list[Any] = []
    for i, call in enumerate(calls):
        source = main.get(call.get("source"))
        if source is None:
            yield f"call {i + 1}: source {call.get('source')!r} is not in the main corpus"
            continue
        label = _label(call, source)
        if isinstance(label, str):
            yield f"call {i + 1}: {label}"
            continue
        if canonical(label) != canonical(call.get("expected")):
            yield f"call {i + 1}: label differs from its source's"
        if not _name_stands(call, source, names):
            yield f"call {i + 1}: {call.get('name')!r} resolves otherwise under the turn's tools"
        labels.append(label)
    if canonical(_collapse(labels, repeat)) != canonical(case["expected"]):
        yield "expected is not the calls' labels under P7"
    for entry in case["expected"]:
        if entry is not None and not _valid(entry, case["tools"]):
            yield f"expected call {entry.get('name')!r} is not valid under its schema"
    for control, answer in (("C3", integrator_all), ("C1", naive)):
        got = answer(case["text"], case["tools"])
        if got is not None and _same(got, case["expected"]):
            yield f"a freebie: control {control} passes it"
    yield from _structure(case)
    cited = {p.strip() for p in str(why.get("rule", "")).split(",")}
    if not cited or not cited <= set(decision_ids()):
        yield f"rationale cites unknown decisions {sorted(cited - set(decision_ids()))}"


def _label(call: dict[str, Any], source: dict[str, Any]) -> Any:
    role = call.get("role")
    category = source["category"]
    if role in _REFUSED_ROLES:
        if role == "refusal" and category not in REFUSAL_SOURCES:
            return f"a refusal taken from a {category} case"
        return None
    if role not in _VALUE_ROLES:
        return f"unknown role {role!r}"
    if role == "cut" and category != "truncated":
        return f"a cut call taken from a {category} case"
    if role != "cut" and category not in VALUE_SOURCES:
        return f"a value taken from a {category} case"
    return source["expected"]


def _name_stands(call: dict[str, Any], source: dict[str, Any], names: list[str]) -> bool:
    name = call.get("name")
    if call.get("role") in ("ambiguous", "unsplit"):
        return True
    if not isinstance(name, str):
        return False
    if source["category"] == "hallucinated_tool":
        return resolve_tool_name(name, names) is None and not tool_name_matches(name, names)
    if source["expected"] is None:
        own = [t["function"]["name"] for t in source["tools"]]
        before = resolve_tool_name(name, own)
        return before is not None and resolve_tool_name(name, names) == before
    return bool(resolve_tool_name(name, names) == source["expected"]["name"])


def _collapse(labels: list[Any], repeat: set[str]) -> list[Any]:
    """P7, written again from its text (not the generator's code)."""
    out: list[Any] = []
    for label in labels:
        copy = label is not None and label["name"] not in repeat
        if copy and any(e is not None and canonical(e) == canonical(label) for e in out):
            continue
        out.append(label)
    return out


def _valid(call: dict[str, Any], tools: list[dict[str, Any]]) -> bool:
    for tool in tools:
        if tool["function"]["name"] == call.get("name"):
            return is_valid(call.get("arguments"), tool["function"]["parameters"])
    return False


def _same(got: Any, expected: list[Any]) -> bool:
    try:
        return canonical(got) == canonical(expected)
    except (TypeError, ValueError):
        return False


def _entries(case: dict[str, Any]) -> list[Any]:
    try:
        value = loads_strict(case["text"])
    except ValueError:
        return []
    if isinstance(value, dict) and isinstance(value.get(CALLS_KEY), list):
        return list(value[CALLS_KEY])
    return value if isinstance(value, list) else [value]


def _documents(text: Any) -> int:
    if not isinstance(text, str):
        return 0
    count, pos = 0, 0
    try:
        while pos < len(text):
            _, pos = raw_decode_strict(text, pos)
            count += 1
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
    except ValueError:
        return 0
    return count


def _structure(case: dict[str, Any]) -> Iterator[str]:
    category, entries = case["category"], _entries(case)
    fns = [e.get("function", e) for e in entries if isinstance(e, dict)]
    named = [f for f in fns if isinstance(f, dict) and f.get("name")]
    nameless = [f for f in fns if isinstance(f, dict) and not f.get("name")]
    indexes = [e.get("index") for e in entries if isinstance(e, dict)]
    declared = {t["function"]["name"] for t in case["tools"]}
    expected = case["expected"]
    if category == "cut_turn":
        try:
            loads_strict(case["text"])
            yield "a cut_turn text that parses whole"
        except ValueError:
            pass
        return
    if not entries:
        yield "the text does not parse"
        return
    merged = [f for f in named if _documents(f.get("arguments")) >= 2]
    if category in ("merged_arguments", "doubled_name") and not merged:
        yield "no arguments string holds two documents"
    if category == "doubled_name" and not any(f["name"] not in declared for f in merged):
        yield "no doubled name"
    if category in ("split_call", "interleaved_fragments", "ambiguous_split") and not nameless:
        yield "no fragment"
    if category == "interleaved_fragments" and None in indexes:
        yield "an entry without index"
    if category == "ambiguous_split" and any(i is not None for i in indexes):
        yield "fragments that carry an index are not ambiguous"
    if category == "reused_index" and len(set(indexes)) == len(indexes):
        yield "no index reused"
    if category == "emission_order" and indexes == sorted(indexes, key=str):
        yield "indexes in order"
    keys = [canonical(e) for e in expected if e is not None]
    if category == "repeat_matters" and len(set(keys)) == len(keys):
        yield "no repeated call stands"
    if category == "identical_copies" and len(set(keys)) != len(keys):
        yield "copies left standing"
    if category == "partial_refusal" and not (None in expected and keys):
        yield "not a partial refusal"
