"""instrument_client: one client instance only."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest
import requests

from llm_observe import instrument, semconv
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans

MESSAGES = [{"role": "user", "content": "only me"}]


def test_only_the_instrumented_openai_client(spans: Spans, fake: FakeProvider) -> None:
    watched = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    other = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    assert instrument.instrument_client(watched, "azure") is watched
    instrument.instrument_client(watched, "azure")  # twice: still one layer
    watched.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    other.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    attrs = spans.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "azure.ai.openai"  # the provider given
    instrument.uninstrument_all()
    spans.clear()
    watched.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert spans.all() == []
    assert "create" not in vars(watched.chat.completions)


async def test_async_openai_client_stream(spans: Spans, fake: FakeProvider) -> None:
    client = instrument.instrument_client(
        openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k"), "openai")
    stream = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    async with stream:
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "You said: only me"
    assert spans.one()[semconv.COMPLETION_TEXT] == text
    instrument.uninstrument_all()


def test_with_global_patches_too_still_one_span(instrumented: Spans, fake: FakeProvider) -> None:
    client = instrument.instrument_client(
        openai.OpenAI(base_url=fake.openai_base_url, api_key="k"), "openai")
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert len(instrumented.all()) == 1


def test_anthropic_client(spans: Spans, fake: FakeProvider) -> None:
    client = instrument.instrument_client(
        anthropic.Anthropic(base_url=fake.base_url, api_key="k"), "anthropic")
    client.messages.create(model="claude-x", max_tokens=8, messages=MESSAGES)
    with client.messages.stream(model="claude-x", max_tokens=8, messages=MESSAGES) as stream:
        assert stream.get_final_text() == "You said: only me"
    assert [s.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] for s in spans.llm()] == [11, 11]  # type: ignore[index]
    instrument.uninstrument_all()


def test_httpx_client_for_a_self_hosted_url(spans: Spans, fake: FakeProvider) -> None:
    """An unknown host (e.g. a vLLM box) counts once its client is instrumented."""
    client = instrument.instrument_client(httpx.Client(), "vllm")
    client.post(fake.openai_base_url + "/chat/completions",
                json={"model": "llama-3-8b", "messages": MESSAGES})
    httpx.post(fake.openai_base_url + "/chat/completions",
               json={"model": "llama-3-8b", "messages": MESSAGES})  # another client: ignored
    attrs = spans.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "vllm"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    instrument.uninstrument_all()


async def test_async_httpx_client(spans: Spans, fake: FakeProvider) -> None:
    client = instrument.instrument_client(httpx.AsyncClient(), "openai")
    await client.post(fake.openai_base_url + "/chat/completions",
                      json={"model": "gpt-4o", "messages": MESSAGES})
    assert spans.one()[semconv.COMPLETION_TEXT] == "You said: only me"
    instrument.uninstrument_all()


def test_requests_session(spans: Spans, fake: FakeProvider) -> None:
    session = instrument.instrument_client(requests.Session(), "openai")
    session.post(fake.openai_base_url + "/chat/completions",
                 json={"model": "gpt-4o", "messages": MESSAGES}, timeout=10)
    assert len(spans.llm()) == 1
    instrument.uninstrument_all()


def test_unsupported_object() -> None:
    with pytest.raises(TypeError, match="cannot instrument"):
        instrument.instrument_client(object(), "openai")
