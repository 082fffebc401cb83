"""Rule 11, truncation: a serialised call cut inside its arguments, labelled by construction.

The call is serialised by hand so the position of every top-level argument is known; a cut
is chosen inside the arguments, and the expected call is exactly the properties whose value
was completely written before it (strict reading, D11.1-D11.4) plus required defaults (rule
6). No parser reads the cut text to decide the label; ``generator_checks`` re-derives it
independently. A share of the cases is cut instead in an array of calls, right after its one
complete call (D10.4): the label is that call. This module deliberately does not produce
refusals (see the unrecoverable rules).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from toolcall300.catalog import Tool
from toolcall300.generator.envelopes import STYLES, Style, call_id, dumps, wrap
from toolcall300.generator.rules import Ctx, Draft, choose_tools, draft, quote, valid_call
from toolcall300.generator.values import Prop, props_of

_SENTINEL = "\x00ARGS\x00"
CUT_KINDS = ("string", "number", "array_open", "nested", "between", "literal")
#: The decision each kind of cut exercises.
CUT_DECISIONS = {
    "string": "D11.1",
    "number": "D11.3",
    "array_open": "D11.4",
    "nested": "D11.2",
    "between": "D11.1",
    "literal": "D11.1",
}


@dataclass(frozen=True)
class Span:
    """Where one top-level argument sits in the serialised text."""

    key: str
    key_start: int
    value_start: int
    value_end: int


def serialise_with_spans(
    envelope_value: Any, arguments: dict[str, Any], style: Style
) -> tuple[str, list[Span], int]:
    """The text, each top-level argument's span, and where the arguments object ends."""
    outer = dumps(envelope_value, style)
    marker = dumps(_SENTINEL, style)
    head, tail = outer.split(marker, 1)
    parts, spans, pos = [], [], len(head) + 1
    for i, (key, value) in enumerate(arguments.items()):
        if i:
            pos += len(style.item_sep)
        k, v = dumps(key, style), dumps(value, style)
        spans.append(
            Span(
                key,
                pos,
                pos + len(k) + len(style.key_sep),
                pos + len(k) + len(style.key_sep) + len(v),
            )
        )
        parts.append(k + style.key_sep + v)
        pos = spans[-1].value_end
    body = "{" + style.item_sep.join(parts) + "}"
    return head + body + tail, spans, len(head) + len(body) - 1


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def completed(span: Span, value: Any, cut: int) -> bool:
    """D11.1: the value's last character arrived; a number also needs the delimiter after it (D11.3)."""
    return span.value_end < cut if _is_number(value) else span.value_end <= cut


def _cuts(
    kind: str, spans: list[Span], args: dict[str, Any], style: Style
) -> list[tuple[Span, int]]:
    """Every cut position of ``kind``, paired with the property it falls in or before."""
    out: list[tuple[Span, int]] = []
    for i, s in enumerate(spans):
        v = args[s.key]
        if kind == "string" and isinstance(v, str) and s.value_end - s.value_start >= 3:
            out += [
                (s, c) for c in range(s.value_start + 1, s.value_end)
            ]  # before the closing quote
        elif kind == "number" and _is_number(v):
            out += [
                (s, c) for c in range(s.value_start + 1, s.value_end + 1)
            ]  # D11.3: no delimiter yet
        elif kind == "array_open" and isinstance(v, list) and v:
            first = len(dumps(v[0], style))
            out += [(s, c) for c in range(s.value_start + 1, s.value_start + 1 + first)]  # D11.4
        elif kind == "nested" and isinstance(v, (list, dict)) and v:
            member = v[0] if isinstance(v, list) else next(iter(v.items()))
            text = (
                dumps(member, style)
                if isinstance(v, list)
                else dumps(member[0], style) + style.key_sep + dumps(member[1], style)
            )
            after = (
                s.value_start + 1 + len(text)
            )  # D11.2: one complete member, container still open
            out += [(s, c) for c in (after, after + len(style.item_sep)) if c < s.value_end]
        elif kind == "literal" and (isinstance(v, bool) or v is None):
            out += [(s, c) for c in range(s.value_start + 1, s.value_end)]
        elif kind == "between" and i:
            out += [(s, c) for c in range(spans[i - 1].value_end, s.value_start + 1)]
    return out


def _drop_reason(span: Span, value: Any, cut: int) -> str:
    if span.key_start >= cut or span.value_start >= cut:
        return "its value was never started"
    if _is_number(value):
        return "a number at the cut could have had more digits (D11.3)"
    if isinstance(value, str):
        return "the string's closing quote never arrived (D11.1)"
    if isinstance(value, (list, dict)):
        return "its container was never closed, so it is dropped whole (D11.2, D11.4: no empty container invented)"
    return "the literal was cut mid-way (D11.1)"


def _usable_cut(
    cut: int, spans: list[Span], args: dict[str, Any], props: dict[str, Prop], args_end: int
) -> bool:
    """A cut inside the arguments that keeps something and loses no required, defaultless property.

    A required property with a default is never cut once its key has started: rule 6 would
    fill the default while the text shows the model writing another value (``"units":
    "fahr``), a label the rules do not settle. Such a property is lost only if never begun.
    """
    kept = {s.key for s in spans if completed(s, args[s.key], cut)}
    lost = [k for k in args if k not in kept and props[k].required and not props[k].has_default]
    begun = [
        s.key for s in spans if s.key not in kept and props[s.key].required and s.key_start < cut
    ]
    return bool(kept) and not lost and not begun and cut <= args_end


