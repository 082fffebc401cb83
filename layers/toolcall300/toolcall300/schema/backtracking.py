"""The safety rule for ``pattern`` (D19): which ECMA-262 patterns are refused because
backtracking over them could take exponential time, decided on the pattern as written.

It reads the tree :mod:`toolcall300.schema.ecma` parses; it never compiles or matches a
pattern. :func:`backtracking_hazard` says why a pattern is refused, or ``None``; the comment
below says what the rule is and why it is decided this way.
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

from toolcall300.schema.ecma import (
    Node,
    Parser,
    PatternNotCovered,
    PatternSyntaxError,
    ecma_to_python,
)

#
# A backtracking matcher (Python's re, and ECMA engines alike) explores every way the pattern
# can match a text; a failing match explores them all. The count is exponential in the text's
# length exactly when the pattern's automaton is exponentially ambiguous: some state reaches
# itself by two different paths over one same text (Weber and Seidl 1991). That happens when
# a repetition holds, inside it, two ways to match one same text: nested unbounded repetition
# (star height above one) whose iterations can be cut more than one way, as in (a+)+ and
# (\w+\s?)+, or alternatives that overlap under repetition, as in (a|a)*, (\w|\d)+ and
# (a|aa)*. Linear patterns pass: ^v\d+(?:\.\d+)*$ repeats a group whose every iteration
# starts with the one character its digits cannot match, so each text has one reading.
#
# The rule is decided on the pattern as written (its ECMA parse, not re's, which folds (a|a)
# into [a]): a position automaton (Glushkov's) with one state per character atom, counting
# parallel edges (two loops that join one atom to the next are two paths), then the pairs
# automaton (two runs over one text): the pattern is refused when a strongly connected set of
# pairs holds a pair of equal states and either a pair of different states or a doubled edge.
# Polynomial backtracking (\d+\d+$) is not refused: at the service a CPU budget bounds it (D20).

#: A counted repetition with an upper bound above this reads as unbounded (``{1,100}`` is ``+``):
#: its copies would make the automaton large, and nesting such counts is what explodes.
_UNBOUNDED_AFTER = 16
#: The most character atoms an automaton may hold once counted repetitions are written out, and
#: the most pairs of edges the ambiguity search may compare (a bound on its time: about 0.2 s here);
#: past either the pattern is refused as too large to analyse (real tool patterns stay under
#: 100 atoms and a few thousand comparisons).
MAX_ANALYSED_ATOMS = 2000
MAX_ANALYSED_STEPS = 100_000

_EXPONENTIAL = (
    "it can match one text in exponentially many ways (a repetition over overlapping "
    "alternatives, or a repetition nested in another with more than one way to cut the text, "
    "as in (a+)+, (a|a)* or (\\w|\\d)+), so backtracking can explode; write each part so "
    "that only one reading matches, as in ^[a-z]+(-[a-z]+)*$"
)

#: Every code point, as inclusive ranges.
_ALL: tuple[tuple[int, int], ...] = ((0, 0x10FFFF),)


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out, start = [], 0
    for lo, hi in sorted(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    if start <= 0x10FFFF:
        out.append((start, 0x10FFFF))
    return tuple(out)


def _category_ranges(category: Any, sre: Any) -> tuple[tuple[int, int], ...]:
    digit, word = ((48, 57),), ((48, 57), (65, 90), (95, 95), (97, 122))
    space = tuple((ord(c), ord(c)) for c in "\t\n\v\f\r ")
    table = {
        sre.CATEGORY_DIGIT: digit,
        sre.CATEGORY_WORD: word,
        sre.CATEGORY_SPACE: space,
    }
    negated = {
        sre.CATEGORY_NOT_DIGIT: digit,
        sre.CATEGORY_NOT_WORD: word,
        sre.CATEGORY_NOT_SPACE: space,
    }
    if category in table:
        return table[category]
    return _complement(negated[category]) if category in negated else _ALL


@lru_cache(maxsize=2048)
def _char_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """The code points one character atom (its Python translation) matches, as ranges: exact
    for a literal, a class or ``.``; every code point for a form read no closer (a class holding
    ``\\S``), which can only make the rule refuse more, never less."""
    sre_parse = importlib.import_module("re._parser")
    sre = importlib.import_module("re._constants")
    items = list(sre_parse.parse(text, re.ASCII))
    if len(items) != 1:
        return _ALL
    op, arg = items[0]
    if op is sre.LITERAL:
        return ((arg, arg),)
    if op is sre.NOT_LITERAL:
        return _complement(((arg, arg),))
    if op is not sre.IN:
        return _ALL
    members = list(arg)
    negate = bool(members) and members[0][0] is sre.NEGATE
    out: list[tuple[int, int]] = []
    for kind, value in members[1:] if negate else members:
        if kind is sre.LITERAL:
            out.append((value, value))
        elif kind is sre.RANGE:
            out.append(value)
        elif kind is sre.CATEGORY:
            out += _category_ranges(value, sre)
        else:
            return _ALL
    return _complement(tuple(out)) if negate else tuple(sorted(out))


def _overlap(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


class _TooLarge(Exception):
    pass


class _Automaton:
    """Glushkov's position automaton of one tree: state 0 starts, state ``k`` follows the
    ``k``-th character atom read; ``edges[s][t]`` counts the distinct ways ``s`` leads to ``t``."""

    def __init__(self) -> None:
        self.chars: list[tuple[tuple[int, int], ...]] = [()]
        self.edges: list[dict[int, int]] = [{}]
        self.lookarounds: list[Node] = []

    def link(self, sources: frozenset[int], targets: frozenset[int]) -> None:
        for s in sources:
            for t in targets:
                self.edges[s][t] = self.edges[s].get(t, 0) + 1

    def read(self, node: Node) -> tuple[bool, frozenset[int], frozenset[int]]:
        """``node``'s (nullable, first atoms, last atoms), its inner edges added."""
        kind = node[0]
        if kind == "char":
            if len(self.chars) > MAX_ANALYSED_ATOMS:
                raise _TooLarge
            self.chars.append(_char_ranges(node[1]))
            self.edges.append({})
            k = frozenset((len(self.chars) - 1,))
            return False, k, k
        if kind == "seq":
            nullable, first, last = True, frozenset[int](), frozenset[int]()
            for child in node[1]:
                n2, f2, l2 = self.read(child)
                self.link(last, f2)
                first = first | f2 if nullable else first
                last = l2 | last if n2 else l2
                nullable = nullable and n2
            return nullable, first, last
        if kind == "alt":
            parts = [self.read(child) for child in node[1]]
            return (
                any(p[0] for p in parts),
                frozenset().union(*(p[1] for p in parts)),
                frozenset().union(*(p[2] for p in parts)),
            )
        if kind == "rep":
            return self.read(_written_out(node))
        if kind == "loop":  # body+: the body, then back from its end to its start
            nullable, first, last = self.read(node[1])
            self.link(last, first)
            return nullable, first, last
        if kind == "look":  # matches no character here; its body is a pattern of its own
            self.lookarounds.append(node[1])
        return True, frozenset(), frozenset()


