"""Rule 5: numbers and booleans written as strings, and arrays and objects written as JSON
text (D5.6), that convert without loss."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema, value_type
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    Path,
    _pick,
    call_with_path,
    catalog_offers,
    choose_tools,
    dotted,
    draft,
    get_in,
    leaf_paths,
    quote,
    render_call,
    set_in,
)
from toolcall300.schema import is_valid


def coercible(sub: dict[str, Any]) -> bool:
    return (
        "enum" not in sub
        and value_type(sub) in ("integer", "number", "boolean")
        and "null" not in sub.get("type", ())
    )


def as_text(rng: random.Random, value: Any) -> str:
    """The lossless string spelling of a value (D5.1): never "3.0" for an integer (D5.2)."""
    if isinstance(value, bool):
        word = "true" if value else "false"
        return str(_pick(rng, (word, word.capitalize(), word.upper())))
    return json.dumps(value)


#: How :func:`exponent_text` writes the exponent: (mantissa with one digit before any
#: fraction, else all digits as an integer; letter; ``+`` before an exponent that is not negative).
EXPONENT_STYLES = ((True, "e", ""), (True, "E", "+"), (False, "E", ""), (False, "e", "+"))


def exponent_text(value: float, style: int) -> str:
    """``value`` in JSON number syntax with an exponent ("1e3", "1.25E+1", "25E-2"), of exactly
    the decimal that ``repr`` writes, so a JSON reader reads it back as exactly this double
    (float parsing rounds correctly; rule 5 / D5.4).

    >>> [exponent_text(1000.0, s) for s in range(4)], exponent_text(0.25, 0), exponent_text(-12.5, 3)
    (['1e3', '1E+3', '1E3', '1e+3'], '2.5e-1', '-125e-1')
    """
    scientific, letter, plus = EXPONENT_STYLES[style % len(EXPONENT_STYLES)]
    sign, digit_tuple, exp = Decimal(repr(float(value))).normalize().as_tuple()
    if not isinstance(exp, int):
        raise ValueError(f"{value!r} is no finite number")
    digits = "".join(map(str, digit_tuple))
    if scientific:
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        exp += len(digits) - 1
    else:
        mantissa = digits
    return f"{'-' if sign else ''}{mantissa}{letter}{plus if exp >= 0 else ''}{exp}"


def _spells_an_exponent(variant: int) -> bool:
    """Which cases write a `number` with an exponent (D5.4): one variant in three, so the
    choice costs no draw of the random source and the other cases stay as they were."""
    return variant % 3 == 0


def _writes_json_text(variant: int) -> bool:
    """Which cases write an array or object as JSON text (D5.6): one variant in five, chosen
    by index so that it costs no draw of the random source."""
    return variant % 5 == 4


def container(sub: dict[str, Any]) -> bool:
    return value_type(sub) in ("array", "object") and "null" not in sub.get("type", ())


def _json_text_kind(variant: int) -> str:
    """Arrays on three D5.6 turns in five (where rule 8 once wrapped the text), objects on the
    others."""
    return "array" if (variant // 5) % 2 == 0 else "object"


def _top_level(kind: str) -> Callable[[Tool], bool]:
    def offers(tool: Tool) -> bool:
        props = tool_schema(tool).get("properties", {})
        return any(container(s) and value_type(s) == kind for s in props.values())

    return offers


_JSON_TEXT_TESTS = {kind: _top_level(kind) for kind in ("array", "object")}
_JSON_TEXT_KIND = {"array": "top-level array", "object": "top-level object"}


def json_text_container(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 5 / D5.6: a declared array or object written as JSON text of exactly that type,
    which decodes losslessly to the value the call means (never wrapped, D8.4)."""
    schema = tool_schema(tool)
    want = _json_text_kind(variant)
    cands = [
        (p, s) for p, s in leaf_paths(schema, container) if len(p) == 1 and value_type(s) == want
    ]
    if not cands:
        return None
    path, sub = cands[(variant // 10) % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    value = get_in(call["arguments"], path)
    if not value or not is_valid(call["arguments"], schema):
        return None  # an empty container would say little; its text is "[]" or "{}"
    sent = copy.deepcopy(call["arguments"])
    spelled = json.dumps(
        value, ensure_ascii=False, separators=_pick(ctx.rng, ((",", ":"), (", ", ": ")))
    )
    set_in(sent, path, spelled)
    text = render_call(ctx, tool_name(tool), sent, variant)
    kind = value_type(sub)
    why = (
        f"{dotted(path)} is declared {kind} but was written as the JSON text {quote(spelled)}. "
        f"The text reads as a container (its first character is {quote(spelled[0])}) and "
        f"parses as JSON of exactly the declared type, so rule 5 decodes it losslessly (D5.6): "
        f"every character is the writer's own. Rule 8 never wraps it into a one-element array "
        f"(D8.4); nothing else differs."
    )
    return draft("type_coercion", text, choose_tools(ctx, tool), call, "rule 5 / D5.6", why)


def type_coercion(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 5: one or two numbers or booleans written as strings that convert without loss.

    On a share of the cases a `number` is written with an exponent ("1.2e2"); its expected
    value is then the one a JSON reader reads from that spelling, a float (120.0; D5.4). On
    another share an array or object is written as JSON text (D5.6)."""
    if _writes_json_text(variant) and catalog_offers(
        ctx.catalog,
        _JSON_TEXT_KIND[_json_text_kind(variant)],
        _JSON_TEXT_TESTS[_json_text_kind(variant)],
    ):
        return json_text_container(ctx, tool, variant)
    schema = tool_schema(tool)
    cands = leaf_paths(schema, coercible)
    if not cands:
        return None
    path, sub = cands[variant % len(cands)]
    call = call_with_path(ctx, tool, path, sub)
    if not is_valid(call["arguments"], schema):
        return None
    # every other case also spells a second, top-level property, if the call wrote one
    second = [c for c in cands if c[0] != path and len(c[0]) == 1 and c[0][0] in call["arguments"]]
    targets = [(path, sub)] + (second[:1] if variant % 2 else [])
    sent = copy.deepcopy(call["arguments"])
    changed, read = [], []
    for where, leaf in targets:
        value = get_in(call["arguments"], where)
        spelled = _with_exponent(call["arguments"], where, leaf, schema, variant)
        if spelled is None:
            spelled = as_text(ctx.rng, value)
        else:  # the expected call writes what a JSON reader reads from the spelling (D5.4)
            value = float(value)
            set_in(call["arguments"], where, value)
            read.append(f"{quote(spelled)}, with an exponent, is the float {quote(value)}")
        set_in(sent, where, spelled)
        changed.append(f"{dotted(where)} = {quote(spelled)} -> {quote(value)} ({value_type(leaf)})")
    text = render_call(ctx, tool_name(tool), sent, variant)
    why = (
        f"Written as strings: {'; '.join(changed)}. Each is in the lossless syntax of its "
        "declared type (rule 5 / D5.1)"
    )
    if read:
        why += (
            "; a string coerced to a number becomes the number a JSON reader reads from that "
            f"spelling, so {' and '.join(read)} in the expected call (rule 5 / D5.4); "
            "nothing else differs."
        )
        return draft("type_coercion", text, choose_tools(ctx, tool), call, "rule 5 / D5.4", why)
    why += ", so it converts and converts back unchanged; nothing else differs."
    return draft("type_coercion", text, choose_tools(ctx, tool), call, "rule 5 / D5.1", why)


def _with_exponent(
    args: dict[str, Any], where: Path, leaf: dict[str, Any], schema: dict[str, Any], variant: int
) -> str | None:
    """The exponent spelling of a `number` at ``where`` when this variant writes one (D5.4),
    or ``None``: also when the float read from it would not be exactly the call's value (an
    int beyond 53 bits) or would break the schema (a bound or ``multipleOf`` may read an int
    and a float apart)."""
    value = get_in(args, where)
    if not _spells_an_exponent(variant) or value_type(leaf) != "number" or isinstance(value, bool):
        return None
    number = float(value)
    trial = copy.deepcopy(args)
    set_in(trial, where, number)
    if number != value or not is_valid(trial, schema):
        return None
    return exponent_text(number, variant // 3)
