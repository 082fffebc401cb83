"""tool-argument/v1's closed whitelist of node repairs, R3..R9, the diff they write and its
inverse :func:`apply_diff`. The text repairs R1 and R2 live in :mod:`toolcall300.argcheck.text`.

A repair pass is tentative per node (criteria decision D8): a node's one own repair is kept only
when its whole subtree then conforms. Nothing here logs or stores a value; a nesting past the
depth limit inside an R5-unwrapped string raises :class:`toolcall300.argcheck.text.TooDeep`, which
the check turns into its ``arguments_too_deep`` refusal.
"""

from __future__ import annotations

import copy
import decimal
import math
import re
import sys
from typing import Any, NamedTuple

from toolcall300.argcheck import text as text_reader
from toolcall300.canonical import canonical
from toolcall300.schema import (
    NodeErrors,
    Path,
    SchemaError,
    compile_node_errors,
    declared_types,
    format_path,
    is_integer,
    json_type_matches,
    parse_path,
)

#: The JSON number grammar; a fraction or an exponent (a group matched) makes it a float.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")

Repair = tuple[str, Any]  # (rule id, replacement value)


def _r3_string_to_number(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R3: a string matching the JSON number grammar exactly becomes that number."""
    if not (isinstance(value, str) and ("number" in types or "integer" in types)):
        return None
    grammar = _NUMBER.fullmatch(value)
    if grammar is None:
        return None
    try:
        number: int | float = float(value) if grammar.lastindex else int(value)
    except ValueError:  # more digits than int() reads
        return None
    # Never rounding (never-a-repair): the value must be the caller's digits exactly, so a
    # string a double cannot hold (too long, or out of range) is not converted.
    if (
        isinstance(number, float)
        # the double's shortest spelling is the text itself: its digits exactly (the usual
        # case, decided without two Decimals)
        and repr(number) != value
        and (not math.isfinite(number) or decimal.Decimal(repr(number)) != decimal.Decimal(value))
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


def held_container(value: str, depth: int, max_depth: int) -> Any:
    """The object or array a string holds as JSON text, or a private sentinel (the text holds
    a scalar or is not JSON), for R5 and R7, which only ever ask for those.

    A JSON text whose first character after JSON whitespace opens no container holds no
    object or array, so only such a text is parsed. :class:`text_reader.TooDeep` propagates:
    the blob with the string unwrapped would nest deeper than ``max_depth``.
    """
    if not value.lstrip(" \t\n\r").startswith(("{", "[")):
        return NOT_HELD
    try:
        return text_reader.loads(value, max_depth - depth)
    except text_reader.TextError:
        return NOT_HELD


NOT_HELD = object()


def _r5_string_json_unwrap(value: Any, types: tuple[str, ...], held: Any) -> Repair | None:
    """R5: a string that parses as JSON of exactly the schema's type (object or array);
    ``held`` is :func:`held_container` of it."""
    if not isinstance(value, str):
        return None
    for wanted in ("object", "array"):
        if wanted in types and held is not NOT_HELD and json_type_matches(held, wanted):
            return "R5", held
    return None


def _r6_scalar_to_string(value: Any, types: tuple[str, ...]) -> Repair | None:
    """R6: a number or boolean becomes its canonical JSON spelling; containers never do."""
    if "string" in types and (isinstance(value, (bool, int, float))):
        kind = type(value)
        # JSON spells a boolean as its word and an integer as its decimal digits, which is
        # what canonical() writes for them (a float goes through it: its shortest spelling)
        if kind is bool:
            return "R6", "true" if value else "false"
        if kind is int:
            return "R6", int.__repr__(value)
        return "R6", canonical(value)
    return None


def _r7_wrap_single(value: Any, types: tuple[str, ...], held: Any) -> Repair | None:
    """R7: a non-array value becomes ``[value]``; ``held`` is :func:`held_container` of a string.

    Decisions: a string holding a JSON array is R5's, never wrapped (two readings would be a
    pick); null is the absence marker (R8's reading), so it is never wrapped into ``[null]``.
    """
    if "array" not in types or isinstance(value, list) or value is None:
        return None
    if isinstance(value, str) and isinstance(held, list):
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


def _own_repair(
    value: Any, node: SchemaNode, own: list[SchemaError], depth: int, max_depth: int
) -> Repair | None:
    """The node's one candidate repair: the first applicable rule in whitelist order.

    Only a failing node is repaired: R3..R7 need it to fail ``type``, R9 needs it to fail
    ``enum``, as its own errors ``own`` say. At most one own repair per node, and no fallback
    to a later rule when the first applicable one does not bring the node into conformance
    (that would be a pick). ``depth`` is the number of containers around the node; unwrapped
    content nests below them.
    """
    codes = [e.code for e in own]
    if "type_mismatch" in codes:
        return type_repair(value, declared_types(node.schema), depth, max_depth)
    if "enum_mismatch" in codes:
        return _r9_enum_case_match(value, node.schema)
    return None


def type_repair(value: Any, types: tuple[str, ...], depth: int, max_depth: int) -> Repair | None:
    """The repair of a node that fails ``type``: the first of R3..R7 that applies (whitelist
    order), for a node declaring ``types`` with ``depth`` containers around it."""
    # What a string holds is read once for R5 and R7 (R3 and R4 never take such a string).
    held = (
        held_container(value, depth, max_depth)
        if isinstance(value, str) and ("object" in types or "array" in types)
        else NOT_HELD
    )
    return (
        _r3_string_to_number(value, types)
        or _r4_string_to_boolean(value, types)
        or _r5_string_json_unwrap(value, types, held)
        or _r6_scalar_to_string(value, types)
        or _r7_wrap_single(value, types, held)
    )


class SchemaNode:
    """One (sub)schema as the interpreted repair pass reads it, each part read once: its own
    keywords' errors (:func:`toolcall300.schema.compile_node_errors`) and the nodes of its
    declared properties and items (made when first reached). The checker walks a schema this
    way on its first use and for a blob built from other than the exact JSON types; from the
    second use it runs the schema's compiled pass (:mod:`toolcall300.argcheck.compiled`),
    which answers the same. The schema must not change while a node of it is in use.
    """

    __slots__ = (
        "_accepts_null",
        "_items",
        "errors",
        "items_schema",
        "nodes",
        "properties",
        "schema",
    )

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        #: The errors of a value's own keywords (:func:`toolcall300.schema.node_errors`).
        self.errors: NodeErrors = compile_node_errors(schema)
        properties, items = schema.get("properties"), schema.get("items")
        self.properties: dict[str, Any] | None = (
            properties if isinstance(properties, dict) else None
        )
        #: The nodes of the declared properties reached so far (see :meth:`property`).
        self.nodes: dict[str, SchemaNode] = {}
        self.items_schema: dict[str, Any] | None = items if isinstance(items, dict) else None
        self._items: SchemaNode | None = None
        self._accepts_null: bool | None = None

    def property(self, key: str) -> SchemaNode | None:
        """The node of declared property ``key`` (``properties`` must be declared), else None."""
        node = self.nodes.get(key)
        if node is None:
            assert self.properties is not None
            sub = self.properties.get(key)
            if sub is None:
                return None  # undeclared keys are not remembered: a blob chooses them
            node = self.nodes[key] = SchemaNode(sub)
        return node

    def items(self) -> SchemaNode:
        """The node of ``items`` (which must be declared)."""
        if self._items is None:
            assert self.items_schema is not None
            self._items = SchemaNode(self.items_schema)
        return self._items

    def accepts_null(self) -> bool:
        """``is_valid(None, schema)``: null has no children, so its own errors are all of them."""
        if self._accepts_null is None:
            self._accepts_null = not self.errors(None, ())
        return self._accepts_null


class Withdrawn(NamedTuple):
    """A node's own repair that was withdrawn because its repaired subtree still failed, with
    the ``errors`` that repaired value would still have (D22), in :func:`iter_errors` order."""

    path: Path
    rule: str
    errors: list[SchemaError]


#: A repaired value and every error it still has, in :func:`toolcall300.schema.iter_errors` order.
Repaired = tuple[Any, list[SchemaError]]


class Repairer:
    """One tentative repair pass over a blob, collecting the diff in application order and the
    repairs withdrawn (outermost only: one beneath a withdrawn repair goes with it).

    Each step returns the repaired value with the errors it still has, gathered on the way
    (a node's own, then its children's, which is :func:`toolcall300.schema.iter_errors`'
    order), so the pass is also the defect walk: a result with no error conforms.
    ``max_depth`` bounds the blob's nesting with R5-unwrapped content included. A schema's
    compiled pass writes the same steps out for its nodes and records into the same
    :attr:`diff` and :attr:`withdrawn`.
    """

    __slots__ = ("diff", "max_depth", "withdrawn")  # one per check: no instance dict

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.diff: list[dict[str, Any]] = []
        self.withdrawn: list[Withdrawn] = []

    def node(self, value: Any, node: SchemaNode, path: Path) -> Repaired:
        """Repair one node: its own repair first, then its children.

        The own repair is tentative: it is kept only when the node's whole subtree then
        conforms; otherwise it and every repair beneath it are withdrawn and the node is
        left as submitted ("the wrap never launders a bad value into a pass").
        """
        own = node.errors(value, path)  # none means nothing here to repair
        # D13: the root is the arguments object itself and is never replaced (R7 would wrap it).
        found = _own_repair(value, node, own, len(path), self.max_depth) if path and own else None
        if found is not None:
            rule, replacement = found
            mark, withdrawn_mark = len(self.diff), len(self.withdrawn)
            self.diff.append(_entry(path, rule, "replace", value, replacement))
            repaired, errors = self.children(replacement, node, path, None)
            if not errors:
                return repaired, errors
            del self.diff[mark:]
            del self.withdrawn[withdrawn_mark:]
            self.withdrawn.append(Withdrawn(path, rule, errors))
        if isinstance(value, (dict, list)):
            return self.children(value, node, path, own)
        return value, own  # a scalar has no children: its own errors are all of them

    def children(
        self, value: Any, node: SchemaNode, path: Path, own: list[SchemaError] | None
    ) -> Repaired:
        """Repair an object's declared properties (in submitted key order) or an array's items.

        When no child changes, ``value`` itself is returned (children() never mutates) and
        ``own``, its own errors when given, still hold.
        """
        errors: list[SchemaError] = []
        out = value
        if isinstance(value, dict) and node.properties is not None:
            rebuilt: dict[str, Any] = {}
            changed = False
            for key, child in value.items():
                sub = node.property(key)
                if sub is None:
                    rebuilt[key] = child  # undeclared
                elif (
                    child is None
                    and key not in node.schema.get("required", ())
                    and not sub.accepts_null()
                ):
                    # R8: null on an optional declared property is the absence marker.
                    self.diff.append(_entry(path + (key,), "R8", "remove", None, None))
                    changed = True
                else:
                    repaired, child_errors = self.node(child, sub, path + (key,))
                    rebuilt[key] = repaired
                    if child_errors:
                        errors += child_errors
                    changed = changed or repaired is not child
            if changed:
                out = rebuilt
        elif isinstance(value, list) and node.items_schema is not None:
            items = node.items()
            repaired_items = []
            changed = False
            for i, item in enumerate(value):
                repaired, item_errors = self.node(item, items, path + (i,))
                repaired_items.append(repaired)
                if item_errors:
                    errors += item_errors
                changed = changed or repaired is not item
            if changed:
                out = repaired_items
        if own is None or out is not value:
            own = node.errors(out, path)
        return out, own + errors if own else errors


def _entry(path: Path, rule: str, op: str, before: Any, after: Any) -> dict[str, Any]:
    return {"path": format_path(path), "rule": rule, "op": op, "before": before, "after": after}


# ------------------------------------------------------------------------- apply_diff


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
        parts = parse_path(entry["path"])
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
