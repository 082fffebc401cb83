"""The parallel track's corpus (corpus_private/parallel): a byte-identical rebuild from the
main corpus, integrity checks that hold and catch a broken label, a stale pin and a freebie,
the controls passing no turn, and the reference normaliser on every turn (in-sample)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from toolcall300.canonical import canonical
from toolcall300.controls import integrator_all
from toolcall300.generator import parallel
from toolcall300.generator.cli import parse_args, run
from toolcall300.generator.parallel_checks import check_files
from toolcall300.scoring.corpus import published_versions
from toolcall300.spec import PARALLEL_CATEGORIES
from toolcall300.toolshim.parallel import normalise_all

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "corpus_private" / "toolcall300.jsonl"
TRACK_DIR = ROOT / "corpus_private" / "parallel"
NAMES = (
    parallel.CORPUS_FILE,
    parallel.RATIONALE_FILE,
    parallel.SAMPLE_FILE,
    parallel.MANIFEST_FILE,
)
PACKAGED = ROOT / "layers" / "toolcall300" / "toolcall300" / "data" / parallel.SAMPLE_FILE


def committed() -> dict[str, bytes]:
    return {name: (TRACK_DIR / name).read_bytes() for name in NAMES}


def cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in committed()[parallel.CORPUS_FILE].splitlines()]


CASES = cases()


def test_the_committed_corpus_is_the_build_byte_for_byte() -> None:
    assert parallel.build_files(MAIN.read_bytes()) == committed()


def test_the_packaged_sample_is_the_corpus_sample_and_published() -> None:
    sample = committed()[parallel.SAMPLE_FILE]
    assert PACKAGED.read_bytes() == sample
    assert len(sample.splitlines()) == 24
    sha = hashlib.sha256(sample).hexdigest()
    assert published_versions().get(sha) == "1.0"


def test_a_sample_that_is_not_the_corpus_slice_is_caught() -> None:
    files = committed()
    files[parallel.SAMPLE_FILE] = b"".join(
        files[parallel.SAMPLE_FILE].splitlines(keepends=True)[1:]
    )
    failures = check_files(files, MAIN.read_bytes())
    assert f"{parallel.SAMPLE_FILE}: not the first two turns of each category" in failures


def test_the_corpus_has_its_shape() -> None:
    assert len(CASES) == 300
    for category in PARALLEL_CATEGORIES:
        assert sum(c["category"] == category for c in CASES) == 25
    assert all(c["track"] == "parallel" for c in CASES)


def test_the_integrity_checks_hold() -> None:
    assert check_files(committed(), MAIN.read_bytes()) == []


def _rewritten(files: dict[str, bytes], turn: int, change: Any) -> dict[str, bytes]:
    rows = [json.loads(line) for line in files[parallel.CORPUS_FILE].splitlines()]
    change(rows[turn])
    out = dict(files)
    out[parallel.CORPUS_FILE] = parallel.jsonl(rows)
    return out


def test_a_changed_label_is_caught() -> None:
    def drop_last(case: dict[str, Any]) -> None:
        case["expected"] = case["expected"][:-1] + [None]

    failures = check_files(_rewritten(committed(), 0, drop_last), MAIN.read_bytes())
    assert any("tcp-0001: expected is not the calls' labels under P7" in f for f in failures)
    assert any("does not match its pin" in f for f in failures)


def test_a_freebie_is_caught() -> None:
    """A turn whose calls are all written valid as sent is one C3 passes."""

    def valid_as_sent(case: dict[str, Any]) -> None:
        case["text"] = json.dumps(
            [{"name": e["name"], "arguments": e["arguments"]} for e in case["expected"]]
        )

    failures = check_files(_rewritten(committed(), 0, valid_as_sent), MAIN.read_bytes())
    assert "tcp-0001: a freebie: control C3 passes it" in failures


def test_a_stale_main_corpus_is_caught() -> None:
    main = MAIN.read_bytes() + b"\n"
    assert any("stale" in f for f in check_files(committed(), main))


def test_the_integrator_control_passes_no_turn() -> None:
    passed = [
        c["id"]
        for c in CASES
        if canonical(integrator_all(c["text"], c["tools"])) == canonical(c["expected"])
    ]
    assert passed == []


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_toolshim_answers_every_turn_exactly(case: dict[str, Any]) -> None:
    """In-sample: toolshim and the corpus follow one contract (P1-P12)."""
    assert canonical(normalise_all(case["text"], case["tools"])) == canonical(case["expected"])


def test_generate_checks_the_committed_track(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run(
        parse_args(["--track", "parallel", "--out", str(TRACK_DIR), "--check-only"]), out, err
    )
    assert (code, err.getvalue()) == (0, "")
    built = tmp_path / "parallel"
    args = parse_args(["--track", "parallel", "--out", str(built), "--from", str(MAIN)])
    assert run(args, io.StringIO(), io.StringIO()) == 0
    assert {n: (built / n).read_bytes() for n in NAMES} == committed()
