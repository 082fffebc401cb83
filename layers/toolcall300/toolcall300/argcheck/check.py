"""tool-argument/v1: check one arguments blob against one caller-supplied schema, and repair it
only with the closed whitelist R1..R9.

:func:`check` takes ``{"schema", "arguments"}`` or ``{"schema", "arguments_text"}`` and returns
a verdict (``VALID``, ``REPAIRED`` with the repaired blob and the exact diff, ``UNREPAIRABLE``
with every blocking defect) or a named free refusal. The schema subset and the defect codes are
the suite's schema engine (:mod:`toolcall300.schema`); this module adds the request checks,
the refusals and the verdict. The repairs and the diff are :mod:`toolcall300.argcheck.repairs`;
the CLI shell ``toolcall300 check`` is :mod:`toolcall300.argcheck.cli`.

It deliberately does not: fill defaults, delete a caller-supplied value other than an optional
null (R8), guess, round, trim or case-fold outside R9, or log anything. Nothing here writes an
argument value, key or schema anywhere but into the response returned to the caller.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from toolcall300.argcheck import text as text_reader
from toolcall300.argcheck.compiled import INVALID, UNKNOWN, VALID, Checker, compile_checker
from toolcall300.argcheck.repairs import Repairer, SchemaNode, Withdrawn
from toolcall300.canonical import canonical_bytes, int_fits_double, loads_strict, raw_decode_strict
from toolcall300.schema import (
    KEYWORDS,
    NOT_COVERED,
    SchemaError,
    SchemaProblem,
    format_path,
    schema_problems,
)

CRITERIA_ID = "tool-argument/v1"
MAX_BODY_BYTES = 256 * 1024
#: Deepest nesting of the arguments blob (``{}`` is depth 1), R5-unwrapped content included.
MAX_DEPTH = 64
#: Deepest nesting of the schema document itself (each argument level costs two).
MAX_SCHEMA_DEPTH = 4 * MAX_DEPTH + 2
CAP_BODY = "CAP-EXCEEDED:body_bytes"
#: The service's refusal for a check past its CPU budget (criteria D20); check() never gives it.
CAP_CHECK = "CAP-EXCEEDED:check_seconds"

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


# ------------------------------------------------------------------------- request checks


def _is_json_scalar(node: Any) -> bool:
    if isinstance(node, str):
        return not text_reader.has_lone_surrogate(node)
    if isinstance(node, float):
        return math.isfinite(node)
    if isinstance(node, int) and not isinstance(node, bool):
        return int_fits_double(node)
    return node is None or isinstance(node, bool)


def _is_json_value(value: Any, limit: int) -> tuple[bool, int, bool]:  # noqa: C901
    """(whether ``value`` is a JSON value of valid Unicode text, its depth capped past limit,
    whether every node has the exact built-in type a JSON reader makes).

    Iterative, so a hostile nesting costs no more than ``limit`` levels and never recursion.
    Exact types are tested first; anything else (a subclass) goes through
    :func:`_is_json_scalar`'s ``isinstance`` tests, with the same answer.
    """
    if not isinstance(value, (dict, list)):
        return _is_json_scalar(value), 0, type(value) in _EXACT
    deepest, exact = 0, True
    stack: list[tuple[Any, int]] = [(value, 1)]
    lone = text_reader.has_lone_surrogate
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return True, deepest, exact
        if type(node) is dict or isinstance(node, dict):
            exact = exact and type(node) is dict
            for key in node:
                if type(key) is not str:
                    if not isinstance(key, str):
                        return False, deepest, exact
                    exact = False
                if not key.isascii() and lone(key):
                    return False, deepest, exact
            children: Any = node.values()
        else:
            exact = exact and type(node) is list
            children = node
        for child in children:
            kind = type(child)
            if kind is str:
                if not child.isascii() and lone(child):
                    return False, deepest, exact
            elif kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is bool or child is None:
                pass
            elif kind is int:
                if child.bit_length() > 1023 and not int_fits_double(child):
                    return False, deepest, exact
            elif kind is float:
                if not math.isfinite(child):
                    return False, deepest, exact
            elif isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
            elif _is_json_scalar(child):
                exact = False
            else:
                return False, deepest, exact
    return True, deepest, exact


_EXACT = frozenset({dict, list, str, int, float, bool, type(None)})


@dataclass
class _SchemaFacts:
    """What a schema's content decides once: its refusal, and from the schema's second use its
    compiled pass (:mod:`toolcall300.argcheck.compiled`) over a private copy of it (read back
    from its cache key, so no later edit of a caller's object reaches it).

    Compiling costs more than one interpreted walk, so a schema seen once is walked as the
    caller sent it, interpreted, and nothing of it is kept but its key.
    """

    refusal: tuple[str, str] | None
    key: bytes | None = None
    uses: int = 0
    checker: Checker | None = None

    #: The private copy the compiled pass was built from.
    schema: dict[str, Any] | None = None

    def compiled(self) -> Checker | None:
        """The schema's compiled pass from its second use (None before, or when not kept)."""
        if self.checker is None and self.uses >= 2 and self.key is not None:
            self.schema = marshal.loads(self.key)
            self.checker = _checker_for(self.schema)
        return self.checker


#: Compiled passes by the schema's canonical digest (equal content in any key order shares
#: one: a covered schema's answers never depend on its key order, only its refusal message
#: can, and refusals are not compiled).
_CHECKERS: dict[bytes, Checker] = {}


def _checker_for(schema: dict[str, Any]) -> Checker:
    digest = hashlib.sha256(canonical_bytes(schema)).digest()
    checker = _CHECKERS.get(digest)
    if checker is None:
        if len(_CHECKERS) >= _SCHEMA_FACTS_MAX:
            _CHECKERS.clear()  # bounded memory, no per-hit bookkeeping
        checker = _CHECKERS[digest] = compile_checker(
            schema, max_depth=MAX_DEPTH, is_json_value=_is_json_value
        )
    return checker


#: Schema -> facts, keyed by the schema's ``marshal`` text. ``marshal`` writes only values whose
#: every node has an exact built-in type, tagged by type and in key order, and reads its text
#: back into that value: equal text is equal content in the same key order (so the same
#: problem is named first), and a key found here is a value already proven a JSON value.
#: Format 2: no sharing references (format 3 and later mark an object by its reference count,
#: so the same value's text changes from one call to the next and every check would miss).
#: Tools send the same schema again and again. Other values are judged afresh.
_SCHEMA_FACTS: dict[bytes, _SchemaFacts] = {}
_SCHEMA_FACTS_MAX = 512
_MARSHAL_FORMAT = 2


def _cache_key(schema: Any) -> bytes | None:
    try:
        return marshal.dumps(schema, _MARSHAL_FORMAT)
    except ValueError:  # a subclass or other type, or nesting past marshal's own limit
        return None


def _remember(key: bytes, facts: _SchemaFacts) -> None:
    if len(_SCHEMA_FACTS) >= _SCHEMA_FACTS_MAX:
        _SCHEMA_FACTS.clear()  # bounded memory, no per-hit bookkeeping
    facts.key = key
    _SCHEMA_FACTS[key] = facts


def _judge_schema(schema: Any) -> _SchemaFacts:
    problems = schema_problems(schema)
    if not problems:
        return _SchemaFacts(None)
    # A malformed keyword is named before a not-covered one: the schema is unusable either way.
    for kind, code in (("invalid", "schema_invalid"), ("not_covered", "schema_not_covered")):
        found = [p for p in problems if p.kind == kind]
        if found:
            return _SchemaFacts((code, _problem_message(found[0], len(found))))
    return _SchemaFacts(None)


def _checked_schema(
    request: dict[str, Any], shallow_json: bool
) -> tuple[dict[str, Any], _SchemaFacts]:
    if "schema" not in request:
        raise Refusal("schema_missing", "the request has no schema")
    schema = request["schema"]
    key = _cache_key(schema)
    facts = _SCHEMA_FACTS.get(key) if key is not None else None
    if facts is None:
        ok, depth, exact = (
            (True, 0, True) if shallow_json else _is_json_value(schema, MAX_SCHEMA_DEPTH)
        )
        if not ok:
            raise Refusal("invalid_request_body", "the schema is not a JSON value")
        if depth > MAX_SCHEMA_DEPTH:
            raise Refusal(
                "schema_not_covered",
                f"schema nesting beyond {MAX_SCHEMA_DEPTH} levels is not covered",
            )
        facts = _judge_schema(schema)
        if exact and key is not None:
            _remember(key, facts)
    facts.uses += 1
    if facts.refusal is not None:
        raise Refusal(*facts.refusal)
    assert isinstance(schema, dict)  # schema_problems refuses every non-object schema
    return schema, facts


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


class _Submission(NamedTuple):
    """The arguments as the check will see them, and the text repairs already made."""

    arguments: dict[str, Any] | None  # None: the text is invalid_json_text
    text_diff: list[dict[str, Any]]
    #: Every node has the exact built-in type a JSON reader makes (what a compiled pass needs).
    exact: bool = True
    #: Known not to conform (its compiled pass's admission said so).
    invalid: bool = False


def _checked_arguments(request: dict[str, Any], shallow_json: bool) -> _Submission:
    has_obj, has_text = "arguments" in request, "arguments_text" in request
    if has_obj and has_text:
        raise Refusal("arguments_ambiguous", "send exactly one of arguments and arguments_text")
    if not (has_obj or has_text):
        raise Refusal("arguments_missing", "the request has neither arguments nor arguments_text")
    value: Any
    diff: list[dict[str, Any]] = []
    exact = True
    if has_obj:
        value = request["arguments"]
        ok, depth, exact = (True, 0, True) if shallow_json else _is_json_value(value, MAX_DEPTH)
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
    return _Submission(value, diff, exact)


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


# ------------------------------------------------------------------------- the check


def _defects(errors: list[SchemaError], after_repair: str | None = None) -> list[dict[str, Any]]:
    """The defects of one value from its errors in :func:`toolcall300.schema.iter_errors`
    order: missing_required first, then the rest in traversal order."""
    ordered = errors
    if len(errors) > 1:
        ordered = [e for e in errors if e.code == "missing_required"]
        ordered += [e for e in errors if e.code != "missing_required"]
    out = []
    for e in ordered:
        defect = {
            "path": format_path(e.instance_path),
            "code": e.code,
            "keyword": e.keyword,
            "message": e.message,
        }
        if after_repair is not None:
            defect["after_repair"] = after_repair
        out.append(defect)
    return out


def _blocking_defects(
    errors: list[SchemaError], withdrawn: list[Withdrawn]
) -> list[dict[str, Any]]:
    """Every blocking defect (D22): those of the blob as left by the repair pass, then, for each
    withdrawn repair in traversal order, the defects its repaired value would still have."""
    defects = _defects(errors)
    for w in withdrawn:
        defects += _defects(w.errors, w.rule)
    return defects


def _valid(arguments: dict[str, Any] | None) -> dict[str, Any]:
    """VALID states that no repair was needed, as the criteria's verdict text requires (D18)."""
    return {
        "criteria_id": CRITERIA_ID,
        "verdict": "VALID",
        "repair_needed": False,
        "arguments": arguments,
    }


def _verdict(
    submission: _Submission, schema: dict[str, Any], facts: _SchemaFacts
) -> dict[str, Any]:
    if submission.arguments is None:
        # Decision: invalid_json_text is reported at the path of the raw text form.
        defect = {
            "path": text_reader.TEXT_PATH,
            "code": "invalid_json_text",
            "keyword": None,
            "message": "arguments_text is not JSON and R1/R2 do not make it JSON",
        }
        return {"criteria_id": CRITERIA_ID, "verdict": "UNREPAIRABLE", "defects": [defect]}
    repairer = Repairer(MAX_DEPTH)
    checker = facts.compiled() if submission.exact else None
    try:
        # One pass repairs and gathers the errors left; where no node fails it changes nothing.
        if checker is not None:
            repaired, errors = checker.run(submission.arguments, repairer, submission.invalid)
        else:
            repaired, errors = repairer.node(submission.arguments, SchemaNode(schema), ())
    except text_reader.TooDeep as exc:
        raise _too_deep() from exc
    return _outcome(submission.arguments, repaired, errors, repairer, submission.text_diff)


def _too_deep() -> Refusal:
    return Refusal(
        "arguments_too_deep", f"an unwrapped string nests deeper than {MAX_DEPTH} levels"
    )


def _outcome(
    arguments: dict[str, Any],
    repaired: Any,
    errors: list[SchemaError],
    repairer: Repairer,
    text_diff: list[dict[str, Any]],
) -> dict[str, Any]:
    """The verdict of a repair pass that left ``errors`` and made ``repairer.diff``."""
    if errors:
        defects = _blocking_defects(errors, repairer.withdrawn)
        return {"criteria_id": CRITERIA_ID, "verdict": "UNREPAIRABLE", "defects": defects}
    diff = text_diff + repairer.diff if text_diff else repairer.diff
    if not diff:
        return _valid(arguments)
    return {"criteria_id": CRITERIA_ID, "verdict": "REPAIRED", "arguments": repaired, "diff": diff}


def _compiled_verdict(arguments: dict[str, Any], checker: Checker) -> dict[str, Any]:
    """The verdict of an exact JSON object within the limits that its compiled admission
    found not to conform (every request check of it passed): its members repaired directly."""
    repairer = Repairer(MAX_DEPTH)
    try:
        repaired, errors = checker.members(arguments, (), repairer)
    except text_reader.TooDeep:
        too_deep = _too_deep()
        return refusal(too_deep.code, too_deep.message)
    return _outcome(arguments, repaired, errors, repairer, _NO_TEXT_DIFF)


_NO_TEXT_DIFF: list[dict[str, Any]] = []


def check(request: Any) -> dict[str, Any]:
    """Check one request; a verdict response or ``{"refusal": {"code", "message"}}``.

    >>> schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    >>> check({"schema": schema, "arguments": {"n": "3"}})["diff"]
    [{'path': '$.n', 'rule': 'R3', 'op': 'replace', 'before': '3', 'after': 3}]
    >>> check({"schema": schema})["refusal"]["code"]
    'arguments_missing'
    """
    return _check(request, shallow_json=False)


class SchemaCheck:
    """One schema's check, kept by a caller that checks many blobs against the same schema
    (as a caller keeps a ``jsonschema`` validator): ``SchemaCheck(schema).check(request)`` is
    ``check({"schema": schema, **request})`` for a request of ``arguments`` or
    ``arguments_text``, with the schema as it was when kept (a private copy: later edits of
    the caller's object are not seen), judged and compiled once instead of found by content.

    >>> kept = SchemaCheck({"type": "object", "properties": {"n": {"type": "integer"}}})
    >>> kept.check({"arguments": {"n": "3"}})["verdict"], kept.check({"arguments": {"n": 3}})["verdict"]
    ('REPAIRED', 'VALID')
    """

    def __init__(self, schema: Any) -> None:
        self._schema = schema
        self._facts: _SchemaFacts | None = None
        self._checker: Checker | None = None
        key = _cache_key(schema)
        if key is None:
            return  # not exact built-in types: every check judges it afresh, as check() does
        self._schema = marshal.loads(key)
        try:
            _, self._facts = _checked_schema({"schema": self._schema}, shallow_json=False)
        except Refusal:
            return  # refused: check() gives the refusal (after the request's own checks)
        self._facts.uses = max(self._facts.uses, 2)
        self._checker = self._facts.compiled()

    def check(self, request: Any) -> dict[str, Any]:
        """The response :func:`check` gives for the schema plus ``request``'s fields."""
        checker = self._checker  # kept only with the facts of a schema that is not refused
        if checker is not None and type(request) is dict and len(request) == 1:
            arguments = request.get("arguments", _NOTHING)
            admitted = UNKNOWN if arguments is _NOTHING else checker.admit(arguments)
            if admitted == VALID:
                return _valid(arguments)
            if admitted == INVALID:  # every request check passed (see _check_with)
                return _compiled_verdict(arguments, checker)
        if not isinstance(request, dict) or "schema" in request:
            return check(request)  # not a request of arguments: check() answers it as sent
        full = {"schema": self._schema, **request}
        if self._facts is None or self._facts.refusal is not None:
            return check(full)
        return _check_with(full, shallow_json=False, known=self._facts)[0]


_NOTHING = object()


def _check(request: Any, *, shallow_json: bool) -> dict[str, Any]:
    """:func:`check`; ``shallow_json`` when ``request`` was read by the strict reader from a
    body that cannot hold a nesting past the limits or a lone surrogate (:func:`_shallow`),
    so the walk that proves it a JSON value is skipped."""
    return _check_with(request, shallow_json=shallow_json)[0]


def _check_with(
    request: Any, *, shallow_json: bool, known: _SchemaFacts | None = None
) -> tuple[dict[str, Any], _SchemaFacts | None]:
    """:func:`_check`, and the facts of the request's schema (None when it was refused before
    they were known). ``known``: the facts of a schema found from its raw text before parsing
    (:func:`check_body`), whose ``schema`` member was read as a placeholder (not read here)."""
    facts = known
    try:
        if not isinstance(request, dict):
            raise Refusal("invalid_request_body", "the request must be a JSON object")
        if not _REQUEST_FIELDS.issuperset(request):
            unknown = set(request) - _REQUEST_FIELDS
            raise Refusal("invalid_request_body", f"{len(unknown)} unknown request field(s)")
        if known is None or known.schema is None:
            schema, facts = _checked_schema(request, shallow_json)
        else:
            known.uses += 1
            schema, facts = known.schema, known  # the same content: its text was byte-identical
        checker = facts.compiled()
        admitted = UNKNOWN
        if checker is not None and "arguments_text" not in request and "arguments" in request:
            # An exact JSON object within the limits passes every request check of the
            # arguments; one that conforms has no node to repair (D18).
            admitted = checker.admit(request["arguments"])
            if admitted == VALID:
                return _valid(request["arguments"]), facts
        if admitted == INVALID:
            submission = _Submission(request["arguments"], [], exact=True, invalid=True)
        else:
            submission = _checked_arguments(request, shallow_json)
        return _verdict(submission, schema, facts), facts
    except Refusal as exc:
        return refusal(exc.code, exc.message), facts


#: A ``\u`` escape of a surrogate (a valid pair matches too, and then the walk runs).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _shallow(body: bytes) -> bool:
    """Whether the strict reader's value of ``body`` is certainly within the depth limits and
    free of lone surrogates: no more opening brackets than the arguments' depth limit (so no
    nesting deeper) and no surrogate escape (strict UTF-8 itself cannot encode one); the
    strict reader refuses non-finite numbers and integers past a double's range itself."""
    return body.count(b"{") + body.count(b"[") <= MAX_DEPTH and not _SURROGATE_ESCAPE.search(body)


def precheck(request: Any) -> dict[str, Any]:
    """Assessability only: the refusal :func:`check` would give, or ``assessable: true``.

    It runs the same pipeline as :func:`check` (so the two can never disagree about a
    refusal) and drops the verdict.
    """
    return _assessable(check(request))


def _assessable(response: dict[str, Any]) -> dict[str, Any]:
    if "refusal" in response:
        return response
    return {"criteria_id": CRITERIA_ID, "assessable": True}


def parse_body(body: bytes) -> Any:
    """Read a request body as strict JSON; :class:`Refusal` for the cap or a malformed body."""
    if len(body) > MAX_BODY_BYTES:
        raise Refusal(CAP_BODY, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    try:  # strict UTF-8 JSON: no duplicate keys, NaN, Infinity or overflowing numbers (D14, D17)
        return loads_strict(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Refusal("invalid_request_body", "the request body is not strict UTF-8 JSON") from exc


def check_body(body: bytes, *, precheck: bool = False) -> dict[str, Any]:
    """Check (or pre-check) a raw HTTP request body: the cap and strict JSON first.

    A schema whose exact text this process has checked before is found from the body's bytes
    before anything is parsed (:func:`_known_schema`), so only the rest of the body is read.
    """
    found = _known_schema(body) if len(body) <= MAX_BODY_BYTES else None
    try:
        if found is None:
            request, shallow = parse_body(body), _shallow(body)
        else:
            # The schema's text, a complete JSON object, is read as the number 0 in its place:
            # the body is strict JSON exactly when that is (a second "schema" included, D14).
            rest = body[found[1] :]
            request = parse_body(b'{"schema":0' + rest)
            shallow = _shallow(rest)  # the schema's text was proven within the limits
    except Refusal as exc:
        return refusal(exc.code, exc.message)
    response, facts = _check_with(
        request, shallow_json=shallow, known=None if found is None else found[2]
    )
    if found is None and facts is not None:
        _remember_text(body, facts)
    return _assessable(response) if precheck else response


#: Raw schema texts this process has checked from request bodies, by their first bytes, with
#: their facts: a body whose ``schema`` (its first member) is byte-identical to one of them is
#: that content, already proven strict JSON, so it is not parsed again.
_SCHEMA_TEXTS: dict[bytes, list[tuple[bytes, _SchemaFacts]]] = {}
_TEXT_HEAD = 64
_SCHEMA_FIRST = re.compile(rb'[ \t\n\r]*\{[ \t\n\r]*"schema"[ \t\n\r]*:[ \t\n\r]*')
_VALUE_ENDS = re.compile(rb"[ \t\n\r]*[,}]")


def _known_schema(body: bytes) -> tuple[int, int, _SchemaFacts] | None:
    """Where a known schema's text sits in ``body`` (its first member) and its facts, or None.

    The text is a complete JSON object, so a body holding it at the member's value position
    followed by ``,`` or ``}`` holds exactly that value there; a duplicate ``schema`` member
    later is refused by the strict reading of the rest, as it would be of the whole.
    """
    head = _SCHEMA_FIRST.match(body)
    if head is None:
        return None
    start = head.end()
    for text, facts in _SCHEMA_TEXTS.get(body[start : start + _TEXT_HEAD], ()):
        if body.startswith(text, start) and _VALUE_ENDS.match(body, start + len(text)):
            return start, start + len(text), facts
    return None


def _remember_text(body: bytes, facts: _SchemaFacts) -> None:
    """Keep the schema text of a body whose schema is compiled (seen before, not refused)."""
    if facts.refusal is not None or facts.schema is None or not body.isascii():
        return  # an ASCII body's character offsets are its byte offsets
    head = _SCHEMA_FIRST.match(body)
    if head is None:
        return
    start = head.end()
    try:
        _, end = raw_decode_strict(body.decode("ascii"), start)
    except ValueError:
        return
    text = body[start:end]
    if len(text) < _TEXT_HEAD:
        return  # short schemas read fast enough
    same_head = _SCHEMA_TEXTS.setdefault(text[:_TEXT_HEAD], [])
    if any(known == text for known, _ in same_head):
        return
    if sum(len(texts) for texts in _SCHEMA_TEXTS.values()) >= _SCHEMA_FACTS_MAX:
        _SCHEMA_TEXTS.clear()  # bounded memory, no per-hit bookkeeping
        same_head = _SCHEMA_TEXTS.setdefault(text[:_TEXT_HEAD], [])
    same_head.append((text, facts))


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
