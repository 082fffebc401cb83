"""The tracks of one scorer (docs/tracks.md): a case names its track, a corpus holds one, a
baseline of another track is refused by name, and the single-call track is what it was."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from test_scorer_data import corpus_bytes, tiny_corpus

from toolcall300.cli import dispatch
from toolcall300.scoring import tracks
from toolcall300.scoring.corpus import CorpusError


def score(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["score", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_case_of_an_unknown_track_is_refused_naming_it(tmp_path: Path) -> None:
    cases = tiny_corpus()
    cases[2]["track"] = "telepathy"
    (tmp_path / "c.jsonl").write_bytes(corpus_bytes(cases))
    code, _, err = score("--corpus", str(tmp_path / "c.jsonl"), "--adapter", "naive")
    assert code == 1
    assert "line 3: unknown track 'telepathy'" in err


def test_a_corpus_holds_one_track(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tracks.REGISTRY, "other", tracks.REGISTRY["single"])
    cases = tiny_corpus()
    cases[4]["track"] = "other"
    with pytest.raises(CorpusError, match=r"is of track 'other'.*a corpus holds one track"):
        tracks.read_corpus(corpus_bytes(cases))


def test_single_is_the_default_and_an_explicit_single_scores_the_same(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(corpus_bytes(tiny_corpus()))
    named = tmp_path / "named.jsonl"
    named.write_bytes(corpus_bytes([{**c, "track": "single"} for c in tiny_corpus()]))
    track, cases = tracks.read_corpus(named.read_bytes())
    assert track.name == "single" and len(cases) == 6
    score("--corpus", str(plain), "--adapter", "naive", "--json", str(tmp_path / "a.json"))
    score("--corpus", str(named), "--adapter", "naive", "--json", str(tmp_path / "b.json"))
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert "track" not in a  # a single-track report is byte-for-byte what it was
    a.pop("corpus_sha256"), b.pop("corpus_sha256"), a.pop("timing"), b.pop("timing")
    assert a == b


def test_a_baseline_of_another_track_is_refused_by_name(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(corpus_bytes(tiny_corpus()))
    assert (
        score("--corpus", str(corpus), "--adapter", "naive", "--json", str(tmp_path / "b.json"))[0]
        == 0
    )
    report = json.loads((tmp_path / "b.json").read_text())
    (tmp_path / "b.json").write_text(json.dumps({**report, "track": "deltas"}))
    code, _, err = score(
        "--corpus", str(corpus), "--adapter", "naive", "--baseline", str(tmp_path / "b.json")
    )
    assert code == 1
    assert "is a report of track 'deltas', this corpus is track 'single'" in err
