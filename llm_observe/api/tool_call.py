"""Tool-call chain endpoints (spec 4.14): ``POST /v1/tool-call/track`` and ``/clear``.

They share the pipeline's tracker (:class:`ToolChainTracker`, or the Redis-backed one
with ``redis_url``), so a chain fed by OTLP spans and by REST calls is one chain.
``track`` adds one LLM step to a trace's chain (opening it if needed); its cost is
either given (``cost_usd_micro``, at most MAX_STEP_COST_USD_MICRO: 422 above) or priced
from ``model``, ``provider`` and the token counts with the collector's price table. The
chain's cumulative cost saturates at MAX_TRACE_COST_USD_MICRO (``cost_saturated:
true``). A step that finishes with ``tool_calls`` is a transition to a tool turn
(``transition: true``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from llm_observe import semconv
from llm_observe.api.keys import AppKeys
from llm_observe.api.request import Fields, json_object
from llm_observe.processors.toolchain import (
    MAX_STEP_COST_USD_MICRO,
    TOOL_CALLS,
    ToolChainTracker,
)
from llm_observe.span import MAX_LABEL_CHARS, MAX_TOKENS, LlmSpan

T = TypeVar("T")


def _price(request: web.Request, fields: Fields) -> tuple[int | None, str | None]:
    """(cost, price_version) of the step: the given cost, else priced from model/tokens."""
    cost = fields.integer("cost_usd_micro", maximum=MAX_STEP_COST_USD_MICRO)
    model = fields.string("model", max_len=MAX_LABEL_CHARS)
    provider = fields.string("provider", max_len=MAX_LABEL_CHARS, default="")
    prompt = fields.integer("prompt_tokens", maximum=MAX_TOKENS, default=0) or 0
    completion = fields.integer("completion_tokens", maximum=MAX_TOKENS, default=0) or 0
    if cost is not None or model is None:
        return cost, None
    step = LlmSpan(model=model, provider=(provider or "").lower(), prompt_tokens=prompt,
                   completion_tokens=completion)
    request.app[AppKeys.collector].cost.price(step)  # the pipeline's own pricing
    return step.cost_usd_micro, step.price_version


async def track_handler(request: web.Request) -> web.Response:
    """Add a step to ``trace_id``'s chain; answer the chain state after it."""
    fields = await json_object(request)
    trace_id = fields.string("trace_id", required=True, max_len=MAX_LABEL_CHARS)
    span_id = fields.string("span_id", max_len=MAX_LABEL_CHARS)
    finish = semconv.normalize_finish_reason(
        fields.string("finish_reason", max_len=MAX_LABEL_CHARS))
    cost, price_version = _price(request, fields)
    fields.check()
    assert trace_id is not None
    tracker = request.app[AppKeys.collector].tracker
    state = await _off_loop(tracker, functools.partial(
        tracker.track, trace_id, cost, span_id=span_id, finish_reason=finish, open_chain=True))
    assert state is not None  # open_chain=True always yields a chain
    body: dict[str, Any] = {**state.as_dict(), "step_cost_usd_micro": cost,
                            "price_version": price_version,
                            "transition": finish == TOOL_CALLS}
    return web.json_response(body)


async def clear_handler(request: web.Request) -> web.Response:
    """Forget one chain (``trace_id``) or every chain (``all: true``); answer how many."""
    fields = await json_object(request)
    trace_id = fields.string("trace_id", max_len=MAX_LABEL_CHARS)
    clear_all = fields.boolean("all")
    if trace_id is None and not clear_all and not fields.errors:
        fields.fail("trace_id", "is required unless all is true")
    if trace_id is not None and clear_all:
        fields.fail("all", "cannot be combined with trace_id")
    fields.check()
    tracker = request.app[AppKeys.collector].tracker
    cleared = await _off_loop(tracker, functools.partial(
        tracker.clear, None if clear_all else trace_id))
    return web.json_response({"cleared": cleared, "trace_id": trace_id})


async def _off_loop(tracker: Any, call: Callable[[], T]) -> T:
    """Run a tracker call: in place for the in-process tracker, in a thread for the shared
    (Redis) one, whose round trip — or timeout, when Redis is down — must not hold the loop."""
    if isinstance(tracker, ToolChainTracker):
        return call()
    return await asyncio.to_thread(call)
