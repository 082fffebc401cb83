"""pydantic v2 in its default lax mode, over models built from each tool's JSON Schema.

pydantic has no JSON-Schema-to-model loader, so this does what its users write by hand with
``create_model``: one field per property, typed from ``type`` (``enum`` as ``Literal``),
bounds as ``Field`` constraints, required properties required (with the schema's
``default`` if it has one), nested objects as nested models. Validation coerces the way
lax mode does (``"3"`` to ``3``); undeclared keys are ignored (pydantic's default); the
call handed back is ``model_dump(exclude_unset=True)``, so nothing the model did not send is
added.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Union

from glue import call, read_call
from pydantic import BaseModel, Field, ValidationError, create_model

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}
_MODELS: dict[str, type[BaseModel]] = {}


def _annotation(schema: dict[str, Any], name: str) -> Any:
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: a union, null as None
        members = [None if k == "null" else _annotation({**schema, "type": k}, name) for k in kind]
        return Union[tuple(members)] if members else Any  # noqa: UP007 - built at run time
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return list[_annotation(schema.get("items", {}), name + "Item")]  # type: ignore[misc]
    if kind == "object" and schema.get("properties"):
        return model_for(schema, name)
    if kind == "object":
        return dict[str, Any]
    return Any


def _field(schema: dict[str, Any], required: bool) -> Any:
    bounds = {
        "ge": schema.get("minimum"),
        "le": schema.get("maximum"),
        "min_length": schema.get("minLength", schema.get("minItems")),
        "max_length": schema.get("maxLength", schema.get("maxItems")),
        "pattern": schema.get("pattern"),
    }
    bounds = {k: v for k, v in bounds.items() if v is not None}
    if "default" in schema:
        return Field(default=schema["default"], **bounds)
    return Field(... if required else None, **bounds)


def model_for(schema: dict[str, Any], name: str = "Arguments") -> type[BaseModel]:
    """The model for one object schema (cached on its JSON text)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _MODELS:
        required = set(schema.get("required", []))
        fields = {
            prop: (_annotation(sub, name + prop.title()), _field(sub, prop in required))
            for prop, sub in (schema.get("properties") or {}).items()
        }
        _MODELS[key] = create_model(name, **fields)
    return _MODELS[key]


def lax(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    found = read_call(text, tools, json.loads)
    if found is None:
        return None
    name, arguments, params = found
    try:
        model = model_for(params).model_validate(arguments)
    except ValidationError:
        return None
    return call(name, model.model_dump(mode="json", exclude_unset=True))
