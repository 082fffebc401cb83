"""tool-argument/v1: check one arguments blob against one caller-supplied schema, and repair it
only with the closed whitelist R1..R9.

:func:`check` takes ``{"schema", "arguments"}`` or ``{"schema", "arguments_text"}`` and returns
a verdict (``VALID``, ``REPAIRED`` with the repaired blob and the exact diff, ``UNREPAIRABLE``
with every blocking defect) or a named free refusal. The schema subset and the defect codes are
the suite's schema engine (:mod:`toolcall300.schema`); this module adds the repairs, the
refusals, the diff and its inverse :func:`apply_diff`, and the CLI shell ``toolcall300 check``.

It deliberately does not: fill defaults, delete a caller-supplied value other than an optional
null (R8), guess, round, trim or case-fold outside R9, or log anything. Nothing here writes an
argument value, key or schema anywhere but into the response returned to the caller.
"""

from __future__ import annotations

import argparse
import copy
import decimal
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from toolcall300.argcheck import text as text_reader
from toolcall300.canonical import canonical
from toolcall300.cliutil import EXIT_ERROR, EXIT_OK, ArgParser
from toolcall300.schema import (
    KEYWORDS,
    NOT_COVERED,
    Path,
    SchemaProblem,
    declared_types,
    format_path,
    is_integer,
    is_valid,
    iter_errors,
    json_type_matches,
    node_errors,
    schema_problems,
)

CRITERIA_ID = "tool-argument/v1"
MAX_BODY_BYTES = 256 * 1024
#: Deepest nesting of the arguments blob (``{}`` is depth 1), R5-unwrapped content included.
MAX_DEPTH = 64
#: Deepest nesting of the schema document itself (each argument level costs two).
MAX_SCHEMA_DEPTH = 4 * MAX_DEPTH + 2
CAP_BODY = "CAP-EXCEEDED:body_bytes"

REFUSAL_CODES = (
    "invalid_request_body",
    "schema_missing",
    "schema_invalid",
    "schema_not_covered",
    "arguments_missing",
    "arguments_ambiguous",
    "arguments_not_object",
    "arguments_text_invalid",
    "arguments_too_deep",
    CAP_BODY,
)

_REQUEST_FIELDS = frozenset({"schema", "arguments", "arguments_text"})


