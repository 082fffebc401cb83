"""Rule 7 read independently: undeclared keys at every level, each re-nested to its one
declared home (D7.1, D7.3, D7.5, D7.6) or dropped (D7.2).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from toolcall300.canonical import canonical


def undeclared_keys(
    value: Any, schema: dict[str, Any], path: tuple[str | int, ...] = ()
) -> Iterator[tuple[str | int, ...]]:
    """Paths of object keys the schema does not declare, at every level."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key, sub in value.items():
            if key not in props:
                yield (*path, key)
            else:
                yield from undeclared_keys(sub, props[key], (*path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from undeclared_keys(item, schema["items"], (*path, i))


class _Unplaced(Exception):
    """A key with no single home (D7.3) or whose home holds another value (D7.6)."""

    def __init__(self, message: str, *, conflict: bool) -> None:
        super().__init__(message)
        self.conflict = conflict


@dataclass(frozen=True)
class Renested:
    """What rule 7 makes of written arguments: the re-nested arguments, or why there are none
    (``conflict``: a D7.6 conflict, which refuses the call; else a key with no single home),
    and the decisions the re-nesting used (D7.1 always; D7.5 inside a declared object; D7.6
    a flattened key merged into an object the text also wrote)."""

    arguments: dict[str, Any] | None
    decisions: frozenset[str] = frozenset()
    problem: str | None = None
    conflict: bool = False


def renested(args: dict[str, Any], schema: dict[str, Any]) -> Renested:
    """Rule 7 / D7.1, D7.3, D7.5, D7.6 read from the text alone: at every declared object,
    from the arguments down, each key the object does not declare goes to its one home (its
    dotted path, or the one place inside the object's nested objects that declares the bare
    name), merging into what the text wrote there; then each declared object is read the
    same way, its own properties being its top level."""
    used: set[str] = set()
    try:
        out = _renest_level(copy.deepcopy(args), schema, 0, used)
    except _Unplaced as exc:
        return Renested(None, frozenset(used), str(exc), exc.conflict)
    return Renested(out, frozenset(used))


def _homes(props: dict[str, Any], at: tuple[str, ...] = ()) -> dict[str, list[tuple[str, ...]]]:
    """Each name declared inside the nested objects of one level -> the paths declaring it
    (a schema declaring properties counts, typed or not: a name it declares is not unique)."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for name, sub in props.items():
        inner = sub.get("properties") if isinstance(sub, dict) else None
        if not isinstance(inner, dict):
            continue
        for leaf in inner:
            out.setdefault(leaf, []).append((*at, name, leaf))
        for leaf, paths in _homes(inner, (*at, name)).items():
            out.setdefault(leaf, []).extend(paths)
    return out


def _home(key: str, props: dict[str, Any]) -> tuple[str, ...] | None:
    """D7.1: a dotted path whose every step is declared, else D7.3: the bare name's one home."""
    steps = tuple(key.split("."))
    level: Any = props
    for step in steps[:-1]:
        sub = level.get(step) if isinstance(level, dict) else None
        level = sub.get("properties") if isinstance(sub, dict) else None
    if len(steps) > 1 and isinstance(level, dict) and steps[-1] in level:
        return steps
    homes = _homes(props).get(key, [])
    return homes[0] if len(homes) == 1 else None


def _renest_level(
    obj: dict[str, Any], schema: dict[str, Any], depth: int, used: set[str]
) -> dict[str, Any]:
    props = schema.get("properties", {})
    out = {k: v for k, v in obj.items() if k in props}
    made: set[int] = set()  # objects re-nesting created (not written by the text)
    for key, value in obj.items():
        if key in props:
            continue
        home = _home(key, props)
        if home is None:
            raise _Unplaced(f"{key!r} has no single home (D7.3)", conflict=False)
        used.add("D7.1")
        if depth:
            used.add("D7.5")
        level = out
        for step in home[:-1]:
            if step not in level:
                level[step] = {}
                made.add(id(level[step]))
            elif not isinstance(level[step], dict):
                raise _Unplaced(
                    f"{key!r} belongs inside {step!r}, written as no object (D7.6)", conflict=True
                )
            elif id(level[step]) not in made:
                used.add("D7.6")  # into an object the text wrote
            level = level[step]
        leaf = home[-1]
        if leaf in level:
            if canonical(level[leaf]) != canonical(value):
                raise _Unplaced(f"{key!r} differs from the written {leaf!r} (D7.6)", conflict=True)
            used.add("D7.6")  # the same value written twice collapses
        level[leaf] = value
    return {k: _renest_value(v, props[k], depth + 1, used) for k, v in out.items()}


def _renest_value(value: Any, schema: Any, depth: int, used: set[str]) -> Any:
    """D7.5: a declared object's value read like the arguments (array items too); a free-form
    object (D7.4) and anything else as written."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        return _renest_level(value, schema, depth, used)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_renest_value(v, schema["items"], depth, used) for v in value]
    return value


def strip_undeclared(value: Any, schema: dict[str, Any]) -> Any:
    """D7.2: the value with undeclared object keys removed at every level."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: strip_undeclared(v, props[k]) for k, v in value.items() if k in props}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [strip_undeclared(v, schema["items"]) for v in value]
    return value
