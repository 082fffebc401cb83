"""The grading contract: the twelve rules and every decision taken where they were ambiguous.

``toolcall300 score --spec`` prints this text. The generator builds labels under it, the
reference normaliser implements it, and the scorer grades by rules 1, 2 and 12. Each
decision is written once, here; code that exists because of a decision cites its id (for
example ``D11.1``). This module is data and a renderer; it enforces nothing itself.
"""

from __future__ import annotations

from typing import Any

SPEC_VERSION = "toolcall300-grading/3.0"
#: The corpus version the generator builds under this contract; reports and hosted baselines
#: record it, and one scored on another version is never compared with this one.
CORPUS_VERSION = "3.1"

#: The twelve categories of the case format (docs/case-format.md), in report order.
CATEGORIES = (
    "wrong_tool_name",
    "missing_required_arg",
    "extra_undeclared_arg",
    "type_coercion",
    "enum_violation",
    "nested_flattened",
    "array_vs_scalar",
    "args_as_string",
    "multiple_calls",
    "hallucinated_tool",
    "truncated",
    "unrecoverable",
)

#: E2's vocabulary, the one every reader of a text uses (the controls, toolshim and the
#: generator's own reader keep independent code, but read these keys and no others).
#: Where a call object keeps its arguments, in the order E2 lists them.
ARGUMENT_KEYS = ("arguments", "parameters", "input")
#: Keys whose object value is the call one level down (OpenAI's function, and its legacy form).
FUNCTION_KEYS = ("function", "function_call")
#: The key of OpenAI's message whose array holds the calls.
CALLS_KEY = "tool_calls"


def no_parameters() -> dict[str, Any]:
    """D6.3: the schema of a tool declared without ``parameters`` (it takes no arguments).

    A function, not a shared dict, so no caller can change what every other caller reads.

    >>> no_parameters()
    {'type': 'object', 'properties': {}}
    """
    return {"type": "object", "properties": {}}


#: D2.1: every case in these categories expects a refusal.
REFUSAL_CATEGORIES = frozenset({"hallucinated_tool", "unrecoverable"})

