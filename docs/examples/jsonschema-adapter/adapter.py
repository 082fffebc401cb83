"""A small stream-protocol adapter that needs a third-party package: jsonschema.

It reads one case a line on stdin (``id``, ``text``, ``tools``), takes the text as a
proposed call when it is one (``{"name": ..., "arguments": {...}}``), and answers it only
when the arguments validate against the named tool's JSON Schema; otherwise it refuses
(``null``). jsonschema pulls in ``rpds-py``, a compiled wheel: the point of the example is
that its dependencies arrive with it (requirements.txt, or the image), not by hand.
"""

import json
import sys

import jsonschema


def schema_of(tool):
    """A tool's argument schema in the forms catalogs write it."""
    for key in ("parameters", "input_schema", "inputSchema"):
        if isinstance(tool.get(key), dict):
            return tool[key]
    return tool.get("function", {}).get("parameters", {})


def answer(item):
    try:
        call = json.loads(item["text"])
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("arguments"), dict):
        return None
    tools = {t.get("name") or t.get("function", {}).get("name"): t for t in item["tools"]}
    tool = tools.get(call.get("name"))
    if tool is None:
        return None
    validator = jsonschema.validators.validator_for(schema_of(tool))(schema_of(tool))
    return call if validator.is_valid(call["arguments"]) else None


for line in sys.stdin:
    item = json.loads(line)
    print(json.dumps({"id": item["id"], "call": answer(item)}), flush=True)
