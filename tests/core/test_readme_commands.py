"""README's scoring commands run from the repository root as written: every corpus they name
exists, and every flag they pass is one ``toolcall300 score`` accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from toolcall300.scoring.cli import parse_args

ROOT = Path(__file__).resolve().parents[2]


def score_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^([A-Z_]+)=(\S+)$", text, flags=re.M))
    commands = []
    for line in re.findall(r"^toolcall300 score --corpus .*$", text, flags=re.M):
        words = shlex.split(line, comments=True)
        commands.append([re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], w) for w in words])
    return commands


def test_readme_shows_scoring_commands() -> None:
    assert len(score_commands()) >= 3


def test_every_corpus_the_readme_names_exists_from_the_root() -> None:
    for words in score_commands():
        corpus = words[words.index("--corpus") + 1]
        assert (ROOT / corpus).is_file(), words


def test_every_readme_score_command_parses() -> None:
    for words in score_commands():
        parse_args(words[2:])


def test_the_readme_opens_with_the_two_commands_then_the_kit() -> None:
    """README's first block is the two commands (run it, test it); the next is the quickest
    route to a first score, the kit, which needs nothing installed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [part.split("```", 1)[0] for part in text.split("```sh")[1:3]]
    assert [line.split()[:2] for line in blocks[0].strip().splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    assert "make kit" in blocks[1]
    runs = [line for line in blocks[1].splitlines() if line.startswith("python3 score.py")]
    assert runs and all("--corpus sample30.jsonl" in line for line in runs)
    for line in runs:
        parse_args(shlex.split(line, comments=True)[2:])
