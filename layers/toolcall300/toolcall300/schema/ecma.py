"""``pattern``'s dialect: ECMA-262 regular expressions, checked against ECMA's own grammar,
then translated for Python's ``re``; and which of them are refused because their
backtracking could explode.

JSON Schema patterns are ECMA-262, and JSON Schema 2020-12 (core §6.4) says they SHOULD be
read with the ``u`` flag, as Ajv does by default and as the official test suite assumes
(``\\a`` is not an escape there). :func:`ecma_to_python` parses a pattern with the grammar of
ECMA-262's ``Pattern[+UnicodeMode, +NamedCaptureGroups]`` (22.2.1) and writes the Python
pattern with the same meaning. So Python-only syntax (``(?P<n>a)``, ``(?i)``, ``a*+``,
``(?>a)``, ``(?#c)``, ``\\A``, ``{,3}``) is :class:`PatternSyntaxError` (``schema_invalid``),
ECMA syntax Python spells otherwise (``(?<n>a)``, ``[^]``, ``\\cA``, ``\\u{1F600}``) is
translated, and valid ECMA that cannot keep its meaning on ``re`` (backreferences, ``\\p{…}``,
a variable-length lookbehind, modifier groups) is :class:`PatternNotCovered`. It is not a
regex engine: matching is Python's.
"""

from __future__ import annotations

import re
from typing import Any

#: ECMA-262 whitespace and line terminators (``\s``, 22.2.2.9 WhiteSpace and LineTerminator):
#: Python's differs, and under ``re.ASCII`` is ASCII-only.
_ECMA_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
#: ECMA-262 ``.`` (no dotAll flag in JSON Schema) stops at every line terminator, not only ``\n``.
_ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"
#: SyntaxCharacter (22.2.1): what a PatternCharacter may not be, and what IdentityEscape[+U] allows.
_SYNTAX = frozenset("^$\\.*+?()[]{}|")
_CONTROL_ESCAPES = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
#: Python's ``re`` refuses a repetition count at or above this (``re._constants.MAXREPEAT``).
_PY_MAX_REPEAT = 4294967295
#: ``\d``, ``\w`` and ``\s`` as members of a Python character class.
_CLASS_MEMBER = {"d": "0-9", "w": "A-Za-z0-9_", "s": _ECMA_SPACE}
#: ``\S`` in a class: ECMA's complement of ``\s`` is no Python class member (see character_class).
_NOT_SPACE = "\\S"


#: A pattern's structure as written: ``("char", python_text)`` one character atom,
#: ``("seq", children)``, ``("alt", children)``, ``("rep", low, high | None, body)``,
#: ``("loop", body)`` (``body+``, only once written out), ``("look", body)`` a lookaround,
#: ``("empty",)`` an assertion or anything matching no character.
Node = tuple[Any, ...]


class PatternSyntaxError(ValueError):
    """The pattern is not ECMA-262 (``u`` flag): ``schema_invalid``."""


class PatternNotCovered(ValueError):
    """Valid ECMA-262 that Python's ``re`` cannot run with the same meaning: not covered."""


def _char(cp: int) -> str:
    """One code point as a Python pattern atom that means exactly that code point, in a class or not."""
    c = chr(cp)
    if c.isascii() and c.isalnum():
        return c
    if cp < 0x100:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


