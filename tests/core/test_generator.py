"""The generator end to end: determinism, the private rebuild, --check-only, foreign catalogs."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.budget import examples

from toolcall300.cli import dispatch
from toolcall300.generator import build as generator
from toolcall300.generator.build import DATA, FILES, MANIFEST, Inputs, build, make_sample
from toolcall300.generator.checks import CHECKS, Report
from toolcall300.spec import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = ROOT / "corpus_private"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dispatch(["generate", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def demo_inputs(seed: int) -> Inputs:
    return Inputs(
        "demo_tools.json",
        (DATA / "demo_tools.json").read_bytes(),
        "demo_pools.json",
        (DATA / "demo_pools.json").read_bytes(),
        seed,
    )


@settings(
    max_examples=examples(3),
    deadline=None,
    phases=(Phase.explicit, Phase.generate),  # a build takes about a second: never shrink
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.integers(min_value=0, max_value=2**32))
def test_same_seed_is_byte_identical_and_another_seed_differs(seed: int) -> None:
    first, again, other = (
        build(demo_inputs(seed)),
        build(demo_inputs(seed)),
        build(demo_inputs(seed + 1)),
    )
    assert first.report.ok, first.report.failures[:3]
    assert first.files == again.files
    assert first.files["toolcall300.jsonl"] != other.files["toolcall300.jsonl"]


def test_rebuild_of_the_private_corpus_is_byte_identical(tmp_path: Path) -> None:
    code, out, err = cli("--rebuild", str(PRIVATE), "--out", str(tmp_path))
    assert code == 0, err
    for name in (*FILES, MANIFEST):
        assert (tmp_path / name).read_bytes() == (PRIVATE / name).read_bytes(), name
    assert "assertions" in out and ", 0 failed" in out


def test_public_sample_is_the_private_corpus_slice() -> None:
    assert (DATA / "sample30.jsonl").read_bytes() == (PRIVATE / "sample30.jsonl").read_bytes()


def test_check_only_passes_on_the_private_corpus() -> None:
    code, out, err = cli("--check-only", "--out", str(PRIVATE))
    manifest = json.loads((PRIVATE / MANIFEST).read_text())
    assert code == 0, err
    assert out.startswith(
        f"{manifest['assertions']} assertions in {len(CHECKS)} check classes, 0 failed"
    )


def test_check_only_names_a_quiet_edit(tmp_path: Path) -> None:
    for name in (*FILES, MANIFEST):
        shutil.copy(PRIVATE / name, tmp_path / name)
    shutil.copytree(PRIVATE / "inputs", tmp_path / "inputs")
    lines = (tmp_path / FILES[0]).read_text().splitlines(keepends=True)
    case = json.loads(lines[0])
    case["text"] += " "
    lines[0] = json.dumps(case, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    (tmp_path / FILES[0]).write_text("".join(lines))
    (tmp_path / "inputs" / "pools.json").write_text("{}")
    code, _, err = cli("--check-only", "--out", str(tmp_path))
    assert code == 1
    assert "FAIL manifest_pins: toolcall300.jsonl sha256 does not match its pin" in err
    assert "FAIL manifest_pins: recorded pools does not match" in err


def test_check_only_names_a_malformed_line(tmp_path: Path) -> None:
    for name in (*FILES, MANIFEST):
        shutil.copy(PRIVATE / name, tmp_path / name)
    with (tmp_path / FILES[1]).open("a") as fh:
        fh.write("{not json\n")
    code, _, err = cli("--check-only", "--out", str(tmp_path))
    assert code == 1 and "rationale.jsonl line 301" in err


def test_list_checks_prints_every_class() -> None:
    code, out, _ = cli("--list-checks")
    assert code == 0
    assert len(CHECKS) >= 23
    for name in CHECKS:
        assert name in out


def test_usage_errors_exit_1_never_2(tmp_path: Path) -> None:
    assert cli()[0] == 1
    assert cli("--out", str(tmp_path), "--bogus")[0] == 1
    assert cli("--out", str(tmp_path), "--tools", str(tmp_path / "missing.json"))[0] == 1
    (tmp_path / "broken.json").write_text("[{")
    code, _, err = cli("--out", str(tmp_path / "o"), "--tools", str(tmp_path / "broken.json"))
    assert code == 1 and len(err.strip().splitlines()) == 1


def test_a_bad_catalog_is_refused_by_name(tmp_path: Path) -> None:
    bad = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"v": {"oneOf": []}}},
            },
        }
    ]
    (tmp_path / "tools.json").write_text(json.dumps(bad))
    code, _, err = cli("--out", str(tmp_path / "out"), "--tools", str(tmp_path / "tools.json"))
    assert code == 1
    assert "unsupported keyword 'oneOf'" in err
    assert not (tmp_path / "out").exists()


def test_failed_integrity_checks_block_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(corpus: Any, only: tuple[str, ...] = ()) -> Report:
        return Report(1, [("texts_unique", "tc300-0002: text duplicates tc300-0001")])

    monkeypatch.setattr(generator, "run_checks", failing)
    code, _, err = cli("--out", str(tmp_path / "out"))
    assert code == 1
    assert "FAIL texts_unique" in err and "nothing was written" in err
    assert not (tmp_path / "out").exists()


FOREIGN = [
    {
        "type": "function",
        "function": {
            "name": "water_plants",
            "parameters": {
                "type": "object",
                "properties": {
                    "zone": {"type": "string", "enum": ["front", "back", "green-house"]},
                    "litres": {"type": "number", "minimum": 1, "maximum": 50},
                    "repeat_days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1},
                    "plants": {"type": "array", "items": {"type": "string"}},
                    "sensor": {
                        "type": "object",
                        "properties": {
                            "probe_id": {"type": "integer", "minimum": 1, "maximum": 9},
                            "moisture_below": {"type": "number", "minimum": 0, "maximum": 1},
                        },
                        "required": ["probe_id"],
                        "additionalProperties": False,
                    },
                    "dry_run": {"type": "boolean", "default": False},
                },
                "required": ["zone", "litres", "repeat_days"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_sensor",
            "parameters": {
                "type": "object",
                "properties": {
                    "sensor_no": {"type": "integer", "minimum": 1, "maximum": 9},
                    "unit": {"type": "string", "enum": ["pct", "raw"], "default": "pct"},
                },
                "required": ["sensor_no", "unit"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "log_harvest",
            "parameters": {
                "type": "object",
                "properties": {
                    "crop": {"type": "string"},
                    "kg": {"type": "number", "minimum": 0, "maximum": 100},
                    "organic": {"type": "boolean"},
                },
                "required": ["crop", "kg"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_zones",
            "parameters": {
                "type": "object",
                "properties": {"active_only": {"type": "boolean", "default": True}},
                "required": ["active_only"],
                "additionalProperties": False,
            },
        },
    },
]


def test_a_foreign_catalog_with_no_pools_builds_a_checked_corpus(tmp_path: Path) -> None:
    (tmp_path / "garden.json").write_text(json.dumps(FOREIGN))
    (tmp_path / "pools.json").write_text("{}")
    out = tmp_path / "corpus"
    code, _, err = cli(
        "--out",
        str(out),
        "--tools",
        str(tmp_path / "garden.json"),
        "--pools",
        str(tmp_path / "pools.json"),
        "--seed",
        "5",
    )
    assert code == 0, err
    cases = [json.loads(line) for line in (out / FILES[0]).read_text().splitlines()]
    assert {c["category"] for c in cases} == set(CATEGORIES) and len(cases) == 300
    names = {t["function"]["name"] for t in FOREIGN}
    assert all(t["function"]["name"] in names for c in cases for t in c["tools"])
    assert json.loads((out / MANIFEST).read_text())["catalog"]["name"] == "garden.json"
    assert cli("--check-only", "--out", str(out))[0] == 0


def test_enum_members_that_look_like_decision_ids_are_not_citations(tmp_path: Path) -> None:
    # an envelope size "C5" or a room "E1" is quoted in the rationale, never cited
    catalog = json.loads(json.dumps(FOREIGN))
    catalog[0]["function"]["parameters"]["properties"]["zone"]["enum"] = ["C5", "E1", "D4.1"]
    (tmp_path / "garden.json").write_text(json.dumps(catalog))
    (tmp_path / "pools.json").write_text("{}")
    out = tmp_path / "corpus"
    argv = ["--out", str(out), "--tools", str(tmp_path / "garden.json")]
    code, _, err = cli(*argv, "--pools", str(tmp_path / "pools.json"), "--seed", "3")
    assert code == 0, err
    assert "C5" in (out / FILES[1]).read_text()


def test_sample_is_stratified_and_deterministic() -> None:
    cases = [json.loads(line) for line in (PRIVATE / FILES[0]).read_text().splitlines()]
    sample = make_sample(cases, 1)
    assert sample == make_sample(cases, 1)
    counts = {cat: sum(1 for c in sample if c["category"] == cat) for cat in CATEGORIES}
    assert len(sample) == 30 and set(counts.values()) == {2, 3}


def test_rebuild_does_not_depend_on_hash_randomisation(tmp_path: Path) -> None:
    # set iteration order changes with PYTHONHASHSEED; the corpus must not
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    cmd = [
        sys.executable,
        "-m",
        "toolcall300",
        "generate",
        "--rebuild",
        str(PRIVATE),
        "--out",
        str(tmp_path),
    ]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    for name in (*FILES, MANIFEST):
        assert (tmp_path / name).read_bytes() == (PRIVATE / name).read_bytes(), name


def _rationale_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (PRIVATE / "rationale.jsonl").read_text().splitlines()]


def test_truncated_cases_cover_every_kind_of_cut() -> None:
    # the strict reading is exercised at each point it decides something (D11.1-D11.4)
    text = "\n".join(r["rationale"] for r in _rationale_rows())
    for kind in ("string", "number", "array_open", "nested", "between", "literal"):
        assert text.count(f"({kind} cut, near") >= 3, kind
    rules = {r["rule"] for r in _rationale_rows()}
    assert {"rule 11 / D11.1", "rule 11 / D11.2", "rule 11 / D11.3", "rule 11 / D11.4"} <= rules


def test_unrecoverable_cases_are_a_mix() -> None:
    cases = {
        c["id"]: c for c in (json.loads(x) for x in (PRIVATE / FILES[0]).read_text().splitlines())
    }
    rules = [r["rule"] for r in _rationale_rows() if cases[r["id"]]["category"] == "unrecoverable"]
    assert len(set(rules)) >= 7, rules
    texts = [c["text"] for c in cases.values() if c["category"] == "unrecoverable"]
    assert any(not t.lstrip().startswith(("{", "[")) for t in texts)  # prose with no call


def test_a_catalog_lacking_what_a_rule_needs_builds_the_rest_and_names_the_gap(
    tmp_path: Path,
) -> None:
    flat = [t for t in FOREIGN if t["function"]["name"] != "water_plants"]
    (tmp_path / "flat.json").write_text(json.dumps(flat))
    out = tmp_path / "out"
    code, stdout, err = cli("--out", str(out), "--tools", str(tmp_path / "flat.json"))
    assert code == 0, err
    need = "nested_flattened: no tool in the catalog offers a nested object"
    assert f"not built: {need}" in stdout
    shape = json.loads((out / MANIFEST).read_text())["shape"]
    assert shape["categories"]["nested_flattened"] == 0
    assert shape["absent"]["nested_flattened"].startswith(need.partition(": ")[2])
    cases = [json.loads(line) for line in (out / FILES[0]).read_text().splitlines()]
    assert len(cases) == 275 and "nested_flattened" not in {c["category"] for c in cases}
    assert cli("--check-only", "--out", str(out))[0] == 0


def test_every_multiple_calls_copy_alone_fails_the_integrator_control() -> None:
    """D10.3: no copy is the call as written, so taking the first copy (C2) gets nothing."""
    import random

    from toolcall300.catalog import load_catalog
    from toolcall300.controls import integrator
    from toolcall300.generator.rules import Ctx
    from toolcall300.generator.rules.multiple import multiple_calls

    catalog = load_catalog(FOREIGN)
    ctx = Ctx(random.Random(1), catalog, {})
    drafts = [multiple_calls(ctx, tool, variant) for tool in catalog for variant in range(6)]
    assert all(d is not None for d in drafts)
    for d in drafts:
        assert d is not None
        body = json.loads(d.text)
        copies = (
            [{"tool_calls": [e]} for e in body["tool_calls"]] if isinstance(body, dict) else body
        )
        assert len(copies) >= 2
        for one in copies:
            assert integrator(json.dumps(one), d.tools) is None, one


def test_args_as_string_encodes_once_more_than_each_envelope_carries() -> None:
    """D9.2 / E3: twice or more in the OpenAI family, once or more elsewhere; every envelope."""
    import random

    from toolcall300.catalog import load_catalog
    from toolcall300.controls import integrator
    from toolcall300.generator.envelopes import STRING_FORMAT, envelope_of, sent_calls
    from toolcall300.generator.oracles import decode_strings
    from toolcall300.generator.rules import Ctx
    from toolcall300.generator.rules.strings import ROTATION, args_as_string

    catalog = load_catalog(FOREIGN)
    ctx = Ctx(random.Random(2), catalog, {})
    seen = set()
    for variant in range(12):
        d = args_as_string(ctx, catalog[variant % len(catalog)], variant)
        assert d is not None and d.expected is not None
        envelope = envelope_of(d.text)
        seen.add(envelope)
        (call,) = sent_calls(json.loads(d.text)) or []
        args, times = decode_strings(call["arguments"])
        assert args == d.expected["arguments"]
        assert times >= (2 if envelope in STRING_FORMAT else 1)
        assert integrator(d.text, d.tools) is None
    assert seen == set(ROTATION)
