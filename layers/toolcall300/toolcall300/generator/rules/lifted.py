"""E5 and D7.9: arguments written one level too deep or one level too high.

Two forms real traffic reaches that rule 7's category measures beside flattened keys: the
arguments nested once more under an argument key the tool does not declare (E5: the
envelope written twice), and a required property written beside the arguments key in the
call object (D7.9: lifted into the arguments). Each builds a correct call first and moves
its values in one named way; the expected call is that correct call.
"""

from __future__ import annotations

import json
from typing import Any

from toolcall300.catalog import Tool, tool_name, tool_schema
from toolcall300.generator.envelopes import ENVELOPE_NOTES, STRING_FORMAT, call_id, wrap
from toolcall300.generator.rules import (
    Ctx,
    Draft,
    choose_tools,
    draft,
    envelope_for,
    quote,
    render,
    valid_call,
)
from toolcall300.spec import ARGUMENT_KEYS, CALLS_KEY, ENVELOPE_KEYS, FUNCTION_KEYS


def _carried(arguments: Any, env: str) -> Any:
    """The arguments as the envelope's own format carries them (E3): a JSON string in the
    OpenAI family, an object elsewhere."""
    return json.dumps(arguments, ensure_ascii=False) if env in STRING_FORMAT else arguments


def _carries(env: str) -> str:
    return "as a JSON string, as its format does (E3)" if env in STRING_FORMAT else "as an object"


def nested_once_more(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """E5: the arguments written once more under an argument key the tool does not declare."""
    props = tool_schema(tool).get("properties")
    key = ARGUMENT_KEYS[(variant // 8) % len(ARGUMENT_KEYS)]
    if not isinstance(props, dict) or not props or key in props:
        return None
    call = valid_call(ctx, tool)
    if not call["arguments"]:
        return None
    env = envelope_for(ctx, variant)
    sent = {key: call["arguments"]}
    text = render(ctx, wrap(tool_name(tool), _carried(sent, env), env, call_id(ctx.rng, env)))
    why = (
        f"The text is {ENVELOPE_NOTES[env]} (E2), its arguments carried {_carries(env)}, and "
        f"they hold one key, {quote(key)}, which {quote(tool_name(tool))} does not declare, "
        f"holding the arguments themselves: the envelope written twice, read once more (E5). "
        "Dropping the key as undeclared (D7.2) would delete every argument the writer sent; "
        "nothing else differs."
    )
    return draft("nested_flattened", text, choose_tools(ctx, tool), call, "rule 7 / E5", why)


def _call_object(body: dict[str, Any]) -> dict[str, Any]:
    """The object holding the call's name in a body ``wrap`` made (E2)."""
    if CALLS_KEY in body:
        body = body[CALLS_KEY][0]
    return next((body[k] for k in FUNCTION_KEYS if isinstance(body.get(k), dict)), body)


def beside_arguments(ctx: Ctx, tool: Tool, variant: int) -> Draft | None:
    """D7.9: a required property written beside the arguments key, in the call object."""
    required = [k for k in tool_schema(tool).get("required", []) if k not in ENVELOPE_KEYS]
    call = valid_call(ctx, tool)
    present = [k for k in required if k in call["arguments"]]
    if not present:
        return None
    key = present[(variant // 8) % len(present)]
    inside = {k: v for k, v in call["arguments"].items() if k != key}
    env = envelope_for(ctx, variant)
    body = wrap(tool_name(tool), _carried(inside, env), env, call_id(ctx.rng, env))
    _call_object(body)[key] = call["arguments"][key]
    text = render(ctx, body)
    why = (
        f"The text is {ENVELOPE_NOTES[env]} (E2), its arguments carried {_carries(env)}; the "
        f"required property {quote(key)} was written beside the arguments key, in the call "
        "object, not inside the arguments. Its name is exactly a declared property, so it is "
        "an argument written one level too high and is lifted into the arguments (rule 7 / "
        "D7.9); dropping it, as an envelope's other keys are, would leave the call without "
        "it. Nothing else differs."
    )
    return draft("nested_flattened", text, choose_tools(ctx, tool), call, "rule 7 / D7.9", why)