class Parser:
    """ECMA-262 22.2.1 ``Pattern[+UnicodeMode, +NamedCaptureGroups]``, read once, left to
    right, writing the Python translation as it goes (one method per production)."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.i = 0
        self.groups = 0
        self.names: list[str] = []
        self.backrefs: list[tuple[int | str, int]] = []
        self.not_covered: list[str] = []
        self.depth = 0
        #: the pattern's structure as written (D19's safety rule reads it, not re's parse,
        #: which folds (a|a) into [a] and factors (ab|ac) into a[bc]): set by :meth:`pattern`
        self.tree: Node = ("empty",)

    # ------------------------------------------------------------------ helpers
    def fail(self, why: str, at: int | None = None) -> PatternSyntaxError:
        where = self.i if at is None else at
        return PatternSyntaxError(f"pattern is not ECMA-262: {why} at offset {where}")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def eat(self, s: str) -> bool:
        if self.src.startswith(s, self.i):
            self.i += len(s)
            return True
        return False

    # ------------------------------------------------------------------ grammar
    def pattern(self) -> str:
        out, self.tree = self.disjunction()
        if self.i < len(self.src):
            c = self.src[self.i]
            raise self.fail("unmatched ')'" if c == ")" else f"unexpected {c!r}")
        for ref, at in self.backrefs:
            if isinstance(ref, int) and ref > self.groups:
                raise self.fail(f"backreference \\{ref} names no group", at)
            if isinstance(ref, str) and ref not in self.names:
                raise self.fail(f"\\k<{ref}> names no group", at)
        return out

    def disjunction(self) -> tuple[str, Node]:
        text, tree = self.alternative()
        alternatives, trees = [text], [tree]
        while self.eat("|"):
            text, tree = self.alternative()
            alternatives.append(text)
            trees.append(tree)
        return "|".join(alternatives), trees[0] if len(trees) == 1 else ("alt", tuple(trees))

    def alternative(self) -> tuple[str, Node]:
        out: list[str] = []
        trees: list[Node] = []
        while self.i < len(self.src) and self.peek() not in "|)":
            text, tree = self.term()
            out.append(text)
            trees.append(tree)
        return "".join(out), ("seq", tuple(trees))

    def term(self) -> tuple[str, Node]:
        start = self.i
        assertion = self.assertion()
        if assertion is not None:
            if self.peek() in ("*", "+", "?") or self.quantifier_ahead():
                raise self.fail("an assertion cannot be quantified")
            return assertion
        atom, tree = self.atom()
        q = self.quantifier(start)
        return atom + q, _repeat_node(q, tree) if q else tree

    def assertion(self) -> tuple[str, Node] | None:
        c = self.peek()
        if c == "^":
            self.i += 1
            return "^", ("empty",)
        if c == "$":
            self.i += 1
            return "\\Z", ("empty",)  # no m flag: the end of the input, not before a final newline
        if self.src.startswith("\\b", self.i) or self.src.startswith("\\B", self.i):
            self.i += 2
            # an ASCII word boundary under re.ASCII, as ECMA's
            return self.src[self.i - 2 : self.i], ("empty",)
        for opener in ("(?=", "(?!", "(?<=", "(?<!"):
            if self.eat(opener):
                self.depth += 1
                if self.depth > MAX_GROUP_DEPTH:
                    raise PatternNotCovered(
                        f"pattern is not covered: groups nested deeper than {MAX_GROUP_DEPTH}"
                    )
                body, tree = self.disjunction()
                self.depth -= 1
                if not self.eat(")"):
                    raise self.fail("lookaround group never closed")
                return opener + body + ")", ("look", tree)
        return None

    def quantifier_ahead(self) -> bool:
        return re.compile(r"\{[0-9]+(,[0-9]*)?\}").match(self.src, self.i) is not None

    def quantifier(self, atom_start: int) -> str:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            q = c
        elif c == "{":
            m = re.compile(r"\{([0-9]+)(,([0-9]*))?\}").match(self.src, self.i)
            if m is None:
                raise self.fail("a lone '{' (write \\{ for the character)")
            lo = int(m.group(1))
            hi = None if m.group(2) is None else (int(m.group(3)) if m.group(3) else -1)
            if hi is not None and hi >= 0 and hi < lo:
                raise self.fail("numbers out of order in {} quantifier")
            if lo >= _PY_MAX_REPEAT or (hi is not None and hi >= _PY_MAX_REPEAT):
                self.not_covered.append("a repetition count this large is not covered")
            self.i = m.end()
            q = m.group()
        else:
            return ""
        if self.eat("?"):
            q += "?"
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.quantifier_ahead()):
            raise self.fail("nothing to repeat")
        return q

    def atom(self) -> tuple[str, Node]:
        c = self.peek()
        if c == ".":
            self.i += 1
            return _ECMA_DOT, ("char", _ECMA_DOT)
        if c == "\\":
            text = self.atom_escape()
            return text, ("empty",) if text == "(?:)" else ("char", text)
        if c == "[":
            text = self.character_class()
            return text, ("char", text)
        if c == "(":
            return self.group()
        if c in ("*", "+", "?"):
            raise self.fail("nothing to repeat")
        if c == "{":
            raise self.fail("nothing to repeat" if self.quantifier_ahead() else "a lone '{'")
        if c in ("]", "}"):
            raise self.fail(f"a lone {c!r} (write \\{c} for the character)")
        self.i += 1
        text = _char(self.code_point_from(c))
        return text, ("char", text)

    def code_point_from(self, c: str) -> int:
        return ord(c)

    def group(self) -> tuple[str, Node]:
        open_at = self.i
        self.i += 1
        self.depth += 1
        if self.depth > MAX_GROUP_DEPTH:
            raise PatternNotCovered(
                f"pattern is not covered: groups nested deeper than {MAX_GROUP_DEPTH}"
            )
        if self.eat("?:"):
            prefix = "(?:"
        elif self.src.startswith("?<", self.i):
            self.i += 2
            name = self.group_name()
            if name in self.names:
                self.not_covered.append("a group name used twice is not covered")
            self.names.append(name)
            self.groups += 1
            prefix = "("  # Python's group names are narrower than ECMA's; nothing refers to them
        elif self.peek() == "?":
            m = re.compile(r"\?[ims]*(-[ims]*)?:").match(self.src, self.i)
            if m is not None and m.group() not in ("?-:",):
                self.not_covered.append("modifier groups such as (?i:...) are not covered")
                self.i = m.end()
                prefix = "(?:"
            else:
                raise self.fail(f"invalid group {self.src[open_at : open_at + 3]!r}", open_at)
        else:
            self.groups += 1
            prefix = "("
        body, tree = self.disjunction()
        if not self.eat(")"):
            raise self.fail("group never closed", open_at)
        self.depth -= 1
        return prefix + body + ")", tree

    def group_name(self) -> str:
        m = re.compile(r"([^>\\]|\\u[0-9A-Fa-f]{4}|\\u\{[0-9A-Fa-f]+\})*>").match(self.src, self.i)
        if m is None or m.end() - self.i < 2:
            raise self.fail("invalid group name")
        raw = self.src[self.i : m.end() - 1]
        name = re.sub(
            r"\\u\{([0-9A-Fa-f]+)\}|\\u([0-9A-Fa-f]{4})",
            lambda g: (
                chr(int(g.group(1) or g.group(2), 16))
                if int(g.group(1) or g.group(2), 16) <= 0x10FFFF
                else "\0"
            ),
            raw,
        )
        if not name.replace("$", "_").isidentifier():
            raise self.fail(f"invalid group name {raw!r}")
        self.i = m.end()
        return name

    # ------------------------------------------------------------------ escapes
    def atom_escape(self) -> str:
        at = self.i
        self.i += 1
        c = self.peek()
        if not c:
            raise self.fail("'\\' at the end of the pattern", at)
        if c in "123456789":
            m = re.compile(r"[0-9]+").match(self.src, self.i)
            assert m is not None
            self.i = m.end()
            self.backrefs.append((int(m.group()), at))
            self.not_covered.append("backreferences are not covered")
            return "(?:)"
        if c == "k":
            self.i += 1
            if not self.eat("<"):
                raise self.fail("\\k must name a group: \\k<name>", at)
            self.backrefs.append((self.group_name(), at))
            self.not_covered.append("backreferences are not covered")
            return "(?:)"
        if c in "dDsSwW":
            self.i += 1
            return {
                "d": "[0-9]",
                "D": "[^0-9]",
                "w": "[A-Za-z0-9_]",
                "W": "[^A-Za-z0-9_]",
                "s": f"[{_ECMA_SPACE}]",
                "S": f"[^{_ECMA_SPACE}]",
            }[c]
        if c in "pP":
            self.property_escape(at)
            return "(?:)"
        return _char(self.character_escape(at))

    def property_escape(self, at: int) -> None:
        m = re.compile(r"[pP]\{[A-Za-z_]+(=[A-Za-z0-9_]+)?\}").match(self.src, self.i)
        if m is None:
            raise self.fail("\\p and \\P need a property: \\p{Name}", at)
        self.i = m.end()
        self.not_covered.append("Unicode property escapes (\\p{...}) in pattern are not covered")

    def character_escape(self, at: int) -> int:
        """CharacterEscape[+U] after its backslash: the code point it stands for."""
        c = self.peek()
        self.i += 1
        if c in _CONTROL_ESCAPES:
            return ord(_CONTROL_ESCAPES[c])
        if c == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.fail("\\c must be followed by a letter A-Z or a-z", at)
            self.i += 1
            return ord(letter) % 32
        if c == "0":
            if self.peek().isdigit():
                raise self.fail("\\0 may not be followed by a digit (no octal escapes)", at)
            return 0
        if c == "x":
            m = re.compile(r"[0-9A-Fa-f]{2}").match(self.src, self.i)
            if m is None:
                raise self.fail("\\x needs two hex digits", at)
            self.i = m.end()
            return int(m.group(), 16)
        if c == "u":
            return self.unicode_escape(at)
        if c in _SYNTAX or c == "/":
            return ord(c)
        raise self.fail(f"invalid escape \\{c}", at)

    def unicode_escape(self, at: int) -> int:
        braced = re.compile(r"\{([0-9A-Fa-f]+)\}").match(self.src, self.i)
        if braced is not None:
            cp = int(braced.group(1), 16)
            if cp > 0x10FFFF:
                raise self.fail("\\u{...} beyond U+10FFFF", at)
            self.i = braced.end()
            return cp
        m = re.compile(r"[0-9A-Fa-f]{4}").match(self.src, self.i)
        if m is None:
            raise self.fail("\\u needs four hex digits or {hex}", at)
        self.i = m.end()
        cp = int(m.group(), 16)
        trail = re.compile(r"\\u([dD][c-fC-F][0-9A-Fa-f]{2})").match(self.src, self.i)
        if 0xD800 <= cp <= 0xDBFF and trail is not None:
            # A surrogate pair written as two escapes is one code point under the u flag.
            self.i = trail.end()
            return 0x10000 + ((cp - 0xD800) << 10) + (int(trail.group(1), 16) - 0xDC00)
        return cp

    # ------------------------------------------------------------------ classes
    def character_class(self) -> str:
        open_at = self.i
        self.i += 1
        negated = self.eat("^")
        members: list[str] = []
        not_space = False  # \S: ECMA's, not ASCII's, so it cannot be a Python class member
        while True:
            if self.i >= len(self.src):
                raise self.fail("character class never closed", open_at)
            if self.eat("]"):
                break
            first = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                dash = self.i
                self.i += 1
                last = self.class_atom()
                if isinstance(first, str) or isinstance(last, str):
                    raise self.fail("a class escape cannot bound a range", dash)
                if first > last:
                    raise self.fail("range out of order in character class", dash)
                members.append(f"{_char(first)}-{_char(last)}")
                continue
            if first == _NOT_SPACE:
                not_space = True
            elif isinstance(first, str):
                members.append(first)
            else:
                members.append(_char(first))
        body = "".join(members)
        if not_space:
            space = f"[{_ECMA_SPACE}]"
            if negated:
                return f"(?:(?![{body}]){space})" if body else space
            return f"(?:[^{_ECMA_SPACE}]|[{body}])" if body else f"[^{_ECMA_SPACE}]"
        if not body:
            return "(?s:.)" if negated else "(?!)"
        return f"[{'^' if negated else ''}{body}]"

    def class_atom(self) -> int | str:
        """A ClassAtom: a code point, or a Python class member for ``\\d \\D \\w \\W \\s``
        (:data:`_NOT_SPACE` for ``\\S``; ``""`` for a property escape, which is not covered)."""
        c = self.peek()
        if c != "\\":
            self.i += 1
            return ord(c)
        at = self.i
        self.i += 1
        c = self.peek()
        if not c:
            raise self.fail("'\\' at the end of the pattern", at)
        if c == "b":
            self.i += 1
            return 0x08
        if c == "-":
            self.i += 1
            return ord("-")
        if c in "dws":
            self.i += 1
            return _CLASS_MEMBER[c]
        if c in "DW":
            self.i += 1
            return f"\\{c}"  # under re.ASCII: everything but ASCII digits / word characters
        if c == "S":
            self.i += 1
            return _NOT_SPACE
        if c in "pP":
            self.property_escape(at)
            return ""
        if c in "123456789kB":
            raise self.fail(f"\\{c} is not allowed in a character class", at)
        return self.character_escape(at)


def _repeat_node(quantifier: str, body: Node) -> Node:
    """The tree of ``body`` under an ECMA quantifier (``*``, ``+``, ``?``, ``{n}``, ``{n,}``,
    ``{n,m}``, each maybe lazy: laziness changes the order of the readings, not their count)."""
    q = quantifier[:-1] if len(quantifier) > 1 and quantifier.endswith("?") else quantifier
    bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}
    if q in bounds:
        low, high = bounds[q]
    else:
        lo, comma, hi = q[1:-1].partition(",")
        low = int(lo)
        high = low if not comma else (int(hi) if hi else None)
    return ("rep", low, high, body)


#: Groups nested deeper than this are not covered: this parser and Python's recurse per level,
#: and a pattern is read inside a schema walk that is itself recursive.
MAX_GROUP_DEPTH = 32


def ecma_to_python(pattern: str) -> str:
    r"""The Python pattern (to compile with ``re.ASCII``) that means what ``pattern`` means in
    ECMA-262 with the ``u`` flag.

    ``$`` is the end of the input (Python's also matches before a final newline, which would
    let ``"abc\n"`` pass ``^[a-z]+$``); ``.`` excludes every line terminator; ``\s`` is
    ECMA's Unicode whitespace; ``\d``, ``\w`` and ``\b`` keep their ASCII meaning under
    ``re.ASCII``; ``[^]`` is any character; named groups lose their (unused) names.
    Raises :class:`PatternSyntaxError` for what ECMA-262 cannot compile and
    :class:`PatternNotCovered` for valid ECMA that ``re`` cannot run with the same meaning.

    >>> ecma_to_python(r"^[a-z$]+\.$")
    '^[a-z\\x24]+\\x2e\\Z'
    >>> ecma_to_python("(?P<n>a)")
    Traceback (most recent call last):
    ...
    toolcall300.schema.ecma.PatternSyntaxError: pattern is not ECMA-262: invalid group '(?P' at offset 0
    """
    parser = Parser(pattern)
    out = parser.pattern()
    if parser.not_covered:
        raise PatternNotCovered(f"pattern is not covered: {parser.not_covered[0]}")
    try:
        re.compile(out, re.ASCII)
    except (re.error, OverflowError, RecursionError) as exc:
        # Valid ECMA that re refuses: a lookbehind of variable length is the usual one.
        raise PatternNotCovered(
            f"pattern is not covered: Python's re cannot run it ({exc})"
        ) from None
    return out
