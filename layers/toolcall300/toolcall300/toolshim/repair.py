"""Bringing one call's arguments into line with its tool's schema, by the grading rules only.

``compile_repair(schema)`` builds, once per schema, a walk over the arguments beside the
schema that applies rules 4 to 8 of the grading contract (``toolcall300.spec``): re-nest
flattened keys and drop undeclared ones (rule 7), turn a scalar into a one-element array or
back (rule 8), coerce losslessly (rule 5, through ``rules.coerce_lossless``), match enums
(rule 4, through ``rules.enum_matches``) and fill a missing required property from its own
``default`` (rule 6). Each change is appended to ``log`` as a :class:`Repair`; anything it
cannot repair without a guess raises :class:`Refusal`, and so does a value that no rule may
change and that still breaks one of its node's own keywords (``maxLength``, ``minimum``...).
So a walk that returns has returned a value its schema accepts (a property test over schemas
using every enforced keyword holds it to ``schema.is_valid``).

The walk is compiled (one closure per schema node, the schema read once) because it runs on
every call a model makes. A value that needs nothing comes back as the very same object, and
a changed one is a copy: the model's own objects are never edited in place. It never reads
text: truncation and string-encoded arguments are settled before it runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from toolcall300.canonical import canonical, json_equal
from toolcall300.rules import (
    NotLossless,
    coerce_lossless,
    decode_container_text,
    enum_matches,
    reads_as_container,
)
from toolcall300.schema import (
    KEYWORDS,
    Path,
    Validator,
    compile_validator,
    declared_types,
    format_path,
    is_integer,
)
from toolcall300.toolshim.types import Reason, Refusal, Repair

#: The only types rule 5 coerces to (D5.1: no coercion produces a string, an object...).
_COERCIBLE = frozenset({"integer", "number", "boolean"})
#: How deep re-nesting looks for a bare flattened key's home (rule 7).
_MAX_NEST = 8

#: One compiled node: ``(value, path, log) -> value``, the same object when nothing changed.
Fix = Callable[[Any, Path, list[Repair]], Any]


def repair_arguments(
    arguments: dict[str, Any], schema: dict[str, Any], log: list[Repair]
) -> dict[str, Any]:
    """The arguments repaired under rules 4-8, or :class:`Refusal` (compiles ``schema`` for
    this one call; a caller with many calls keeps :func:`compile_repair`'s result).

    >>> log: list[Repair] = []
    >>> schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    >>> repair_arguments({"n": "3", "x": 1}, schema, log)
    {'n': 3}
    >>> [(r.path, r.rule, r.change) for r in log]
    [('$.arguments.x', '7 D7.2', 'drop_undeclared'), ('$.arguments.n', '5 D5.1', 'coerce')]
    """
    result = compile_repair(schema)(arguments, ("arguments",), log)
    assert isinstance(result, dict)  # an object schema keeps an object an object
    return result


def compile_repair(schema: dict[str, Any]) -> Fix:
    """The repair walk for ``schema`` (assumed covered, see ``schema.schema_problems``, and
    not edited afterwards: the walk keeps what it read)."""
    types = declared_types(schema)
    matches = compile_validator({"type": list(types)}) if types else None
    # D5.2: an integral float declared integer (and not number) is written as an int.
    to_int = "integer" in types and "number" not in types
    # D5.6: a string reading as a container is JSON text only where a container is declared
    # (a string that fails such a node's type is no declared string: `matches` said so).
    decodes_text = "array" in types or "object" in types
    enum = schema.get("enum") if isinstance(schema.get("enum"), list) else None
    enum_strings = frozenset(m for m in enum or () if isinstance(m, str))
    walks_objects = "object" in types or (not types and "properties" in schema)
    fix_object = _compile_object(schema) if walks_objects else None
    items = schema.get("items")
    fix_item = compile_repair(items) if isinstance(items, dict) else None
    own = _own_keywords(
        schema,
        enum_settled=enum is not None and len(enum_strings) == len(enum),
        object_settled=walks_objects and isinstance(schema.get("properties"), dict),
    )
    own_ok = compile_validator(own) if any(k in KEYWORDS for k in own) else None

    def fix(value: Any, path: Path, log: list[Repair]) -> Any:
        if matches is not None:
            if not matches(value):
                if decodes_text and reads_as_container(value):
                    value = _container_text(value, types, path, log)
                else:
                    value = _shape(value, types, matches, path, log)
                    value = _coerce(value, types, matches, path, log)
            elif to_int and isinstance(value, float):
                value = _integral(value, path, log)
        if enum is not None and not (isinstance(value, str) and value in enum_strings):
            value = _enum(value, enum, path, log)
        if fix_object is not None and isinstance(value, dict):
            value = fix_object(value, path, log)
        elif fix_item is not None and isinstance(value, list):
            value = _fix_items(value, fix_item, path, log)
        if own_ok is not None and not own_ok(value):
            raise Refusal(
                Reason.SCHEMA_VIOLATION,
                "no rule may change this value and it fails its schema",
                format_path(path),
            )
        return value

    if fix_object is not None and enum is None and own_ok is None and not to_int:
        # A plain object node (the arguments themselves, most often): straight to its walk.
        def fix_plain_object(value: Any, path: Path, log: list[Repair]) -> Any:
            return (
                fix_object(value, path, log) if isinstance(value, dict) else fix(value, path, log)
            )

        return fix_plain_object
    return fix


def _unchanged(value: Any, path: Path, log: list[Repair]) -> Any:
    return value


def _own_keywords(
    schema: dict[str, Any], enum_settled: bool, object_settled: bool
) -> dict[str, Any]:
    """The keywords of this node that the walk does not already bring about: not its children
    (their own walks check them), not ``type`` (shape and coercion end in a declared type or
    refuse), not an all-string ``enum`` (matched or refused), not ``required`` and
    ``additionalProperties`` where the object walk settles them (it fills or refuses every
    required property and drops every undeclared one, but only beside declared
    ``properties``)."""
    settled = {"properties", "items", "type"}
    if enum_settled:
        settled.add("enum")
    if object_settled:
        settled |= {"required", "additionalProperties"}
    return {k: v for k, v in schema.items() if k not in settled}


def _fix_items(value: list[Any], fix_item: Fix, path: Path, log: list[Repair]) -> list[Any]:
    out = value
    for i, item in enumerate(value):
        fixed = fix_item(item, (*path, i), log)
        if fixed is not item:
            if out is value:
                out = list(value)
            out[i] = fixed
    return out


def _shape(
    value: Any, types: tuple[str, ...], matches: Validator, path: Path, log: list[Repair]
) -> Any:
    """Rule 8, D8.1: the one-element direction only, both ways."""
    if isinstance(value, list) and "array" not in types:
        if len(value) == 1:
            log.append(
                Repair(format_path(path), "8 D8.1", "unwrap_one_element_array", value, value[0])
            )
            return value[0]
        if not value:
            raise Refusal(
                Reason.EMPTY_ARRAY_FOR_SCALAR,
                "an empty array where a scalar is declared",
                format_path(path),
            )
        raise Refusal(
            Reason.ARRAY_TOO_LONG_FOR_SCALAR,
            f"{len(value)} elements where one value is declared",
            format_path(path),
        )
    if (
        "array" in types
        and value is not None
        and not isinstance(value, list)
        and not matches(value)
    ):
        log.append(Repair(format_path(path), "8 D8.1", "wrap_in_array", value, [value]))
        return [value]
    return value


def _container_text(value: str, types: tuple[str, ...], path: Path, log: list[Repair]) -> Any:
    """Rule 5, D5.6: JSON text of exactly a declared container type is that container (then
    walked like any value, below); any other text reading as a container is refused, never
    wrapped into a one-element array (D8.4)."""
    try:
        held = decode_container_text(value, types)
    except NotLossless:
        raise Refusal(
            Reason.LOSSY_COERCION,
            f"{value[:60]!r} reads as JSON text but is no {' or '.join(types)} (D5.6, D8.4)",
            format_path(path),
        ) from None
    log.append(Repair(format_path(path), "5 D5.6", "decode_json_container", value, held))
    return held


def _coerce(
    value: Any, types: tuple[str, ...], matches: Validator, path: Path, log: list[Repair]
) -> Any:
    """Rule 5: lossless conversions only (D5.1), and an integral float declared integer
    becomes an int (D5.2)."""
    if matches(value):
        if isinstance(value, float) and "integer" in types and "number" not in types:
            return _integral(value, path, log)
        return value
    results: list[Any] = []
    for t in types:
        if t in _COERCIBLE:
            try:
                results.append(coerce_lossless(value, t))
            except ValueError:  # NotLossless, or a digit string longer than int() accepts
                continue
    if not results or (len(results) > 1 and len({canonical(r) for r in results}) != 1):
        # D5.1: no coercion produces a string, and nothing is guessed between two readings.
        raise Refusal(
            Reason.LOSSY_COERCION,
            f"{canonical(value)[:60]} is not {' or '.join(types)}",
            format_path(path),
        )
    log.append(Repair(format_path(path), "5 D5.1", "coerce", value, results[0]))
    return results[0]


def _integral(value: float, path: Path, log: list[Repair]) -> Any:
    """D5.2: a float declared integer (and not number) is written as an int when integral;
    any other float is left for the keyword checks to refuse."""
    if not is_integer(value):
        return value
    log.append(Repair(format_path(path), "5 D5.2", "integral_float_to_integer", value, int(value)))
    return int(value)


def _enum(value: Any, members: list[Any], path: Path, log: list[Repair]) -> Any:
    """Rule 4: the one member equal after trimming, case-folding and separator folding."""
    if value in members if isinstance(value, str) else any(json_equal(value, m) for m in members):
        return value  # already a member (a string equals only an equal string)
    hits = enum_matches(value, members)
    if len(hits) == 1:
        log.append(Repair(format_path(path), "4", "match_enum", value, hits[0]))
        return hits[0]
    if hits:
        raise Refusal(
            Reason.ENUM_AMBIGUOUS, f"matches {len(hits)} members (D4.1)", format_path(path)
        )
    raise Refusal(
        Reason.ENUM_NO_MATCH, "matches no member; never the closest one", format_path(path)
    )


def _compile_object(schema: dict[str, Any]) -> Fix:  # noqa: C901
    """Rules 7 and 6 for an object node, and each declared property's own walk."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        # No `properties`: the schema declares no property set, so there is nothing to judge
        # keys against, unless additionalProperties: false says no key is allowed at all.
        return _drop_all if schema.get("additionalProperties") is False else _unchanged
    declared = frozenset(props)
    homes = _nested_homes(props)
    # Most properties need nothing: each one's entry says how to see that cheaply (its
    # canonical Python types, or its string enum members, or its closed check), and only the
    # others are walked.
    subs = {name: (*_already_canonical(sub), compile_repair(sub)) for name, sub in props.items()}
    required = schema.get("required")
    fills = [
        (name, isinstance(props.get(name), dict) and "default" in props[name])
        for name in (required if isinstance(required, list) else [])
    ]

    def fix_object(obj: dict[str, Any], path: Path, log: list[Repair]) -> dict[str, Any]:  # noqa: C901
        out = obj
        if not declared.issuperset(obj):
            out = dict(obj)
            _renest(out, props, homes, path, log)
            for key in [k for k in out if k not in declared]:
                # D7.2: undeclared properties are dropped at every level, additionalProperties or not.
                log.append(
                    Repair(format_path((*path, key)), "7 D7.2", "drop_undeclared", out.pop(key))
                )
        for key, member in out.items():
            kinds, strings, canonical_already, walk = subs[key]
            if kinds is not None:
                if type(member) in kinds:
                    continue
            elif strings is not None:
                if type(member) is str and member in strings:
                    continue
            elif canonical_already(member):
                continue
            fixed = walk(member, (*path, key), log)
            if fixed is not member:
                if out is obj:
                    out = dict(obj)  # a copy: iteration goes on over the model's own object
                out[key] = fixed
        for name, has_default in fills:
            if name in out:
                continue
            if not has_default:
                raise Refusal(
                    Reason.MISSING_REQUIRED,
                    "required, absent, and no default",
                    format_path((*path, name)),
                )
            # Rule 6: from the schema's own default, used as declared (D6.2); optional
            # properties are never filled (D6.1), so only `required` reaches here.
            default = props[name]["default"]
            if isinstance(default, (float, list, dict)):
                # The catalog's own value is never handed out, and canonical() raises
                # ValueError for NaN: a value JSON cannot carry is never returned.
                default = copy.deepcopy(default)
                canonical(default)
            log.append(
                Repair(format_path((*path, name)), "6 D6.2", "fill_required_default", after=default)
            )
            if out is obj:
                out = dict(obj)
            out[name] = default
        return out

    return fix_object


#: The Python types that are, with nothing else to check, the canonical form of a JSON type
#: (closed reading: an integer is an ``int``, never a ``float`` or a ``bool``).
_CANONICAL_KINDS: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
}