#: (rule number, title, rule text, [(decision id, decision text)]).
RULES: tuple[tuple[int, str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        1,
        "Exact match",
        'expected_kind "value": pass only by returning exactly that call, compared as '
        'json.dumps(v, sort_keys=True, separators=(",",":")). Extra top-level keys on the '
        "returned object (an id, a type) are ignored; name and arguments are not.",
        (
            (
                "D1.1",
                "The returned value must be a JSON object with a string `name` and an object "
                "`arguments`; anything else returned (a list, a string, a call without `arguments`) "
                "is a failed case, counted as a schema-invalid return, never as a refusal.",
            ),
            (
                "D1.2",
                "Numbers compare by their canonical JSON spelling: 3 and 3.0 differ. An integer "
                "property must come back as an integer (see D5.2).",
            ),
            (
                "D1.3",
                "A complete call object with a name and no arguments key (none of E2's) has the "
                "arguments `{}`; a cut one (its `}` never arrived) is refused, since the cut may "
                "have come before its arguments (rule 11: invent nothing).",
            ),
        ),
    ),
    (
        2,
        "Unrecoverable means refuse",
        'expected_kind "unrecoverable": pass only by refusing. Returning {"name": ..., '
        '"arguments": {}} fails.',
        (
            (
                "D2.1",
                "Every `hallucinated_tool` case and every `unrecoverable` case expects a refusal "
                "(50 of 300).",
            ),
        ),
    ),
    (
        3,
        "Tool identity",
        "Namespace prefixes, surrounding whitespace, a trailing (), letter case, and - _ and space "
        "as separators are noise. A name resolves only if it matches exactly one declared tool "
        "after that normalisation. Otherwise, refuse.",
        (
            (
                "D3.1",
                "Normalisation, in order: trim; drop one trailing `()`; drop everything up to the "
                "last namespace separator (`.`, `:`, `::` or `/`); case-fold; every run of `-`, `_` "
                "and whitespace becomes one `_`; leading and trailing `_` are dropped. An exact match "
                "with a declared name always wins.",
            ),
            (
                "D3.2",
                "Separators are interchangeable, not removable: `getweather` does not match "
                "`get_weather`, and camelCase is not split.",
            ),
        ),
    ),
    (
        4,
        "Enums",
        "Enums are matched the same way: trim, case-fold, - and space as _. Matches none: refuse. "
        "Never the closest-looking member.",
        (
            (
                "D4.1",
                "Only string members take part. A value matching two members after "
                "normalisation is ambiguous and refused, like a value matching none.",
            ),
            (
                "D4.2",
                "Rule 4's normalisation is its list and nothing more: trim, case-fold, and each "
                "`-` or whitespace character read as `_`. Runs are not collapsed and `_` at the "
                'edges is kept, unlike tool names (D3.1): `"High  Priority"` is '
                '`high__priority` and matches no `high_priority`; `"_low_"` matches no `low`.',
            ),
            (
                "D4.3",
                "A value written exactly as a member is that member, even when another member "
                'normalises alike (`"on-hold"` where both `on_hold` and `on-hold` are members): '
                "an exact match wins, as for tool names (D3.1). D4.1's ambiguity is for a value "
                'that is no member as written (`"ON-HOLD"` there is refused).',
            ),
        ),
    ),
    (
        5,
        "Lossless coercion only",
        'Coercion only where it is lossless and reversible: "3"->3, "12.5"->12.5, 3.0->3, '
        '"true"/"True"->true. Anything else: refuse.',
        (
            (
                "D5.1",
                'integer: a string in JSON integer syntax ("3", "-12"); never "03", " 3", "+3", '
                '"4.5", "3.0" or "1e3". number: a string in JSON number syntax ("12.5", "-3", "1e3"). '
                'boolean: "true" or "false" in any letter case ("False" -> false); never "yes", '
                '"1", "on", 1 or 0. No coercion ever produces a string: a number where a string is '
                "declared is refused.",
            ),
            (
                "D5.2",
                "JSON Schema counts 3.0 as an integer, so a call whose only defect is 3.0 "
                "would already be valid as sent: no case is built on it alone. A normaliser still "
                "writes an integral float declared `integer` as an integer (3.0 -> 3).",
            ),
            (
                "D5.3",
                '`null` is never coerced: not to false, 0, "" or an empty container. A null '
                "where its schema does not allow null is refused (rule 6 fills only a property "
                "that is missing, never one written as null).",
            ),
            (
                "D5.4",
                "A string coerced to a `number` becomes the number a JSON reader reads from that "
                'spelling: with a fraction or an exponent it is a float ("12.5" -> 12.5, '
                '"1e3" and "1E3" -> 1000.0, written 1000.0), without either an integer '
                '("-3" -> -3). For an `integer` property "1e3" is refused (D5.1).',
            ),
            (
                "D5.5",
                "A value that no rule repairs is refused, on an optional property as on a "
                'required one: `"days": "abc"` where `days` is an optional integer refuses the '
                "call; the property is never dropped to make the call valid (rule 7 drops only "
                "undeclared keys, and dropping would delete what was written).",
            ),
        ),
    ),
    (
        6,
        "Defaults for missing required properties",
        "A missing required property is filled from the schema's own default and from nowhere "
        "else. No default: refuse.",
        (
            (
                "D6.1",
                "Optional properties with a default are never filled: the expected call "
                "contains exactly what was written plus required defaults.",
            ),
            (
                "D6.2",
                "A default is used as declared, even if it is an empty container or a falsy "
                "value; a required property whose default is itself invalid under its schema is a "
                "catalog error, refused by the catalog checks.",
            ),
            (
                "D6.3",
                "A tool declared without `parameters` takes no arguments: its schema is read as "
                '`{"type": "object", "properties": {}}`, so every written argument is '
                "undeclared (D7.2).",
            ),
            (
                "D6.4",
                "A catalog in which no required property declares a default feeds the "
                "`missing_required_arg` category with rule 6's other half: a required property "
                "with no default is left out, so the case expects a refusal and counts among the "
                "corpus's refusal cases (the manifest's `shape` says so). A catalog with such a "
                "default never takes this reading.",
            ),
        ),
    ),
    (
        7,
        "Undeclared and flattened properties",
        "Undeclared properties are dropped. A flattened nested object is re-nested only when each "
        "key belongs to exactly one declared nested property and to no top-level one.",
        (
            (
                "D7.1",
                "A flattened key is either the nested property's own name at the top level "
                '(`"city"` for `address.city`) or the dotted path (`"address.city"`).',
            ),
            (
                "D7.2",
                "Undeclared properties are dropped at every level, whether or not the schema "
                "says additionalProperties: false.",
            ),
            (
                "D7.3",
                "If a flattened key also names a top-level property, or a property of two "
                "nested objects, it is not re-nested; it is a top-level key and judged as one.",
            ),
            (
                "D7.4",
                "An object schema without `properties` is free-form: its keys are not undeclared "
                "and are kept as written, unless it says additionalProperties: false (then every "
                "key is undeclared and dropped).",
            ),
            (
                "D7.5",
                "Re-nesting applies at every level of the arguments: inside a declared object, a "
                "key that belongs to one of that object's nested objects is re-nested under "
                "D7.1-D7.3, read relative to that object (its own properties are its top level). "
                'A key\'s one home may lie more than one object down: `"c"` at the top level is '
                "`a.b.c` when no other object at any depth below declares `c` (a name declared "
                "in two places below is not re-nested, D7.3, and is dropped where it was "
                'written, D7.2); a dotted path whose every step is declared (`"a.b.c"`) names '
                "its one home whatever else declares `c`.",
            ),
            (
                "D7.6",
                "A flattened key re-nested where the nested object was also written merges into "
                "it: a key the written object lacks is added; the same key with a canonically "
                "equal value collapses; a different value is a conflict, and the call is refused.",
            ),
            (
                "D7.7",
                "Property names are never normalised: rule 3's noise (case, separators) applies "
                'to tool names only. A key that is not exactly a declared name (`"City"` for '
                "`city`) is undeclared and dropped (D7.2); a required property left missing is "
                "then refused unless its default fills it (rule 6).",
            ),
            (
                "D7.8",
                "Re-nesting moves keys into objects, never into an array: a name declared only "
                "in the items of an array (`attendees[].email`) is no home for a flattened key, "
                "which is dropped (D7.2), and is not counted as a second home either. Inside a "
                "declared array of objects each item is read as a level of its own (D7.5). A "
                'dotted key whose path runs into a free-form object (D7.4: `"meta.x"` for a '
                "`meta` without `properties`) names no declared property and is dropped.",
            ),
        ),
    ),
    (
        8,
        "Array versus scalar",
        "array-vs-scalar is repaired in the one-element direction only.",
        (
            (
                "D8.1",
                "A scalar where an array is declared becomes a one-element array; a "
                "one-element array where a scalar is declared becomes its element. An array of two "
                "or more where a scalar is declared is refused.",
            ),
            (
                "D8.2",
                "The wrapping direction wraps any non-null value, objects included (an object "
                "where an array of objects is declared becomes a one-element array). `null` is "
                "never wrapped, unwrapped or coerced (D5.3).",
            ),
            (
                "D8.3",
                "The unwrapping direction applies to every declared type but array, objects "
                'included: `[{"city": "Oslo"}]` where an object is declared becomes '
                '`{"city": "Oslo"}`; an empty array or one of two or more is refused.',
            ),
        ),
    ),
    (
        9,
        "Arguments as a JSON string",
        "arguments as a JSON string is decoded, repeatedly if it was encoded more than once.",
        (
            (
                "D9.1",
                "Decoding stops when the value is an object; a string that decodes to "
                "anything but an object (or another string that does) is refused.",
            ),
            (
                "D9.2",
                "How the corpus builds rule 9: every args_as_string case carries arguments "
                "encoded at least twice, in every envelope. Integrators decode a string of "
                "arguments once wherever it appears (control C2): in the OpenAI family that is "
                "the format's wire form (E3), and elsewhere it is what defensive code does, so a "
                "case encoded once would measure what every client already does, not rule 9.",
            ),
        ),
    ),
    (
        10,
        "Several calls",
        "Several calls collapse to one only if every copy canonicalises to the same value.",
        (
            (
                "D10.1",
                "Each copy is normalised on its own; they collapse when every normalised "
                "copy is canonically identical. Copies that differ, or any copy that must be "
                "refused, make the whole case a refusal (conflicting_calls).",
            ),
            (
                "D10.2",
                "A text holding several calls of which one is cut (rule 11) or is not a call "
                "(E4) is refused as a whole, like one holding a copy that must be refused.",
            ),
            (
                "D10.3",
                "How the corpus builds rule 10: the copies of a multiple_calls case differ "
                "textually and each needs at least one repair under another rule (rule 3 name "
                "noise, rule 9 string arguments encoded twice (D9.2), rule 5 lossless coercion "
                "or rule 4 enum spelling) before all agree, and no copy is the call after C2's "
                "one decode; the rationale names each copy's repairs. Identical valid copies "
                "pass by taking the first call (control C2), so they would measure nothing of "
                "rule 10.",
            ),
            (
                "D10.4",
                "One complete call inside an array cut after it (`[{...}` or `[{...},` at the "
                "cut) is that call: rule 11 closes the array and nothing was begun after the "
                "call. A second call begun and cut is D10.2: the text is refused.",
            ),
        ),
    ),
    (
        11,
        "Truncation",
        "Keep what was completely written, drop the incomplete tail, close the open containers, "
        "invent nothing. If that leaves a required property missing with no default: refuse.",
        (
            (
                "D11.1",
                "Strict reading. A property is kept only if its value was completely "
                "written: a string whose closing quote arrived, a literal (true, false, null) "
                "written in full, a number followed by a delimiter, or an object or array whose "
                "closing bracket arrived.",
            ),
            (
                "D11.2",
                "A property whose container was never closed is dropped whole, including "
                'any complete elements inside it: `"tags": ["a"` at the cut drops `tags`.',
            ),
            ("D11.3", 'A number at the cut is dropped: `"days": 1` could have been 12.'),
            (
                "D11.4",
                'An empty container is never invented: a cut at `"tags": [` or inside '
                "its first element drops `tags`; it does not become [].",
            ),
            (
                "D11.5",
                "A cut inside the tool name, or before any name was written, leaves no "
                "call: refuse.",
            ),
            (
                "D11.6",
                "A required property lost to the cut is treated like one never written: filled "
                "from the schema's own default (rule 6) when it has one, refused when it has none. "
                "An optional property lost to the cut is simply absent (D6.1).",
            ),
            (
                "D11.7",
                'Whitespace after a number is a delimiter: `"days": 12 ` at the cut keeps 12 '
                "(D11.3 drops only a number with nothing after it).",
            ),
            (
                "D11.8",
                "Arguments sent as a JSON string (rule 9) and cut inside that string are read "
                "as the cut arguments themselves: the string's text is decoded as far as it "
                "goes and read under D11.1-D11.6. A complete string holding cut JSON is "
                "refused (D9.1): its writer closed it, so nothing was cut.",
            ),
            (
                "D11.9",
                "A cut right after the arguments' `{`, nothing written inside, keeps an empty "
                "arguments object: the object was begun, and what the cut took is absent as in "
                "D11.6 (a required property filled from its default, else the call refused). "
                "D1.3 refuses a cut call whose arguments were never begun.",
            ),
        ),
    ),
    (
        12,
        "None is a refusal",
        "No case expects null, so None is an unambiguous refusal signal.",
        (
            (
                "D12.1",
                "For --adapter-cmd: a non-zero exit, empty output or the JSON `null` is a "
                "refusal. Output that is not JSON is a failed case (schema-invalid return), not a "
                "refusal. For --stream: an id never answered in the time limit is a refusal.",
            ),
        ),
    ),
)

