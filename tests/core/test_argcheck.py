"""tool-argument/v1 checker: the pinned corpus, the interface the service calls, the decisions."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolcall300.argcheck import check as argcheck
from toolcall300.argcheck import criteria as argcheck_criteria
from toolcall300.argcheck import vectors as argcheck_corpus
from toolcall300.argcheck.check import (
    CAP_BODY,
    MAX_BODY_BYTES,
    MAX_DEPTH,
    REFUSAL_CODES,
    check,
    check_body,
    precheck,
    status_summary,
)
from toolcall300.argcheck.repairs import apply_diff
from toolcall300.canonical import canonical

CORPUS = argcheck_corpus.load_corpus()
SEED = json.loads(
    (Path(argcheck.__file__).parents[1] / "data" / "tool-argument-v1.seed.json").read_text("utf-8")
)
PKG = Path(argcheck.__file__).parents[1]


# ------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("vector", CORPUS["vectors"], ids=[v["id"] for v in CORPUS["vectors"]])
def test_corpus_vector(vector: dict[str, Any]) -> None:
    assert canonical(argcheck_corpus.outcome(argcheck_corpus.submit(vector))) == canonical(
        vector["expect"]
    )


def test_corpus_pin_is_the_canonical_sha256() -> None:
    assert argcheck_corpus.corpus_pin(CORPUS) == CORPUS["sha256"]
    tampered = json.loads(json.dumps(CORPUS))
    tampered["vectors"][0]["expect"] = {"verdict": "VALID"}
    assert argcheck_corpus.corpus_pin(tampered) != CORPUS["sha256"]


def test_corpus_vector_ids_are_unique() -> None:
    ids = [v["id"] for v in CORPUS["vectors"]]
    assert len(ids) == len(set(ids))


def _expected(field: str) -> set[str]:
    out: set[str] = set()
    for v in CORPUS["vectors"]:
        exp = v["expect"]
        if field == "rule":
            out |= {e["rule"] for e in exp.get("diff", [])}
        elif field == "defect":
            out |= {defect[1] for defect in exp.get("defects", [])}
        elif field == "refusal" and "refusal" in exp:
            out.add(exp["refusal"])
    return out


def test_corpus_exercises_every_rule_defect_and_refusal() -> None:
    assert _expected("rule") == {f"R{i}" for i in range(1, 10)}
    assert _expected("defect") == set(SEED["defect_codes"])
    assert _expected("refusal") == set(REFUSAL_CODES)
    assert {c.split(" ")[0] for c in SEED["free_refusals"]} == set(REFUSAL_CODES)


def test_corpus_claims_recursion_and_every_never_item_and_decision() -> None:
    covers = {c for v in CORPUS["vectors"] for c in v["covers"]}
    assert {"recursion-properties", "recursion-items", "recursion-unwrapped"} <= covers
    assert {f"N{i}" for i in range(1, 6)} <= covers
    assert len(SEED["never_a_repair"]) == 5
    # Service-scope decisions (the check-time budget) are tested at the service edge instead;
    # the corpus-scope one (D21, the corpus's own id) by the test below.
    decisions = {
        d["id"].split("-")[0]
        for d in argcheck_criteria.DECISIONS
        if d.get("scope") not in ("service", "corpus")
    }
    assert decisions - covers == set()


def test_the_vectors_have_their_own_id_not_the_criteria_corpus_id() -> None:
    """D21: the criteria's argument-check-corpus/v1 is pinned to another SHA-256."""
    doc = argcheck_criteria.criteria_document()
    assert SEED["corpus"]["id"] == "argument-check-corpus/v1"
    assert CORPUS["id"] == argcheck_corpus.CORPUS_ID == doc["corpus"]["id"]
    assert doc["corpus"]["id"] != SEED["corpus"]["id"]
    assert doc["corpus"]["sha256"] != SEED["corpus"]["sha256"]


def test_recursion_vectors_really_repair_below_the_top() -> None:
    by_id = {v["id"]: v for v in CORPUS["vectors"]}
    paths = {
        p["path"]
        for vid in ("recursion-properties", "recursion-items")
        for p in by_id[vid]["expect"]["diff"]
    }
    assert "$.filter.limit" in paths and "$.points[0].x" in paths
    unwrapped = by_id["r5-object-recursive"]["expect"]["diff"]
    assert [e["rule"] for e in unwrapped] == ["R5", "R3", "R4"]


