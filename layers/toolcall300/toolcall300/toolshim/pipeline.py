"""``toolshim``: the reference normaliser, the grading contract (``toolcall300.spec``) as code.

``normalise(text, tools)`` turns what a model emitted into the one call its declared tools
accept, or ``None``. ``normalise_explained`` returns the same call with every repair made
(``{path, rule, change, before, after}``), or the refusal and its :class:`Reason`. The steps:
read the text, allowing a cut at its end (``toolshim_reader``); find the calls in their
envelopes (``toolshim_envelope``); for each call resolve the tool name (rule 3), settle
truncated arguments (rule 11, strict reading) and string-encoded ones (rule 9), repair
them against the schema (rules 4-8, ``toolshim_repair``, a walk compiled once per schema
that also refuses any value breaking a keyword no rule may change, so it never returns
arguments their schema rejects); then collapse several calls only when they agree (rule 10).

The decisions it once took alone are the contract's now, each with its id: envelopes and
which key wins (E1-E4); whitespace after a number is a delimiter (D11.7); arguments streamed
as a JSON string and cut inside it are the cut arguments, a complete string holding cut JSON
is refused (D11.8); a complete call with no arguments key has ``{}``, a cut one is refused
(D1.3); an object schema without ``properties`` is free-form (D7.4); a tool without
``parameters`` takes no arguments (D6.3); rule 8 wraps any non-null value, objects included
(D8.2); ``null`` is never coerced (D5.3); a multi-call text with one cut, refusable or
non-call copy is refused as a whole (D10.1, D10.2). And those real traffic reached
(corpus 4.0): JSON text where a container is declared is decoded, never wrapped (D5.6, D8.4, in
``toolshim_repair``); empty arguments text is ``{}`` only for a tool that declares no
property (D9.3); several JSON documents in one arguments string are one call only if they
agree (D9.4); arguments nested once more under an argument key are unwrapped (E5); a
declared property written beside the arguments is lifted into them (D7.9).

Speed comes from doing the schema work once: each parameter schema is checked and compiled
into its repair walk the first time it is seen (cached on the schema object, and on its
``marshal`` text for callers that parse their tools afresh per call), and a tool list's name index is
cached on the list. A list seen for the first time is read only as far as its call needs: a
name written exactly is looked up in one pass over the tools, and the whole index is built
only for another name or when the same list comes back. A caller that edits a tool or schema object in place between calls must
pass a new object; a list whose tools were added, removed or replaced is read again.

It is not a prose or Markdown extractor (text that is not JSON is refused) and it never
guesses: every branch that could guess refuses instead. Its CLI shell,
``toolcall300 toolshim``, is ``toolshim/cli.py``.
"""

from __future__ import annotations

import copy
import marshal
from dataclasses import dataclass, replace
from typing import Any

from toolcall300.canonical import canonical, loads_strict, raw_decode_strict
from toolcall300.rules import ToolNames, takes_nothing
from toolcall300.schema import (
    declared_types,
    format_path,
    schema_problems,
)
from toolcall300.spec import ARGUMENT_KEYS, no_parameters
from toolcall300.toolshim.envelope import RawCall, extract_calls
from toolcall300.toolshim.reader import (
    CutString,
    CutToken,
    Malformed,
    OpenArray,
    OpenObject,
    is_complete,
    read_values,
)
from toolcall300.toolshim.repair import Fix, compile_repair
from toolcall300.toolshim.types import ABSENT, Explained, Reason, Refusal, Repair

__all__ = ["Explained", "Reason", "Refusal", "Repair", "normalise", "normalise_explained"]

#: Rule 9 decodes repeatedly; each decode shortens the text, this only bounds the work.
_MAX_DECODES = 32