#: How a text is read before any rule applies: the envelopes (E ids). A normaliser written
#: from this contract alone reads every text of the corpus this way.
READING: tuple[tuple[str, str], ...] = (
    (
        "E1",
        "A text is one JSON document, or several written one after another (each read on its "
        "own), or a JSON array; each array item and each document is read as E2 says. Text "
        "that is not JSON, prose around JSON included, is refused (rule 11 reads a cut at the "
        "end only). JSON is RFC 8259 read strictly, by the suite's one reader: NaN, Infinity, "
        "a number beyond a double's range and an object that repeats a key (which value was "
        "meant is unknown) are not JSON, and a byte-order mark (U+FEFF) before the text is a "
        "character outside it.",
    ),
    (
        "E2",
        "Envelopes, read outside in; the first that applies wins: an object with `tool_calls` "
        "holding an array is that array of calls (OpenAI's message; each entry "
        '`{"id", "type": "function", "function": {...}}`); an object whose `function` (else '
        "`function_call`) is an object is that inner object (OpenAI's function, with or "
        'without `"type": "function"`, and its legacy form); any other object is the call '
        'itself: bare `{"name", "arguments"}`, `{"name", "parameters"}`, or Anthropic\'s '
        '`{"type": "tool_use", "id", "name", "input"}`. The arguments are under `arguments`, '
        "`parameters` or `input`; when two of them are written they must be equal "
        "(canonically, as written: a JSON string and the object it encodes differ), else the "
        "call is refused. Other keys (an id, a type) are ignored. Each entry of a `tool_calls` "
        'array is read by E2 again, so a bare `{"name", "arguments"}` entry is a call.',
    ),
    (
        "E3",
        "The OpenAI family (`function`, `function_call`, `tool_calls`) carries arguments as a "
        'JSON string by its own format; bare `{"name", "arguments"}`, `parameters` '
        "and `input` carry an object. Rule 9 decodes a string in either, and so does "
        "control C2, once (D9.2).",
    ),
    (
        "E4",
        "An unknown envelope is not a call: an object with no string `name` after E2, or a "
        "value that is not an object (a number, a string, null) where a call should be. A "
        "text whose only values are not calls is refused (no call); one that also holds calls "
        "is refused as a whole (D10.2).",
    ),
)