class Refusal(Exception):
    """A submission that cannot be assessed at all: a named free refusal, never a verdict."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def refusal(code: str, message: str) -> dict[str, Any]:
    """The response body of a refusal."""
    return {"refusal": {"code": code, "message": message}}


def refusal_status(code: str) -> int:
    """HTTP status of a refusal: 413 for the body-size cap, 400 for every other code."""
    return 413 if code == CAP_BODY else 400


# ------------------------------------------------------------------------- request checks


#: Python refuses to print an int longer than 4300 digits; a JSON body cannot carry one either.
_MAX_INT_BITS = 14_000


def _is_json_scalar(node: Any) -> bool:
    if isinstance(node, str):
        return not text_reader.has_lone_surrogate(node)
    if isinstance(node, float):
        return math.isfinite(node)
    if isinstance(node, int) and not isinstance(node, bool):
        return node.bit_length() <= _MAX_INT_BITS
    return node is None or isinstance(node, bool)


def _is_json_value(value: Any, limit: int) -> tuple[bool, int]:
    """(whether ``value`` is a JSON value of valid Unicode text, its depth capped past limit).

    Iterative, so a hostile nesting costs no more than ``limit`` levels and never recursion.
    """
    if not isinstance(value, (dict, list)):
        return _is_json_scalar(value), 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return True, deepest
        if isinstance(node, dict):
            for key in node:
                if not isinstance(key, str) or text_reader.has_lone_surrogate(key):
                    return False, deepest
            children: Any = node.values()
        else:
            children = node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
            elif not _is_json_scalar(child):
                return False, deepest
    return True, deepest


def _checked_schema(request: dict[str, Any]) -> dict[str, Any]:
    if "schema" not in request:
        raise Refusal("schema_missing", "the request has no schema")
    schema = request["schema"]
    ok, depth = _is_json_value(schema, MAX_SCHEMA_DEPTH)
    if not ok:
        raise Refusal("invalid_request_body", "the schema is not a JSON value")
    if depth > MAX_SCHEMA_DEPTH:
        raise Refusal(
            "schema_not_covered", f"schema nesting beyond {MAX_SCHEMA_DEPTH} levels is not covered"
        )
    problems = schema_problems(schema)
    # A malformed keyword is named before a not-covered one: the schema is unusable either way.
    for kind, code in (("invalid", "schema_invalid"), ("not_covered", "schema_not_covered")):
        found = [p for p in problems if p.kind == kind]
        if found:
            raise Refusal(code, _problem_message(found[0], len(found)))
    assert isinstance(schema, dict)  # schema_problems refuses every non-object schema
    return schema


def _problem_message(problem: SchemaProblem, count: int) -> str:
    """A refusal message that names only keywords of the JSON Schema vocabulary, never one of
    the caller's property names or values (a refusal may be recorded; the schema may not)."""
    last = problem.schema_path[-1] if problem.schema_path else None
    known = isinstance(last, str) and (last in KEYWORDS or last in NOT_COVERED)
    if problem.kind == "not_covered":
        what = (
            f"keyword {last!r} is outside the covered subset"
            if known
            else "the schema uses a keyword or form outside the covered subset"
        )
    else:
        what = (
            f"keyword {last!r} has a malformed value"
            if known
            else "a (sub)schema is not a JSON object"
        )
    return f"{what} ({count} problem(s) in all)"


@dataclass(frozen=True)
class _Submission:
    """The arguments as the check will see them, and the text repairs already made."""

    arguments: dict[str, Any] | None  # None: the text is invalid_json_text
    text_diff: list[dict[str, Any]]


def _checked_arguments(request: dict[str, Any]) -> _Submission:
    has_obj, has_text = "arguments" in request, "arguments_text" in request
    if has_obj and has_text:
        raise Refusal("arguments_ambiguous", "send exactly one of arguments and arguments_text")
    if not (has_obj or has_text):
        raise Refusal("arguments_missing", "the request has neither arguments nor arguments_text")
    value: Any
    diff: list[dict[str, Any]] = []
    if has_obj:
        value = request["arguments"]
        ok, depth = _is_json_value(value, MAX_DEPTH)
        if not ok:
            raise Refusal("invalid_request_body", "arguments is not a JSON value")
        if depth > MAX_DEPTH:
            raise Refusal("arguments_too_deep", f"arguments nest deeper than {MAX_DEPTH} levels")
    else:
        text = request["arguments_text"]
        if not isinstance(text, str) or text_reader.has_lone_surrogate(text):
            raise Refusal(
                "arguments_text_invalid", "arguments_text must be a string of valid Unicode text"
            )
        parsed = _read_text(text)
        if parsed is None:
            return _Submission(None, [])
        value, diff = parsed
    if not isinstance(value, dict):
        # The root is never R5-unwrapped or otherwise repaired into an object: it is refused.
        raise Refusal("arguments_not_object", "the arguments must be a JSON object")
    return _Submission(value, diff)


def _read_text(text: str) -> tuple[Any, list[dict[str, Any]]] | None:
    """The parsed text and its R1/R2 diff (empty when it parsed as sent); None if unrepairable."""
    try:
        return text_reader.loads(text, MAX_DEPTH), []
    except text_reader.TooDeep as exc:
        raise Refusal(
            "arguments_too_deep", f"arguments_text nests deeper than {MAX_DEPTH} levels"
        ) from exc
    except text_reader.TextError:
        pass
    try:
        # Text repairs come first and only when the text as sent does not parse (whitelist order).
        return text_reader.repair_text(text, MAX_DEPTH)
    except text_reader.TooDeep as exc:
        raise Refusal(
            "arguments_too_deep", f"arguments_text nests deeper than {MAX_DEPTH} levels"
        ) from exc


