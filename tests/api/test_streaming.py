"""POST /v1/streaming/test-stream-call: a streamed call through the patched client."""

from __future__ import annotations

from typing import Any

import pytest

from llm_observe.tokens import count_text_tokens
from tests.api.conftest import Fakes


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_stream_reports_ttft_latency_and_tokens(live: Any, fakes: Fakes,
                                                      provider: str) -> None:
    fake = getattr(fakes, provider)
    fake.settings.chunk_delay_s = 0.02
    await live.post("/v1/instrumentation/init")
    resp = await live.post("/v1/streaming/test-stream-call",
                           json={"method": "sdk", "provider": provider,
                                 "prompt": "one two three"})
    assert resp.status == 200
    body = await resp.json()
    assert body["ok"] is True
    assert body["reply"] == "You said: one two three"
    assert body["chunks"] == 5  # one chunk per word
    assert 0 < body["ttft_ms"] < body["latency_ms"]
    assert body["latency_ms"] >= 5 * 20  # five delayed chunks
    span = body["span"]
    assert span["latency_ms_ttft"] is not None
    assert span["latency_ms_ttft"] <= span["latency_ms_total"]
    if provider == "anthropic":  # Anthropic streams report usage in message_delta
        assert body["completion_tokens"] == span["completion_tokens"] == 5
    else:  # an OpenAI stream without include_usage: counted locally from the chunks
        expected = count_text_tokens(body["reply"], "gpt-4o-mini").tokens
        assert body["completion_tokens"] == span["completion_tokens"] == expected
        assert span["token_count_method"] == "exact"
    assert fake.requests[0].body["stream"] is True


@pytest.mark.parametrize("method", ["httpx", "requests"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_raw_http_streams_are_recorded(live: Any, method: str, provider: str) -> None:
    await live.post("/v1/instrumentation/init")
    body = await (await live.post("/v1/streaming/test-stream-call",
                                  json={"method": method, "provider": provider})).json()
    assert body["ok"] is True and body["chunks"] == 8
    span = body["span"]
    assert span["status"] == "success" and span["provider"] == provider
    assert span["latency_ms_ttft"] is not None and span["finish_reason"] == "stop"
    assert span["prompt_tokens"] > 0 and span["completion_tokens"] > 0
    assert body["completion_tokens"] == span["completion_tokens"]


async def test_stream_cut_midway_is_an_error(live: Any, fakes: Fakes) -> None:
    await live.post("/v1/instrumentation/init")
    fakes.anthropic.break_stream_after(4)
    body = await (await live.post("/v1/streaming/test-stream-call",
                                  json={"method": "sdk", "provider": "anthropic"})).json()
    assert body["ok"] is False and body["error"] is not None
    assert body["span"]["status"] == "error"


async def test_stream_rejects_bad_fields(api: Any) -> None:
    resp = await api.post("/v1/streaming/test-stream-call", json={"method": "sdk"})
    assert resp.status == 422
