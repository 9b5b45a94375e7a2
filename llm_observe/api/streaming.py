"""``POST /v1/streaming/test-stream-call``: a streamed call through the patched client (4.8).

Same request as test-call. The answer adds what the caller of the stream saw (time to
the first content chunk, chunk count) and what the span recorded (TTFT, completion
tokens, counted from the chunks when the provider sent no usage).
"""

from __future__ import annotations

from aiohttp import web

from llm_observe.api.instrumentation import run_test_call


async def test_stream_call_handler(request: web.Request) -> web.Response:
    """Stream one answer; report TTFT, total latency and completion tokens."""
    body, result, span = await run_test_call(request, stream=True)
    body["ttft_ms"] = round(result.ttft_ms, 3) if result.ttft_ms is not None else None
    body["chunks"] = result.chunks
    body["completion_tokens"] = span.completion_tokens if span is not None else None
    return web.json_response(body)