def test_selftest_passes_and_detects_a_failing_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    out, err = io.StringIO(), io.StringIO()
    assert argcheck_corpus.selftest(out, err) == 0
    assert f"{len(CORPUS['vectors'])}/{len(CORPUS['vectors'])}" in out.getvalue()
    broken = json.loads(json.dumps(CORPUS))
    broken["vectors"][0]["expect"] = {"verdict": "UNREPAIRABLE", "defects": []}
    broken["sha256"] = argcheck_corpus.corpus_pin(broken)
    monkeypatch.setattr(argcheck_corpus, "load_corpus", lambda: broken)
    assert argcheck_corpus.selftest(io.StringIO(), io.StringIO()) == 1
    broken["sha256"] = "0" * 64
    assert argcheck_corpus.selftest(io.StringIO(), err) == 1
    assert "pin mismatch" in err.getvalue()


# ------------------------------------------------------------------------- the criteria document


def test_criteria_document_is_the_seed_plus_pin_and_decisions() -> None:
    doc = argcheck_criteria.criteria_document()
    assert doc["corpus"]["sha256"] == CORPUS["sha256"]
    changed = {
        *("corpus", "corpus_pin_definition", "schema_subset", "limits", "decisions"),
        *("price", "custody"),  # D23: what the service really charges and records
    }
    for key, value in SEED.items():
        if key not in changed:
            assert doc[key] == value, key
    assert set(doc) - set(SEED) == {"limits", "decisions"}
    for key, value in SEED["schema_subset"].items():
        assert doc["schema_subset"][key] == value
    assert doc["limits"]["max_body_bytes"] == MAX_BODY_BYTES
    assert "toolcall300 check --selftest" in doc["corpus_pin_definition"]
    json.dumps(doc, allow_nan=False)


def test_criteria_answers_every_open_question_of_the_issue() -> None:
    text = json.dumps(argcheck_criteria.DECISIONS)
    for topic in (
        "R1 and R2",
        "number at the end",
        "order",
        "invalid_json_text",
        "R5 or R7",
        "multipleOf",
        "string length",
    ):
        assert topic.lower() in text.lower(), topic


def test_enforced_keywords_are_the_seeds() -> None:
    from toolcall300.schema import ENFORCED

    assert set(ENFORCED) == set(SEED["schema_subset"]["enforced"])


# ------------------------------------------------------------------------- service interface

S: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "q": {"type": "string"}},
    "required": ["q"],
}


def test_only_a_valid_answer_states_that_no_repair_was_needed() -> None:
    """The criteria's verdict text: VALID's answer states that no repair was needed (D18)."""
    answers = [argcheck_corpus.submit(v) for v in CORPUS["vectors"]]
    verdicts = {a.get("verdict") for a in answers}
    assert {"VALID", "REPAIRED", "UNREPAIRABLE"} <= verdicts
    for answer in answers:
        if answer.get("verdict") == "VALID":
            assert answer["repair_needed"] is False and "diff" not in answer
        else:
            assert "repair_needed" not in answer


def test_check_body_over_the_cap_is_the_body_bytes_refusal() -> None:
    big = check_body(b" " * (MAX_BODY_BYTES + 1))
    assert big["refusal"]["code"] == CAP_BODY and CAP_BODY in REFUSAL_CODES


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe",
        b"{",
        b"",
        b"[1,]",
        b'{"schema": NaN}',
        b'{"a": 1e999}',
        b"\xef\xbb\xbf{}",
        b"[" * 5000 + b"]" * 5000,
        b'{"x": "\\ud800"}',
    ],
)
def test_check_body_malformed_is_invalid_request_body(body: bytes) -> None:
    assert check_body(body)["refusal"]["code"] == "invalid_request_body"
    assert check_body(body, precheck=True)["refusal"]["code"] == "invalid_request_body"


