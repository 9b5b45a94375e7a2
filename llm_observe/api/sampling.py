"""``POST /v1/sampling/should-sample``: the deterministic 1% gate (spec 4.9)."""

from __future__ import annotations

from aiohttp import web

from llm_observe.api.request import json_object
from llm_observe.processors.sampling import SAMPLING_MODULUS, should_sample
from llm_observe.span import MAX_LABEL_CHARS


async def should_sample_handler(request: web.Request) -> web.Response:
    """``{span_id}`` -> ``{span_id, sampled, rate}``; the same id always gets the same answer."""
    fields = await json_object(request)
    span_id = fields.string("span_id", required=True, max_len=MAX_LABEL_CHARS)
    fields.check()
    assert span_id is not None
    return web.json_response({"span_id": span_id, "sampled": should_sample(span_id),
                              "rate": 1 / SAMPLING_MODULUS})
