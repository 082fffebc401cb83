"""The tool-argument/v1 criteria document: what ``GET /criteria`` serves and ``toolcall300
criteria`` prints.

It is the published criteria (shipped verbatim as ``data/tool-argument-v1.seed.json``) with
changes that are additive or factual: the corpus names the vectors this project ships (their
own id and pin, decision D21), the pin definition names this kit's harness, and a
``decisions`` list answers every question the criteria leave open, each tested. It is not a
second source of rules: the checker's behaviour is defined here and in the published criteria, nowhere else.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from typing import Any, TextIO

from toolcall300.argcheck.check import MAX_BODY_BYTES, MAX_DEPTH, MAX_SCHEMA_DEPTH
from toolcall300.argcheck.vectors import CORPUS_ID, corpus_pin, load_corpus
from toolcall300.canonical import loads_strict
from toolcall300.cliutil import EXIT_OK, ArgParser
from toolcall300.schema import ANNOTATIONS, ENFORCED

SEED_FILE = "tool-argument-v1.seed.json"

#: The criteria's price, $0.02 a check, as this service takes it: prepaid packs bought through
#: Stripe Checkout (D23). The service's ledger and 402 answers read these; nothing restates them.
PRICE_PER_CHECK = 2  # minor units of CURRENCY
CURRENCY = "usd"
PACK_PRODUCT = "checks-500"
PACK_CHECKS = 500
PACK_AMOUNT = PACK_CHECKS * PRICE_PER_CHECK
#: The service's bound on refusals that cost real work (D26): a payer's checks that may run
#: past the CPU budget in one UTC day. The service's default (``service.settings``) is held to
#: this number by tests/unit/test_argcheck_api.py (the service settings module does not load
#: the checker's criteria at every Lambda's start).
CHECK_SECONDS_REFUSALS_PER_DAY = 20

#: The criteria's closed ledger field list, with Stripe in place of the wallet and Solana (D23).
LEDGER_FIELDS: tuple[tuple[str, str], ...] = (
    ("payer", "the licence id whose pack paid (a Stripe purchase, or an operator's house licence)"),
    ("timestamp", "UTC time of the check"),
    ("day", "its UTC day"),
    ("price", "minor units of currency"),
    ("currency", "ISO 4217, lower case"),
    ("payment_id", "the Stripe payment of the pack the check came from"),
    ("criteria_version", "the criteria version that judged it"),
    ("op", "check"),
    ("verdict_line", "one line: verdict and counts"),
    (
        "status_summary",
        "verdict + counts + defect codes only: never argument values, keys, or fragments",
    ),
    ("house", "true for an operator's own licence (not a sale; kept out of the tripwires)"),
)

#: Every question the criteria leave open, answered once. ids are stable; tests cite them.
DECISIONS: tuple[dict[str, str], ...] = (
    {
        "id": "D1-text-repair-order",
        "question": "Which of R1 and R2 comes first in the diff?",
        "decision": "Text repairs are tried only when arguments_text does not parse as sent. R2 entries come first, one per removed comma in text order, then at most one R1 entry. Both are judged on the text as submitted: R2 removes every comma whose next token is a closing delimiter or the end of the text (only JSON whitespace may stand between); R1 then appends the closers of the delimiters still open, innermost first. An R2 entry names no offset: the k-th R2 entry removes the k-th such comma, so the diff plus the text still reproduce the repaired blob exactly.",
    },
    {
        "id": "D2-number-at-end",
        "question": "Is a complete number at the end of a text a token boundary?",
        "decision": 'No. A number that runs to the very last character may have been cut mid-digits ("days": 1 could have been 12), so R1 does not apply and the text is invalid_json_text. A number followed by anything, even one space, ended and is a boundary. A string closed by its quote and a complete true/false/null are boundaries.',
    },
    {
        "id": "D3-defect-order",
        "question": "In what order are several defects reported, at one node and across nodes?",
        "decision": "All missing_required defects come first, in traversal order of their objects and, within one object, in the order of its required array. The rest follow in traversal order: at each node its own keywords in the order type, enum, const, minLength, maxLength, pattern, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minItems, maxItems, uniqueItems, minProperties, maxProperties, additionalProperties (one defect per undeclared key, in submitted key order), then declared properties in submitted key order, then items in index order. Each defect is {path, code, keyword, message}; path and code are the contract.",
    },
    {
        "id": "D4-invalid-json-text-path",
        "question": "What path does invalid_json_text carry?",
        "decision": "$arguments_text, the raw text form, with keyword null. It is the only defect such a check reports: nothing else can be assessed in a text that does not parse.",
    },
    {
        "id": "D5-r5-or-r7",
        "question": "Does R5 or R7 apply to a string holding a JSON array?",
        "decision": "R5. A string that parses as a JSON array is never wrapped by R7. If the unwrapped array does not then conform, the node is a defect; there is no fallback to R7 (two readings that might both pass would be a pick).",
    },
    {
        "id": "D6-unlisted-keywords",
        "question": "What happens to keywords the criteria do not list (multipleOf, $schema, x-foo)?",
        "decision": "Annotations accepted and enforced as nothing: "
        + ", ".join(sorted(ANNOTATIONS))
        + ". Every other keyword outside the enforced list (multipleOf, x-foo, ...) makes the schema not covered: refusal schema_not_covered, never a verdict under partial coverage. A pattern using ECMA-262 \\p{...} escapes is not covered. A malformed keyword value is schema_invalid, which is named before schema_not_covered when a schema has both.",
    },
    {
        "id": "D7-string-length",
        "question": "How is string length counted?",
        "decision": 'In Unicode code points (not UTF-16 code units, not bytes): "😀" has length 1.',
    },
    {
        "id": "D8-one-tentative-repair-per-node",
        "question": "Which repair is tried at a failing node, and what if it does not suffice?",
        "decision": "R3..R7 are tried only at a node that fails type, R9 only at a node that fails enum (R8 at an optional declared property whose null fails its subschema). At most one own repair per node: the first applicable rule in whitelist order (R3, R4, R5, R6, R7, then R9). It is kept only if the node's whole subtree then conforms (after the repairs of its children); otherwise it and every repair beneath it are withdrawn, no other rule is tried, and the node's defects are reported against the value as submitted, followed by the defects the withdrawn repair would leave (D22).",
    },
    {
        "id": "D9-r7-null",
        "question": "Does R7 wrap null?",
        "decision": "No. Null is the absence marker (R8's reading); wrapping it would turn absence into a one-element array, an invented element.",
    },
    {
        "id": "D10-r9-case",
        "question": "What does case-insensitively mean for R9?",
        "decision": "Unicode default caseless matching (full case folding, Python str.casefold). Identical enum entries count once.",
    },
    {
        "id": "D11-r3-exact",
        "question": "What does R3 produce, and for which numerals?",
        "decision": 'A numeral without fraction or exponent becomes an exact integer; one with them becomes a double, kept as that double ("3.0" for type integer becomes 3.0, which JSON Schema counts as integral). A numeral a double cannot hold exactly as written ("0.1000000000000000055511151231257827", "1e400") is not converted: that would be rounding.',
    },
    {
        "id": "D12-r6-spelling",
        "question": "What is the exact JSON spelling R6 produces?",
        "decision": 'The canonical JSON text of the value as received: integers in decimal digits, doubles in the shortest form that round-trips (2.50 -> "2.5", 1e2 -> "100.0"), booleans as true/false.',
    },
    {
        "id": "D13-root",
        "question": "Can the root be repaired into an object?",
        "decision": "No. The root must be an object as submitted (after R1/R2 for text). A string holding an object at the root is arguments_not_object, a refusal, never R5; and the root object itself never receives an own repair (a root schema of type array does not wrap it by R7: it is type_mismatch at $).",
    },
    {
        "id": "D14-duplicate-keys",
        "question": "What about duplicate object keys?",
        "decision": "JSON readers would silently keep one value and drop the caller's other: arguments_text with a duplicate key is invalid_json_text; a request body with one is invalid_request_body; an R5 candidate string with one does not parse.",
    },
    {
        "id": "D15-request-shape",
        "question": "How strict is the request envelope?",
        "decision": "Fields other than schema, arguments and arguments_text are invalid_request_body. Both arguments forms present (even null) is arguments_ambiguous. arguments_text that is not a string is arguments_text_invalid. Refusals are checked in this order, the first that applies answering: body cap; body not strict UTF-8 JSON; request not an object or with an unknown field (invalid_request_body); schema_missing; schema not a JSON value (invalid_request_body); schema nesting (schema_not_covered); schema_invalid; schema_not_covered; arguments_ambiguous; arguments_missing; then for arguments: not a JSON value (invalid_request_body), arguments_too_deep; for arguments_text: arguments_text_invalid, arguments_too_deep; then arguments_not_object. An R5 candidate nesting too deep refuses the check during repair (arguments_too_deep).",
    },
    {
        "id": "D16-r8-admits-null",
        "question": "When does a subschema admit null (R8)?",
        "decision": "When null validates against it; so a property with no type, or with null among its types and nothing else rejecting null, keeps its null.",
    },
    {
        "id": "D17-limits",
        "question": "What limits apply?",
        "decision": f"Request body at most {MAX_BODY_BYTES} bytes (CAP-EXCEEDED:body_bytes, 413). Arguments nest at most {MAX_DEPTH} levels, R5-unwrapped content included (arguments_too_deep). The schema document nests at most {MAX_SCHEMA_DEPTH} levels (schema_not_covered). Non-finite numbers, numbers past a double's range (1e400, and an integer of 400 digits alike: integers are exact within the range, D11) and lone surrogates are not JSON: in the request body or the arguments object they are invalid_request_body; an arguments_text string holding a lone surrogate is arguments_text_invalid, and one whose \\u escapes decode to a lone surrogate (or whose numbers overflow a double) is invalid_json_text.",
    },
    {
        "id": "D19-pattern-dialect",
        "question": "Which regular-expression dialect does pattern use?",
        "decision": "ECMA-262 with the u flag, as JSON Schema 2020-12 (core 6.4) recommends and Ajv does by default, in syntax as in meaning. Syntax first: a pattern ECMA-262's Pattern grammar (u flag) does not produce is schema_invalid, even where another engine would run it: Python's (?P<n>...), (?i), (?>...), (?#...), possessive a*+, \\A and \\Z, {,3}, an identity escape of a letter such as \\a, a lone ] { or }, \\- outside a class, a quantified assertion, an out-of-order range. Valid ECMA is run with ECMA's meaning, unanchored: $ is the end of the input (a trailing newline does not slip past ^[a-z]+$), . matches anything but a line terminator, [^] is any character and [] none, \\d, \\w and \\b are ASCII, \\s is Unicode whitespace, \\cA, \\u{...} and surrogate-pair escapes are the code points they name, (?<name>...) is a group. Valid ECMA that this engine cannot run with the same meaning is schema_not_covered, with the reason: backreferences (\\1, \\k<name>), Unicode property escapes (\\p{...}), a lookbehind of variable length, modifier groups (?i:...), a group name used twice, groups nested deeper than 32. A pattern whose matching could backtrack for exponential time is not covered either, so no submitted schema can stall a check; this is decided by analysis of the pattern as written, not by its look: it is refused when it can match one text in exponentially many ways, which takes a repetition over overlapping alternatives or a repetition nested in another with more than one way to cut the text: (a+)+, (a*)*b, (\\w+\\s?)+, (a|a)*, (a|aa)*, (\\w|\\d)+ (an upper bound above 16 counts as unbounded, so ([a-z]{1,100})+ is refused too). Linear patterns pass, repeated groups included: ^v\\d+(?:\\.\\d+)*$, ^[a-z]+(-[a-z]+)*$, (a|ab)*, (\\d{1,3}\\.){3}\\d{1,3}. The analysis reads a lookaround's body as a pattern of its own; a pattern too large to analyse (more than 2000 character atoms once counted repetitions are written out, or 100000 comparisons) is not covered either. Polynomial backtracking (\\d+\\d+$) is not refused here: the service bounds it with a CPU budget (D20).",
    },
    {
        "id": "D18-verdict-fields",
        "question": "Which fields does each verdict carry?",
        "decision": "VALID: criteria_id, verdict, repair_needed (false: the answer states that no repair was needed), arguments (as submitted; for arguments_text, the parsed object). REPAIRED: criteria_id, verdict, arguments (repaired), diff. UNREPAIRABLE: criteria_id, verdict, defects. A refusal: {refusal: {code, message}}.",
    },
    {
        "id": "D20-check-time-budget",
        "scope": "service",
        "question": "What stops a caller's pattern from stalling a check with polynomial backtracking?",
        "decision": "At the service (POST /check and POST /precheck), a request whose schema has a pattern anywhere is checked in a child process with a 2 s CPU budget. Past it, the answer is the free refusal CAP-EXCEEDED:check_seconds (HTTP 422): nothing is judged, nothing is charged, and no submitted value is echoed. A schema without a pattern is checked in process. The library function check() itself has no budget: it runs on the caller's own machine.",
    },
    {
        "id": "D22-defects-after-a-withdrawn-repair",
        "question": 'A tentative repair leaves a value that still breaks another keyword ("120" under {"type": "integer", "maximum": 100}): which defects does "every blocking defect" name?',
        "decision": "Both. Fixing only the type would be refused again for the maximum, so the value as submitted and the value the repair would make both block. The answer names first the defects of the blob as the repair pass left it (each withdrawn node as submitted: type_mismatch at $.n, paths in the submitted blob, ordered as D3), then, for each withdrawn repair in traversal order, the defects its repaired value still has, each with after_repair naming the rule (maximum_violation at $.n, after_repair R3), missing_required first within each. Their paths are in the repaired value: inside an R5-unwrapped string's own content, or [0] under an R7 wrap. This applies to R3, R4, R5, R6, R7 and R9 alike (R8 is never withdrawn). A withdrawn repair beneath a withdrawn repair is not named separately: its node is reported as it stands in the outer repair's value. No repaired blob is returned (the verdict stays UNREPAIRABLE).",
    },
    {
        "id": "D23-payment",
        "scope": "service",
        "question": "How is the $0.02 per check paid, when the service has Stripe and not USDC on Solana?",
        "decision": f"Prepaid packs, not metered usage: {PACK_CHECKS} checks for {PACK_AMOUNT / 100:.2f} {CURRENCY.upper()} ($0.02 each), bought through the same POST /checkout as licences, held on the licence key they were bought with. A pack is paid before any check runs, so a check never waits on a card, and a full refund or a lost dispute ends it through the licence, as for a corpus licence; a partial refund takes back the checks the refunded amount paid for (refunded amount / price per check, rounded up, from Stripe's cumulative amount_refunded, so a resent event or two partial refunds in any order take each check back once), unused checks first, the pack simply empty when nothing is left; only the used checks a refund covers count as refunded paid calls in the refund tripwire, since an unused check was never a paid call; metered billing would bill after the fact, need a Stripe customer and subscription per caller, and turn failed invoices into unpaid checks already delivered. Each paid check is one conditional write taking one check from the pack and storing its ledger record, so a retry with the same Idempotency-Key (same request) is answered again and charged once. A key without a pack gets 402 no_paid_checks with the price and where to buy; without a key the free tier (100 a day, 5 s apart, counted per attempt as D24 says) is unchanged, and its 402 says the same. The price fields say Stripe and USD instead of the seed's USDC units, and the ledger's closed fields put the licence id and the Stripe payment where the seed has a wallet, a Solana transaction and fee, and the CAD fair-market-value block (no crypto payment, so no FMV conversion).",
    },
    {
        "id": "D24-free-tier-counts-attempts",
        "scope": "service",
        "question": "The criteria call refusals free and give unauthenticated callers 100 checks a day, 5 s apart: does a refused attempt use the free tier?",
        "decision": "Yes. Without a licence key, every POST /check and POST /precheck attempt takes its free-tier slot (the 5 s spacing and one of the day's 100) before any work is done, whatever the answer turns out to be; an attempt too soon is 429 too_soon and a spent day 402 daily_limit, both before the body is parsed. Free refusals are free of payment: a refusal is never charged to a pack, and a licensed caller's refusals and prechecks take nothing. The free tier charges nothing either; what it limits is the service's work, and reaching a refusal is work (reading up to the body cap, walking the schema, running a pattern inside its budget). Counting only verdicts, or counting after the answer, would let a caller who sends only refusals use the service without limit.",
    },
    {
        "id": "D25-diff-path-grammar",
        "question": "How is a path in a diff or a defect written, so that a caller can replay it?",
        "decision": 'As the criteria\'s diff_format says, made exact: path = "$" *step, or the single path "$arguments_text" for the raw text. A step is "." key when the key matches [A-Za-z_][A-Za-z0-9_-]* in full (ASCII only); any other key, the empty key included, is "[" json-string "]", the key as a JSON string written as Python\'s json.dumps(key, ensure_ascii=False) writes it (\\" and \\\\ escaped, characters below U+0020 as \\b \\f \\n \\r \\t or \\u00XX, every other character as itself: $["citt\u00e0"], $["a.b"], $[""]); an array index is "[" decimal digits without leading zeros "]". Every path reads back to exactly one location (toolcall300.schema.parse_path is the inverse), and the same grammar names defects\' paths.',
    },
    {
        "id": "D26-expensive-refusals",
        "scope": "service",
        "question": "A refusal is free, but CAP-EXCEEDED:check_seconds costs seconds of CPU (D20): what stops a caller, a licensed one included, from sending backtracking patterns without limit, and from delaying paid checks with them?",
        "decision": f"A budget per payer, not a charge: a refusal stays free of payment (D24), so a pack is never charged for one. The payer is the one the service verified: the licence of a valid Bearer key, or, without one, the free tier's pseudonymous client (a header that is not a valid Bearer key, Authorization: Basic included, makes a caller free tier, never licensed). Each payer's checks that run past the CPU budget are counted per UTC day; after {CHECK_SECONDS_REFUSALS_PER_DAY}, a request whose schema has a pattern gets 429 check_seconds_spent (Retry-After: to 00:00 UTC) before any child runs, while schemas without a pattern are checked as before. And each payer has one lane for pattern checks: while one of its checks is in the bounded child, another gets 429 check_in_flight at once (never queued), so one payer's backtracking holds at most one handler at a time and the paid checks of others never wait behind it. Without a key the free tier (D24) already counts and spaces every attempt; the budget applies there too. Charging the pack was rejected: it would make a refusal cost money, which the criteria rule out, and would leave free and pack-less keys unbounded.",
    },
    {
        "id": "D21-corpus-id",
        "scope": "corpus",
        "question": "Which corpus does the corpus field name?",
        "decision": f"The criteria pin argument-check-corpus/v1 to a SHA-256 beginning 572e80b4; this project does not have that corpus. It ships its own hand-written vectors under their own id, {CORPUS_ID}, with their own pin, and the corpus field names those, so one id never names two corpora. toolcall300 check --selftest recomputes the pin and runs every vector.",
    },
)


def criteria_document() -> dict[str, Any]:
    """The criteria as served: the published criteria, the real corpus pin, and the decisions."""
    raw = resources.files("toolcall300").joinpath("data", SEED_FILE).read_bytes()
    doc: dict[str, Any] = loads_strict(raw)
    doc["corpus"] = {"id": CORPUS_ID, "sha256": corpus_pin(load_corpus())}
    doc["corpus_pin_definition"] = (
        "The corpus pin is the SHA-256 of the corpus's canonical serialization (the corpus object "
        "excluding its sha256 field: sorted keys, no whitespace, UTF-8), computed and verifiable by "
        "the published harness (toolcall300 check --selftest)."
    )
    doc["schema_subset"]["annotations"] = sorted(ANNOTATIONS)
    doc["schema_subset"]["enforced_order"] = list(ENFORCED)
    doc["limits"] = {
        "max_body_bytes": MAX_BODY_BYTES,
        "max_depth": MAX_DEPTH,
        "max_schema_depth": MAX_SCHEMA_DEPTH,
    }
    doc["price"] = {
        "amount": PRICE_PER_CHECK,
        "currency": CURRENCY,
        "label": "$0.02",
        "basis": "per check",
        "payment": "Stripe Checkout: a prepaid pack of checks on a licence key (D23)",
        "pack": {
            "product": PACK_PRODUCT,
            "checks": PACK_CHECKS,
            "amount": PACK_AMOUNT,
            "currency": CURRENCY,
            "buy": f'POST /checkout {{"product": "{PACK_PRODUCT}"}}',
        },
    }
    doc["custody"] = {
        **doc["custody"],
        "ledger_closed_fields": [f"{name}: {what}" for name, what in LEDGER_FIELDS],
    }
    doc["decisions"] = [dict(d) for d in DECISIONS]
    return doc


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``toolcall300 criteria``: no options."""
    return ArgParser(
        prog="toolcall300 criteria", description="print the tool-argument/v1 criteria"
    ).parse_args(argv)


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Print the criteria document as JSON."""
    stdout.write(
        json.dumps(criteria_document(), sort_keys=True, ensure_ascii=False, indent=2) + "\n"
    )
    return EXIT_OK
