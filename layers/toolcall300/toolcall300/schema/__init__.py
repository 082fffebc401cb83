"""The schema engine: a bounded subset of JSON Schema draft 2020-12, as a keyword table.

Every enforced keyword has one entry in :data:`KEYWORDS` (``keywords.py``) that yields
:class:`SchemaError` values, each with an instance path, a schema path and a tool-argument/v1
defect code; ``is_valid`` means nothing was yielded. The subset is the one ``tool-argument/v1``
publishes; the tool catalog, the generator, the scorer, ``toolshim`` and ``argcheck`` all use
this one engine. ``types.py`` holds the one type table, ``patterns.py`` the regular-expression
dialect (``ecma.py`` its grammar and translation, ``backtracking.py`` its safety rule),
``paths.py`` the instance paths.

Keyword policy (one rule, applied everywhere): a keyword in :data:`ENFORCED` is checked; a
keyword in :data:`ANNOTATIONS` is accepted and enforced as nothing (``format`` included, and
``default`` is never applied); every other keyword, listed in the criteria's ``not_covered``
or not, makes the schema *not covered* and is refused by :func:`schema_problems`. Nothing is
ever validated under undisclosed partial coverage.

It is not a general JSON Schema validator: no ``$ref``, no combinators, no boolean schemas.
"""

from toolcall300.schema.keywords import (
    ANNOTATIONS,
    ENFORCED,
    KEYWORDS,
    NOT_COVERED,
    Keyword,
    NodeErrors,
    SchemaError,
    SchemaProblem,
    compile_node_errors,
    compile_node_validator,
    compile_validator,
    is_valid,
    iter_errors,
    node_errors,
    schema_problems,
)
from toolcall300.schema.paths import Path, PathPart, format_path, parse_path
from toolcall300.schema.patterns import (
    MAX_PATTERN_LENGTH,
    backtracking_hazard,
    ecma_to_python,
    pattern_min_length,
)
from toolcall300.schema.types import (
    JSON_TYPES,
    Validator,
    declared_types,
    is_integer,
    is_number,
    json_type_matches,
    type_of,
)

__all__ = [
    "ANNOTATIONS",
    "ENFORCED",
    "JSON_TYPES",
    "KEYWORDS",
    "MAX_PATTERN_LENGTH",
    "NOT_COVERED",
    "Keyword",
    "NodeErrors",
    "Path",
    "PathPart",
    "SchemaError",
    "SchemaProblem",
    "Validator",
    "backtracking_hazard",
    "compile_node_errors",
    "compile_node_validator",
    "compile_validator",
    "declared_types",
    "ecma_to_python",
    "format_path",
    "is_integer",
    "is_number",
    "is_valid",
    "iter_errors",
    "json_type_matches",
    "node_errors",
    "parse_path",
    "pattern_min_length",
    "schema_problems",
    "type_of",
]