def test_precheck_gives_assessable_or_the_same_refusal_never_a_verdict() -> None:
    good = {"schema": S, "arguments": {"n": "x"}}
    assert check(good)["verdict"] == "UNREPAIRABLE"
    assert precheck(good) == {"criteria_id": "tool-argument/v1", "assessable": True}
    bads: list[Any] = [{"schema": S}, {"schema": {"anyOf": []}, "arguments": {}}, [1]]
    for bad in bads:
        assert precheck(bad) == check(bad)
    body = json.dumps(good).encode()
    assert check_body(body, precheck=True) == precheck(good)


def test_refusal_messages_carry_no_values() -> None:
    secret = "sk-live-SECRETVALUE"
    for req in (
        {"schema": S, "arguments": [secret]},
        {"schema": S, "arguments_text": f'["{secret}"]'},
        {"schema": {"type": "object", secret: 1}, "arguments": {}},
        {"schema": S, "arguments": {secret: 1}, secret: 2},
    ):
        assert secret not in canonical(check(req))


def test_status_summary_keeps_counts_and_codes_only() -> None:
    req = {
        "schema": {**S, "additionalProperties": False},
        "arguments": {"n": "3", "secret_key": "v4lue"},
    }
    response = check(req)
    summary = status_summary(response)
    assert summary == {
        "verdict": "UNREPAIRABLE",
        "refusal": None,
        "repairs": 0,
        "defects": 2,
        "defect_codes": ["additional_property", "missing_required"],
    }
    repaired = status_summary(check({"schema": S, "arguments": {"q": "x", "n": "3"}}))
    assert repaired["verdict"] == "REPAIRED" and repaired["repairs"] == 1
    refused = status_summary(check({"schema": S}))
    assert refused["refusal"] == "arguments_missing" and refused["verdict"] is None


def test_depth_limit_counts_r5_unwrapped_content() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"c": {"type": "object"}}}
    inner = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    inside = json.dumps({"k": json.loads(inner)})
    assert (
        check({"schema": schema, "arguments": {"c": inside}})["refusal"]["code"]
        == "arguments_too_deep"
    )
    shallow = json.dumps({"k": [[1]]})
    assert check({"schema": schema, "arguments": {"c": shallow}})["verdict"] == "REPAIRED"


def test_schema_too_deep_is_not_covered() -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(argcheck.MAX_SCHEMA_DEPTH):
        schema = {"type": "object", "properties": {"a": schema}}
    assert check({"schema": schema, "arguments": {}})["refusal"]["code"] == "schema_not_covered"


def test_check_does_not_mutate_the_request() -> None:
    args = {"q": "x", "n": "3", "tags": "a", "cfg": None}
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": "integer"},
            "tags": {"type": "array"},
            "cfg": {"type": "object"},
        },
    }
    before = canonical({"schema": schema, "arguments": args})
    check({"schema": schema, "arguments": args})
    assert canonical({"schema": schema, "arguments": args}) == before


def test_non_json_python_values_are_refused_not_raised() -> None:
    for args in (
        {"n": float("nan")},
        {"n": (1, 2)},
        {1: "x"},
        {"n": {1, 2}},
        {"s": "\ud800"},
        {"q": 10**5000},
    ):
        assert check({"schema": S, "arguments": args})["refusal"]["code"] == "invalid_request_body"
    assert (
        check({"schema": {"type": "object", "minimum": float("inf")}, "arguments": {}})["refusal"][
            "code"
        ]
        == "invalid_request_body"
    )
    assert (
        check({"schema": S, "arguments_text": "\ud800"})["refusal"]["code"]
        == "arguments_text_invalid"
    )


def test_apply_diff_replays_text_and_node_repairs() -> None:
    text = '{"q": "x", "n": "5", "tags": ["a",'
    schema = {**S, "properties": {**S["properties"], "tags": {"type": "array"}}}
    response = check({"schema": schema, "arguments_text": text})
    assert [e["rule"] for e in response["diff"]] == ["R2", "R1", "R3"]
    assert apply_diff(text, response["diff"]) == response["arguments"]
    with pytest.raises(ValueError):
        apply_diff({"q": "x"}, response["diff"])