def _written_out(node: Node) -> Node:
    """A counted repetition as copies of its body: ``B{2,4}`` is ``B B (B (B)?)?``, and one
    without an upper bound (or one above :data:`_UNBOUNDED_AFTER`) ends in a loop: ``B{2,}`` is
    ``B B+``, ``B*`` is ``(B+)?``."""
    _, low, high, body = node
    if high is not None and high > _UNBOUNDED_AFTER:
        high = None
    low = min(low, _UNBOUNDED_AFTER)
    if high is None:
        looped: Node = ("loop", body)
        if low == 0:
            return ("alt", (looped, ("empty",)))
        return ("seq", (*([body] * (low - 1)), looped))
    optional: Node = ("empty",)
    for _ in range(high - low):
        optional = ("alt", (("seq", (body, optional)), ("empty",)))
    return ("seq", (*([body] * low), optional))


def _exponentially_ambiguous(auto: _Automaton) -> bool:
    """Whether two runs over one text can leave a state and come back to it apart: a strongly
    connected set of state pairs holding an equal pair and an unequal pair or a doubled edge."""
    chars = list(dict.fromkeys(auto.chars))  # each distinct class once: atoms share a few
    ids = {c: i for i, c in enumerate(chars)}
    classes = [ids[c] for c in auto.chars]
    overlaps: dict[tuple[int, int], bool] = {}
    start = (0, 0)
    succ: dict[tuple[int, int], list[tuple[tuple[int, int], bool]]] = {}
    todo = [start]
    work = 0
    while todo:
        pair = todo.pop()
        if pair in succ:
            continue
        s, t = pair
        work += len(auto.edges[s]) * len(auto.edges[t])
        if work > MAX_ANALYSED_STEPS:
            raise _TooLarge
        out: list[tuple[tuple[int, int], bool]] = []
        for p, ways_p in auto.edges[s].items():
            cp = classes[p]
            for q in auto.edges[t]:
                cq = classes[q]
                meet = overlaps.get((cp, cq))
                if meet is None:
                    meet = overlaps[cp, cq] = _overlap(chars[cp], chars[cq])
                if meet:
                    out.append(((p, q), s == t and p == q and ways_p > 1))
                    if (p, q) not in succ:
                        todo.append((p, q))
        succ[pair] = out
    for component in _components(succ):
        if not any(p == q for p, q in component):
            continue
        if any(p != q for p, q in component):
            return True
        if any(d and nxt in component for pair in component for nxt, d in succ[pair]):
            return True
    return False


