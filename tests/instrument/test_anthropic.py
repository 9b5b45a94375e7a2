"""The real anthropic SDK against the fake provider (2.x sends through httpx2, 0.x-1.x httpx)."""

from __future__ import annotations

import asyncio
import inspect

import anthropic
import httpx
import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llm_observe import instrument, semconv
from llm_observe.instrument.record import type_name
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans

ARGS = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "Be brief.",
        "messages": [{"role": "user", "content": "hello there"}]}


def client(fake: FakeProvider, **options: object) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.base_url, api_key="k", **options)  # type: ignore[arg-type]


def async_client(fake: FakeProvider) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k")


def check_mapping(attrs: dict[str, object], output_tokens: int = 4) -> None:
    """Spec 2.2: input_tokens -> prompt, output_tokens -> completion, stop_reason -> finish."""
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "claude-sonnet-4-5"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == output_tokens
    assert attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert attrs[semconv.FINISH_REASON] == "stop"
    assert attrs[semconv.PROMPT_TEXT] == "system: Be brief.\nuser: hello there"
    # who wrote each line: the collector scans the system line for PII only (issue 23)
    assert attrs[semconv.PROMPT_ROLES] == ("system:0", "user:18")
    assert attrs[semconv.COMPLETION_TEXT] == "You said: hello there"


def test_create(instrumented: Spans, fake: FakeProvider) -> None:
    message = client(fake).messages.create(**ARGS)  # type: ignore[call-overload]
    assert message.content[0].text == "You said: hello there"
    check_mapping(instrumented.one())


async def test_async_create(instrumented: Spans, fake: FakeProvider) -> None:
    await async_client(fake).messages.create(**ARGS)  # type: ignore[call-overload]
    check_mapping(instrumented.one())


def test_create_stream(instrumented: Spans, fake: FakeProvider) -> None:
    events = list(client(fake).messages.create(**ARGS, stream=True))  # type: ignore[call-overload]
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    attrs = instrumented.one()
    check_mapping(attrs)
    assert semconv.LATENCY_MS_TTFT in attrs


async def test_async_create_stream(instrumented: Spans, fake: FakeProvider) -> None:
    stream = await async_client(fake).messages.create(**ARGS, stream=True)  # type: ignore[call-overload]
    kinds = [event.type async for event in stream]
    assert kinds[-1] == "message_stop"
    check_mapping(instrumented.one())


def test_messages_stream_helper(instrumented: Spans, fake: FakeProvider) -> None:
    with client(fake).messages.stream(**ARGS) as stream:  # type: ignore[arg-type]
        assert "".join(stream.text_stream) == "You said: hello there"
        assert stream.get_final_message().usage.output_tokens == 4
    check_mapping(instrumented.one())


async def test_async_messages_stream_helper(instrumented: Spans, fake: FakeProvider) -> None:
    async with async_client(fake).messages.stream(**ARGS) as stream:  # type: ignore[arg-type]
        final = await stream.get_final_message()
    assert final.content[0].text == "You said: hello there"  # type: ignore[union-attr]
    check_mapping(instrumented.one())


def test_messages_stream_left_early(instrumented: Spans, fake: FakeProvider) -> None:
    with client(fake).messages.stream(**ARGS) as stream:  # type: ignore[arg-type]
        for _event in stream:
            break
    attrs = instrumented.one()  # leaving the block closed the stream: span finished
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11  # from message_start


def test_cut_stream_counts_partial_completion(instrumented: Spans, fake: FakeProvider) -> None:
    fake.break_stream_after(5)  # message_start, block start, ping, two text deltas
    with pytest.raises((httpx.RemoteProtocolError, httpx2.RemoteProtocolError)) as raised:
        list(client(fake, max_retries=0).messages.create(**ARGS, stream=True))  # type: ignore[call-overload]
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == type_name(raised.value)
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] > 0  # type: ignore[operator]
    assert attrs[semconv.TOKEN_COUNT_METHOD] == semconv.METHOD_HEURISTIC  # Claude: no tokenizer


