"""Compiled checks: one covered schema's tool-argument/v1 repair pass written out as Python
source specialised to that schema and compiled once (as fastjsonschema does for validation),
giving exactly the interpreted pass's verdicts, repairs, diffs and defects.

For every (sub)schema node the generator writes four functions: ``v`` (is the value valid: the
keyword tests inlined, no keyword table read per call), ``a`` (the root's admission test: an
exact-typed JSON value within the depth limit *and* valid, so a conforming blob is answered
without the separate JSON-value walk), ``r`` (the node's tentative repair, :meth:`Repairer.
_unless_valid` written out for this node) and ``k`` (its children, :meth:`Repairer.children`).
What a node's defects say is never written twice: a failing node's own errors come from
each failing keyword's own ``check`` in :data:`toolcall300.schema.KEYWORDS` (called only when
its inline test fails), and a repair from the rule functions of
:mod:`toolcall300.argcheck.repairs`, so messages and rules have one source.

The generated code assumes what the checker proves before calling it: every value is built
from the exact JSON types (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``,
``None``); anything else (a subclass a Python caller built) is walked by the interpreter.
It does not judge coverage (the schema must be covered, :func:`toolcall300.schema.
schema_problems`) and keeps what it read: the schema must not change afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolcall300.argcheck import text as text_reader
from toolcall300.argcheck.repairs import Repaired, Withdrawn, type_repair
from toolcall300.argcheck.repairs import _entry as entry
from toolcall300.argcheck.repairs import _r3_string_to_number as r3_string_to_number
from toolcall300.argcheck.repairs import _r4_string_to_boolean as r4_string_to_boolean
from toolcall300.argcheck.repairs import _r6_scalar_to_string as r6_scalar_to_string
from toolcall300.argcheck.repairs import _r9_enum_case_match as r9_enum_case_match
from toolcall300.canonical import int_fits_double, json_equal
from toolcall300.schema import KEYWORDS, declared_types, node_errors
from toolcall300.schema.patterns import compile_pattern

#: ``is_json_value(value, limit)``: (ok, depth, exact), as the checker's request check answers.
JsonValueTest = Callable[[Any, int], tuple[bool, int, bool]]


@dataclass(frozen=True)
class Checker:
    """One schema's compiled pass. ``admit(blob)``: :data:`VALID` for an exact-typed JSON
    object within the depth limit that conforms (the verdict is VALID, nothing else to do),
    :data:`INVALID` for one that does not, :data:`UNKNOWN` for any other value (the request
    check decides). ``run(blob, repairer, invalid)``: :meth:`Repairer.node` at the root, for
    an exact-typed blob (``invalid`` when it is known not to conform). ``members(blob, (),
    repairer)``: the same for an object blob known not to conform (the root is never
    replaced, so its members are repaired straight away)."""

    admit: Callable[[Any], int]
    run: Callable[[Any, Any, bool], Repaired]
    source: str
    members: Callable[[dict[str, Any], tuple[()], Any], Repaired]


#: What :attr:`Checker.admit` answers.
UNKNOWN, INVALID, VALID = 0, 1, 2

#: A declared-key dispatch longer than this is a dict lookup instead of an ``if`` chain.
_CHAIN = 12

_FAMILY_MEMBER = {
    "string": "type({x}) is str",
    "number": "(type({x}) is int or type({x}) is float)",
    "array": "type({x}) is list",
    "object": "type({x}) is dict",
}
_TYPE_TEST = {
    "null": "{x} is None",
    "boolean": "({x} is True or {x} is False)",
    "object": "type({x}) is dict",
    "array": "type({x}) is list",
    "string": "type({x}) is str",
    "number": "(type({x}) is int or type({x}) is float)",
    "integer": "(type({x}) is int or (type({x}) is float and {x}.is_integer()))",
}
_FAMILY_OF_TYPE = {"integer": "number", "number": "number", "string": "string"} | {
    "array": "array",
    "object": "object",
}
#: An exact-typed JSON scalar of valid Unicode text and a double's range (the request check's
#: scalar rule, criteria D17), inline; containers and anything else go to ``_jok``.
_SCALAR_OK = (
    "(type({x}) is str and ({x}.isascii() or not _lone({x})) or {x} is None or {x} is True "
    "or {x} is False or type({x}) is int and (-_B < {x} < _B or _fits({x})) "
    "or type({x}) is float and _finite({x}))"
)
#: A leaf declaring one of these types alone is admitted type first: ``(the exact class
#: test, what else makes such a value no JSON value, whether a value failing the class test
#: certainly fails the type)``. An integer may be an integral float, so it is judged whole.
_TYPE_FIRST = {
    "string": ("type({x}) is str", "not {x}.isascii() and _lone({x})", True),
    "boolean": ("({x} is True or {x} is False)", None, True),
    "integer": ("type({x}) is int", "not -_B < {x} < _B and not _fits({x})", False),
    "number": ("type({x}) is int", "not -_B < {x} < _B and not _fits({x})", False),
}
_COMPARE = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
_COUNT = {
    "minLength": ("string", ">="),
    "maxLength": ("string", "<="),
    "minItems": ("array", ">="),
    "maxItems": ("array", "<="),
    "minProperties": ("object", ">="),
    "maxProperties": ("object", "<="),
}


class _Generator:
    def __init__(self, max_depth: int, is_json_value: JsonValueTest) -> None:
        self.max_depth = max_depth
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "_M": _MISSING,
            "_lone": text_reader.has_lone_surrogate,
            "_fits": int_fits_double,
            # an int strictly between -_B and _B has at most 1023 bits, so a double holds
            # it (two comparisons, no method call); a longer one is asked of _fits
            "_B": 2**1023,
            "_finite": math.isfinite,
            "_json_equal": json_equal,
            "_entry": entry,
            "_Withdrawn": Withdrawn,
            "_type_repair": type_repair,
            "_r3": r3_string_to_number,
            "_r4": r4_string_to_boolean,
            "_r6": r6_scalar_to_string,
            "_r9": r9_enum_case_match,
        }
        self.is_json_value = is_json_value
        self.count = 0
        #: Each leaf node's schema and level, so a parent can inline its tests.
        self.leaves: dict[int, tuple[dict[str, Any], int]] = {}

    def const(self, value: Any) -> str:
        name = f"K{len(self.names)}"
        self.names[name] = value
        return name

    def literal(self, number: Any) -> str:
        """A finite number as source (``repr`` reads back exactly), else a named constant."""
        if type(number) in (int, float) and math.isfinite(number):
            return repr(number)
        return self.const(number)

    # ------------------------------------------------------------------ tests as expressions

    def type_test(self, schema: dict[str, Any], x: str) -> str | None:
        if "type" not in schema:
            return None
        names = declared_types(schema)
        return "(" + " or ".join(_TYPE_TEST[n].format(x=x) for n in names) + ")"

    def enum_test(self, schema: dict[str, Any], x: str) -> str | None:
        if "enum" not in schema:
            return None
        members = schema["enum"]
        strings = frozenset(m for m in members if isinstance(m, str))
        others = tuple(m for m in members if not isinstance(m, str))
        if not others:
            return f"(type({x}) is str and {x} in {self.const(strings)})"
        other = f"any(_json_equal({x}, _e) for _e in {self.const(others)})"
        if not strings:
            return f"({other})"
        return f"({x} in {self.const(strings)} if type({x}) is str else {other})"

    def family_tests(self, schema: dict[str, Any], x: str) -> dict[str, list[str]]:
        """Each family's tests of the node's own keywords (values of other families pass)."""
        tests: dict[str, list[str]] = {}
        for name, value in schema.items():
            if name in _COUNT:
                family, op = _COUNT[name]
                tests.setdefault(family, []).append(f"len({x}) {op} {self.literal(value)}")
            elif name in _COMPARE:
                tests.setdefault("number", []).append(f"{x} {_COMPARE[name]} {self.literal(value)}")
            elif name == "pattern":
                search = self.const(compile_pattern(value).search)
                tests.setdefault("string", []).append(f"{search}({x}) is not None")
            elif name == "required" and value:
                if len(value) <= _CHAIN:
                    tests.setdefault("object", []).extend(f"{key!r} in {x}" for key in value)
                else:
                    tests.setdefault("object", []).append(
                        f"{self.const(frozenset(value))}.issubset({x})"
                    )
            elif name == "additionalProperties" and value is False:
                declared = schema.get("properties")
                if isinstance(declared, dict):
                    keys = self.const(frozenset(declared))
                    tests.setdefault("object", []).append(f"{keys}.issuperset({x})")
                else:
                    tests.setdefault("object", []).append(f"not {x}")
            elif name in ("const", "uniqueItems"):
                test = KEYWORDS[name].compiled(value, schema, False)
                if test is not None:
                    group = KEYWORDS[name].family or ""
                    tests.setdefault(group, []).append(f"{self.const(test)}({x})")
        return tests

    def own_test(self, schema: dict[str, Any], x: str) -> str:
        """Whether ``x`` passes the node's own keywords (no subschema): one expression."""
        parts: list[str] = []
        type_test = self.type_test(schema, x)
        if type_test is not None:
            parts.append(type_test)
        enum_test = self.enum_test(schema, x)
        if enum_test is not None:
            parts.append(enum_test)
        families = self.family_tests(schema, x)
        parts += [f"({t})" for t in families.pop("", [])]  # const: every value
        types = declared_types(schema) if "type" in schema else ()
        only = _FAMILY_OF_TYPE.get(types[0]) if len(types) == 1 else None
        for family, tests in families.items():
            joined = " and ".join(tests)
            if family == only:
                parts.append(f"({joined})")  # the single declared type already gates it
            elif only is None and (not types or _covers(types, family)):
                member = _FAMILY_MEMBER[family].format(x=x)
                parts.append(f"(not {member} or ({joined}))")
            # else: no value of this family passes the type test, so its tests never decide
        return " and ".join(parts) if parts else "True"

    def own_given(self, schema: dict[str, Any], x: str, type_name: str) -> str:
        """:meth:`own_test` for an ``x`` known to pass the class test of the node's one
        declared type ``type_name`` (see :data:`_TYPE_FIRST`): the type test is dropped."""
        parts: list[str] = []
        if "enum" in schema:
            members = schema["enum"]
            if type_name == "string":
                strings = frozenset(m for m in members if isinstance(m, str))
                parts.append(f"{x} in {self.const(strings)}" if strings else "False")
            else:
                enum_test = self.enum_test(schema, x)
                assert enum_test is not None
                parts.append(enum_test)
        families = self.family_tests(schema, x)
        parts += [f"({t})" for t in families.pop("", [])]  # const: every value
        family = _FAMILY_OF_TYPE.get(type_name)
        if family in families:
            parts.append("(" + " and ".join(families[family]) + ")")
        return " and ".join(parts) if parts else "True"

    def strict_test(self, x: str, rest: int) -> str:
        """Whether ``x`` is an exact-typed JSON value of valid Unicode text and a double's
        range, nesting at most ``rest`` levels (the request check's rule, D17): scalars
        inline, containers through ``_jok``."""
        return f"({_SCALAR_OK.format(x=x)} or _jok({x}, {rest}))"

    def valid_call(self, node: int, x: str) -> str:
        """Node ``node``'s validity of ``x``: its tests inline for a leaf, else a call."""
        if node in self.leaves:
            return f"({self.own_test(self.leaves[node][0], x)})"
        return f"v{node}({x})"

    def admit_lines(self, node: int, x: str, indent: str) -> list[str]:
        """Statements judging child ``x`` of node ``node`` inside an ``a`` function: return 0
        when it is not an exact JSON value within the limits, set ``r = 1`` when it fails."""
        if node in self.leaves:
            schema, level = self.leaves[node]
            strict = self.strict_test(x, self.max_depth - level)
            types = declared_types(schema) if "type" in schema else ()
            first = _TYPE_FIRST.get(types[0]) if len(types) == 1 else None
            if first is not None:
                return self.type_first_lines(schema, x, indent, strict, types[0])
            return [
                f"{indent}if not {strict}:",
                f"{indent}    return 0",
                f"{indent}if not ({self.own_test(schema, x)}):",
                f"{indent}    r = 1",
            ]
        return [
            f"{indent}s = a{node}({x})",
            f"{indent}if s < 2:",
            f"{indent}    if not s:",
            f"{indent}        return 0",
            f"{indent}    r = 1",
        ]

    def type_first_lines(
        self, schema: dict[str, Any], x: str, indent: str, strict: str, type_name: str
    ) -> list[str]:
        """:meth:`admit_lines` of a leaf declaring ``type_name`` alone: the class test first,
        so a conforming value costs that test, its own JSON rule and its other keywords."""
        guard, not_json, others_fail = _TYPE_FIRST[type_name]
        lines = [f"{indent}if {guard.format(x=x)}:"]
        if not_json is not None:
            lines += [f"{indent}    if {not_json.format(x=x)}:", f"{indent}        return 0"]
        given = self.own_given(schema, x, type_name)
        if given != "True":
            lines += [f"{indent}    if not ({given}):", f"{indent}        r = 1"]
        elif not_json is None:
            lines.append(f"{indent}    pass")
        lines += [f"{indent}elif not {strict}:", f"{indent}    return 0"]
        if others_fail:
            lines += [f"{indent}else:", f"{indent}    r = 1"]
        else:
            lines += [f"{indent}elif not ({self.own_test(schema, x)}):", f"{indent}    r = 1"]
        return lines

    # ------------------------------------------------------------------ the node functions

    def node(self, schema: dict[str, Any], level: int) -> int:
        """Write the functions of one node (its children first); its number."""
        number = self.count
        self.count += 1
        properties = schema.get("properties")
        props = properties if isinstance(properties, dict) else None
        items = schema.get("items")
        item = items if isinstance(items, dict) else None
        children = {key: self.node(sub, level + 1) for key, sub in (props or {}).items()}
        item_node = self.node(item, level + 1) if item is not None else None
        leaf = props is None and item is None
        if leaf:
            self.leaves[number] = (schema, level)
        own = self.own_test(schema, "x")
        self.errors(number, schema)
        self.names[f"S{number}"] = schema
        self.names[f"T{number}"] = declared_types(schema)
        self.names[f"N{number}"] = not node_errors(None, schema)  # accepts null (R8's test)
        self.valid(number, own, children, item_node, leaf)
        self.admit(number, own, children, item_node, leaf, level)
        self.repair(number, schema)
        self.children(number, schema, own, children, item_node)
        return number

    def errors(self, n: int, schema: dict[str, Any]) -> None:
        """``E{n}(x, p)``: :func:`toolcall300.schema.node_errors` of this node, each own
        keyword tested inline in report order and its own ``check`` called (for its errors
        and their messages) only when the test fails, which is exactly when it yields."""
        body = [f"def E{n}(x, p):", "    out = []"]
        for name in _OWN_ORDER:
            if name not in schema:
                continue
            test = self.keyword_test(schema, name, "x")
            if test is None:
                continue  # a value of the keyword that no instance fails
            check = self.const(KEYWORDS[name].check)
            value = self.const(schema[name])
            body += [f"    if not ({test}):", f"        out += {check}({value}, x, S{n}, p, ())"]
        self.emit(*body, "    return out")

    def keyword_test(self, schema: dict[str, Any], name: str, x: str) -> str | None:
        """Whether ``x`` passes keyword ``name`` of the node alone: the tests :meth:`own_test`
        joins, one keyword's, gated by its family (values of other families pass)."""
        if name == "type":
            return self.type_test(schema, x)
        if name == "enum":
            return self.enum_test(schema, x)
        alone = {name: schema[name]}
        if name == "additionalProperties" and "properties" in schema:
            alone["properties"] = schema["properties"]  # the keys it admits
        families = self.family_tests(alone, x)
        if not families:
            return None
        ((family, tests),) = families.items()
        joined = " and ".join(tests)
        if not family:
            return f"({joined})"
        return f"(not {_FAMILY_MEMBER[family].format(x=x)} or ({joined}))"

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)
        self.lines.append("")

    def valid(
        self, n: int, own: str, children: dict[str, int], item: int | None, leaf: bool
    ) -> None:
        if leaf:
            self.emit(f"def v{n}(x):", f"    return {own}")
            return
        body = [f"def v{n}(x):", f"    if not ({own}):", "        return False"]
        if children:
            body.append("    if type(x) is dict:")
            if len(children) <= _CHAIN:
                for key, child in children.items():
                    body += [
                        f"        m = x.get({key!r}, _M)",
                        f"        if m is not _M and not {self.valid_call(child, 'm')}:",
                        "            return False",
                    ]
            else:
                table = self.const({key: f"v{child}" for key, child in children.items()})
                self.names[f"_late_{table}"] = True
                body += [
                    "        for k, m in x.items():",
                    f"            f = {table}.get(k)",
                    "            if f is not None and not f(m):",
                    "                return False",
                ]
        if item is not None:
            body += [
                "    if type(x) is list:",
                "        for m in x:",
                f"            if not {self.valid_call(item, 'm')}:",
                "                return False",
            ]
        body.append("    return True")
        self.emit(*body)

    def admit(
        self,
        n: int,
        own: str,
        children: dict[str, int],
        item: int | None,
        leaf: bool,
        level: int,
    ) -> None:
        """``a{n}``: 0 unless the value is an exact-typed JSON value of valid Unicode text
        and a double's range nesting at most ``max_depth`` levels with ``level`` containers
        around it (the request check's rule, D17); then 2 when it is valid, else 1. The JSON
        rule is judged first, so the node's own tests only ever see JSON values."""
        rest = self.max_depth - level  # levels left to the value itself
        body = [f"def a{n}(x):"]
        if level == 0:  # the root: anything but an object is for the request checks
            body += ["    if type(x) is not dict:", "        return 0"]
        if leaf:
            body += ["    r = 2", *self.admit_lines(n, "x", "    "), "    return r"]
            self.emit(*body)
            return
        below = rest - 1  # levels left to a child
        body.append("    r = 2")
        keyword = "if"
        if children:
            # the root is an object (tested above): its members are read unconditionally
            body += self.admit_members(children, below, "True" if level == 0 else None)
            keyword = "elif"
        if item is not None:
            body += [
                f"    {keyword} type(x) is list:",
                *_too_deep(below, "        "),
                "        for m in x:",
                *self.admit_lines(item, "m", "            "),
            ]
            keyword = "elif"
        generic = self.strict_test("x", rest)
        if keyword == "if":
            body += [f"    if not {generic}:", "        return 0"]
        else:
            body += ["    else:", f"        if not {generic}:", "            return 0"]
        body += [f"    if not ({own}):", "        return 1", "    return r"]
        self.emit(*body)

    def admit_members(self, children: dict[str, int], below: int, known: str | None) -> list[str]:
        """The object branch of an ``a`` function: each member judged by its declared
        property's admission (an ``if`` chain, or a table past :data:`_CHAIN`), an
        undeclared one by the JSON rule alone. ``known``: the branch's test when the value
        is known to be an object (``True``, which Python compiles away)."""
        body = [
            f"    if {known or 'type(x) is dict'}:",
            *_too_deep(below, "        "),
            "        for k, m in x.items():",
            "            if type(k) is not str:",
            "                return 0",
        ]
        if len(children) <= _CHAIN:
            branch = "if"
            for key, child in children.items():
                body.append(f"            {branch} k == {key!r}:")
                body += self.admit_lines(child, "m", "                ")
                branch = "elif"
            body.append("            else:")
        else:
            table = self.const({key: f"a{child}" for key, child in children.items()})
            self.names[f"_late_{table}"] = True
            body += [
                f"            f = {table}.get(k)",
                "            if f is not None:",
                "                s = f(m)",
                "                if s < 2:",
                "                    if not s:",
                "                        return 0",
                "                    r = 1",
                "            else:",
            ]
        return [
            *body,
            "                if not ((k.isascii() or not _lone(k)) and "
            f"{self.strict_test('m', below)}):",
            "                    return 0",
        ]

    def repair(self, n: int, schema: dict[str, Any]) -> None:
        """``r{n}``: :meth:`Repairer._unless_valid` for this node (D8, D13, D22)."""
        type_test = self.type_test(schema, "x")
        enum_test = self.enum_test(schema, "x")
        body = [f"def r{n}(x, p, c):"]
        if type_test is not None or enum_test is not None:
            body.append("    if p:  # D13: the root is never replaced")
            if type_test is not None:
                body.append(f"        if not {type_test}:")
                body += self.type_repair_lines(n, declared_types(schema), "            ")
                if enum_test is not None:
                    body += [f"        elif not {enum_test}:", f"            found = _r9(x, S{n})"]
                body += ["        else:", "            found = None"]
            else:
                assert enum_test is not None
                body += [f"        found = None if {enum_test} else _r9(x, S{n})"]
            body += [
                "        if found is not None:",
                "            rule, rep = found",
                "            d, w = c.diff, c.withdrawn",
                "            mark, wmark = len(d), len(w)",
                '            d.append(_entry(p, rule, "replace", x, rep))',
                f"            if {self.valid_call(n, 'rep')}:",
                "                return rep, []",
                # a leaf has no members: what fails is its own keywords (it failed them)
                f"            out, errs = rep, E{n}(rep, p)"
                if n in self.leaves
                else f"            out, errs = k{n}(rep, p, c)",
                "            if not errs:",
                "                return out, errs",
                "            del d[mark:]",
                "            del w[wmark:]",
                "            w.append(_Withdrawn(p, rule, errs))",
            ]
        body += [
            "    if type(x) is dict or type(x) is list:",
            f"        return k{n}(x, p, c)",
            f"    return x, E{n}(x, p)",
        ]
        self.emit(*body)

    def type_repair_lines(self, n: int, types: tuple[str, ...], indent: str) -> list[str]:
        """``found = type_repair(x, ...)`` for a node declaring ``types``, calling only the
        rules that can apply to the value's type, in whitelist order (R3, R4 take a string,
        R6 a number or boolean); a node declaring a container type (R5, R7, which read what
        a string holds) calls :func:`type_repair` itself."""
        if "object" in types or "array" in types:
            return [f"{indent}found = _type_repair(x, T{n}, len(p), c.max_depth)"]
        for_string = [rule for rule, wanted in _STRING_RULES if not wanted.isdisjoint(types)]
        lines = []
        keyword = "if"
        if for_string:
            calls = " or ".join(f"{rule}(x, T{n})" for rule in for_string)
            lines += [f"{indent}if type(x) is str:", f"{indent}    found = {calls}"]
            keyword = "elif"
        if "string" in types:
            scalar = "type(x) is int or type(x) is float or x is True or x is False"
            lines += [f"{indent}{keyword} {scalar}:", f"{indent}    found = _r6(x, T{n})"]
            keyword = "elif"
        if keyword == "if":
            return [f"{indent}found = None"]
        return [*lines, f"{indent}else:", f"{indent}    found = None"]

    def children(
        self,
        n: int,
        schema: dict[str, Any],
        own: str,
        children: dict[str, int],
        item: int | None,
    ) -> None:
        """``k{n}``: :meth:`Repairer.children` for this node, then its own errors afresh.

        The container is copied only when a child changes (copy on write: a replaced value
        keeps its key's place, an R8 removal drops the key), and a declared property's
        validity is tested inline for a leaf, as in :meth:`admit`."""
        body = [f"def k{n}(x, p, c):", "    errs = []", "    out = x"]
        keyword = "if"
        if children:  # no declared property: no member is repaired
            body += [f"    {keyword} type(x) is dict:", "        for key, m in x.items():"]
            required = frozenset(schema.get("required", ()))
            if len(children) <= _CHAIN:
                body += self.property_chain(children, required)
            else:
                body += self.property_table(children, required)
            body += _merge_child("            ", "dict")
            keyword = "elif"
        if item is not None:
            body += [
                f"    {keyword} type(x) is list:",
                "        for i, m in enumerate(x):",
                f"            if {self.valid_call(item, 'm')}:",
                "                continue",
                f"            rep, found = r{item}(m, p + (i,), c)",
                *_merge_child("            ", "list", "i"),
            ]
        body += [
            "    x = out",
            f"    own = [] if {own} else E{n}(x, p)",
            "    return out, own + errs if own else errs",
        ]
        self.emit(*body)

    def property_chain(self, children: dict[str, int], required: frozenset[str]) -> list[str]:
        """The declared keys told apart by an ``if`` chain: a conforming value, or an
        undeclared key, goes on to the next member; a failing one is repaired."""
        body = []
        branch = "if"
        for key, child in children.items():
            body += [
                f"            {branch} key == {key!r}:",
                f"                if {self.valid_call(child, 'm')}:",
                "                    continue",
            ]
            if key not in required and not self.names[f"N{child}"]:
                body += [  # R8: null on an optional declared property is the absence marker
                    "                if m is None:",
                    *_r8_removal("                    "),
                ]
            body.append(f"                rep, found = r{child}(m, p + (key,), c)")
            branch = "elif"
        return [*body, "            else:", "                continue"]

    def property_table(self, children: dict[str, int], required: frozenset[str]) -> list[str]:
        """The declared keys looked up in a table of (valid, repair, accepts null)."""
        subs = self.const({})
        self.names[f"_subs_{subs}"] = children
        return [
            f"            s = {subs}.get(key)",
            "            if s is None or s[0](m):",
            "                continue",
            f"            if m is None and key not in {self.const(required)} and not s[2]:",
            *_r8_removal("                "),
            "            rep, found = s[1](m, p + (key,), c)",
        ]