#: The two controls every report is read against (C ids): what code that does no repair gets.
CONTROLS: tuple[tuple[str, str], ...] = (
    (
        "C1",
        "naive: trust the model. Parse the text and return the parsed value as it is; refuse "
        "only when it does not parse.",
    ),
    (
        "C2",
        "integrator: what an integrator's own code does by following its SDK's documentation. "
        "Parse the text (refuse if it does not parse); unwrap the envelopes of E2; take the "
        "first call; look the tool up by its exact declared name; decode the arguments once "
        "when they are a string, whatever the envelope (what defensive integrators write, not "
        "only what the OpenAI family's format promises); validate them against the tool's "
        "schema with the suite's own engine and refuse if they are invalid or not an object; "
        "return {name, arguments}. The corpus is built so that no repairable case passes C2 "
        "(the integrity check integrator_fails), as none passes C1.",
    ),
)


#: What the scorer counts, and the CI gate.
SCORING = (
    "exact: cases passed under rules 1 and 2 (a correct refusal on an unrecoverable case passes).",
    "refused_correctly: unrecoverable cases refused. refusal_cases: how many cases expect a refusal.",
    "invented_calls: a call returned on a case that expects a refusal.",
    "false_refusals: a refusal on a case that has a correct call.",
    "schema_invalid_returns: a returned value that is not a call to a declared tool whose arguments "
    "its schema accepts, on any case.",
    "--baseline FILE exits 2 when exact fell, any category's passes fell, invented_calls rose or "
    "schema_invalid_returns rose; 0 otherwise; usage and input errors exit 1. A baseline scored on "
    "another corpus version (CORPUS_VERSION; a report without corpus_version is version 1.0) is "
    "refused with one line naming both versions (exit 1), and a hosted run fails with "
    "baseline_version: scores of two versions are never compared.",
)


def render_spec() -> str:
    """The whole grading contract as text (what ``score --spec`` prints)."""
    lines = [f"TOOLCALL-300 grading contract ({SPEC_VERSION})", "", "Reading the text"]
    lines += [f"   {eid} {text}" for eid, text in READING]
    lines.append("")
    for number, title, text, decisions in RULES:
        lines.append(f"{number}. {title}: {text}")
        for did, dtext in decisions:
            lines.append(f"   {did} {dtext}")
        lines.append("")
    lines.append("Controls")
    lines += [f"   {cid} {text}" for cid, text in CONTROLS]
    lines.append("")
    lines.append("Scoring")
    lines += [f"- {line}" for line in SCORING]
    return "\n".join(lines) + "\n"


def decision_ids() -> list[str]:
    """Every decision id (rules' D ids, reading's E ids, controls' C ids), for tests that
    check code comments and rationale cite real decisions."""
    rules = [did for _, _, _, decisions in RULES for did, _ in decisions]
    return rules + [eid for eid, _ in READING] + [cid for cid, _ in CONTROLS]
