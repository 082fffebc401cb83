"""The grading contract: the twelve rules and every decision taken where they were ambiguous.

``toolcall300 score --spec`` prints this text. The generator builds labels under it, the
reference normaliser implements it, and the scorer grades by rules 1, 2 and 12. Each
decision is written once, here; code that exists because of a decision cites its id (for
example ``D11.1``). This module is data and a renderer; it enforces nothing itself.
"""

from __future__ import annotations

from typing import Any

SPEC_VERSION = "toolcall300-grading/4.0"
#: The corpus version the generator builds under this contract; reports and hosted baselines
#: record it, and one scored on another version is never compared with this one.
CORPUS_VERSION = "4.0"

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
#: D7.9: the keys an envelope itself writes beside the arguments; they are never lifted into
#: the arguments, even where a tool declares a property of that name.
ENVELOPE_KEYS = frozenset(
    {"name", "id", "type", "index", *ARGUMENT_KEYS, *FUNCTION_KEYS, CALLS_KEY}
)


def no_parameters() -> dict[str, Any]:
    """D6.3: the schema of a tool declared without ``parameters`` (it takes no arguments).

    A function, not a shared dict, so no caller can change what every other caller reads.

    >>> no_parameters()
    {'type': 'object', 'properties': {}}
    """
    return {"type": "object", "properties": {}}


