"""Instrumentation endpoints (spec 4.1-4.4): init, uninstrument, detect, test-call.

init and uninstrument change process-global patches, so they run one at a time (a lock)
and off the event loop (patching may import SDK modules). A call that changed the state
publishes an event (``api.events``). test-call makes a real call through the patched
client; the span it produces reaches the pipeline through :mod:`api.bridge` and is
answered with the call's outcome.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import random
from typing import Any

from aiohttp import web

from llm_observe import providers
from llm_observe.api import testcall
from llm_observe.api.bridge import BRIDGE, run_in_trace
from llm_observe.api.errors import unavailable
from llm_observe.api.events import INITIALIZED, UNINSTRUMENTED, instrumentation_event
from llm_observe.api.keys import AppKeys
from llm_observe.api.request import Fields, json_object
from llm_observe.span import LlmSpan

# How long test-call waits for the span after the call returned: the library emits it
# synchronously at the end of the call, so this is only the hop onto the loop.
SPAN_WAIT_S = 2.0
MAX_TEST_CALLS = 4  # concurrent test calls; each holds a thread until its provider answers
# Target states that mean "instrumented": patched now, or patched when the app imports it.
COVERED = frozenset({"patched", "waiting for import"})


# --- state -----------------------------------------------------------------------------
def _state() -> tuple[bool, dict[str, str]]:
    import llm_observe.instrument as instrument

    return instrument.is_instrumented(), instrument.instrumentation_status()


def _state_body(active: bool, targets: dict[str, str], changed: bool,
                message: str) -> dict[str, Any]:
    patched = sorted(name for name, st in targets.items() if st in COVERED)
    return {"active": active, "changed": changed, "patched": patched, "targets": targets,
            "message": message}


async def _switch(request: web.Request, on: bool) -> web.Response:
    import llm_observe.instrument as instrument

    loop = asyncio.get_running_loop()
    async with request.app[AppKeys.state].instrument_lock:
        was_active, _ = _state()
        action = instrument.init_auto_instrumentation if on else instrument.uninstrument_all
        await loop.run_in_executor(None, action)
        active, targets = _state()
    changed = was_active != active
    if changed:
        body = _state_body(active, targets, True,
                           "instrumentation activated" if on else "instrumentation removed")
        request.app[AppKeys.events].publish(
            instrumentation_event(INITIALIZED if on else UNINSTRUMENTED, active,
                                  body["patched"]))
    else:
        body = _state_body(active, targets, False, "instrumentation already "
                           + ("active" if active else "inactive") + "; nothing changed")
    return web.json_response(body)


async def init_handler(request: web.Request) -> web.Response:
    """Patch every supported client (idempotent); answer the state and what changed."""
    return await _switch(request, True)


async def uninstrument_handler(request: web.Request) -> web.Response:
    """Remove every patch (idempotent); answer the state and what changed."""
    return await _switch(request, False)


# --- detect ----------------------------------------------------------------------------
async def detect_handler(request: web.Request) -> web.Response:
    """``{url, body}`` -> provider, model, operation, streaming; ``detected: false`` if unknown."""
    fields = await json_object(request)
    url = fields.string("url", required=True, max_len=4096)
    body = fields.raw("body")
    if body is not None and not isinstance(body, str | dict):
        fields.fail("body", "must be the request body as a JSON-encoded string")
    fields.check()
    assert url is not None
    parsed = providers.parse_body(body)
    body_parsed = isinstance(body, dict) or (isinstance(body, str) and _json_object(body))
    found = providers.detect(url, parsed)
    return web.json_response({
        "detected": found is not None,
        "provider": found.provider if found else None,
        "model": found.model if found else None,
        "operation": found.operation if found else None,
        "streaming": found.streaming if found else False,
        "wire": found.wire if found else None,
        "is_llm_call": found.is_llm_call if found else False,
        "body_parsed": body_parsed,
    })


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):  # deeply nested JSON is no body we can read
        return False


# --- test calls ------------------------------------------------------------------------
def call_fields(fields: Fields) -> tuple[str, str, str | None, str, float]:
    """(method, provider, model, prompt, timeout) of a test-call request; 422 if bad."""
    method = fields.string("method", required=True, choices=testcall.METHODS)
    provider = fields.string("provider", required=True, choices=testcall.PROVIDERS)
    model = fields.string("model", max_len=256)
    prompt = fields.string("prompt", max_len=10_000, default=testcall.DEFAULT_PROMPT)
    timeout = fields.number("timeout_s", minimum=0.1, maximum=120.0, default=30.0)
    fields.check()
    assert method is not None and provider is not None and prompt is not None
    return method, provider, model, prompt, timeout


def _span_body(span: LlmSpan) -> dict[str, Any]:
    return {"span_id": span.span_id, "trace_id": span.trace_id, "model": span.model,
            "provider": span.provider, "service_name": span.service_name,
            "status": span.status, "prompt_tokens": span.prompt_tokens,
            "completion_tokens": span.completion_tokens,
            "latency_ms_total": span.latency_ms_total, "latency_ms_ttft": span.latency_ms_ttft,
            "finish_reason": span.finish_reason, "cost_usd_micro": span.cost_usd_micro,
            "price_version": span.price_version, "error_type": span.error_type,
            "token_count_method": span.token_count_method}


# Base URLs taught to the HTTP catch-all for the duration of test calls (loop thread only).
_taught: dict[str, int] = {}


def _teach(target: testcall.Target) -> bool:
    """Make the catch-all see ``target``'s base URL as its provider; False if it already does.

    The catch-all records only URLs of known LLM APIs; a configured base URL (a proxy, a
    gateway, a fake on loopback) is registered for the call and forgotten after it.
    """
    if target.base_url not in _taught and providers.provider_for_url(target.url) == \
            target.provider:
        return False
    _taught[target.base_url] = _taught.get(target.base_url, 0) + 1
    providers.register_base_url(target.base_url, target.provider)
    return True


def _forget(target: testcall.Target) -> None:
    left = _taught.get(target.base_url, 1) - 1
    if left > 0:
        _taught[target.base_url] = left
        return
    _taught.pop(target.base_url, None)
    providers.unregister_base_url(target.base_url)


async def run_test_call(request: web.Request, *,
                        stream: bool) -> tuple[dict[str, Any], testcall.CallResult, LlmSpan | None]:
    """Make the test call of ``request``'s body: (answer body, call result, recorded span)."""
    method, provider, model, prompt, timeout = call_fields(await json_object(request))
    target = testcall.target_for(request.app[AppKeys.settings], provider, model)
    active, _ = _state()
    trace_id = random.getrandbits(128) or 1
    trace_hex = format(trace_id, "032x")
    waiter = BRIDGE.wait_for(trace_hex)
    call = functools.partial(testcall.run_call, target, method, prompt, stream=stream,
                             timeout=timeout)
    ctx = contextvars.copy_context()
    state = request.app[AppKeys.state]
    if state.test_calls >= MAX_TEST_CALLS:
        BRIDGE.forget(trace_hex)
        raise unavailable("busy", f"{MAX_TEST_CALLS} test calls are already in flight; "
                          "retry when one has finished", retry_after_s=1)
    state.test_calls += 1
    taught = _teach(target)
    try:
        result: testcall.CallResult = await testcall.in_daemon_thread(
            functools.partial(ctx.run, run_in_trace, trace_id, call))
    finally:
        state.test_calls -= 1
        if taught:
            _forget(target)
    span: LlmSpan | None = None
    if active:
        try:
            span = await asyncio.wait_for(asyncio.shield(waiter), SPAN_WAIT_S)
        except TimeoutError:
            span = None
    BRIDGE.forget(trace_hex)
    if not active:
        message = "instrumentation is inactive, so no span was recorded: " \
                  "POST /v1/instrumentation/init first"
    elif span is None:
        message = "the call produced no span (is this client covered by the instrumentation?)"
    elif result.ok:
        message = "call succeeded; span recorded"
    else:
        message = "call failed; an error span was recorded"
    body = {
        "ok": result.ok, "method": method, "provider": provider, "model": target.model,
        "base_url": target.base_url, "status_code": result.status_code,
        "latency_ms": round(result.latency_ms, 3),
        "error": {"type": result.error_type, "message": result.error_message}
        if result.error_type else None,
        "reply": result.reply, "instrumentation_active": active,
        "span_recorded": span is not None and "not_recorded" not in span.extra,
        "span": _span_body(span) if span is not None else None, "message": message,
    }
    return body, result, span


async def test_call_handler(request: web.Request) -> web.Response:
    """One small non-streamed call through the chosen client (httpx, requests or the SDK)."""
    body, _, _ = await run_test_call(request, stream=False)
    return web.json_response(body)
