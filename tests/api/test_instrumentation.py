"""Instrumentation endpoints: init/uninstrument, detect, and test-call through real clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.api.conftest import Fakes

# (url, body, provider, model, operation, streaming): one row per provider family.
DETECT_CASES = [
    ("https://api.openai.com/v1/chat/completions", {"model": "gpt-4o"},
     "openai", "gpt-4o", "chat", False),
    ("https://myres.openai.azure.com/openai/deployments/my-gpt4o/chat/completions"
     "?api-version=2024-06-01", {"messages": []}, "azure_openai", "my-gpt4o", "chat", False),
    ("https://api.anthropic.com/v1/messages",
     {"model": "claude-3-5-sonnet-20241022", "stream": True},
     "anthropic", "claude-3-5-sonnet-20241022", "chat", True),
    ("https://generativelanguage.googleapis.com/v1beta/models/gemini-1.5-pro:generateContent",
     {"contents": []}, "gemini", "gemini-1.5-pro", "generate_content", False),
    ("https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/"
     "publishers/google/models/gemini-1.5-flash:streamGenerateContent", {},
     "vertex_ai", "gemini-1.5-flash", "generate_content", True),
    ("https://api.mistral.ai/v1/chat/completions", {"model": "mistral-large-latest"},
     "mistral", "mistral-large-latest", "chat", False),
    ("https://api.cohere.com/v2/chat", {"model": "command-r-plus"},
     "cohere", "command-r-plus", "chat", False),
    ("https://api.groq.com/openai/v1/chat/completions", {"model": "llama-3.1-70b-versatile"},
     "groq", "llama-3.1-70b-versatile", "chat", False),
    ("https://api.deepseek.com/chat/completions", {"model": "deepseek-chat", "stream": True},
     "deepseek", "deepseek-chat", "chat", True),
    ("https://api.x.ai/v1/chat/completions", {"model": "grok-2"}, "xai", "grok-2", "chat",
     False),
    ("https://api.together.xyz/v1/chat/completions",
     {"model": "meta-llama/Llama-3.3-70B-Instruct-Turbo"},
     "together", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "chat", False),
    ("https://openrouter.ai/api/v1/chat/completions", {"model": "anthropic/claude-3.5-sonnet"},
     "openrouter", "anthropic/claude-3.5-sonnet", "chat", False),
    ("https://bedrock-runtime.us-east-1.amazonaws.com/model/"
     "anthropic.claude-3-5-sonnet-20240620-v1:0/converse", {"messages": []},
     "bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "chat", False),
    ("http://localhost:11434/api/chat", {"model": "llama3.1"}, "ollama", "llama3.1", "chat",
     True),
    ("https://api.openai.com/v1/embeddings", {"model": "text-embedding-3-small"},
     "openai", "text-embedding-3-small", "embeddings", False),
]


@pytest.mark.parametrize(("url", "body", "provider", "model", "operation", "streaming"),
                         DETECT_CASES, ids=[c[2] + "-" + c[4] for c in DETECT_CASES])
async def test_detect_provider_and_model(api: Any, url: str, body: dict[str, Any],
                                         provider: str, model: str, operation: str,
                                         streaming: bool) -> None:
    resp = await api.post("/v1/instrumentation/detect", json={"url": url,
                                                              "body": json.dumps(body)})
    assert resp.status == 200
    got = await resp.json()
    assert got["detected"] is True and got["body_parsed"] is True
    assert (got["provider"], got["model"], got["operation"], got["streaming"]) == \
        (provider, model, operation, streaming)
    assert got["is_llm_call"] is True


def test_detect_covers_at_least_twelve_providers() -> None:
    assert len({case[2] for case in DETECT_CASES}) >= 12


async def test_detect_unknown_host(api: Any) -> None:
    resp = await api.post("/v1/instrumentation/detect",
                          json={"url": "https://example.com/v1/chat/completions",
                                "body": '{"model": "gpt-4o"}'})
    body = await resp.json()
    assert body["detected"] is False and body["provider"] is None and body["model"] is None


async def test_detect_with_an_unparsable_body_still_finds_the_provider(api: Any) -> None:
    resp = await api.post("/v1/instrumentation/detect",
                          json={"url": "https://api.openai.com/v1/chat/completions",
                                "body": "not json"})
    body = await resp.json()
    assert body["provider"] == "openai" and body["model"] is None
    assert body["body_parsed"] is False


async def test_detect_accepts_a_body_object(api: Any) -> None:
    resp = await api.post("/v1/instrumentation/detect",
                          json={"url": "https://api.mistral.ai/v1/chat/completions",
                                "body": {"model": "codestral-latest"}})
    assert (await resp.json())["model"] == "codestral-latest"


@pytest.mark.parametrize("payload", [{"url": 5}, {"url": ""}, {"url": "x", "body": [1]}])
async def test_detect_rejects_bad_fields(api: Any, payload: Any) -> None:
    assert (await api.post("/v1/instrumentation/detect", json=payload)).status == 422


async def test_init_and_uninstrument_are_idempotent(live: Any) -> None:
    first = await (await live.post("/v1/instrumentation/init")).json()
    assert first["active"] is True and first["changed"] is True
    assert {"openai", "anthropic", "httpx", "requests"} <= set(first["patched"])
    assert first["targets"]["openai"] in ("patched", "waiting for import")
    second = await (await live.post("/v1/instrumentation/init")).json()
    assert second["active"] is True and second["changed"] is False
    off = await (await live.post("/v1/instrumentation/uninstrument")).json()
    assert off["active"] is False and off["changed"] is True and off["patched"] == []
    again = await (await live.post("/v1/instrumentation/uninstrument")).json()
    assert again["changed"] is False


@pytest.mark.parametrize("method", ["sdk", "httpx", "requests"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_test_call_records_a_span(live: Any, fakes: Fakes, method: str,
                                        provider: str) -> None:
    await live.post("/v1/instrumentation/init")
    resp = await live.post("/v1/instrumentation/test-call",
                           json={"method": method, "provider": provider,
                                 "prompt": "say pong"})
    assert resp.status == 200
    body = await resp.json()
    assert body["ok"] is True and body["status_code"] == 200 and body["error"] is None
    assert body["reply"] == "You said: say pong"
    assert body["span_recorded"] is True
    span = body["span"]
    assert span["provider"] == provider and span["status"] == "success"
    assert span["model"] == body["model"]
    assert span["prompt_tokens"] == 11  # what the fake reports as usage
    assert span["completion_tokens"] == 4
    assert span["cost_usd_micro"] is not None and span["price_version"]
    fake = getattr(fakes, provider)
    assert len(fake.requests) == 1
    assert fake.requests[0].body["messages"][0]["content"] == "say pong"
    # The span went through the pipeline: the scrape endpoint counts it.
    init = await (await live.post("/v1/metrics/init", json={"port": 0})).json()
    import aiohttp
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{init['port']}/metrics") as scrape:
        assert 'service_name="llm-observe-test-call"' in await scrape.text()


async def test_test_call_uses_the_configured_key(live: Any, fakes: Fakes) -> None:
    await live.post("/v1/instrumentation/init")
    await live.post("/v1/instrumentation/test-call", json={"method": "sdk",
                                                           "provider": "openai"})
    await live.post("/v1/instrumentation/test-call", json={"method": "httpx",
                                                           "provider": "anthropic"})
    assert fakes.openai.requests[0].headers["Authorization"] == "Bearer sk-test"
    assert fakes.anthropic.requests[0].headers["x-api-key"] == "ak-test"


@pytest.mark.parametrize("method", ["httpx", "requests", "sdk"])
async def test_missing_key_still_makes_the_call(make_client: Any, fakes: Fakes, method: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import llm_observe.instrument as instrument

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    api = await make_client(openai_base_url=fakes.openai.openai_base_url)
    try:
        await api.post("/v1/instrumentation/init")
        body = await (await api.post("/v1/instrumentation/test-call",
                                     json={"method": method, "provider": "openai"})).json()
    finally:
        instrument.uninstrument_all()
    # A real provider answers 401 to the placeholder; the fake accepts any key.
    assert body["ok"] is True and body["span"] is not None
    assert fakes.openai.requests[0].headers["Authorization"] == "Bearer not-configured"


async def test_failed_call_records_an_error_span(live: Any, fakes: Fakes) -> None:
    await live.post("/v1/instrumentation/init")
    fakes.openai.fail_next(500)
    resp = await live.post("/v1/instrumentation/test-call",
                           json={"method": "sdk", "provider": "openai"})
    assert resp.status == 200
    body = await resp.json()
    assert body["ok"] is False and body["status_code"] == 500
    assert body["error"]["type"] == "openai.InternalServerError"
    assert body["span"]["status"] == "error"
    assert body["span"]["error_type"] == "openai.InternalServerError"
    assert "error span" in body["message"]


async def test_unreachable_provider_is_reported(make_client: Any) -> None:
    import socket

    import llm_observe.instrument as instrument

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    api = await make_client(openai_base_url=f"http://127.0.0.1:{dead}/v1")
    try:
        await api.post("/v1/instrumentation/init")
        body = await (await api.post("/v1/instrumentation/test-call",
                                     json={"method": "requests", "provider": "openai",
                                           "timeout_s": 2})).json()
    finally:
        instrument.uninstrument_all()
    assert body["ok"] is False and body["status_code"] is None
    assert "ConnectionError" in body["error"]["type"]
    assert body["span"]["status"] == "error"


async def test_test_call_without_instrumentation_says_so(live: Any) -> None:
    body = await (await live.post("/v1/instrumentation/test-call",
                                  json={"method": "sdk", "provider": "anthropic"})).json()
    assert body["ok"] is True
    assert body["instrumentation_active"] is False and body["span"] is None
    assert "POST /v1/instrumentation/init" in body["message"]


async def test_uninstrument_stops_spans(live: Any) -> None:
    await live.post("/v1/instrumentation/init")
    call = {"method": "httpx", "provider": "openai"}
    assert (await (await live.post("/v1/instrumentation/test-call", json=call)).json())["span"]
    await live.post("/v1/instrumentation/uninstrument")
    body = await (await live.post("/v1/instrumentation/test-call", json=call)).json()
    assert body["ok"] is True and body["span"] is None


@pytest.mark.parametrize(("payload", "field"), [
    ({"provider": "openai"}, "method"),
    ({"method": "curl", "provider": "openai"}, "method"),
    ({"method": "sdk", "provider": "gemini"}, "provider"),
    ({"method": "sdk", "provider": "openai", "timeout_s": 0}, "timeout_s"),
    ({"method": "sdk", "provider": "openai", "model": ""}, "model"),
])
async def test_test_call_rejects_bad_fields(api: Any, payload: Any, field: str) -> None:
    resp = await api.post("/v1/instrumentation/test-call", json=payload)
    assert resp.status == 422
    assert field in [d["field"] for d in (await resp.json())["error"]["details"]]


def test_call_target_comes_from_settings_then_the_sdk_variables() -> None:
    from llm_observe.api.testcall import target_for
    from llm_observe.collector.settings import Settings

    env = {"OPENAI_BASE_URL": "http://proxy.local/v1", "OPENAI_API_KEY": "from-env",
           "ANTHROPIC_API_KEY": "ant-env"}
    from_env = target_for(Settings(), "openai", None, environ=env)
    assert (from_env.base_url, from_env.api_key, from_env.model) == \
        ("http://proxy.local/v1", "from-env", "gpt-4o-mini")
    assert from_env.url == "http://proxy.local/v1/chat/completions"
    configured = target_for(Settings(openai_base_url="http://gw/v1", openai_api_key="cfg"),
                            "openai", "gpt-4o", environ=env)
    assert (configured.base_url, configured.api_key, configured.model) == \
        ("http://gw/v1", "cfg", "gpt-4o")
    default = target_for(Settings(), "anthropic", None, environ=env)
    assert default.base_url == "https://api.anthropic.com" and default.api_key == "ant-env"
    assert default.url == "https://api.anthropic.com/v1/messages"


async def test_test_calls_past_the_limit_are_503_busy(live: Any, fakes: Fakes) -> None:
    # Each test call holds a thread until its provider answers: a fifth at once is told
    # to retry instead of piling up threads.
    fakes.openai.settings.delay_s = 1.5
    body = {"method": "httpx", "provider": "openai"}
    answers = await asyncio.gather(*(live.post("/v1/instrumentation/test-call", json=body)
                                     for _ in range(5)))
    statuses = sorted(resp.status for resp in answers)
    assert statuses == [200, 200, 200, 200, 503]
    [busy] = [resp for resp in answers if resp.status == 503]
    assert (await busy.json())["error"]["code"] == "busy"
    assert busy.headers["Retry-After"] == "1"
