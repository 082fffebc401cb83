"""Independent readers of a case's text: what the integrity checks compare labels against.

Each function re-derives, from the text and the declared tools alone, what a rule of the
grading contract says the text means: the calls as written in their envelopes, the
completely written prefix of a cut text (rule 11), the defaults a missing property takes
(rule 6), re-nesting (rule 7), and why a text holds no correct call. They verify labels made
by construction in ``generator.rules``; they never produce one, and they repair nothing.

One module per reader family; this package's names are the ones importers have always
used (``from toolcall300.generator.oracles import ...``).
"""

from __future__ import annotations

from toolcall300.generator.oracles.copies import repaired_copy
from toolcall300.generator.oracles.decisions import (
    Enveloped,
    argument_documents,
    call_object,
    container_held,
    container_texts,
    decisions_rested_on,
    enveloped_arguments,
    is_empty_text,
    read_whole,
)
from toolcall300.generator.oracles.nesting import (
    Renested,
    renested,
    strip_undeclared,
    undeclared_keys,
)
from toolcall300.generator.oracles.reading import (
    NAME_FIELD,
    array_cut_calls,
    calls_of,
    completed_prefix,
    cut_call_array,
    decode_strings,
    names_of,
    one_call,
    parsed,
    required_defaults,
    tool_of,
)
from toolcall300.generator.oracles.refusals import refusal_reasons
from toolcall300.generator.oracles.tallies import Runner, pass_counts

__all__ = [
    "NAME_FIELD",
    "Enveloped",
    "Renested",
    "Runner",
    "argument_documents",
    "array_cut_calls",
    "call_object",
    "calls_of",
    "completed_prefix",
    "container_held",
    "container_texts",
    "cut_call_array",
    "decisions_rested_on",
    "decode_strings",
    "enveloped_arguments",
    "is_empty_text",
    "names_of",
    "one_call",
    "parsed",
    "pass_counts",
    "read_whole",
    "refusal_reasons",
    "renested",
    "repaired_copy",
    "required_defaults",
    "strip_undeclared",
    "tool_of",
    "undeclared_keys",
]