def _already_canonical(
    schema: dict[str, Any],
) -> tuple[frozenset[type] | None, frozenset[str] | None, Validator]:
    """How to see that a value needs no repair, fastest first: for a node that declares only
    scalar types (annotations aside), the exact Python types that suffice; for a node that
    is only a type and a string enum, its members; else its closed check."""
    check = compile_validator(schema, closed=True)
    enforced = {k for k in schema if k in KEYWORDS}
    types = declared_types(schema)
    if enforced == {"type"} and all(t in _CANONICAL_KINDS for t in types):
        return frozenset(k for t in types for k in _CANONICAL_KINDS[t]), None, check
    enum = schema.get("enum")
    if not isinstance(enum, list) or not enum or not all(isinstance(m, str) for m in enum):
        return None, None, check
    if enforced <= {"type", "enum"} and "string" in (types or ("string",)):
        return None, frozenset(enum), check
    return None, None, check


def _drop_all(obj: dict[str, Any], path: Path, log: list[Repair]) -> dict[str, Any]:
    if not obj:
        return obj
    for key, value in obj.items():
        log.append(Repair(format_path((*path, key)), "7 D7.2", "drop_undeclared", value))
    return {}


def _nested_homes(props: dict[str, Any], depth: int = 0) -> dict[str, list[tuple[str, ...]]]:
    """Every leaf name of a nested object property -> the paths it is declared at (len >= 2)."""
    homes: dict[str, list[tuple[str, ...]]] = {}
    if depth >= _MAX_NEST:
        return homes
    for name, sub in props.items():
        inner = sub.get("properties") if isinstance(sub, dict) else None
        if not isinstance(inner, dict):
            continue
        for leaf in inner:
            homes.setdefault(leaf, []).append((name, leaf))
        for leaf, paths in _nested_homes(inner, depth + 1).items():
            homes.setdefault(leaf, []).extend((name, *p) for p in paths)
    return homes