#: The share of truncated cases cut in an array of calls right after its one complete call
#: (D10.4): every ARRAY_CUT_EVERY-th variant from ARRAY_CUT_AT (3 of 25 in the private corpus;
#: a number, nested and literal cut each keep at least three cases).
ARRAY_CUT_EVERY, ARRAY_CUT_AT = 8, 4
#: The arrays of calls models write: a bare array of calls, Anthropic's content blocks, and
#: OpenAI's `tool_calls` message (whose array the cut leaves open inside the message).
ARRAY_ENVELOPES = ("bare", "input", "tool_calls")


def array_cut(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 11 / D10.4: one clean call written complete in an array of calls, and the stream
    stopped right after it (`[{...}` or `[{...},`, whitespace allowed). Closing the array
    keeps the call as written and nothing was begun after it, so the call is the label; the
    cut is its only defect (a second call begun and cut would be D10.2, a refusal)."""
    rng = ctx.rng
    call = valid_call(ctx, tool, fill=0.85)
    props = {p.name: p for p in props_of(tool)}
    cuttable = [k for k in call["arguments"] if not props[k].required or props[k].has_default]
    if len(call["arguments"]) < 2 or not cuttable:
        # only a call the rule 11 cuts above could cut too (a property kept, one lost
        # legitimately): a catalog feeds this category as before, never on D10.4 alone
        return None
    env = ARRAY_ENVELOPES[variant // ARRAY_CUT_EVERY % len(ARRAY_ENVELOPES)]
    style = STYLES[rng.randrange(2)]
    one = wrap(call["name"], call["arguments"], env, call_id(rng, env))
    # the whole array as written, then cut where it closes: `]` (and the message's `}`)
    whole = dumps(one if env == "tool_calls" else [one], style)
    text = whole[: -2 if env == "tool_calls" else -1] + rng.choice(("", style.item_sep, "\n"))
    why = (
        f"The stream stopped at character {len(text)}, right after the first call in the array "
        f"of calls; the text ends {quote(text[-24:])}. Rule 11 closes the array, and nothing "
        "was begun after the call, so the call is kept exactly as written (D10.4); a second "
        "call begun and cut would make the text a refusal (D10.2)."
    )
    return draft("truncated", text, choose_tools(ctx, tool), call, "rule 11 / D10.4", why)


def truncated(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """Rule 11: the serialised call cut inside the arguments; keep only what was completed.
    A share of the variants cuts an array of calls after its one complete call instead."""
    if variant % ARRAY_CUT_EVERY == ARRAY_CUT_AT:
        return array_cut(ctx, tool, variant)
    rng = ctx.rng
    kind = CUT_KINDS[variant % len(CUT_KINDS)]
    props = {p.name: p for p in props_of(tool)}
    call = valid_call(ctx, tool, fill=0.85)
    args = call["arguments"]
    # required properties without a default are written first: losing one would make the case
    # unrecoverable (rule 11), which is the other category's job
    order = [k for k in args if props[k].required and not props[k].has_default]
    order += [k for k in args if k not in order]
    args = {k: args[k] for k in order}
    style = STYLES[rng.randrange(2)]
    env = ("bare", "function", "typed", "tool_calls", "parameters", "input")[variant % 6]
    text, spans, args_end = serialise_with_spans(
        wrap(call["name"], _SENTINEL, env, call_id(rng, env)), args, style
    )
    cuts = _cuts(kind, spans, args, style)
    rng.shuffle(cuts)
    chosen = next((c for c in cuts[:40] if _usable_cut(c[1], spans, args, props, args_end)), None)
    if chosen is None:
        return None
    span, cut = chosen
    kept = {s.key: args[s.key] for s in spans if completed(s, args[s.key], cut)}
    expected = dict(kept)
    filled = {
        k: copy.deepcopy(p.schema["default"])
        for k, p in props.items()
        if p.required and p.has_default and k not in kept
    }
    expected.update(filled)
    notes = [
        f"{quote(s.key)} kept (complete before the cut)"
        if s.key in kept
        else f"{quote(s.key)} dropped: {_drop_reason(s, args[s.key], cut)}"
        for s in spans
    ]
    if filled:
        notes.append(
            "required default(s) filled by rule 6: "
            + ", ".join(f"{quote(k)} = {quote(v)}" for k, v in filled.items())
        )
    why = (
        f"The stream stopped at character {cut} of {len(text)} ({kind} cut, near {quote(span.key)}); "
        f"the text ends {quote(text[max(0, cut - 24) : cut])}. Strict rule 11: "
        + "; ".join(notes)
        + "."
    )
    rule = f"rule 11 / {CUT_DECISIONS[kind]}"
    return draft(
        "truncated",
        text[:cut],
        choose_tools(ctx, tool),
        {"name": call["name"], "arguments": expected},
        rule,
        why,
    )
