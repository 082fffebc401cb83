"""Compiled checks: one covered schema's tool-argument/v1 repair pass written out as Python
source specialised to that schema and compiled once (as fastjsonschema does for validation),
giving exactly the interpreted pass's verdicts, repairs, diffs and defects.

For every (sub)schema node the generator writes four functions: ``v`` (is the value valid: the
keyword tests inlined, no keyword table read per call), ``a`` (the root's admission test: an
exact-typed JSON value within the depth limit *and* valid, so a conforming blob is answered
without the separate JSON-value walk), ``r`` (the node's tentative repair, :meth:`Repairer.
_unless_valid` written out for this node) and ``k`` (its children, :meth:`Repairer.children`).
What a node's defects say is never written twice: a failing node's own errors come from the
interpreter's :func:`toolcall300.schema.compile_node_errors`, and a type repair from
:func:`toolcall300.argcheck.repairs.type_repair`, so messages and rules have one source.

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
from toolcall300.argcheck.repairs import _r9_enum_case_match as r9_enum_case_match
from toolcall300.canonical import int_fits_double, json_equal
from toolcall300.schema import KEYWORDS, compile_node_errors, declared_types, node_errors
from toolcall300.schema.patterns import compile_pattern

#: ``is_json_value(value, limit)``: (ok, depth, exact), as the checker's request check answers.
JsonValueTest = Callable[[Any, int], tuple[bool, int, bool]]


@dataclass(frozen=True)
class Checker:
    """One schema's compiled pass. ``admit(blob)``: :data:`VALID` for an exact-typed JSON
    object within the depth limit that conforms (the verdict is VALID, nothing else to do),
    :data:`INVALID` for one that does not, :data:`UNKNOWN` for any other value (the request
    check decides). ``run(blob, repairer, invalid)``: :meth:`Repairer.node` at the root, for
    an exact-typed blob (``invalid`` when it is known not to conform)."""

    admit: Callable[[Any], int]
    run: Callable[[Any, Any, bool], Repaired]
    source: str


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
    "or {x} is False or type({x}) is int and ({x}.bit_length() <= 1023 or _fits({x})) "
    "or type({x}) is float and _finite({x}))"
)
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
            "_finite": math.isfinite,
            "_json_equal": json_equal,
            "_entry": entry,
            "_Withdrawn": Withdrawn,
            "_type_repair": type_repair,
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
        self.names[f"E{number}"] = compile_node_errors(schema)
        self.names[f"S{number}"] = schema
        self.names[f"T{number}"] = declared_types(schema)
        self.names[f"N{number}"] = not node_errors(None, schema)  # accepts null (R8's test)
        self.valid(number, own, children, item_node, leaf)
        self.admit(number, own, children, item_node, leaf, level)
        self.repair(number, schema)
        self.children(number, schema, own, children, item_node)
        return number

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
        if leaf:
            body += ["    r = 2", *self.admit_lines(n, "x", "    "), "    return r"]
            self.emit(*body)
            return
        below = rest - 1  # levels left to a child
        body.append("    r = 2")
        keyword = "if"
        if children:
            any_child = self.strict_test("m", below)
            body += [
                "    if type(x) is dict:",
                f"        if {below} < 0:",
                "            return 0",
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
            body += [
                f"                if not ((k.isascii() or not _lone(k)) and {any_child}):",
                "                    return 0",
            ]
            keyword = "elif"
        if item is not None:
            body += [
                f"    {keyword} type(x) is list:",
                f"        if {below} < 0:",
                "            return 0",
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

    def repair(self, n: int, schema: dict[str, Any]) -> None:
        """``r{n}``: :meth:`Repairer._unless_valid` for this node (D8, D13, D22)."""
        type_test = self.type_test(schema, "x")
        enum_test = self.enum_test(schema, "x")
        body = [f"def r{n}(x, p, c):"]
        if type_test is not None or enum_test is not None:
            body.append("    if p:  # D13: the root is never replaced")
            if type_test is not None:
                body += [
                    f"        if not {type_test}:",
                    f"            found = _type_repair(x, T{n}, len(p), c.max_depth)",
                ]
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
                f"            if v{n}(rep):",
                "                return rep, []",
                f"            out, errs = k{n}(rep, p, c)",
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

    def children(
        self,
        n: int,
        schema: dict[str, Any],
        own: str,
        children: dict[str, int],
        item: int | None,
    ) -> None:
        """``k{n}``: :meth:`Repairer.children` for this node, then its own errors afresh."""
        body = [f"def k{n}(x, p, c):", "    errs = []", "    out = x"]
        keyword = "if"
        if "properties" in schema and isinstance(schema["properties"], dict):
            subs = self.const({})
            self.names[f"_subs_{subs}"] = children
            required = self.const(frozenset(schema.get("required", ())))
            body += [
                f"    {keyword} type(x) is dict:",
                "        rebuilt = {}",
                "        changed = False",
                "        for key, m in x.items():",
                f"            s = {subs}.get(key)",
                "            if s is None or s[0](m):",
                "                rebuilt[key] = m",
                f"            elif m is None and key not in {required} and not s[2]:",
                '                c.diff.append(_entry(p + (key,), "R8", "remove", None, None))',
                "                changed = True",
                "            else:",
                "                rep, found = s[1](m, p + (key,), c)",
                "                rebuilt[key] = rep",
                *_merge_child("                "),
            ]
            keyword = "elif"
        if item is not None:
            body += [
                f"    {keyword} type(x) is list:",
                "        rebuilt = []",
                "        changed = False",
                "        for i, m in enumerate(x):",
                f"            if v{item}(m):",
                "                rebuilt.append(m)",
                "                continue",
                f"            rep, found = r{item}(m, p + (i,), c)",
                "            rebuilt.append(rep)",
                *_merge_child("            "),
            ]
        body += [
            "    x = out",
            f"    own = [] if {own} else E{n}(x, p)",
            "    return out, own + errs if own else errs",
        ]
        self.emit(*body)


def _merge_child(indent: str) -> list[str]:
    """A repaired child's errors and change gathered, then the rebuilt container kept."""
    return [
        f"{indent}if found:",
        f"{indent}    errs += found",
        f"{indent}if rep is not m:",
        f"{indent}    changed = True",
        "        if changed:",
        "            out = rebuilt",
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
    admit_root, valid_root, repair_root = (
        namespace[f"a{root}"],
        namespace[f"v{root}"],
        namespace[f"r{root}"],
    )

    def admit(blob: Any) -> int:
        return admit_root(blob) if type(blob) is dict else UNKNOWN

    def run(blob: Any, repairer: Any, invalid: bool) -> Repaired:
        if not invalid and valid_root(blob):
            return blob, []
        repaired: Repaired = repair_root(blob, (), repairer)
        return repaired

    return Checker(admit, run, source)
