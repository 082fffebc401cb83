"""BFCL's parallel and parallel_multiple questions as turns of the parallel track
(``generator.parallel_bfcl``), on the sample committed under tests/data/bfcl-parallel-sample."""

from __future__ import annotations

import io
import json
from pathlib import Path

from toolcall300.canonical import canonical
from toolcall300.generator.cli import BFCL_FILE, parse_args, run
from toolcall300.generator.parallel_bfcl import KINDS, convert, question_file
from toolcall300.scoring.tracks.parallel import case_problem
from toolcall300.toolshim.parallel import normalise_all

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "bfcl-parallel-sample"


def converted() -> tuple[list[dict], dict[str, str]]:
    questions = {k: (SAMPLE / question_file(k)).read_bytes() for k in KINDS}
    answers = {k: (SAMPLE / "possible_answer" / question_file(k)).read_bytes() for k in KINDS}
    result = convert(questions, answers)
    return result.cases, result.skipped


def test_every_question_whose_schemas_allow_becomes_a_turn() -> None:
    cases, skipped = converted()
    assert len(cases) + len(skipped) == 24
    assert len(cases) == 24
    assert {c["category"].rsplit("_", 1)[1] for c in cases} == {
        "openai",
        "anthropic",
        "bare",
        "merged",
        "doubled",
        "split",
    }
    for case in cases:
        assert case_problem(case) is None, case["id"]
        assert len(case["expected"]) >= 2


def test_a_dotted_name_is_the_name_bfcl_sends() -> None:
    cases, _ = converted()
    first = next(c for c in cases if c["id"] == "bfcl-parallel_0")
    assert [c["name"] for c in first["expected"]] == ["spotify_play", "spotify_play"]
    assert first["expected"][0]["arguments"] == {"artist": "Taylor Swift", "duration": 20}


def test_the_reference_normaliser_reads_every_turn_as_labelled() -> None:
    for case in converted()[0]:
        assert canonical(normalise_all(case["text"], case["tools"])) == canonical(case["expected"])


def test_an_argument_the_schema_does_not_declare_is_skipped_not_labelled() -> None:
    questions = {"parallel": (SAMPLE / question_file("parallel")).read_bytes().splitlines()[0]}
    answer = json.loads(
        (SAMPLE / "possible_answer" / question_file("parallel")).read_bytes().splitlines()[0]
    )
    answer["ground_truth"][0]["spotify.play"]["volume"] = [3]
    result = convert(questions, {"parallel": json.dumps(answer).encode()})
    assert result.cases == [] and "does not declare" in result.skipped["parallel_0"]


def test_generate_writes_the_turns_deterministically(tmp_path: Path) -> None:
    outs = []
    for name in ("a", "b"):
        out = io.StringIO()
        args = parse_args(
            ["--track", "parallel", "--bfcl", str(SAMPLE), "--out", str(tmp_path / name)]
        )
        assert run(args, out, io.StringIO()) == 0
        assert out.getvalue().startswith("wrote 24 turns")
        outs.append((tmp_path / name / BFCL_FILE).read_bytes())
    assert outs[0] == outs[1]