#: A node's own keywords (not those holding subschemas) in the order their defects are
#: reported: ``required`` first, then the keyword table's order.
_OWN_ORDER = ("required",) + tuple(
    name for name, kw in KEYWORDS.items() if name != "required" and not kw.subschemas
)

#: The type repairs that take a string, each with the declared types it serves.
_STRING_RULES = (("_r3", frozenset({"number", "integer"})), ("_r4", frozenset({"boolean"})))


def _merge_child(indent: str, kind: str, index: str = "key") -> list[str]:
    """A repaired child's errors gathered and, when it changed, the container copied once
    (``kind``, the copy's constructor) and the child's new value put in its place."""
    return [
        f"{indent}if found:",
        f"{indent}    errs += found",
        f"{indent}if rep is not m:",
        f"{indent}    if out is x:",
        f"{indent}        out = {kind}(x)",
        f"{indent}    out[{index}] = rep",
    ]


def _too_deep(below: int, indent: str) -> list[str]:
    """A container whose members would nest past the limit is no admissible value (the
    level is known when the code is written, so the test is too)."""
    return [f"{indent}return 0"] if below < 0 else []


def _r8_removal(indent: str) -> list[str]:
    """R8: the optional declared property sent as null is removed (the copy loses the key)."""
    return [
        f'{indent}c.diff.append(_entry(p + (key,), "R8", "remove", None, None))',
        f"{indent}if out is x:",
        f"{indent}    out = dict(x)",
        f"{indent}del out[key]",
        f"{indent}continue",
    ]


