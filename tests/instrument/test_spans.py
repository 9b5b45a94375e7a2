"""Manual spans: llm_span, llm_span_with_tokens and llm_streaming_span."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from llm_observe import instrument, semconv
from llm_observe.tokens import count_text_tokens, count_tokens
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans


def test_llm_span_sync(spans: Spans) -> None:
    with instrument.llm_span("gpt-4o", "openai", "search", session_id="conv-1",
                             tenant="acme") as span:
        span.set_metadata("prompt_tokens", 120)
        span.set_metadata("completion_tokens", 30)
        span.set_metadata("actual_model", "gpt-4o-2024-08-06")
        span.set_metadata("finish_reason", "end_turn")
        span.set_metadata("retry_count", 2)
        span.set_metadata("attempted_models", ["gpt-4o", "gpt-4o-mini"])
        span.set_metadata("token_count_method", "exact")
        span.set_metadata("price_tier", {"tier": 1})  # not a primitive: stored as text
        assert len(span.span_id) == 16 and len(span.trace_id) == 32
    attrs = spans.one()
    assert attrs[semconv.SERVICE] == "search"
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 120
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 30
    assert attrs[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-2024-08-06"
    assert attrs[semconv.FINISH_REASON] == "stop"
    assert attrs[semconv.RETRY_COUNT] == 2
    assert attrs[semconv.ATTEMPTED_MODELS] == ("gpt-4o", "gpt-4o-mini")
    assert attrs[semconv.TOKEN_COUNT_METHOD] == "exact"
    assert attrs[semconv.SESSION_ID] == "conv-1"
    assert attrs[semconv.METADATA_PREFIX + "tenant"] == "acme"
    assert attrs[semconv.METADATA_PREFIX + "price_tier"] == "{'tier': 1}"
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS


async def test_llm_span_async_and_nested(spans: Spans) -> None:
    async with instrument.llm_span("planner", "openai", "agent") as outer:
        assert instrument.current_span() is outer
        async with instrument.llm_span("gpt-4o-mini", "openai", "agent") as inner:
            assert inner.trace_id == outer.trace_id
    found = {s.attributes[semconv.GEN_AI_REQUEST_MODEL]: s for s in spans.all()}  # type: ignore[index]
    assert found["gpt-4o-mini"].parent is not None
    assert found["gpt-4o-mini"].parent.span_id == found["planner"].context.span_id


def test_llm_span_error(spans: Spans) -> None:
    error = TimeoutError("provider slow")
    with pytest.raises(TimeoutError) as caught, instrument.llm_span("gpt-4o", "openai"):
        raise error
    assert caught.value is error
    attrs = spans.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == "TimeoutError"


def test_auto_spans_nest_under_a_manual_span(instrumented: Spans, fake: FakeProvider) -> None:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    with instrument.llm_span("pipeline", "openai", "rag", session_id="s-9") as outer:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    auto = next(s for s in instrumented.all() if s.name == "chat gpt-4o")
    assert auto.parent is not None and format(auto.parent.span_id, "016x") == outer.span_id
    # The automatic span inherits the service and session of the code around it.
    assert auto.attributes[semconv.SERVICE] == "rag"  # type: ignore[index]
    assert auto.attributes[semconv.SESSION_ID] == "s-9"  # type: ignore[index]


def test_llm_span_with_tokens_counts_before_the_call(spans: Spans) -> None:
    prompt = [{"role": "user", "content": "How many tokens is this?"}]
    expected = count_tokens(prompt, "gpt-4o").tokens
    handle = instrument.llm_span_with_tokens("gpt-4o", "openai", prompt)
    with handle:
        # Counted on entry, before any outbound call: the block can act on it.
        assert handle.prompt_tokens == expected
        assert handle.token_count_method == semconv.METHOD_EXACT
    attrs = spans.one()
    assert attrs[semconv.TOKEN_COUNT_METHOD] == semconv.METHOD_EXACT
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == expected
    assert attrs[semconv.PROMPT_TEXT] == "user: How many tokens is this?"


def test_llm_span_with_tokens_heuristic_for_unknown_models(spans: Spans) -> None:
    with instrument.llm_span_with_tokens("claude-sonnet-4-5", "anthropic", "Hello Claude"):
        pass
    assert spans.one()[semconv.TOKEN_COUNT_METHOD] == semconv.METHOD_HEURISTIC


def test_capture_content_off(instrumented: Spans, fake: FakeProvider) -> None:
    instrument.set_capture_content(False)
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    list(client.chat.completions.create(model="gpt-4o", stream=True,
                                        messages=[{"role": "user", "content": "secret"}]))
    with instrument.llm_span("gpt-4o", "openai") as span:
        span.set_metadata("prompt", "secret")
    for span in instrumented.all():
        attrs = span.attributes or {}
        assert semconv.PROMPT_TEXT not in attrs and semconv.COMPLETION_TEXT not in attrs
    # Tokens are still counted from the text that is not exported.
    expected = count_text_tokens("You said: secret", "gpt-4o").tokens
    assert instrumented.llm()[0].attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == expected  # type: ignore[index]


# -- llm_streaming_span ---------------------------------------------------------------------
def words() -> Iterator[str]:
    yield from ["Hello", " there", ",", " friend"]


async def awords() -> AsyncIterator[str]:
    for word in words():
        await asyncio.sleep(0)
        yield word


def test_streaming_span_full_iteration(spans: Spans) -> None:
    with instrument.llm_streaming_span("gpt-4o", "openai", "chat", prompt="Greet me") as span:
        assert "".join(span.wrap(words())) == "Hello there, friend"
    attrs = spans.one()
    assert attrs[semconv.COMPLETION_TEXT] == "Hello there, friend"
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == count_tokens("Greet me", "gpt-4o").tokens
    assert attrs[semconv.TOKEN_COUNT_METHOD] == semconv.METHOD_EXACT
    assert 0 <= attrs[semconv.LATENCY_MS_TTFT] <= attrs[semconv.LATENCY_MS_TOTAL]  # type: ignore[operator]


async def test_streaming_span_async_iterator(spans: Spans) -> None:
    async with instrument.llm_streaming_span("gpt-4o", "openai") as span:
        text = "".join([w async for w in span.wrap(awords())])
    assert text == "Hello there, friend"
    assert spans.one()[semconv.COMPLETION_TEXT] == text


def test_streaming_span_early_break(spans: Spans) -> None:
    with instrument.llm_streaming_span("gpt-4o", "openai") as span:
        for word in span.wrap(words()):
            assert word == "Hello"
            break
        assert spans.all() == []
    attrs = spans.one()  # leaving the block counts as close
    assert attrs[semconv.COMPLETION_TEXT] == "Hello"
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS


def test_streaming_span_close(spans: Spans) -> None:
    stream = instrument.llm_streaming_span("gpt-4o", "openai").wrap(words())
    assert next(stream) == "Hello"
    stream.close()
    assert spans.one()[semconv.COMPLETION_TEXT] == "Hello"


async def test_streaming_span_async_close(spans: Spans) -> None:
    stream = instrument.llm_streaming_span("gpt-4o", "openai").wrap(awords())
    assert await stream.__anext__() == "Hello"
    await stream.aclose()
    assert spans.one()[semconv.STATUS] == semconv.STATUS_SUCCESS


def test_streaming_span_error_mid_stream(spans: Spans) -> None:
    def broken() -> Iterator[str]:
        yield "partial"
        raise ConnectionResetError("peer gone")

    with pytest.raises(ConnectionResetError), \
            instrument.llm_streaming_span("gpt-4o", "openai") as span:
        for _word in span.wrap(broken()):
            pass
    attrs = spans.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == "ConnectionResetError"
    assert attrs[semconv.COMPLETION_TEXT] == "partial"


def test_streaming_span_handed_out_of_the_block(spans: Spans) -> None:
    """A stream returned un-read (e.g. to a streaming HTTP response) ends the span itself."""
    with instrument.llm_streaming_span("gpt-4o", "openai") as span:
        stream = span.wrap(words())
    assert spans.all() == []
    assert list(stream)[-1] == " friend"
    assert spans.one()[semconv.COMPLETION_TEXT] == "Hello there, friend"


def test_streaming_span_garbage_collected(spans: Spans) -> None:
    stream = instrument.llm_streaming_span("gpt-4o", "openai").wrap(words())
    next(stream)
    del stream
    gc.collect()
    assert len(spans.all()) == 1


def test_streaming_span_with_openai_chunks_uses_the_usage_chunk(spans: Spans,
                                                                fake: FakeProvider) -> None:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    fake.settings.completion_tokens = 99
    with instrument.llm_streaming_span("gpt-4o", "openai") as span:
        raw = client.chat.completions.create(model="gpt-4o", stream=True,
                                             stream_options={"include_usage": True},
                                             messages=[{"role": "user", "content": "hey"}])
        for _chunk in span.wrap(raw):
            pass
    attrs = spans.one()
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 99
    assert attrs[semconv.COMPLETION_TEXT] == "You said: hey"
    assert semconv.TOKEN_COUNT_METHOD not in attrs



def test_the_prompt_carries_its_roles_and_a_replaced_prompt_drops_them(spans: Spans) -> None:
    messages = [{"role": "system", "content": "Be brief."}, "a bare string",
                {"type": "human", "content": "hi"}, {"role": 7, "content": "odd"}]
    with instrument.llm_span_with_tokens("gpt-4o", "openai", messages):  # type: ignore[arg-type]
        pass
    attrs = spans.one()
    assert attrs[semconv.PROMPT_TEXT] == "system: Be brief.\na bare string\nuser: hi\n7: odd"
    assert attrs[semconv.PROMPT_ROLES] == ("system:0", "unknown:18", "user:32", "unknown:41")
    spans.clear()
    with instrument.llm_span_with_tokens("gpt-4o", "openai", messages) as span:  # type: ignore[arg-type]
        span.set_metadata("prompt", "replaced by the app")
    attrs = spans.one()
    assert attrs[semconv.PROMPT_TEXT] == "replaced by the app"
    assert semconv.PROMPT_ROLES not in attrs