def _dotted_home(key: str, props: dict[str, Any]) -> tuple[str, ...] | None:
    """D7.1: ``"address.city"`` names ``address.city`` when every step is declared."""
    parts = tuple(key.split("."))
    if len(parts) < 2:
        return None
    level: Any = props
    for part in parts[:-1]:
        sub = level.get(part) if isinstance(level, dict) else None
        level = sub.get("properties") if isinstance(sub, dict) else None
    return parts if isinstance(level, dict) and parts[-1] in level else None


def _renest(
    out: dict[str, Any],
    props: dict[str, Any],
    homes: dict[str, list[tuple[str, ...]]],
    path: Path,
    log: list[Repair],
) -> None:
    """Rule 7: move each flattened key to its one nested home, in place.

    D7.1: a key is flattened when it is the dotted path of a nested property, or the bare
    name of exactly one nested property. D7.3: a bare name that is also a top-level
    property, or belongs to two nested objects, stays where it is and is judged there."""
    for key in [k for k in out if k not in props]:
        target = _dotted_home(key, props)
        if target is None:
            candidates = homes.get(key, [])
            if len(candidates) != 1:
                continue  # D7.3: not re-nested; dropped below as undeclared
            target = candidates[0]
        _place(out, target, out[key], path, key)
        log.append(Repair(format_path(path + (key,)), "7 D7.1", "renest", before=out.pop(key)))
        log.append(
            Repair(format_path(path + target), "7 D7.1", "renest", after=_lookup(out, target))
        )


def _place(out: dict[str, Any], target: tuple[str, ...], value: Any, path: Path, key: str) -> None:
    cur = out
    for part in target[:-1]:
        existing = cur.get(part, {})
        if not isinstance(existing, dict):
            raise Refusal(
                Reason.CONFLICTING_VALUES,
                f"{key!r} belongs inside {part!r}, which is not an object",
                format_path(path + (part,)),
            )
        cur[part] = dict(existing)  # a copy: the model's own object is never edited in place
        cur = cur[part]
    leaf = target[-1]
    if leaf in cur and canonical(cur[leaf]) != canonical(value):
        raise Refusal(
            Reason.CONFLICTING_VALUES,
            f"{key!r} disagrees with the nested value",
            format_path(path + target),
        )
    cur[leaf] = value


def _lookup(out: dict[str, Any], target: tuple[str, ...]) -> Any:
    cur: Any = out
    for part in target:
        cur = cur[part]
    return cur
