"""One strict JSON reader: a text is JSON for the generator, the scorer, toolshim and argcheck
alike, or for none of them (``toolcall300.canonical.loads_strict``, E1 of the grading contract,
tool-argument/v1 D14 and D17)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import toolcall300
from toolcall300 import controls
from toolcall300.argcheck import text as argcheck_text
from toolcall300.argcheck.check import check_body
from toolcall300.canonical import canonical
from toolcall300.generator import oracles
from toolcall300.scoring import adapters
from toolcall300.scoring.corpus import CorpusError, parse_corpus
from toolcall300.scoring.protocol import OnceResult
from toolcall300.toolshim import normalise, normalise_explained
from toolcall300.toolshim.types import Reason

PACKAGE = Path(toolcall300.__file__).parent

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "number"}, "m": {"type": "number"}},
            },
        },
    }
]

#: Calls Python's ``json`` reads, each with one thing RFC 8259 read strictly refuses.
NOT_JSON = {
    "NaN": '{"name": "f", "arguments": {"n": NaN}}',
    "Infinity": '{"name": "f", "arguments": {"n": Infinity}}',
    "-Infinity": '{"name": "f", "arguments": {"n": -Infinity}}',
    "overflow": '{"name": "f", "arguments": {"n": 1e999}}',
    "duplicate key": '{"name": "f", "arguments": {"n": 1, "n": 2}}',
    "duplicate equal values": '{"name": "f", "arguments": {"n": 1, "n": 1}}',
    "duplicate name": '{"name": "f", "name": "g", "arguments": {}}',
}
CUT = {  # the same, in a stream cut before its end (rule 11 reads the rest)
    "cut after NaN": '{"name": "f", "arguments": {"n": NaN, "m": 1',
    "cut after a duplicate": '{"name": "f", "arguments": {"n": 1, "n": 2, "m": 1',
}


def _once(stdout: str) -> OnceResult:
    return OnceResult(0, stdout.encode(), "", False, False, 0.0)


@pytest.mark.parametrize("text", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_every_reader_refuses_the_same_texts(text: str) -> None:
    assert normalise(text, TOOLS) is None
    assert normalise_explained(text, TOOLS).refusal is Reason.NOT_JSON
    assert controls.naive(text, TOOLS) is None
    assert controls.integrator(text, TOOLS) is None
    assert oracles.parsed({"text": text}) == (False, None)
    value, note = adapters.interpret_output(_once(text), 10)
    assert (value, note) == (text, "stdout is not JSON")  # a failed case, graded on the raw text
    with pytest.raises(argcheck_text.TextError):
        argcheck_text.loads(text, 64)
    body = '{"schema": {"type": "object"}, "arguments": ' + text + "}"
    assert check_body(body.encode())["refusal"]["code"] == "invalid_request_body"
    line = canonical({"id": "x", "category": "truncated", "text": "t", "tools": []})
    with pytest.raises(CorpusError, match="not valid JSON"):
        parse_corpus((line[:-1] + ', "extra": ' + text + "}").encode())


@pytest.mark.parametrize("text", CUT.values(), ids=CUT.keys())
def test_toolshim_refuses_them_in_a_cut_stream_too(text: str) -> None:
    assert normalise_explained(text, TOOLS).refusal is Reason.NOT_JSON


def test_the_same_call_written_once_is_read_by_all() -> None:
    text = '{"name": "f", "arguments": {"n": 1, "m": 1e308}}'
    call = {"name": "f", "arguments": {"n": 1, "m": 1e308}}
    assert normalise(text, TOOLS) == call
    assert controls.naive(text, TOOLS) == call
    assert oracles.parsed({"text": text}) == (True, call)
    assert argcheck_text.loads(text, 64) == call
    body = '{"schema": {"type": "object"}, "arguments": ' + text + "}"
    assert check_body(body.encode())["verdict"] == "VALID"


# ------------------------------------------------------------------------- no second reader

#: The kit (everything outside service/) reads JSON only through canonical.py, the reader itself.
_READERS = ("loads", "load", "JSONDecoder", "raw_decode")


def second_readers(source: str) -> list[str]:
    """Each use of Python's JSON reader other than through ``canonical``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in _READERS:
            on_json = isinstance(node.value, ast.Name) and node.value.id == "json"
            if on_json or node.attr in {"JSONDecoder", "raw_decode"}:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("json"):
            found.extend(
                f"line {node.lineno}: from {node.module} import {a.name}"
                for a in node.names
                if a.name in _READERS
            )
    return found


def _kit_modules() -> list[Path]:
    skip = {PACKAGE / "canonical.py"}
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p not in skip and p.relative_to(PACKAGE).parts[0] not in {"service", "client"}
    ]


@pytest.mark.parametrize("path", _kit_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_reads_json_but_through_canonical(path: Path) -> None:
    assert second_readers(path.read_text("utf-8")) == []


@pytest.mark.parametrize(
    "source",
    [
        "import json\njson.loads(t)",
        "import json\nd = json.JSONDecoder(parse_constant=f)",
        "from json import loads",
        "from json.decoder import JSONDecoder",
        "decoder.raw_decode(t, 0)",
    ],
)
def test_the_rule_catches_a_second_reader(source: str) -> None:
    assert second_readers(source)


def test_the_rule_allows_writing_and_the_canonical_reader() -> None:
    source = "import json\nfrom toolcall300.canonical import loads_strict\njson.dumps(v)\nloads_strict(t)"
    assert second_readers(source) == []
