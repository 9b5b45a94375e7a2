"""The real openai SDK against the fake provider, patched by init_auto_instrumentation."""

from __future__ import annotations

import gc
import traceback

import httpx
import openai
import pytest

from llm_observe import instrument, semconv
from llm_observe.instrument.record import type_name
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ping pong"}]


def sync_client(fake: FakeProvider, **options: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.openai_base_url, api_key="k", **options)  # type: ignore[arg-type]


def async_client(fake: FakeProvider, **options: object) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k", **options)  # type: ignore[arg-type]


def test_sync_call_gives_one_span_with_usage(instrumented: Spans, fake: FakeProvider) -> None:
    fake.settings.model_suffix = "-2024-08-06"
    answer = sync_client(fake).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert answer.choices[0].message.content == "You said: ping pong"
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert attrs[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-2024-08-06"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
    assert attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert attrs[semconv.FINISH_REASON] == "stop"
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS
    assert isinstance(attrs[semconv.LATENCY_MS_TOTAL], int)
    assert attrs[semconv.PROMPT_TEXT] == "system: Be brief.\nuser: ping pong"
    assert attrs[semconv.COMPLETION_TEXT] == "You said: ping pong"
    assert semconv.TOKEN_COUNT_METHOD not in attrs  # the provider reported usage
    # who wrote each line: the collector scans the system line for PII only (issue 23)
    assert attrs[semconv.PROMPT_ROLES] == ("system:0", "user:18")


async def test_async_call_gives_one_span(instrumented: Spans, fake: FakeProvider) -> None:
    answer = await async_client(fake).chat.completions.create(model="gpt-4o-mini",
                                                                messages=MESSAGES)
    assert answer.usage is not None and answer.usage.prompt_tokens == 11
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4


def test_stream_with_usage_chunk(instrumented: Spans, fake: FakeProvider) -> None:
    fake.settings.completion_tokens = 42
    stream = sync_client(fake).chat.completions.create(
        model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True})
    assert instrumented.llm() == []  # nothing until the stream ends
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "You said: ping pong"
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 42  # the provider's figure wins
    assert attrs[semconv.COMPLETION_TEXT] == "You said: ping pong"
    assert 0 <= attrs[semconv.LATENCY_MS_TTFT] <= attrs[semconv.LATENCY_MS_TOTAL]  # type: ignore[operator]
    assert semconv.TOKEN_COUNT_METHOD not in attrs


def test_stream_without_usage_is_counted_locally(instrumented: Spans,
                                                 fake: FakeProvider) -> None:
    chunks = list(sync_client(fake).chat.completions.create(
        model="gpt-4o", messages=MESSAGES, stream=True))
    # What the user receives is untouched: no usage chunk was asked for or added.
    assert all(c.usage is None for c in chunks)
    assert "stream_options" not in fake.requests[-1].body
    attrs = instrumented.one()
    assert attrs[semconv.TOKEN_COUNT_METHOD] == semconv.METHOD_EXACT  # gpt-4o: tiktoken
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] > 0  # type: ignore[operator]
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 5  # "You said: ping pong" in o200k


async def test_async_stream(instrumented: Spans, fake: FakeProvider) -> None:
    stream = await async_client(fake).chat.completions.create(
        model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True})
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "You said: ping pong"
    assert instrumented.one()[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4


def test_stream_early_break_then_close(instrumented: Spans, fake: FakeProvider) -> None:
    stream = sync_client(fake).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                      stream=True)
    for _chunk in stream:
        break
    assert instrumented.llm() == []
    stream.close()
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS  # a consumer abort is a close
    assert semconv.LATENCY_MS_TTFT in attrs


def test_stream_abandoned_is_finished_by_gc(instrumented: Spans, fake: FakeProvider) -> None:
    stream = sync_client(fake).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                      stream=True)
    next(iter(stream))
    del stream
    gc.collect()
    assert len(instrumented.llm()) == 1


def test_stream_as_context_manager(instrumented: Spans, fake: FakeProvider) -> None:
    with sync_client(fake).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                  stream=True) as stream:
        first = next(iter(stream))
        assert first.choices[0].delta.role == "assistant"
    assert len(instrumented.llm()) == 1


def test_stream_error_mid_stream(instrumented: Spans, fake: FakeProvider) -> None:
    fake.break_stream_after(3)
    stream = sync_client(fake).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                      stream=True)
    # openai 1.x-2.x let httpx's error through; openai 3.x (on httpx2) wraps it in its own.
    with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)) as raised:
        for _chunk in stream:
            pass
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    # The span names the error the app saw, not one we made up.
    assert attrs[semconv.ERROR_TYPE] == type_name(raised.value)
    # Partial text still gives tokens (and so cost): the first two words arrived.
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] > 0  # type: ignore[operator]