def normalise(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The call ``text`` means under the grading contract, or ``None`` to refuse (rule 12).

    >>> tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    ...     "type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}}}]
    >>> normalise('{"name": "Get-Weather", "arguments": "{\\\\"days\\\\": \\\\"3\\\\"}"}', tools)
    {'name': 'get_weather', 'arguments': {'days': 3}}
    >>> normalise('{"name": "get_weather", "arguments": {"days": 1', tools) is None
    True
    """
    try:
        return _normalise(text, tools, [])
    except _REFUSED:  # the outcomes normalise_explained reports as refusals, without the report
        return None


def normalise_explained(text: str, tools: list[dict[str, Any]]) -> Explained:
    """The call with every repair made to reach it, or the refusal with its reason."""
    log: list[Repair] = []
    try:
        call = _normalise(text, tools, log)
    except Refusal as refusal:
        return Explained(None, log, refusal.reason, f"{refusal.path}: {refusal.detail}")
    except RecursionError:
        return Explained(None, log, Reason.NOT_JSON, "nested too deeply")
    except ValueError as exc:  # NaN in a catalog's default, an integer too long for int()
        return Explained(None, log, Reason.UNREPRESENTABLE, str(exc)[:200])
    return Explained(call, log)


#: What ends a normalisation in a refusal (see ``normalise_explained`` for which reason each
#: becomes): a rule's refusal, nesting too deep to read, a value no JSON can carry.
_REFUSED = (Refusal, RecursionError, ValueError)


# ---------------------------------------------------------------------------- the pipeline


def _normalise(text: Any, tools: Any, log: list[Repair]) -> dict[str, Any]:
    if not isinstance(text, str):
        raise Refusal(Reason.NO_CALL, "the text is not a string")
    try:
        documents = read_values(text)
    except Malformed as exc:
        raise Refusal(Reason.NOT_JSON, str(exc)) from None
    raws = extract_calls(documents)
    catalog = _catalog(tools)
    if not raws:
        raise Refusal(Reason.NO_CALL, "no JSON document in the text")
    if len(raws) == 1:
        return _one(raws[0], catalog, log)
    return _collapse(raws, catalog, log)


def _collapse(raws: list[RawCall], catalog: _Catalog, log: list[Repair]) -> dict[str, Any]:
    """Rule 10, D10.1: normalise every copy on its own; one call only if all agree."""
    calls: list[tuple[dict[str, Any], list[Repair]]] = []
    for raw in raws:
        own: list[Repair] = []
        try:
            calls.append((_one(raw, catalog, own), own))
        except Refusal as refusal:
            raise Refusal(
                Reason.CONFLICTING_CALLS,
                f"copy at {raw.path} must be refused ({refusal.reason.value}: {refusal.detail})",
            ) from None
    first = canonical(calls[0][0])
    for (call, _), raw in zip(calls[1:], raws[1:], strict=True):
        if canonical(call) != first:
            raise Refusal(Reason.CONFLICTING_CALLS, f"copy at {raw.path} differs from the first")
    log.extend(calls[0][1])
    log.append(Repair("$", "10 D10.1", "collapse_identical_calls", before=len(calls), after=1))
    return calls[0][0]


class _Catalog:
    """A tool list as ``_one`` reads it: declared name -> its parameter schemas, and rule 3's
    index of those names, each worked out when first needed.

    A caller that parses its tools afresh for every call (the scorer's stream protocol does)
    brings a list no cache keyed on objects can know, and its call usually writes a declared
    name exactly: such a call needs only the tools declared under that name, found by one
    pass over the list (:meth:`resolve`), not the whole index. A list seen a second time is
    a kept one, and gets the whole index once (:func:`_catalog`). A plain class with slots,
    not a frozen dataclass: one is built per fresh list, and a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__`` (several times slower)."""

    __slots__ = ("_exact", "_schemas", "compiled", "index", "items", "tools")

    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools  # the list itself, held so that its id is not reused while cached
        self.items = list(tools)  # a copy of it as it was when the catalog was built
        self.compiled: dict[str, _Compiled] = {}  # filled as tools are called
        self._schemas: dict[str, list[dict[str, Any]]] | None = None
        #: rule 3's index of the declared names, once built (see :attr:`names`)
        self.index: ToolNames | None = None
        #: (a name, the schemas declared under it), from a pass that built no index
        self._exact: tuple[str, list[dict[str, Any]]] | None = None

    @property
    def schemas(self) -> dict[str, list[dict[str, Any]]]:
        """Declared name -> the parameter schemas of the tools declaring it."""
        if self._schemas is None:
            self._schemas = _schemas_by_name(self.items)
        return self._schemas

    @property
    def names(self) -> ToolNames:
        """Rule 3's index of the declared names."""
        if self.index is None:
            self.index = ToolNames(self.schemas)
        return self.index

    def resolve(self, written: str) -> str | None:
        """``names.resolve(written)``; a name declared exactly is found without the index."""
        if self.index is None:
            found = _schemas_named(self.items, written)
            if found:  # an exact match always wins (rule 3)
                self._exact = (written, found)
                return written
        return self.names.resolve(written)

    def schemas_of(self, name: str) -> list[dict[str, Any]]:
        """``schemas[name]`` for a name :meth:`resolve` answered."""
        if self._schemas is None and self._exact is not None and self._exact[0] == name:
            return self._exact[1]
        return self.schemas[name]


_NO_TOOLS = _Catalog([])


#: id(tools) -> its catalog. A caller passes the same tool list call after call; the entry is
#: used only while the list holds the very same tool objects (an added, removed or replaced
#: tool builds a new catalog). Like the schema cache, it is keyed on identity: a tool object
#: edited in place (renamed, its parameters swapped) must be passed as a new object.
_CATALOGS: dict[int, _Catalog] = {}
_CATALOGS_MAX = 1024


def _catalog(tools: Any) -> _Catalog:
    """The catalog of ``tools``; tolerant of a tool without ``type``."""
    if not isinstance(tools, list):
        return _NO_TOOLS
    hit = _CATALOGS.get(id(tools))
    # The same list holding the same tools (list equality tries identity first; a tool that
    # was replaced by an equal one is equal, and its catalog would be the same).
    if hit is not None and hit.tools is tools and hit.items == tools:
        if hit.index is None:
            hit.index = ToolNames(hit.schemas)  # a kept list: built once, for every later call
        return hit
    entry = _Catalog(tools)
    _remember(_CATALOGS, id(tools), entry, _CATALOGS_MAX)
    return entry


def _declared(tool: Any) -> dict[str, Any] | None:
    """The function object a tool declares (with a string name), or None (not a function)."""
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        return None
    fn = tool.get("function", tool)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    return fn


def _parameters(fn: dict[str, Any]) -> dict[str, Any]:
    return fn["parameters"] if "parameters" in fn else no_parameters()  # D6.3


def _schemas_by_name(tools: list[Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        fn = _declared(tool)
        if fn is not None:
            out.setdefault(fn["name"], []).append(_parameters(fn))
    return out


def _schemas_named(tools: list[Any], name: str) -> list[dict[str, Any]]:
    """``_schemas_by_name(tools).get(name, [])``, in one pass that builds nothing else."""
    out = []
    for tool in tools:
        if type(tool) is dict:  # the usual shape, told apart without a call per tool
            fn = tool.get("function", tool)
            if type(fn) is dict:
                written = fn.get("name")
                if type(written) is str and written != name:
                    continue  # declared under another name, or no function at all
        fn = _declared(tool)
        if fn is not None and fn["name"] == name:
            out.append(_parameters(fn))
    return out


def _one(raw: RawCall, catalog: _Catalog, log: list[Repair]) -> dict[str, Any]:
    """One call: name, arguments, the repair walk (which refuses what it cannot make valid)."""
    name = _tool_name(raw, catalog, log)
    compiled = catalog.compiled.get(name)
    if compiled is None:
        schemas = catalog.schemas_of(name)
        if len(schemas) != 1:
            raise Refusal(
                Reason.AMBIGUOUS_TOOL, f"{len(schemas)} tools are declared as {name!r}", "$.name"
            )
        compiled = catalog.compiled[name] = _compiled(schemas[0])
    if not compiled.usable:
        raise Refusal(
            Reason.UNUSABLE_SCHEMA, f"the parameters of {name!r} are outside the covered subset"
        )
    # The walk checks every keyword no rule may change, and refuses (schema_violation) rather
    # than return arguments their schema rejects; a property test holds it to schema.is_valid.
    found = _arguments(raw, compiled, log)
    if len(found) == 1:  # the usual case
        arguments = compiled.repair(_lift(found[0], raw, compiled, log), ("arguments",), log)
        return {"name": name, "arguments": arguments}
    return {"name": name, "arguments": _documents_agree(found, raw, compiled, log)}


def _documents_agree(
    found: list[dict[str, Any]], raw: RawCall, compiled: _Compiled, log: list[Repair]
) -> dict[str, Any]:
    """D9.4: several JSON documents in one arguments string are read as rule 10 reads several
    calls: each repaired on its own; one call only if every repaired document agrees."""
    repaired: list[tuple[dict[str, Any], list[Repair]]] = []
    for i, arguments in enumerate(found):
        own: list[Repair] = []
        try:
            lifted = _lift(arguments, raw, compiled, own)
            repaired.append((compiled.repair(lifted, ("arguments",), own), own))
        except Refusal as refusal:
            raise Refusal(
                Reason.CONFLICTING_CALLS,
                f"document {i} of the arguments must be refused ({refusal.reason.value}, D9.4)",
                "$.arguments",
            ) from None
    first = canonical(repaired[0][0])
    if any(canonical(arguments) != first for arguments, _ in repaired[1:]):
        raise Refusal(
            Reason.CONFLICTING_CALLS,
            f"the {len(found)} documents of the arguments differ (D9.4)",
            "$.arguments",
        )
    log.extend(repaired[0][1])
    log.append(
        Repair("$.arguments", "10 D9.4", "collapse_identical_documents", len(found), after=1)
    )
    return repaired[0][0]


def _lift(
    arguments: dict[str, Any], raw: RawCall, compiled: _Compiled, log: list[Repair]
) -> dict[str, Any]:
    """D7.9: a declared top-level property written beside the arguments key is an argument
    written one level too high: added, collapsed when equal, refused when it differs (D7.6)."""
    if raw.beside is None or not compiled.declared:
        return arguments
    for key, value in raw.beside.items():
        if key not in compiled.declared:
            continue  # E2: an envelope's other keys are ignored
        if not is_complete(value):
            log.append(Repair(f"$.{key}", "11 D11.1", "drop_incomplete"))
            continue
        if key in arguments:
            if canonical(arguments[key]) != canonical(value):
                raise Refusal(
                    Reason.CONFLICTING_VALUES,
                    f"{key!r} beside the arguments differs from the one inside (D7.9, D7.6)",
                    f"$.{key}",
                )
            log.append(Repair(f"$.{key}", "7 D7.9", "collapse_beside_arguments", value))
            continue
        arguments = {**arguments, key: value}  # a copy: the model's object is never edited
        log.append(Repair(f"$.{key}", "7 D7.9", "lift_into_arguments", value, f"$.arguments.{key}"))
    return arguments


@dataclass(frozen=True, slots=True)
class _Compiled:
    """What ``_one`` needs of one parameter schema, worked out once per schema."""

    source: Any  # a private copy the walk was compiled from: later edits cannot reach it
    usable: bool
    repair: Fix  # rules 4-8, and every keyword no rule may change (toolshim_repair)
    #: the top-level property names, or ``None`` for a free-form schema (D7.4: none declared)
    declared: frozenset[str] | None = None
    #: D9.3: ``{}`` is the only call the tool can receive (no property declared at all)
    takes_nothing: bool = False


#: id(schema) -> (the schema, its compiled form). Checking and compiling a schema costs far
#: more than the rest of a call, and a catalog is the same objects call after call. The entry
#: holds the schema, so its id is not reused while cached; a caller that edits a schema in
#: place between calls must pass a new object (this cache is keyed on identity).
_COMPILED: dict[int, tuple[Any, _Compiled]] = {}
_COMPILED_MAX = 1024
#: A schema's ``marshal`` text -> its compiled form, for callers that parse their tools afresh
#: for every call (the scorer's stream protocol does): an equal schema is not compiled again.
#: ``marshal`` writes only exact built-in types, tagged by type and in key order, so equal
#: text is equal content (format 2: later formats mark objects by their reference count, so
#: the same value's text would change between calls); it is the cheapest such text to make.
_BY_CONTENT: dict[bytes, _Compiled] = {}
#: The same in ``marshal``'s current format, tried first: it writes an ASCII string directly
#: where format 2 encodes each string through a codec (half the time, or less, on a tool
#: schema). Its text is exact too (reading it back gives the same content), but it marks
#: the objects that have other references and writes a shared object once, so the same
#: content can have several texts: a text not found here is looked up in format 2, and
#: found there it is remembered here as well.
_BY_SHARED: dict[bytes, _Compiled] = {}
_MARSHAL_SHARED = 4
_BY_CONTENT_MAX = 256
_CONTENT_KEY_MAX = 65536
_MARSHAL_FORMAT = 2


def _compiled(schema: Any) -> _Compiled:
    """The compiled form of ``schema``; unusable unless it is a covered object schema (the
    catalog contract: its type defaults to object)."""
    hit = _COMPILED.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    shared = _content_key(schema, _MARSHAL_SHARED)
    entry = _BY_SHARED.get(shared) if shared is not None else None
    if entry is not None:
        _remember(_COMPILED, id(schema), (schema, entry), _COMPILED_MAX)
        return entry
    key = _content_key(schema, _MARSHAL_FORMAT)
    entry = _BY_CONTENT.get(key) if key is not None else None
    if entry is None:
        source = marshal.loads(key) if key is not None else copy.deepcopy(schema)
        usable = not schema_problems(source) and declared_types(source) in ((), ("object",))
        entry = _Compiled(source, usable, compile_repair(source) if usable else _unusable)
        if usable:
            props = source.get("properties")
            entry = replace(
                entry,
                declared=frozenset(props) if isinstance(props, dict) else None,
                takes_nothing=takes_nothing(source),
            )
        if key is not None:
            _remember(_BY_CONTENT, key, entry, _BY_CONTENT_MAX)
    if shared is not None:
        _remember(_BY_SHARED, shared, entry, _BY_CONTENT_MAX)
    _remember(_COMPILED, id(schema), (schema, entry), _COMPILED_MAX)
    return entry


def _content_key(schema: Any, version: int) -> bytes | None:
    """The schema's ``marshal`` text in format ``version``, or ``None`` when it has none (not
    exact built-in types, nesting past marshal's limit) or a long one."""
    try:
        text = marshal.dumps(schema, version)
    except ValueError:
        return None
    return text if len(text) <= _CONTENT_KEY_MAX else None


def _remember(cache: dict[Any, Any], key: Any, entry: Any, limit: int) -> None:
    """Store ``entry``; a full cache is emptied first (bounded memory, no per-hit bookkeeping)."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = entry


def _unusable(*args: Any) -> Any:
    raise AssertionError("an unusable schema is refused before its compiled form is used")


def _tool_name(raw: RawCall, catalog: _Catalog, log: list[Repair]) -> str:
    """Rule 3: the one declared tool the written name means."""
    if not raw.is_call:
        raise Refusal(
            Reason.NO_CALL, "nothing call-shaped here (D11.5: no name was written)", raw.path
        )
    if isinstance(raw.name, CutString):
        raise Refusal(Reason.TRUNCATED_NAME, "the cut fell inside the tool name (D11.5)", "$.name")
    if not isinstance(raw.name, str):
        raise Refusal(Reason.INVALID_NAME, "the name is not a string", "$.name")
    index = catalog.index  # a kept list's, read directly (its calls pay nothing more)
    resolved = index.resolve(raw.name) if index is not None else catalog.resolve(raw.name)
    if resolved is None:
        hits = catalog.names.matches(raw.name)
        if len(hits) > 1:
            raise Refusal(
                Reason.AMBIGUOUS_TOOL, f"{raw.name!r} matches {len(hits)} tools", "$.name"
            )
        raise Refusal(Reason.UNKNOWN_TOOL, f"{raw.name[:80]!r} is not declared", "$.name")
    if resolved != raw.name:
        log.append(Repair("$.name", "3 D3.1", "resolve_tool_name", raw.name, resolved))
    return resolved


def _arguments(raw: RawCall, compiled: _Compiled, log: list[Repair]) -> list[dict[str, Any]]:
    """The arguments object as written: envelope key, truncation (rule 11), decoding (rule 9);
    several when one string held several JSON documents (D9.4)."""
    if raw.args_conflict:
        raise Refusal(Reason.AMBIGUOUS_ARGUMENTS, "several argument keys with different values")
    if raw.arguments is ABSENT:
        if raw.open:
            # Rule 11: the cut came before the arguments began; nothing to keep, invent nothing.
            raise Refusal(
                Reason.TRUNCATED_ARGUMENTS, "the cut came before the arguments", "$.arguments"
            )
        log.append(Repair("$.arguments", "1 D1.1", "absent_arguments_as_empty_object", after={}))
        return [{}]
    if raw.args_key != "arguments":
        log.append(Repair(f"$.{raw.args_key}", "input", "rename_to_arguments", after="arguments"))
    value = raw.arguments
    if isinstance(value, dict) and len(value) != 1:
        return [value]  # the usual case
    return _settle(value, raw.open, compiled, log)


def _settle(value: Any, cut: bool, compiled: _Compiled, log: list[Repair]) -> list[dict[str, Any]]:
    """Rule 9 decoding, rule 11 closing and E5 unnesting until the arguments are an object."""
    for _ in range(_MAX_DECODES):
        if isinstance(value, dict):
            inner = _nested(value, compiled)
            if inner is ABSENT:
                return [value]
            log.append(Repair("$.arguments", "E5", "unwrap_nested_arguments", value, inner))
            value = inner
        elif not is_complete(value):
            value = _close(value, log)
        elif isinstance(value, str):
            if not value.strip(_JSON_WS):
                return [_empty_text(value, cut, compiled, log)]
            decoded = _decode(value, log)
            if isinstance(decoded, _Documents):
                return [a for doc in decoded.values for a in _settle(doc, cut, compiled, log)]
            value = decoded
        else:
            break
    raise Refusal(Reason.NOT_AN_OBJECT, "the arguments are not an object", "$.arguments")


def _nested(value: dict[str, Any], compiled: _Compiled) -> Any:
    """E5: the value of an arguments object whose only key is an undeclared E2 argument key
    (the envelope written twice), or ``ABSENT``; a free-form schema declares no property
    and reads every key as written (D7.4)."""
    if len(value) != 1 or compiled.declared is None:
        return ABSENT
    (key,) = value
    if key not in ARGUMENT_KEYS or key in compiled.declared:
        return ABSENT
    return value[key]


def _empty_text(value: str, cut: bool, compiled: _Compiled, log: list[Repair]) -> dict[str, Any]:
    """D9.3: empty arguments text is ``{}`` only for a tool that can receive nothing else."""
    if cut:
        raise Refusal(
            Reason.TRUNCATED_ARGUMENTS, "empty arguments text in a cut call (D9.3)", "$.arguments"
        )
    if not compiled.takes_nothing:
        # Rule 2: an all-optional tool too; a stream that lost its arguments sends this text.
        raise Refusal(
            Reason.INVALID_ARGUMENTS,
            "empty arguments text for a tool that declares properties (D9.3)",
            "$.arguments",
        )
    log.append(Repair("$.arguments", "9 D9.3", "empty_text_as_empty_object", value, {}))
    return {}


#: JSON whitespace (RFC 8259), all that may stand between or around JSON documents.
_JSON_WS = " \t\n\r"


@dataclass(frozen=True, slots=True)
class _Documents:
    """D9.4: what a string holding two or more JSON documents decodes to."""

    values: list[Any]


def _decode(value: str, log: list[Repair]) -> Any:
    """Rule 9: one JSON decoding of string-encoded arguments (D9.1: must lead to an object)."""
    try:
        decoded = loads_strict(value)
    except (ValueError, RecursionError):
        documents = _split_documents(value)
        if documents is None:
            raise Refusal(
                Reason.INVALID_ARGUMENTS,
                "a string that does not decode to an object (D9.1)",
                "$.arguments",
            ) from None
        log.append(Repair("$.arguments", "9 D9.4", "split_json_documents", value, documents))
        return _Documents(documents)
    if not isinstance(decoded, (dict, str)):
        raise Refusal(
            Reason.INVALID_ARGUMENTS,
            "a string that decodes to neither object nor string (D9.1)",
            "$.arguments",
        )
    log.append(Repair("$.arguments", "9 D9.1", "decode_json_string", value, decoded))
    return decoded


def _split_documents(value: str) -> list[Any] | None:
    """D9.4: the two or more complete JSON documents ``value`` holds one after another
    (JSON whitespace between them allowed), or ``None`` when it holds anything else."""
    out: list[Any] = []
    pos = len(value) - len(value.lstrip(_JSON_WS))
    try:
        while pos < len(value):
            document, pos = raw_decode_strict(value, pos)
            out.append(document)
            pos = len(value) - len(value[pos:].lstrip(_JSON_WS))
    except (ValueError, RecursionError):
        return None
    return out if len(out) > 1 else None


def _close(value: Any, log: list[Repair]) -> Any:
    """Rule 11, strict reading (D11.1): keep only what was completely written.

    The arguments object itself is the open container that gets closed; a property whose
    own value was cut is dropped whole (D11.2-D11.4), never closed into a value."""
    if isinstance(value, OpenObject):
        kept: dict[str, Any] = {}
        for key, member in value.members.items():
            # Rule 11, STRICT reading (D11.1, D11.2), chosen over the generous one: a member is
            # kept only if its value was completely written; a container never closed is
            # dropped whole with its complete elements, never closed into a shorter value.
            if is_complete(member):
                kept[key] = member
            else:
                log.append(
                    Repair(format_path(("arguments", key)), _cut_rule(member), "drop_incomplete")
                )
        if value.cut_key is not None:
            log.append(
                Repair("$.arguments", "11 D11.1", "drop_incomplete_key", before=value.cut_key)
            )
        log.append(Repair("$.arguments", "11", "close_container", after=kept))
        return kept
    if isinstance(value, CutString):
        # Arguments streamed as a JSON string (rule 9) and cut inside it: what arrived of the
        # string is the cut stream of the arguments themselves.
        try:
            documents = read_values(value.prefix)
        except Malformed:
            raise Refusal(
                Reason.INVALID_ARGUMENTS, "the cut arguments string is not JSON", "$.arguments"
            ) from None
        if len(documents) != 1:
            raise Refusal(
                Reason.TRUNCATED_ARGUMENTS, "the cut came before the arguments began", "$.arguments"
            )
        log.append(Repair("$.arguments", "9 D9.1", "decode_cut_json_string", value.prefix))
        return documents[0]
    if isinstance(value, CutToken):
        raise Refusal(
            Reason.TRUNCATED_ARGUMENTS, "the arguments were cut before they began", "$.arguments"
        )
    raise Refusal(Reason.NOT_AN_OBJECT, "the arguments are an array, cut", "$.arguments")


def _cut_rule(member: Any) -> str:
    """Which truncation decision drops this member (for the repair log)."""
    if isinstance(member, CutToken):
        return "11 D11.3" if member.text[:1] in "-0123456789" else "11 D11.1"
    if isinstance(member, OpenObject | OpenArray):
        empty = not (member.members if isinstance(member, OpenObject) else member.items)
        return "11 D11.4" if empty else "11 D11.2"
    return "11 D11.1"