def _covers(types: tuple[str, ...], family: str) -> bool:
    return any(_FAMILY_OF_TYPE.get(t) == family for t in types)


_MISSING = object()


def compile_checker(
    schema: dict[str, Any], *, max_depth: int, is_json_value: JsonValueTest
) -> Checker:
    """The compiled pass of one covered schema (built once, called many times)."""
    gen = _Generator(max_depth, is_json_value)
    root = gen.node(schema, 0)
    source = "\n".join(gen.lines)
    namespace = dict(gen.names)

    def jok(value: Any, limit: int) -> bool:
        ok, depth, exact = is_json_value(value, limit)
        return ok and exact and depth <= limit

    namespace["_jok"] = jok
    exec(compile(source, "<argcheck compiled schema>", "exec"), namespace)
    # Tables that name functions are filled once every function exists.
    for name in list(namespace):
        if name.startswith("_late_"):
            table = namespace[name.removeprefix("_late_")]
            for key, fn in table.items():
                table[key] = namespace[fn]
        elif name.startswith("_subs_"):
            table = namespace[name.removeprefix("_subs_")]
            for key, child in namespace[name].items():
                table[key] = (
                    namespace[f"v{child}"],
                    namespace[f"r{child}"],
                    namespace[f"N{child}"],
                )
    admit_root, valid_root, repair_root, children_root = (
        namespace[f"a{root}"],
        namespace[f"v{root}"],
        namespace[f"r{root}"],
        namespace[f"k{root}"],
    )

    def run(blob: Any, repairer: Any, invalid: bool) -> Repaired:
        if not invalid and valid_root(blob):
            return blob, []
        # The root is never replaced (D13): an object goes straight to its members.
        repaired: Repaired = (children_root if type(blob) is dict else repair_root)(
            blob, (), repairer
        )
        return repaired

    return Checker(admit_root, run, source, children_root)