#: The rule each category's labels rest on (the generator's mutation rule per category,
#: ``generator/rules``): what a case view names when the corpus's rationale is not at hand.
CATEGORY_RULES = {
    "wrong_tool_name": "rule 3",
    "missing_required_arg": "rule 6",
    "extra_undeclared_arg": "rule 7",
    "type_coercion": "rule 5",
    "enum_violation": "rule 4",
    "nested_flattened": "rule 7",
    "array_vs_scalar": "rule 8",
    "args_as_string": "rule 9",
    "multiple_calls": "rule 10",
    "hallucinated_tool": "rule 2",
    "truncated": "rule 11",
    "unrecoverable": "rule 2",
}

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
                "arguments `{}` (into which D7.9 lifts a declared property written beside the "
                "name); a cut one (its `}` never arrived) is refused, since the cut may "
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
            (
                "D5.6",
                "A string where the schema declares an array or an object (and not a string) "
                "is JSON text when it reads as a container: its first character after JSON "
                "whitespace is `[` or `{`. Such text that parses (read strictly, E1) as JSON of "
                "exactly a declared container type is decoded, a lossless coercion: every "
                'character is the writer\'s own, only the type tag changes (`"tags": '
                '"[\\"a\\", \\"b\\"]"` is `["a", "b"]`; `"filter": "{\\"status\\": '
                '\\"open\\"}"` is `{"status": "open"}`). The decoded value is then repaired '
                "like any written value, to the depth the schema declares (rules 4-8 inside it, "
                "this decision included). Text that reads as a container but is not JSON of a "
                "declared container type (cut, invalid, an object where only an array is "
                "declared) is refused: never wrapped (D8.4), never unwrapped (D8.3). A property "
                "declared `string` holding JSON text stays that string. tool-argument/v1 "
                "decodes JSON text of the declared type the same way (its R5 "
                "`string-json-unwrap`, which the suite's argcheck implements).",
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
            (
                "D7.9",
                "A declared top-level property written beside the arguments key in the call "
                '`{"name": "f", "arguments": {"city": "Oslo"}, "days": 3}` is lifted into the '
                "arguments, read like a flattened key (D7.1) whose one home is the arguments "
                "object: a key the arguments lack is added, the same key with a canonically "
                "equal value as written collapses, a different value is a conflict and the call is refused "
                "(D7.6), and the lifted value is then repaired like any other. Why lift: the "
                "name is exactly a declared property (D7.7), so the only reading is an argument "
                "written one level too high; dropping it (what E2 does with an envelope's other "
                "keys) deletes what was written and can leave a plausible, wrong call (an "
                "optional property silently lost), and refusing gives up a call whose every "
                "value is the writer's own. The envelope's own keys (`name`, `id`, `type`, "
                "`index`, E2's argument and function keys) are never lifted, even where a tool "
                "declares a property of that name, and a key no property declares stays ignored "
                "(E2). A cut value beside the arguments is dropped (D11.1).",
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
            (
                "D8.4",
                "The wrapping direction never wraps a string that reads as a JSON container "
                '(D5.6): `"[\\"a\\", \\"b\\"]"` where an array of strings is declared is '
                'that array, never `["[\\"a\\", \\"b\\"]"]` (a call the schema accepts, '
                "plausible and wrong: the failure rule 2 exists to prevent), and such a string "
                "that is not JSON of the declared type is refused, not wrapped. Any other "
                'string is wrapped as D8.1 says (`"a"` -> `["a"]`).',
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
            (
                "D9.3",
                'Empty arguments text (a string of JSON whitespace only, `""` or `" "`) in '
                "a complete call is `{}` for a tool that declares no properties at all "
                "(`properties` empty, D6.3 included, or absent with additionalProperties: "
                "false): `{}` is the only call such a tool can receive, so nothing is invented. "
                "Any other tool refuses it, an all-optional one included: an empty string is "
                "also what a stream that lost its arguments delivers, and the two cannot be told "
                "apart, so returning `{}` could be a plausible, wrong call (rule 2; rule 11: "
                "invent nothing), while a refusal costs one retry. A tool with required "
                "properties refuses (rule 6: none was written, and the text may have lost them). "
                "A cut call holding such a string is refused (D1.3).",
            ),
            (
                "D9.4",
                'An arguments string holding two or more JSON documents (`"{\\"a\\":1}'
                '{\\"b\\":2}"`, what a serving layer sends when two calls\' fragments '
                "merge) is read as rule 10 reads several calls: the documents split on JSON "
                "value boundaries (JSON whitespace between them allowed), each is decoded and "
                "repaired on its own as the arguments of a call with the envelope's name; if "
                "every repaired document is canonically equal the call is that one (copies "
                "collapse), otherwise the single-call answer is a refusal (two different calls "
                "cannot be one answer; conflicting_calls), as it is when any document must be "
                "refused or is cut (D11.8: a complete string holding cut JSON). The parallel "
                "track reads the same text as those calls, in order, each repaired or refused "
                "on its own.",
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
        "call is refused. Other keys (an id, a type) are ignored, except a property the tool "
        "declares, which D7.9 lifts into the arguments. Each entry of a `tool_calls` "
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
    (
        "E5",
        "Arguments nested once more: an arguments object whose only key is one of E2's "
        "(`arguments`, `parameters`, `input`) and which the tool does not declare at its top "
        'level (`{"name": "f", "arguments": {"arguments": {"city": "Oslo"}}}`) is an envelope '
        "written twice: its value is the arguments, read again by E2 and rule 9 (a string "
        "there is decoded), as often as it is nested. A tool that declares that name, or "
        "whose schema is free-form (D7.4), reads it as a property. Beside other keys it is an "
        "undeclared key like any other (D7.2). Read before any rule: dropping it as "
        "undeclared would turn every argument the writer sent into nothing.",
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


# ------------------------------------------------------------------------- the parallel track

#: The parallel track's contract and corpus versions (a case names its track, ``"track":
#: "parallel"``; its reports, pins and baselines are its own).
PARALLEL_SPEC_VERSION = "toolcall300-parallel/1.0"
PARALLEL_CORPUS_VERSION = "1.0"

#: The parallel track's categories, one per decision it is built on (P ids), in report order.
PARALLEL_CATEGORIES = (
    "distinct_calls",  # P1
    "merged_arguments",  # P3
    "doubled_name",  # P4
    "split_call",  # P5, consecutive fragments
    "interleaved_fragments",  # P5, fragments attributed by index
    "reused_index",  # P6
    "identical_copies",  # P7, copies collapse
    "repeat_matters",  # P7, the catalog says repeating matters
    "ambiguous_split",  # P8
    "partial_refusal",  # P9
    "cut_turn",  # P10
    "emission_order",  # P11
)

#: The tools.json marker that says repeating a tool's call matters (P7); MCP says it with
#: ``annotations.idempotentHint: false``.
REPEAT_MARKER = "x-idempotent"

#: The parallel track's decisions (P ids): how a turn holding several calls is read.
PARALLEL: tuple[tuple[str, str], ...] = (
    (
        "P1",
        'The answer to a turn (a case with `"track": "parallel"`) is a JSON array with one entry '
        "per call the text attempted, in the order emitted (P11): that call as rules 1-9 and 11 "
        "repair it on its own, exactly as a single-call text holding only it would be read "
        "(`{name, arguments}`), or `null` where that call is refused. `[]` means the text holds "
        "no call. The single-call track, its rule 10 and its rule 12 are unchanged; in this "
        "track P7 reads copies and `null` is the refusal of one call.",
    ),
    (
        "P2",
        "Every item E1 and E2 find where calls are (a document, an item of a JSON array, an entry "
        "of `tool_calls`) is one attempted call, except a fragment (P5). An item that is no call "
        "(E4: no string name, a number, an array) is a call attempted and refused in its slot. "
        '`[]`: the text is JSON holding no item where calls are (`[]`, `{"tool_calls": []}`). '
        "A text that is not JSON even allowing a cut at its end (E1) is `[null]`: something was "
        "attempted and nothing of it can be read. An adapter that answers `null` for the whole "
        "turn (or breaks, D12.1) refuses it whole: graded as one `null` per expected entry.",
    ),
    (
        "P3",
        'Two JSON documents in one arguments string (`"arguments": "{\\"a\\":1}'
        '{\\"b\\":2}"`, what a serving layer sends when two calls\' fragments merge) are '
        "those calls, in order, each with the envelope's name, each repaired or refused on its "
        "own; identical copies among them collapse by P7. This is D9.4, the single-call track's "
        "reading of the same text (the documents split on JSON value boundaries, whitespace "
        "between them allowed; there, differing documents are a refusal), read per call. The "
        "split is made once, on the string as written: a string holding one value is one call "
        "(rule 9 decodes it as usual), a string that is not JSON is one call refused (D9.1). A "
        "last value cut inside a complete string is refused (D11.8: its writer closed the "
        "string); a string cut by the end of the text splits the same way and its last value is "
        "read under rule 11 (D11.8).",
    ),
    (
        "P4",
        "A name doubled by concatenation (`write_filewrite_file`, what a reused index makes of "
        "two names) that resolves to no declared tool (rule 3), is exactly k >= 2 declared names "
        "written one after another as declared, in exactly one way, and carries exactly k "
        "argument values (P3) is k calls: the i-th name with the i-th value. Otherwise (another "
        "number of values, two ways to split, a piece that is not a declared name as written) it "
        "is not split: each value is a call under the name as written, refused by rule 3, one "
        "`null` each.",
    ),
    (
        "P5",
        'A call split across entries: an entry with no name (none written, `null` or `""`) '
        "whose arguments are a string is a fragment, not a call, when there is exactly one call "
        "it can continue: when the fragment carries an integer `index` (OpenAI's accumulation "
        "key, on the entry or its `function`), the latest named entry before it with that index, "
        "if its arguments string is still open; otherwise the one named entry before it whose "
        "arguments string is still open (reads as JSON cut short, or is empty). Its string is "
        "appended to that call's, in the order emitted, and the joined string is read as "
        "written (P3, rule 9, D11.8: still open at the end of a complete text, it is refused). "
        "A fragment no open call can take is a call of its own with no name, refused (E4). A "
        "fragment two or more open calls could take is not joined to any (P8): it adds no "
        "entry, and those calls stay as written, open, so each is refused.",
    ),
    (
        "P6",
        "An entry that writes its own name begins a call of its own, whatever `index` or `id` it "
        "shares with another entry: two complete calls sent under a reused index are two calls, "
        "never merged, and an `index` never reorders calls (P11).",
    ),
    (
        "P7",
        "Identical copies collapse (rule 10, read per turn): after each call is repaired, a call "
        "canonically identical (name and arguments, D1.2) to an earlier call of the turn leaves "
        "no entry; the first stands in its place (`[A, B, A]` is `[A, B]`). Not when the "
        "catalog says explicitly that repeating the call matters: MCP's "
        "`annotations.idempotentHint: false` on the tool (the tools.json entry or its "
        '`function`), or `"x-idempotent": false` in tools.json; then every copy stands. An '
        "absent hint, `idempotentHint: true`, `readOnlyHint` and `x-mutates` say nothing about "
        "repeating: copies collapse. A refused call is a copy of nothing: `null` entries never "
        "collapse. The track's corpus hands an adapter the hint as MCP writes it, on `function`.",
    ),
    (
        "P8",
        "Where a turn could be split into calls in more than one way (a name that splits into "
        "declared names two ways, a fragment two open calls could take), no way is chosen: the "
        "calls involved are refused, one `null` each (P4, P5), and the rest of the turn stands.",
    ),
    (
        "P9",
        "One call refused among valid ones (an undeclared tool, rule 3; a value no rule repairs, "
        "rules 4-8; a cut that loses a required property, rule 11) is `null` in its slot and the "
        "others stand. Unlike D10.1 and D10.2, one refused call never refuses the turn.",
    ),
    (
        "P10",
        "A cut at the end of the text is read per call: calls completely written before it "
        "stand; the call the cut fell in is read under rule 11 on its own (D11.1-D11.9; a call "
        "begun whose name was not completely written is refused in its slot, D11.5); nothing "
        "begun after the last complete call (`[{...},` at the cut) adds no entry (D10.4).",
    ),
    (
        "P11",
        "Order: entries follow the order in which each call's first piece appears in the text "
        "(documents, then arrays, in order), never the order of `index` or `id`. The scorer "
        "also reports an order-free figure: a turn passes it when its answer holds the expected "
        "entries in any order (as a multiset), as BFCL's parallel checker matches calls.",
    ),
    (
        "P12",
        "The track's corpus writes a turn as OpenAI's assistant message "
        '`{"role": "assistant", "content": null, "tool_calls": [...]}` (entries may carry '
        "`index`; arguments a JSON string, E3), as an array of Anthropic `tool_use` blocks, or "
        "as a bare array of `{name, arguments}`: E1-E4 read all three; no envelope is new.",
    ),
)

#: The parallel track's controls: what list-returning code that repairs nothing gets.
PARALLEL_CONTROLS: tuple[tuple[str, str], ...] = (
    (
        "C3",
        "parallel integrator: C2 for every entry. Parse the text (refuse the turn whole if it "
        "does not parse); unwrap E2's envelopes; for each entry look the tool up by its exact "
        "name, decode string arguments once, validate, and answer the call or `null`; no "
        "fragment joined, no document split, no copy collapsed. The track's corpus is built so "
        "that no turn passes C3 (the integrity check integrator_fails), as none passes C1.",
    ),
)

#: What the scorer counts on the parallel track, and its CI gate.
PARALLEL_SCORING = (
    "exact_turns: answers equal to the expected list, entry by entry, in order (P11); "
    "order_free_turns: equal as multisets (BFCL-compatible).",
    "matched_calls: returned calls (not null) matched one-to-one to expected calls, in any order; "
    "call_precision = matched / returned calls, call_recall = matched / expected calls.",
    "invented_calls: returned calls that match no expected call. dropped_calls: expected calls "
    "that no returned call matches.",
    "false_collapses: expected copies (P7: repeating matters) answered fewer times than expected.",
    "partial_refusal_turns: turns expecting both calls and nulls; partial_refusals_exact: of "
    "those, answered exactly.",
    "schema_invalid_returns: returned entries that are neither null nor a call its schema "
    "accepts, and answers that are neither null nor a list.",
    "--baseline FILE exits 2 when exact_turns, order_free_turns, matched_calls, "
    "partial_refusals_exact or any category's passes fell, or invented_calls, dropped_calls, "
    "false_collapses or schema_invalid_returns rose.",
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
    lines += ["", f"Parallel track ({PARALLEL_SPEC_VERSION}): several calls in one turn"]
    lines += [f"   {pid} {text}" for pid, text in PARALLEL]
    lines += [f"   {cid} {text}" for cid, text in PARALLEL_CONTROLS]
    lines.append("Parallel scoring")
    lines += [f"- {line}" for line in PARALLEL_SCORING]
    return "\n".join(lines) + "\n"


def decision_ids() -> list[str]:
    """Every decision id (rules' D ids, reading's E ids, controls' C ids), for tests that
    check code comments and rationale cite real decisions."""
    rules = [did for _, _, _, decisions in RULES for did, _ in decisions]
    parallel = [pid for pid, _ in PARALLEL] + [cid for cid, _ in PARALLEL_CONTROLS]
    return rules + [eid for eid, _ in READING] + [cid for cid, _ in CONTROLS] + parallel