def test_decision_r3_keeps_exact_digits_only() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number"}}}
    for s, expected in (
        ("1e2", 100.0),
        ("0.10", 0.1),
        ("-0", 0),
        ("12345678901234567890", 12345678901234567890),
    ):
        assert check({"schema": schema, "arguments": {"x": s}})["arguments"] == {"x": expected}, s
    for s in ("1e400", "0.30000000000000000001", "+1", "1.", ".5", "01", "1 "):
        assert check({"schema": schema, "arguments": {"x": s}})["verdict"] == "UNREPAIRABLE", s


def test_decision_r9_uses_casefold_and_dedupes_entries() -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "enum": ["straße", "straße"]}},
    }
    assert check({"schema": schema, "arguments": {"s": "STRASSE"}})["arguments"] == {"s": "straße"}


def test_decision_r7_wraps_an_object_string_that_is_not_an_array() -> None:
    schema = {"type": "object", "properties": {"t": {"type": "array", "items": {"type": "string"}}}}
    response = check({"schema": schema, "arguments": {"t": '{"a": 1}'}})
    assert response["diff"] == [
        {"path": "$.t", "rule": "R7", "op": "replace", "before": '{"a": 1}', "after": ['{"a": 1}']}
    ]


def test_a_repair_is_attempted_only_where_the_node_fails() -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": ["string", "integer"]}, "b": {"enum": ["A"]}},
    }
    assert check({"schema": schema, "arguments": {"s": "5", "b": "A"}})["verdict"] == "VALID"


# ------------------------------------------------------------------------- privacy


def test_argcheck_modules_never_log_or_print() -> None:
    for path in sorted((PKG / "argcheck").glob("*.py")):
        name = path.name
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                mods = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(m.split(".")[0] == "logging" for m in mods), name
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "print", name
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("stderr", "stdout") or name == "check.py", name


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ({"arguments_text": 5, "x": 1}, "invalid_request_body"),
        ({"arguments_text": 5}, "schema_missing"),
        (
            {"schema": {"minimum": float("nan")}, "arguments": 1, "arguments_text": 1},
            "invalid_request_body",
        ),
        (
            {"schema": {"minLength": -1, "anyOf": []}, "arguments": 1, "arguments_text": 1},
            "schema_invalid",
        ),
        ({"schema": {"anyOf": []}, "arguments": 1, "arguments_text": 1}, "schema_not_covered"),
        ({"schema": {}, "arguments": 1, "arguments_text": 1}, "arguments_ambiguous"),
        ({"schema": {}}, "arguments_missing"),
        ({"schema": {}, "arguments": [float("inf")]}, "invalid_request_body"),
        ({"schema": {}, "arguments": json.loads("[" * 65 + "]" * 65)}, "arguments_too_deep"),
        (
            {"schema": {}, "arguments_text": "[" * 65},
            "arguments_too_deep",
        ),  # too deep once R1 closes it
        ({"schema": {}, "arguments_text": None}, "arguments_text_invalid"),
        ({"schema": {}, "arguments_text": "[1]"}, "arguments_not_object"),
        ({"schema": {}, "arguments": 1}, "arguments_not_object"),
    ],
)
def test_decision_refusal_order(request_: dict[str, Any], code: str) -> None:
    assert check(request_)["refusal"]["code"] == code


@pytest.mark.parametrize(
    ("pattern", "value", "valid"),
    [
        (r"^[a-z]+$", "abc\n", False),  # Python's $ would match before the final newline
        (r"^[a-z]+$", "abc", True),
        (r"^\d+$", "\u0663", False),  # an Arabic-Indic digit is no ECMA \d
        (r"^\w+$", "é", False),
        (r"^\s$", "\u00a0", True),  # ECMA \s is Unicode whitespace
        (r"^\S$", "\u2028", False),
        (r"^[\s]$", "\ufeff", True),
        (r"^a.b$", "a\rb", False),  # ECMA . stops at every line terminator
        (r"^a.b$", "a\u2028b", False),
        (r"^a.b$", "a-b", True),
        (r"^a[$]$", "a$", True),
        (r"^a\$$", "a$", True),
        (r"^[^$]+$", "ab", True),
        (r"^[^]$", "\n", True),  # ECMA's [^] is any character; Python reads a class of "]"
        (r"^\cA$", "\x01", True),
        (r"^(?<year>\d{4})$", "2026", True),
    ],
)
def test_schema_pattern_has_ecma_262_meaning(pattern: str, value: str, valid: bool) -> None:
    # schema.py (changed for argcheck): a tool argument like "abc\n" must not pass ^[a-z]+$.
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    verdict = check({"schema": schema, "arguments": {"s": value}})["verdict"]
    assert verdict == ("VALID" if valid else "UNREPAIRABLE")