# ------------------------------------------------------------------------- the node repairs

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

Repair = tuple[str, Any]  # (rule id, replacement value)


def _r3_string_to_number(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R3: a string matching the JSON number grammar exactly becomes that number."""
    if not (isinstance(value, str) and {"number", "integer"} & set(types)):
        return None
    if not _NUMBER.fullmatch(value):
        return None
    try:
        number: int | float = float(value) if any(c in value for c in ".eE") else int(value)
    except ValueError:  # more digits than int() reads
        return None
    # Never rounding (never-a-repair): the value must be the caller's digits exactly, so a
    # string a double cannot hold (too long, or out of range) is not converted.
    if isinstance(number, float) and (
        not math.isfinite(number) or decimal.Decimal(repr(number)) != decimal.Decimal(value)
    ):
        return None
    if "number" not in types and not is_integer(number):
        return None  # R3: for type integer the number must be integral ("4.5" stays a defect)
    return "R3", number


def _r4_string_to_boolean(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R4: exactly "true" and "false", nothing else ("True", "yes", "1" are defects)."""
    if "boolean" in types and value in ("true", "false") and isinstance(value, str):
        return "R4", value == "true"
    return None


def _unwrapped(value: str, depth: int) -> Any:
    """The JSON a string holds, or a private sentinel when it does not parse."""
    try:
        return text_reader.loads(value, MAX_DEPTH - depth)
    except text_reader.TooDeep as exc:
        raise Refusal(
            "arguments_too_deep", f"an unwrapped string nests deeper than {MAX_DEPTH} levels"
        ) from exc
    except text_reader.TextError:
        return _NOT_JSON


_NOT_JSON = object()


def _r5_string_json_unwrap(value: Any, types: tuple[str, ...], depth: int) -> Repair | None:
    """R5: a string that parses as JSON of exactly the schema's type (object or array)."""
    wanted = [t for t in ("object", "array") if t in types]
    if not (isinstance(value, str) and wanted):
        return None
    parsed = _unwrapped(value, depth)
    if parsed is not _NOT_JSON and any(json_type_matches(parsed, t) for t in wanted):
        return "R5", parsed
    return None


def _r6_scalar_to_string(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R6: a number or boolean becomes its canonical JSON spelling; containers never do."""
    if "string" in types and (isinstance(value, (bool, int, float))):
        return "R6", canonical(value)
    return None


def _r7_wrap_single(value: Any, types: tuple[str, ...], depth: int) -> Repair | None:
    """R7: a non-array value becomes ``[value]``.

    Decisions: a string holding a JSON array is R5's, never wrapped (two readings would be a
    pick); null is the absence marker (R8's reading), so it is never wrapped into ``[null]``.
    """
    if "array" not in types or isinstance(value, list) or value is None:
        return None
    if isinstance(value, str) and isinstance(_unwrapped(value, depth), list):
        return None
    return "R7", [value]


def _r9_enum_case_match(value: Any, schema: dict[str, Any]) -> Repair | None:
    """R9: exactly one entry of an all-string enum equals the string case-insensitively."""
    enum = schema.get("enum")
    if not (isinstance(value, str) and isinstance(enum, list) and enum):
        return None
    if not all(isinstance(e, str) for e in enum):
        return None
    # Decision: "case-insensitively" is Unicode default caseless matching (str.casefold).
    folded = value.casefold()
    matches = {e for e in enum if e.casefold() == folded}
    if len(matches) == 1:
        return "R9", matches.pop()
    return None


def _own_repair(value: Any, schema: dict[str, Any], path: Path) -> Repair | None:
    """The node's one candidate repair: the first applicable rule in whitelist order.

    Only a failing node is repaired. R3..R7 need the node to fail ``type``; R9 needs it to
    fail ``enum``. At most one own repair per node, and no fallback to a later rule when the
    first applicable one does not bring the node into conformance (that would be a pick).
    """
    codes = {e.code for e in node_errors(value, schema, path)}
    depth = len(path)  # containers around this node; unwrapped content nests below them
    if "type_mismatch" in codes:
        types = declared_types(schema)
        candidates: tuple[Callable[[], Repair | None], ...] = (
            lambda: _r3_string_to_number(value, types),
            lambda: _r4_string_to_boolean(value, types),
            lambda: _r5_string_json_unwrap(value, types, depth),
            lambda: _r6_scalar_to_string(value, types),
            lambda: _r7_wrap_single(value, types, depth),
        )
        for attempt in candidates:
            found = attempt()
            if found is not None:
                return found
        return None
    if "enum_mismatch" in codes:
        return _r9_enum_case_match(value, schema)
    return None


def _admits_null(schema: dict[str, Any]) -> bool:
    return is_valid(None, schema)


class _Repairer:
    """One tentative repair pass over a blob, collecting the diff in application order."""

    def __init__(self) -> None:
        self.diff: list[dict[str, Any]] = []

    def node(self, value: Any, schema: dict[str, Any], path: Path) -> Any:
        """Repair one node: its own repair first, then its children.

        The own repair is tentative: it is kept only when the node's whole subtree then
        conforms; otherwise it and every repair beneath it are withdrawn and the node is
        left as submitted ("the wrap never launders a bad value into a pass").
        """
        # D13: the root is the arguments object itself and is never replaced (R7 would wrap it).
        found = _own_repair(value, schema, path) if path else None
        if found is not None:
            rule, replacement = found
            mark = len(self.diff)
            self.diff.append(_entry(path, rule, "replace", value, replacement))
            repaired = self.children(replacement, schema, path)  # children() never mutates
            if is_valid(repaired, schema):
                return repaired
            del self.diff[mark:]
        return self.children(value, schema, path)

    def children(self, value: Any, schema: dict[str, Any], path: Path) -> Any:
        """Repair an object's declared properties (in submitted key order) or an array's items."""
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            props: dict[str, Any] = schema["properties"]
            required = schema.get("required", [])
            out: dict[str, Any] = {}
            for key, child in value.items():
                sub = props.get(key)
                if sub is None:
                    out[key] = child
                elif child is None and key not in required and not _admits_null(sub):
                    # R8: null on an optional declared property is the absence marker.
                    self.diff.append(_entry(path + (key,), "R8", "remove", None, None))
                else:
                    out[key] = self.node(child, sub, path + (key,))
            return out
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            items: dict[str, Any] = schema["items"]
            return [self.node(item, items, path + (i,)) for i, item in enumerate(value)]
        return value


def _entry(path: Path, rule: str, op: str, before: Any, after: Any) -> dict[str, Any]:
    return {"path": format_path(path), "rule": rule, "op": op, "before": before, "after": after}


# ------------------------------------------------------------------------- the check


def _defects(arguments: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every blocking defect: missing_required first, then the rest in traversal order."""
    errors = list(iter_errors(arguments, schema))
    ordered = [e for e in errors if e.code == "missing_required"]
    ordered += [e for e in errors if e.code != "missing_required"]
    return [
        {
            "path": format_path(e.instance_path),
            "code": e.code,
            "keyword": e.keyword,
            "message": e.message,
        }
        for e in ordered
    ]


def _valid_or_text_repaired(submission: _Submission) -> dict[str, Any]:
    if submission.text_diff:
        return {
            "criteria_id": CRITERIA_ID,
            "verdict": "REPAIRED",
            "arguments": submission.arguments,
            "diff": submission.text_diff,
        }
    return {"criteria_id": CRITERIA_ID, "verdict": "VALID", "arguments": submission.arguments}


def _verdict(submission: _Submission, schema: dict[str, Any]) -> dict[str, Any]:
    if submission.arguments is None:
        # Decision: invalid_json_text is reported at the path of the raw text form.
        defect = {
            "path": text_reader.TEXT_PATH,
            "code": "invalid_json_text",
            "keyword": None,
            "message": "arguments_text is not JSON and R1/R2 do not make it JSON",
        }
        return {"criteria_id": CRITERIA_ID, "verdict": "UNREPAIRABLE", "defects": [defect]}
    if is_valid(submission.arguments, schema):
        # Fast path, same answer: where no node fails, no repair is ever attempted.
        return _valid_or_text_repaired(submission)
    repairer = _Repairer()
    repaired = repairer.node(submission.arguments, schema, ())
    defects = _defects(repaired, schema)
    if defects:
        return {"criteria_id": CRITERIA_ID, "verdict": "UNREPAIRABLE", "defects": defects}
    diff = submission.text_diff + repairer.diff
    if not diff:
        return {"criteria_id": CRITERIA_ID, "verdict": "VALID", "arguments": submission.arguments}
    return {"criteria_id": CRITERIA_ID, "verdict": "REPAIRED", "arguments": repaired, "diff": diff}


def check(request: Any) -> dict[str, Any]:
    """Check one request; a verdict response or ``{"refusal": {"code", "message"}}``.

    >>> schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    >>> check({"schema": schema, "arguments": {"n": "3"}})["diff"]
    [{'path': '$.n', 'rule': 'R3', 'op': 'replace', 'before': '3', 'after': 3}]
    >>> check({"schema": schema})["refusal"]["code"]
    'arguments_missing'
    """
    try:
        if not isinstance(request, dict):
            raise Refusal("invalid_request_body", "the request must be a JSON object")
        unknown = set(request) - _REQUEST_FIELDS
        if unknown:
            raise Refusal("invalid_request_body", f"{len(unknown)} unknown request field(s)")
        schema = _checked_schema(request)
        submission = _checked_arguments(request)
        return _verdict(submission, schema)
    except Refusal as exc:
        return refusal(exc.code, exc.message)


def precheck(request: Any) -> dict[str, Any]:
    """Assessability only: the refusal :func:`check` would give, or ``assessable: true``.

    It runs the same pipeline as :func:`check` (so the two can never disagree about a
    refusal) and drops the verdict.
    """
    response = check(request)
    if "refusal" in response:
        return response
    return {"criteria_id": CRITERIA_ID, "assessable": True}


_PRECHECK = precheck  # check_body's keyword argument shadows the name


def _no_duplicate_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError("duplicate key in the request body")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def parse_body(body: bytes) -> Any:
    """Read a request body as strict JSON; :class:`Refusal` for the cap or a malformed body."""
    if len(body) > MAX_BODY_BYTES:
        raise Refusal(CAP_BODY, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        return json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_no_duplicate_fields,
            parse_constant=_reject_constant,
            parse_float=_finite,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Refusal("invalid_request_body", "the request body is not strict UTF-8 JSON") from exc


def check_body(body: bytes, *, precheck: bool = False) -> dict[str, Any]:
    """Check (or pre-check) a raw HTTP request body: the cap and strict JSON first."""
    try:
        request = parse_body(body)
    except Refusal as exc:
        return refusal(exc.code, exc.message)
    return _PRECHECK(request) if precheck else check(request)


def status_summary(response: dict[str, Any]) -> dict[str, Any]:
    """The per-check summary the criteria allow in a ledger or metrics.

    Verdict (or refusal code), counts and defect codes only: never a value, key, path or
    fragment of the blob or the schema (custody: per-check status summary).
    """
    if "refusal" in response:
        return {
            "verdict": None,
            "refusal": response["refusal"]["code"],
            "repairs": 0,
            "defects": 0,
            "defect_codes": [],
        }
    defects = response.get("defects", [])
    return {
        "verdict": response.get("verdict"),
        "refusal": None,
        "repairs": len(response.get("diff", [])),
        "defects": len(defects),
        "defect_codes": sorted({d["code"] for d in defects}),
    }


# ------------------------------------------------------------------------- apply_diff


def _parse_path(path: str) -> list[str | int]:
    """Invert :func:`toolcall300.schema.format_path`."""
    if not path.startswith("$"):
        raise ValueError(f"not an arguments path: {path!r}")
    parts: list[str | int] = []
    decoder = json.JSONDecoder()
    i = 1
    while i < len(path):
        if path[i] == ".":
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*").match(path, i + 1)
            if m is None:
                raise ValueError(f"bad path {path!r}")
            parts.append(m.group())
            i = m.end()
        elif path.startswith("[", i) and path.startswith('"', i + 1):
            key, end = decoder.raw_decode(path, i + 1)
            if not path.startswith("]", end):
                raise ValueError(f"bad path {path!r}")
            parts.append(key)
            i = end + 1
        elif path[i] == "[":
            end = path.index("]", i)
            parts.append(int(path[i + 1 : end]))
            i = end + 1
        else:
            raise ValueError(f"bad path {path!r}")
    return parts


def apply_diff(arguments: Any, diff: list[dict[str, Any]]) -> Any:
    """Replay a diff on the submitted blob (the object, or the text for ``$arguments_text``).

    >>> apply_diff({"n": "3", "x": None}, [
    ...     {"path": "$.n", "rule": "R3", "op": "replace", "before": "3", "after": 3},
    ...     {"path": "$.x", "rule": "R8", "op": "remove", "before": None, "after": None}])
    {'n': 3}
    """
    text_entries = [e for e in diff if e["path"] == text_reader.TEXT_PATH]
    if isinstance(arguments, str):
        repaired_text = text_reader.apply_text_diff(arguments, text_entries)
        value: Any = text_reader.loads(repaired_text, sys.getrecursionlimit())
    elif text_entries:
        raise ValueError("text repairs apply to arguments_text only")
    else:
        value = copy.deepcopy(arguments)
    for entry in diff:
        if entry["path"] == text_reader.TEXT_PATH:
            continue
        parts = _parse_path(entry["path"])
        if not parts:
            value = copy.deepcopy(entry["after"])
            continue
        parent = value
        for part in parts[:-1]:
            parent = parent[part]
        if entry["op"] == "remove":
            del parent[parts[-1]]
        else:
            parent[parts[-1]] = copy.deepcopy(entry["after"])
    return value


# ------------------------------------------------------------------------- CLI shell


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``toolcall300 check [FILE] [--selftest]``."""
    parser = ArgParser(
        prog="toolcall300 check", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("file", nargs="?", help="a request as JSON (default: standard input)")
    parser.add_argument(
        "--selftest", action="store_true", help="verify the corpus pin and run every vector"
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Print the response for one request (exit 0 for any verdict or refusal, 1 for I/O errors)."""
    if args.selftest:
        from toolcall300.argcheck import vectors as argcheck_corpus

        return argcheck_corpus.selftest(stdout, stderr)
    try:
        if args.file:
            with open(args.file, "rb") as fh:
                body = fh.read()
        else:
            body = sys.stdin.buffer.read()
    except OSError as exc:
        stderr.write(f"toolcall300 check: cannot read {args.file or 'stdin'}: {exc.strerror}\n")
        return EXIT_ERROR
    # The CLI has no transport cap of its own, but answers exactly as the service would.
    response = check_body(body)
    # Not key-sorted: the repaired blob keeps the caller's key order, as apply_diff rebuilds it.
    stdout.write(json.dumps(response, ensure_ascii=False, indent=2) + "\n")
    return EXIT_OK