def test_chat_completions_stream_helper(instrumented: Spans, fake: FakeProvider) -> None:
    with sync_client(fake).chat.completions.stream(model="gpt-4o", messages=MESSAGES) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "You said: ping pong"
    assert instrumented.one()[semconv.COMPLETION_TEXT] == "You said: ping pong"


def test_with_raw_response(instrumented: Spans, fake: FakeProvider) -> None:
    raw = sync_client(fake).chat.completions.with_raw_response.create(model="gpt-4o",
                                                                     messages=MESSAGES)
    assert raw.parse().choices[0].message.content == "You said: ping pong"
    assert instrumented.one()[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11


def test_raw_and_streaming_response_streams_read_their_usage_from_the_wire(
        instrumented: Spans, fake: FakeProvider) -> None:
    # The body is still on the wire when the call returns: the span is finished as the
    # user reads it, with the provider's usage, not with 0 completion tokens.
    completions = sync_client(fake).chat.completions
    stream_args = {"model": "gpt-4o", "messages": MESSAGES, "stream": True,
                   "stream_options": {"include_usage": True}}
    raw = completions.with_raw_response.create(**stream_args)  # type: ignore[call-overload]
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    assert text == "You said: ping pong"
    with completions.with_streaming_response.create(**stream_args) as response:  # type: ignore[call-overload]
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    with completions.with_streaming_response.create(model="gpt-4o",
                                                    messages=MESSAGES) as response:
        assert response.parse().choices[0].message.content == "You said: ping pong"
    spans = instrumented.llm()
    assert len(spans) == 3
    for span in spans:
        attrs = dict(span.attributes or {})
        assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
        assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
        assert attrs[semconv.COMPLETION_TEXT] == "You said: ping pong"


def test_sdk_retries_are_one_span_with_retry_count(instrumented: Spans,
                                                   fake: FakeProvider) -> None:
    fake.fail_next(500, times=2)
    sync_client(fake, max_retries=2).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    attrs = instrumented.one()
    assert attrs[semconv.RETRY_COUNT] == 2
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS


def test_error_propagates_unchanged_after_error_span(instrumented: Spans,
                                                     fake: FakeProvider) -> None:
    fake.fail_next(429, times=1)
    client = sync_client(fake, max_retries=0)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == "openai.RateLimitError"
    # Same exception the SDK raised, its traceback still ending where the SDK raised it.
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].filename.endswith("openai/_base_client.py")
    events = instrumented.llm()[0].events
    assert events and events[0].name == "exception"


def test_one_span_even_when_the_url_is_a_known_provider(instrumented: Spans,
                                                        known_url: FakeProvider) -> None:
    """The SDK call also passes through patched httpx: still one span."""
    sync_client(known_url).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert len(instrumented.all()) == 1


def test_patch_call_uninstrument_call(spans: Spans, fake: FakeProvider) -> None:
    from openai.resources.chat.completions import completions as module

    original = vars(module.Completions)["create"]
    client = sync_client(fake)
    instrument.init_auto_instrumentation()
    instrument.init_auto_instrumentation()  # idempotent: still one patch, one span per call
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert len(spans.llm()) == 1
    instrument.uninstrument_all()
    assert vars(module.Completions)["create"] is original
    spans.clear()
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert spans.all() == []


def test_provider_follows_the_client_base_url(instrumented: Spans, fake: FakeProvider) -> None:
    # An OpenAI client pointed at Groq is a Groq call: route Groq's host to the fake server.
    transport = httpx.HTTPTransport()

    class ToFake(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=fake.port,
                                                path=request.url.path.replace("/openai", ""))
            return transport.handle_request(request)

    client = openai.OpenAI(base_url="https://api.groq.com/openai/v1", api_key="k",
                           http_client=httpx.Client(transport=ToFake()))
    client.chat.completions.create(model="llama-3.3-70b", messages=MESSAGES)
    assert instrumented.one()[semconv.GEN_AI_PROVIDER_NAME] == "groq"


def test_openai_over_httpx2_is_still_one_span(instrumented: Spans,
                                              known_url: FakeProvider) -> None:
    """openai 3.x sends through httpx2; openai 2.x does too when given an httpx2 client."""
    import httpx2

    client = openai.OpenAI(base_url=known_url.openai_base_url, api_key="k",
                           http_client=httpx2.Client())
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    list(client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    assert len(instrumented.all()) == 2
    first, second = instrumented.llm()
    assert first.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11  # type: ignore[index]
    assert second.attributes[semconv.COMPLETION_TEXT] == "You said: ping pong"  # type: ignore[index]