def test_error_status(instrumented: Spans, fake: FakeProvider) -> None:
    fake.fail_next(500, times=1)
    with pytest.raises(anthropic.InternalServerError):
        client(fake, max_retries=0).messages.create(**ARGS)  # type: ignore[call-overload]
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == "anthropic.InternalServerError"


def test_sdk_native_span_is_replaced_not_doubled(instrumented: Spans,
                                                 fake: FakeProvider) -> None:
    """anthropic>=2 emits its own call span; while instrumented a call is still one span."""
    if "open_telemetry" not in inspect.signature(anthropic.Anthropic.__init__).parameters:
        pytest.skip(f"anthropic {anthropic.__version__} has no span of its own to double")
    memory = InMemorySpanExporter()
    native = TracerProvider()
    native.add_span_processor(SimpleSpanProcessor(memory))
    options = {"tracer_provider": native}
    client(fake, open_telemetry=options).messages.create(**ARGS)  # type: ignore[call-overload]
    assert len(instrumented.llm()) == 1
    assert memory.get_finished_spans() == ()
    instrument.uninstrument_all()
    client(fake, open_telemetry=options).messages.create(**ARGS)  # type: ignore[call-overload]
    assert [s.name for s in memory.get_finished_spans()] == ["anthropic.messages.create"]


def test_patch_call_uninstrument_call(spans: Spans, fake: FakeProvider) -> None:
    from anthropic.resources.messages import messages as module

    originals = dict(vars(module.Messages))
    instrument.init_auto_instrumentation()
    client(fake).messages.create(**ARGS)  # type: ignore[call-overload]
    assert len(spans.llm()) == 1
    instrument.uninstrument_all()
    assert vars(module.Messages)["create"] is originals["create"]
    assert vars(module.Messages)["stream"] is originals["stream"]
    spans.clear()
    client(fake).messages.create(**ARGS)  # type: ignore[call-overload]
    assert spans.all() == []


def test_one_span_even_when_the_url_is_a_known_provider(instrumented: Spans,
                                                        known_url: FakeProvider) -> None:
    """The SDK call also passes through patched httpx2: still one span."""
    sdk = anthropic.Anthropic(base_url=known_url.base_url + "/anthropic", api_key="k")
    sdk.messages.create(**ARGS)  # type: ignore[call-overload]
    with sdk.messages.stream(**ARGS) as stream:  # type: ignore[arg-type]
        stream.until_done()
    assert len(instrumented.all()) == 2


async def test_async_messages_stream_is_timed_from_async_with(instrumented: Spans,
                                                              fake: FakeProvider) -> None:
    # The request is sent at `async with`, not at stream(): time spent in between is not
    # the call's latency.
    manager = async_client(fake).messages.stream(**ARGS)  # type: ignore[arg-type]
    await asyncio.sleep(0.5)
    async with manager as stream:
        assert await stream.get_final_text()
    attrs = instrumented.one()
    assert isinstance(attrs[semconv.LATENCY_MS_TOTAL], int)
    assert attrs[semconv.LATENCY_MS_TOTAL] < 400


def test_raw_responses_read_the_providers_usage(instrumented: Spans,
                                                fake: FakeProvider) -> None:
    messages = client(fake).messages
    raw = messages.with_raw_response.create(**ARGS)  # type: ignore[arg-type]
    assert raw.parse().content[0].text == "You said: hello there"  # type: ignore[union-attr]
    raw_stream = messages.with_raw_response.create(**ARGS, stream=True)  # type: ignore[arg-type]
    assert sum(1 for _ in raw_stream.parse()) > 0
    with messages.with_streaming_response.create(**ARGS) as response:  # type: ignore[arg-type]
        assert response.parse().content[0].text == "You said: hello there"  # type: ignore[union-attr]
    spans = instrumented.llm()
    assert len(spans) == 3
    for span in spans:
        check_mapping(dict(span.attributes or {}))