def test_criteria_state_the_price_and_ledger_the_service_really_uses() -> None:
    """D23: Stripe packs at the published criteria's $0.02 a check; the ledger's closed fields for Stripe."""
    doc = argcheck_criteria.criteria_document()
    price = doc["price"]
    assert (price["amount"], price["currency"], price["basis"]) == (2, "usd", "per check")
    assert price["pack"]["amount"] == price["pack"]["checks"] * price["amount"]
    assert "usdc" not in json.dumps(price).lower() and "POST /checkout" in price["pack"]["buy"]
    fields = [f.split(":")[0] for f in doc["custody"]["ledger_closed_fields"]]
    assert fields == [name for name, _ in argcheck_criteria.LEDGER_FIELDS]
    assert not {"wallet", "lamports", "solana"} & {w.lower() for f in fields for w in f.split("_")}
    assert doc["custody"]["retention"] == SEED["custody"]["retention"]


def test_an_integer_past_a_doubles_range_is_no_json_in_any_form() -> None:
    """D17: a number past a double's range is not JSON, an integer as much as 1e400 (D11 keeps
    integers exact within the range): invalid_json_text in arguments_text, invalid_request_body
    in a body or an arguments object; the largest integer in range is checked, exactly."""
    big, top = 10**400, int(sys.float_info.max)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    text = check({"schema": schema, "arguments_text": '{"n": ' + str(big) + "}"})
    assert text["verdict"] == "UNREPAIRABLE"
    assert [d["code"] for d in text["defects"]] == ["invalid_json_text"]
    assert text == check({"schema": schema, "arguments_text": '{"n": 1e400}'})  # alike
    as_object = check({"schema": schema, "arguments": {"n": big}})
    assert as_object["refusal"] == {
        "code": "invalid_request_body",
        "message": "arguments is not a JSON value",
    }
    body = b'{"schema": {"type": "object"}, "arguments": {"n": ' + str(big).encode() + b"}}"
    assert check_body(body)["refusal"]["code"] == "invalid_request_body"
    in_range = check({"schema": schema, "arguments_text": '{"n": ' + str(top) + "}"})
    assert in_range["verdict"] == "VALID" and in_range["arguments"] == {"n": top}


@pytest.mark.parametrize(
    "body",
    [
        # A lone surrogate by escape, in the arguments and in the schema.
        b'{"schema": {"type": "object"}, "arguments": {"s": "\\ud800"}}',
        b'{"schema": {"type": "object", "description": "\\udfff"}, "arguments": {}}',
        # Nesting past the limit, few brackets each side.
        b'{"schema": {"type": "object"}, "arguments": ' + b'{"a": ' * 65 + b"1" + b"}" * 65 + b"}",
    ],
)
def test_check_body_refuses_what_check_refuses_when_the_reading_is_trusted(body: bytes) -> None:
    """check_body skips the JSON-value walk only for bodies that cannot need it (_shallow)."""
    expected = check(json.loads(body))
    assert "refusal" in expected
    assert check_body(body) == expected


def test_r6_spells_a_scalar_as_canonical_json_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """R6 writes a boolean and an integer without the JSON encoder (it is most of an R6
    repair's cost); the spelling is the canonical one, for every kind of scalar."""
    from toolcall300.argcheck import repairs
    from toolcall300.canonical import canonical

    class Int(int):
        pass

    values = (True, False, 0, -0, 7, -12345, 2**53 + 1, -(10**300), 1.5, -0.0, 1e300, Int(3))
    expected = {id(v): canonical(v) for v in values}

    def encoder(value: Any) -> str:
        assert type(value) not in (bool, int), "the JSON encoder spelled a boolean or an int"
        return canonical(value)

    monkeypatch.setattr(repairs, "canonical", encoder)
    for value in values:
        assert repairs._r6_scalar_to_string(value, ("string",)) == ("R6", expected[id(value)])
