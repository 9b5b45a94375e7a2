"""The real LiteLLM routing to the fake provider (through the OpenAI SDK it embeds)."""

from __future__ import annotations

import litellm
import pytest

from llm_observe import instrument, semconv
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans

MESSAGES = [{"role": "user", "content": "lite call"}]


def kwargs(fake: FakeProvider, **extra: object) -> dict[str, object]:
    return {"model": "openai/gpt-4o", "messages": MESSAGES, "api_base": fake.openai_base_url,
            "api_key": "k", **extra}


def test_completion_is_one_span(instrumented: Spans, known_url: FakeProvider) -> None:
    response = litellm.completion(**kwargs(known_url))
    assert response.choices[0].message.content == "You said: lite call"
    # LiteLLM -> OpenAI SDK -> httpx all patched, and the URL is a known one: one span.
    assert len(instrumented.all()) == 1
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
    assert semconv.RETRY_COUNT not in attrs


async def test_acompletion(instrumented: Spans, fake: FakeProvider) -> None:
    response = await litellm.acompletion(**kwargs(fake))
    assert response.choices[0].message.content == "You said: lite call"
    assert instrumented.one()[semconv.COMPLETION_TEXT] == "You said: lite call"


def test_stream(instrumented: Spans, fake: FakeProvider) -> None:
    chunks = list(litellm.completion(**kwargs(fake, stream=True)))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You said: lite call"
    attrs = instrumented.one()
    assert attrs[semconv.COMPLETION_TEXT] == "You said: lite call"
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] > 0  # type: ignore[operator]
    assert semconv.LATENCY_MS_TTFT in attrs


async def test_async_stream(instrumented: Spans, fake: FakeProvider) -> None:
    stream = await litellm.acompletion(**kwargs(fake, stream=True))
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "You said: lite call"
    assert len(instrumented.llm()) == 1


def test_fallback_chain_records_attempts(instrumented: Spans, fake: FakeProvider) -> None:
    fake.fail_next(500, times=1)
    response = litellm.completion(**kwargs(fake, model="openai/gpt-4o-broken",
                                           fallbacks=["openai/gpt-4o-mini"], max_retries=0))
    assert response.choices[0].message.content == "You said: lite call"
    attrs = instrumented.one()
    assert attrs[semconv.ATTEMPTED_MODELS] == ("openai/gpt-4o-broken", "openai/gpt-4o-mini")
    assert attrs[semconv.RETRY_COUNT] == 1
    assert attrs[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini"
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS


def test_error_propagates(instrumented: Spans, fake: FakeProvider) -> None:
    fake.fail_next(500, times=5)
    with pytest.raises(litellm.InternalServerError):
        litellm.completion(**kwargs(fake, max_retries=0, num_retries=0))
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE].startswith("litellm.")  # type: ignore[union-attr]


def test_patch_call_uninstrument_call(spans: Spans, fake: FakeProvider) -> None:
    original = litellm.completion
    instrument.init_auto_instrumentation()
    litellm.completion(**kwargs(fake))
    assert len(spans.llm()) == 1
    instrument.uninstrument_all()
    assert litellm.completion is original
    spans.clear()
    litellm.completion(**kwargs(fake))
    assert spans.all() == []
