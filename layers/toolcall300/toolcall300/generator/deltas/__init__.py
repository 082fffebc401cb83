"""The deltas track's corpus: one tool call per stream, as providers stream it, built from the
main corpus's labelled calls and refusals (docs/deltas.md).

Each source case of the main corpus (its label already proven by ``generate --check-only``)
becomes one or more streams: the call it carries, rendered as the events of one wire shape
(OpenAI Chat Completions chunks, OpenAI Responses events, Anthropic Messages events, Gemini
``functionCall`` chunks), with the deterministic partitions of its arguments text the scorer
replays, plus the provider-layer forms users report and the broken serving-layer streams
(labelled a refusal: deltas decisions DS2 and DS3). Pure: ``(source cases, seed)`` in, files
out; the integrity checks re-derive every label from the events alone with their own reader
and refuse a flattering corpus. It grades nothing and repairs nothing.

One module per part (forms, wire, partitions, sources, build, checks, corpus); the names
importers use are this package's.
"""

from __future__ import annotations

from toolcall300.catalog import tool_name
from toolcall300.generator.deltas.build import EMPTY_SPELLINGS, build
from toolcall300.generator.deltas.checks import check, flatters, reassemble, vertex_completed
from toolcall300.generator.deltas.corpus import corpus_files, sample
from toolcall300.generator.deltas.forms import (
    BROKEN_FORMS,
    DELTAS_VERSION,
    FORMS,
    GENERATOR,
    RANDOM_PARTITIONS,
    SAMPLE_FILE,
    SEED,
    SHAPES,
    SUFFIXES,
    TEXT_ONLY_SHAPES,
)
from toolcall300.generator.deltas.partitions import _special_cuts, partitions
from toolcall300.generator.deltas.sources import (
    Source,
    broken_text,
    constructed,
    cut_value,
    emptied_refuses,
    respelled,
    source_of,
)
from toolcall300.generator.deltas.wire import (
    CHAT_PATH,
    VERTEX_FRAGMENT,
    Rendered,
    json_path,
    path_value,
    render,
    replay,
    vertex_cut,
    vertex_leaves,
)

__all__ = [
    "BROKEN_FORMS",
    "CHAT_PATH",
    "DELTAS_VERSION",
    "EMPTY_SPELLINGS",
    "FORMS",
    "GENERATOR",
    "RANDOM_PARTITIONS",
    "SAMPLE_FILE",
    "SEED",
    "SHAPES",
    "SUFFIXES",
    "TEXT_ONLY_SHAPES",
    "VERTEX_FRAGMENT",
    "Rendered",
    "Source",
    "_special_cuts",
    "broken_text",
    "build",
    "check",
    "constructed",
    "corpus_files",
    "cut_value",
    "emptied_refuses",
    "flatters",
    "json_path",
    "partitions",
    "path_value",
    "reassemble",
    "render",
    "replay",
    "respelled",
    "sample",
    "source_of",
    "tool_name",
    "vertex_completed",
    "vertex_cut",
    "vertex_leaves",
]
