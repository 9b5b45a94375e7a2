"""``POST /v1/token-counting/count``: local prompt token count, no provider call (spec 4.5)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from llm_observe.api.request import Fields, json_object, off_loop
from llm_observe.tokens import count_tokens

MAX_MESSAGES = 10_000


def _prompt(fields: Fields) -> str | list[dict[str, Any]] | None:
    """The prompt: a string, or a list of message objects each with a string ``role``."""
    value = fields.raw("prompt", required=True)
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        fields.fail("prompt", "must be a string or a list of message objects")
        return None
    if len(value) > MAX_MESSAGES:
        fields.fail("prompt", f"must have at most {MAX_MESSAGES} messages")
        return None
    for i, message in enumerate(value):
        if not isinstance(message, dict):
            fields.fail(f"prompt[{i}]", "must be a message object")
        elif not isinstance(message.get("role"), str):
            fields.fail(f"prompt[{i}].role", "is required and must be a string")
        elif not isinstance(message.get("content"), str | list | None):
            fields.fail(f"prompt[{i}].content", "must be a string or a list of content parts")
    return value


async def count_handler(request: web.Request) -> web.Response:
    """``{prompt, model}`` -> ``{model, tokens, method, encoding, image_tokens, notes}``."""
    fields = await json_object(request)
    prompt = _prompt(fields)
    model = fields.string("model", required=True)
    fields.check()
    assert prompt is not None and model is not None
    result = await off_loop(request, count_tokens, prompt, model)
    return web.json_response({"model": model, **result.to_dict()})