def _components(
    succ: dict[tuple[int, int], list[tuple[tuple[int, int], bool]]],
) -> list[set[tuple[int, int]]]:
    """Tarjan's strongly connected components, without recursion (the graph can be large)."""
    index: dict[tuple[int, int], int] = {}
    low: dict[tuple[int, int], int] = {}
    stack: list[tuple[int, int]] = []
    on_stack: set[tuple[int, int]] = set()
    out: list[set[tuple[int, int]]] = []
    for root in succ:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            edges = succ[node]
            if i < len(edges):
                work.append((node, i + 1))
                nxt = edges[i][0]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def _hazard_of(tree: Node) -> str | None:
    trees = [tree]
    while trees:
        auto = _Automaton()
        _, first, _ = auto.read(trees.pop())
        auto.link(frozenset((0,)), first)
        if _exponentially_ambiguous(auto):
            return _EXPONENTIAL
        trees += auto.lookarounds
    return None


@lru_cache(maxsize=512)
def backtracking_hazard(pattern: str) -> str | None:
    r"""Why ``pattern`` could make a match run for exponential time, or ``None`` (cached, as
    :func:`compile_pattern` is: reading a pattern costs more than a whole check).

    Python's ``re`` has no time limit, and a schema is caller-supplied (``POST /check``), so a
    pattern that can match one text in exponentially many ways is refused as not covered
    rather than run (D19; docs/catalog.md, "Patterns"): the analysis above decides, on the
    pattern as written. Linear patterns pass.

    >>> backtracking_hazard(r"^v\d+(?:\.\d+)*$") is None
    True
    >>> backtracking_hazard("(a|a)*$").startswith("it can match one text in exponentially")
    True
    """
    parser = Parser(pattern)
    try:
        parser.pattern()
        ecma_to_python(pattern)
    except (PatternSyntaxError, PatternNotCovered):
        return None  # reported by the caller, from ecma_to_python
    try:
        return _hazard_of(parser.tree)
    except _TooLarge:
        return (
            f"it is too large to analyse for exponential backtracking (more than "
            f"{MAX_ANALYSED_ATOMS} character atoms once counted repetitions are written out, "
            f"or {MAX_ANALYSED_STEPS} comparisons of their pairs)"
        )
