"""The deltas corpus's version, its wire shapes and its forms: the names every part of the
corpus and its checks share (docs/deltas.md, "Forms" and "Shapes").
"""

from __future__ import annotations

DELTAS_VERSION = "1.2"
GENERATOR = "toolcall300-deltas/1"
SHAPES = ("openai_chat", "openai_responses", "anthropic", "gemini", "vertex")
#: shapes whose stream carries no final copy of the arguments (a lost fragment is lost)
TEXT_ONLY_SHAPES = ("openai_chat", "anthropic")
FORMS = (
    "standard",  # id and name in the first event, the arguments in fragments after it
    "name_with_arguments",  # the name and the first arguments fragment in one delta
    "whole_call",  # the whole call and its finish in one delta
    "cut",  # stopped by the token limit mid-call, with the provider's own signal (rule 11)
    "no_arguments",  # a tool that takes none: each provider's empty arguments (DS3)
    "closer_in_string",  # a string value holding a closing quote and brace, escaped
    "astral_in_string",  # a string value holding a character past U+FFFF (a surrogate pair)
    "first_fragment_dropped",  # broken serving layer (DS2)
    "last_fragment_dropped",  # broken serving layer (DS2)
    "fragment_repeated",  # broken serving layer (DS2)
    "arguments_emptied",  # broken serving layer (DS3)
)
BROKEN_FORMS = FORMS[7:]
#: what the constructed forms append to one plain string value (``_constructed``)
SUFFIXES = {"closer_in_string": ' "} \\"}', "astral_in_string": " \U0001f600"}
RANDOM_PARTITIONS = 4
SEED = 31
#: The free sample (CC0, in the kit): the first case of every form and shape there is.
SAMPLE_FILE = "deltas-sample.jsonl"
