"""The OTLP door against hostile senders: bearer token, absurd numbers, control characters.

Every request goes over a real gRPC channel to a receiver from ``start_receiver``; the
hostile spans are hand-built wire requests (opentelemetry-proto classes for the spans,
raw KeyValue bytes where a value is no valid AnyValue at all), each beside a good span
from another service that must be counted whatever its neighbour carries.
"""

from __future__ import annotations

import asyncio
import math
import random
import struct
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace.export import SpanExportResult
from prometheus_client import CollectorRegistry, generate_latest

from llm_observe import semconv as sc
from llm_observe.collector.assembly import build_collector
from llm_observe.collector.settings import Settings
from llm_observe.otlp.dialects import MAPPED_KEYS
from llm_observe.otlp.timing import MAX_TIME_NS
from llm_observe.otlp.walk import decode_request, walk
from llm_observe.receiver import start_receiver
from llm_observe.span import MAX_LATENCY_MS, MAX_RETRIES, MAX_TOKENS, LlmSpan
from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import (
    T0,
    MiB,
    Stack,
    export,
    llm_span,
    make_forwarder,
    make_stack,
    record_spans,
)
from tests.receiver.test_grpc_server import PATH, call

TOKEN = "s3cret-otlp-token"
GOOD_ID, BAD_ID = b"\x00" * 7 + b"\x01", b"\x00" * 7 + b"\x02"
TRACE = b"\x00" * 15 + b"\x07"
U64 = 2**64 - 1
CHUNK = sc.OLLM_COMPLETION_CHUNK_EVENT


# --- wire helpers (raw protobuf, independent of our encoder) --------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def av(**kw: Any) -> bytes:
    return AnyValue(**kw).SerializeToString()


def s(text: str) -> bytes:
    return av(string_value=text)


def _resource_spans(service: bytes, spans: Iterable[bytes]) -> bytes:
    resource = _ld(1, _ld(1, b"service.name") + _ld(2, service))  # Resource.attributes
    return _ld(1, _ld(1, resource) + _ld(2, b"".join(_ld(2, sp) for sp in spans)))


def hostile(attrs: dict[str, bytes], *, start: int = T0, end: int = T0 + 2_000_000_000,
            events: Iterable[tuple[str, int]] = (), service: bytes = s("hostile-svc")) -> bytes:
    """A request: the good span (its own resource), then one span with raw ``attrs``."""
    good = Span(trace_id=TRACE, span_id=GOOD_ID, name="good", start_time_unix_nano=T0,
                end_time_unix_nano=T0 + 1_000_000_000, attributes=[
                    KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="good")),
                    KeyValue(key="gen_ai.provider.name", value=AnyValue(string_value="openai")),
                    KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(int_value=10))])
    bad = Span(trace_id=TRACE, span_id=BAD_ID, name="hostile", start_time_unix_nano=start,
               end_time_unix_nano=end)
    for name, at in events:
        bad.events.add(name=name, time_unix_nano=at)
    raw = bad.SerializeToString() + b"".join(
        _ld(9, _ld(1, key.encode()) + _ld(2, value)) for key, value in attrs.items())
    return (_resource_spans(s("good-svc"), [good.SerializeToString()])
            + _resource_spans(service, [raw]))


def with_base(**attrs: bytes) -> dict[str, bytes]:
    return {"gen_ai.request.model": s("hostile"), "gen_ai.provider.name": s("openai"),
            **{k.replace("__", "."): v for k, v in attrs.items()}}


# --- the invariants ------------------------------------------------------------------

def check_span(span: LlmSpan) -> None:
    """Every number of a mapped span within its bound; no control character in a label."""
    for value in (span.prompt_tokens, span.completion_tokens, span.cache_read_tokens,
                  span.cache_write_tokens):
        assert type(value) is int and 0 <= value <= MAX_TOKENS, span
    assert span.cache_read_tokens + span.cache_write_tokens <= span.prompt_tokens
    assert 0 <= span.retry_count <= MAX_RETRIES
    if span.latency_ms_total is not None:
        assert 0 <= span.latency_ms_total <= MAX_LATENCY_MS
    if span.latency_ms_ttft is not None:
        assert 0 <= span.latency_ms_ttft <= (MAX_LATENCY_MS if span.latency_ms_total is None
                                            else span.latency_ms_total)
    assert span.start_time_ns is None or 0 < span.start_time_ns <= MAX_TIME_NS
    for text in (span.model, span.provider, span.service_name, span.finish_reason,
                 span.actual_model, span.endpoint, span.session_id, span.error_type,
                 *span.attempted_models):
        assert text is None or not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


GOOD_SERIES = {"model": "good", "provider": "openai", "service_name": "good-svc",
               "status": "success", "has_retries": "false"}


def check_series(registry: CollectorRegistry) -> float:
    """Render /metrics; every sample finite, non-negative, histogram sums within bounds.

    Returns the good span's ``llm_spans_total``. The samples are read from the registry
    the exposition was rendered from (parsing the text back costs 10x the rendering).
    """
    sums: dict[str, float] = {}
    good = 0.0
    assert generate_latest(registry)
    for family in registry.collect():
        for sample in family.samples:
            assert math.isfinite(sample.value) and sample.value >= 0, sample
            if sample.name in ("llm_spans_total", "llm_tokens_total") or (
                    sample.name.startswith("llm_") and sample.name.endswith(("_sum", "_count"))):
                sums[sample.name] = sums.get(sample.name, 0) + sample.value
            if sample.name == "llm_spans_total" and sample.labels == GOOD_SERIES:
                good = sample.value
    for hist in ("llm_latency_ms_total", "llm_latency_ms_ttft"):
        assert sums.get(f"{hist}_sum", 0) <= sums.get(f"{hist}_count", 0) * MAX_LATENCY_MS
    assert sums.get("llm_tokens_total", 0) <= 2 * MAX_TOKENS * sums.get("llm_spans_total", 0)
    return good


async def send(stack: Door, data: bytes, sent: int) -> tuple[int, str]:
    """Send a hostile request; check the answer, the series and the good span.

    Returns (rejected spans, partial-success message).
    """
    for span in walk(decode_request(data)).llm:  # what the door maps, span by span
        check_span(span)
    code, details, body = await stack.call(data)
    assert code == grpc.StatusCode.OK, (code, details)
    partial = ExportTraceServiceResponse.FromString(body).partial_success
    assert partial.rejected_spans in (0, 1)
    if partial.rejected_spans:
        assert BAD_ID.hex() in partial.error_message and GOOD_ID.hex() not in \
            partial.error_message
    assert check_series(stack.registry) == sent, "the good span beside the hostile one " \
        "was not counted"
    return partial.rejected_spans, partial.error_message


@dataclass
class Door(Stack):
    """A stack with one open channel to its receiver: a channel per call costs a
    connection set-up (7 ms) for each of the fuzz tests' thousands of requests."""

    channel: Any = None

    async def call(self, data: bytes) -> tuple[grpc.StatusCode, str, bytes]:
        try:
            response = await self.channel.unary_unary(PATH)(data, timeout=20)
        except grpc.aio.AioRpcError as error:
            return error.code(), error.details() or "", b""
        return grpc.StatusCode.OK, "", response


@pytest.fixture
async def door(sink: OtlpSink) -> AsyncIterator[Door]:
    s = await make_stack(sink)
    door = Door(s.registry, s.collector, s.forwarder, s.receiver,
                grpc.aio.insecure_channel(s.endpoint))
    yield door
    await door.channel.close()
    await s.receiver.stop(0)
    await s.collector.pipeline.shutdown(5)


# --- the observed cases --------------------------------------------------------------

async def test_a_chunk_event_at_the_end_of_time_is_rejected_not_summed(door: Door) -> None:
    # end unknown (0), first chunk at 2**64-1 ns: a TTFT of 1.8e13 ms used to be summed.
    rejected, message = await send(door, hostile(with_base(), end=0, events=[(CHUNK, U64)]), 1)
    assert rejected == 1 and f"event {CHUNK!r} gives a time to first token over" in message
    assert door.metrics().get("llm_latency_ms_ttft_count", model="hostile", provider="openai",
                              service_name="hostile-svc") is None


async def test_a_first_token_past_a_day_is_rejected_when_the_end_is_unknown(
        door: Door) -> None:
    late = T0 + (MAX_LATENCY_MS + 1) * 1_000_000
    rejected, _ = await send(door, hostile(
        with_base(), end=0, events=[(sc.OI_FIRST_TOKEN_EVENT, late)]), 1)
    assert rejected == 1
    ok, _ = await send(door, hostile(
        with_base(), end=0, events=[(sc.OI_FIRST_TOKEN_EVENT, T0 + 700_000_000)]), 2)
    assert ok == 0 and door.metrics()(
        "llm_latency_ms_ttft_sum", model="hostile", provider="openai",
        service_name="hostile-svc") == 700


async def test_a_first_token_after_the_span_end_is_rejected(door: Door) -> None:
    # The latency comes from an attribute (5 s) and the span ended after 1 s: a chunk at
    # 3 s is outside the span even though 3 s < 5 s.
    attrs = with_base(llm_observe__latency_ms_total=av(int_value=5000))
    rejected, message = await send(door, hostile(
        attrs, end=T0 + 1_000_000_000, events=[(CHUNK, T0 + 3_000_000_000)]), 1)
    assert rejected == 1 and "after the span's end" in message


@pytest.mark.parametrize(("start", "end"), [(U64, U64), (T0, U64), (0, U64), (2**63, 2**63)])
async def test_times_past_int64_nanoseconds_are_rejected(door: Door, start: int,
                                                        end: int) -> None:
    # A tool_calls span at the end of time would have put its transition span past 2**64.
    attrs = with_base(llm_observe__latency_ms_total=av(int_value=1000),
                      llm_observe__finish_reason=s("tool_calls"))
    rejected, message = await send(door, hostile(attrs, start=start, end=end), 1)
    assert rejected == 1 and "time_unix_nano" in message


@pytest.mark.parametrize("attrs", [
    with_base(gen_ai__request__model=s("gpt-4o\nfake 1")),
    with_base(gen_ai__provider__name=s("open\x00ai")),
    with_base(gen_ai__response__model=s("gpt\x1b[31m")),
    with_base(llm_observe__service_name=s("svc\x85x")),
    with_base(gen_ai__response__finish_reasons=av(array_value=ArrayValue(
        values=[AnyValue(string_value="st\rop")]))),
    with_base(llm_observe__attempted_models=av(array_value=ArrayValue(
        values=[AnyValue(string_value="a\tb")]))),
    with_base(llm_observe__endpoint=s("/v1/chat\x7f")),
], ids=["model", "provider", "response-model", "service", "finish", "attempted", "endpoint"])
async def test_control_characters_in_labels_reject_the_span(door: Door,
                                                           attrs: dict[str, bytes]) -> None:
    rejected, message = await send(door, hostile(attrs), 1)
    assert rejected == 1 and "control character" in message


async def test_surrounding_whitespace_is_stripped_not_rejected(door: Door) -> None:
    rejected, _ = await send(door, hostile(with_base(gen_ai__request__model=s("\tgpt-4o\n"))), 1)
    assert rejected == 0 and door.metrics()(
        "llm_spans_total", model="gpt-4o", provider="openai", service_name="hostile-svc",
        status="success", has_retries="false") == 1


async def test_a_resource_service_name_with_control_characters_rejects_its_spans(
        door: Door) -> None:
    rejected, message = await send(door, hostile(with_base(), service=s("svc\n2")), 1)
    assert rejected == 1 and "service.name" in message


# --- the bearer token ----------------------------------------------------------------

@pytest.fixture
async def locked(sink: OtlpSink) -> AsyncIterator[Stack]:
    registry = CollectorRegistry()
    settings = Settings(embedding_enabled=False, otlp_token=TOKEN).validate()
    forwarder = make_forwarder(sink.endpoint, registry)
    collector = build_collector(settings, registry, exporters=[forwarder])
    receiver = await start_receiver(collector.pipeline, registry, "127.0.0.1", 0, 4 * MiB,
                                    token=settings.otlp_token)
    stack = Stack(registry, collector, forwarder, receiver)
    yield stack
    await receiver.stop(0)
    await collector.pipeline.shutdown(5)


def _sdk_spans() -> Any:
    return record_spans(lambda t: llm_span(t, "chat gpt-4o", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 10}))


async def test_without_the_token_the_sdk_export_fails_and_nothing_is_counted(
        locked: Stack) -> None:
    spans = _sdk_spans()
    for headers in (None, {"authorization": "Bearer wrong-token"},
                    {"authorization": TOKEN}):  # no scheme
        kw = {} if headers is None else {"headers": headers}
        result = await asyncio.to_thread(export, locked.endpoint, spans, **kw)
        assert result == SpanExportResult.FAILURE
    m = locked.metrics()
    assert m("llm_observe_receiver_requests_total", outcome="unauthenticated") == 3
    assert m.get("llm_observe_receiver_spans_received_total", kind="llm") in (None, 0)
    assert m.get("llm_spans_total", model="gpt-4o", provider="openai", service_name="checkout",
                 status="success", has_retries="false") is None


async def test_with_the_token_the_sdk_spans_are_counted(
        locked: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    spans = _sdk_spans()
    result = await asyncio.to_thread(export, locked.endpoint, spans,
                                     headers={"authorization": f"Bearer {TOKEN}"})
    assert result == SpanExportResult.SUCCESS
    # What OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<token> sends.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{TOKEN}")
    assert await asyncio.to_thread(export, locked.endpoint, spans) == SpanExportResult.SUCCESS
    m = locked.metrics()
    assert m("llm_spans_total", model="gpt-4o", provider="openai", service_name="checkout",
             status="success", has_retries="false") == 2
    assert m.get("llm_observe_receiver_requests_total", outcome="unauthenticated") in (None, 0)


async def test_the_token_is_checked_before_the_request_is_decoded(locked: Stack) -> None:
    garbage = b"\xff\xfe not protobuf"
    code, details, _, _ = await call(locked.endpoint, garbage)
    assert code == grpc.StatusCode.UNAUTHENTICATED and "bearer" in details.lower()
    code, _, _, _ = await call(locked.endpoint, garbage,
                               metadata=(("authorization", f"bearer {TOKEN}"),))
    assert code == grpc.StatusCode.INVALID_ARGUMENT  # authenticated, then decoded
    m = locked.metrics()
    assert m("llm_observe_receiver_requests_total", outcome="unauthenticated") == 1
    assert m("llm_observe_receiver_requests_total", outcome="invalid") == 1


async def test_the_thread_pool_flavour_checks_the_token_too(sink: OtlpSink) -> None:
    registry = CollectorRegistry()
    collector = build_collector(Settings(embedding_enabled=False), registry,
                                exporters=[make_forwarder(sink.endpoint, registry)])
    receiver = await start_receiver(collector.pipeline, registry, "127.0.0.1", 0, 4 * MiB,
                                    flavour="threads", token=TOKEN)
    try:
        endpoint = f"127.0.0.1:{receiver.port}"
        data = hostile(with_base())
        assert (await call(endpoint, data))[0] == grpc.StatusCode.UNAUTHENTICATED
        auth = (("authorization", f"Bearer {TOKEN}"),)
        assert (await call(endpoint, data, metadata=auth))[0] == grpc.StatusCode.OK
    finally:
        await receiver.stop(0)
        await collector.pipeline.shutdown(5)


# --- fuzz: every mapped key, every kind of garbage -------------------------------------

_rng = random.Random(20261124)
NASTY: list[bytes] = [
    av(int_value=-1), av(int_value=-(2**63)), av(int_value=2**63 - 1), av(int_value=10**9),
    av(double_value=math.nan), av(double_value=math.inf), av(double_value=-math.inf),
    av(double_value=-1.5), av(double_value=-0.0), av(double_value=0.5), av(double_value=1e300),
    av(double_value=2.0**63), av(double_value=5e-324),
    s(""), s("12"), s("-3"), s("NaN"), s("x" * 100_000), s("gpt-4o\x00\n\x1b[2J"),
    av(bool_value=True), av(bytes_value=b"\x00\xff"),
    av(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="a")])),
    av(array_value=ArrayValue()),
    av(kvlist_value=KeyValueList(values=[KeyValue(key="model", value=AnyValue(int_value=1))])),
    b"",  # an AnyValue with nothing set
    b"\x0a\x02\xff\xfe",  # a string that is not UTF-8
    b"\xff\xff\xff\xff",  # not an AnyValue at all
    b"\x0a\x05ab",  # truncated
    *(av(int_value=_rng.randrange(-(2**63), 2**63)) for _ in range(3)),
    *(b"\x21" + struct.pack("<Q", _rng.getrandbits(64)) for _ in range(3)),  # any double
]
TEXT_KEYS = ("llm_observe.prompt", "gen_ai.prompt.0.content", "gen_ai.input.messages",
             "gen_ai.completion")


@pytest.mark.parametrize("key", sorted(set(MAPPED_KEYS) | set(TEXT_KEYS)))
async def test_fuzz_every_mapped_key(door: Door, key: str) -> None:
    for sent, value in enumerate(NASTY, 1):
        try:
            await send(door, hostile({**with_base(), key: value}), sent)
        except AssertionError as exc:
            raise AssertionError(f"{key} = {value[:40]!r}: {exc}") from exc


async def test_fuzz_the_resource_service_name(door: Door) -> None:
    for sent, value in enumerate(NASTY, 1):
        try:
            await send(door, hostile(with_base(), service=value), sent)
        except AssertionError as exc:
            raise AssertionError(f"service.name = {value[:40]!r}: {exc}") from exc


_TIMES = [0, 1, T0, T0 + 1_000_000, T0 + 2_000_000_000, T0 + (MAX_LATENCY_MS + 1) * 1_000_000,
          MAX_TIME_NS, 2**63, U64]
_TTFT_S = sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK
_EVENTS = (CHUNK, sc.OI_FIRST_TOKEN_EVENT, sc.OLLM_GEN_AI_COMPLETION_CHUNK_EVENT, "other")


def _random_time(rng: random.Random) -> int:
    return rng.choice(_TIMES) if rng.random() < 0.8 else rng.getrandbits(64)


@pytest.mark.parametrize("seed", range(6))
async def test_fuzz_span_times_events_and_latencies(door: Door, seed: int) -> None:
    rng = random.Random(seed)
    for sent in range(1, 41):
        attrs = with_base()
        for key in (sc.LATENCY_MS_TOTAL, sc.LATENCY_MS_TTFT, _TTFT_S):
            if rng.random() < 0.3:
                attrs[key] = rng.choice([*NASTY[:13], av(int_value=rng.randrange(0, 10_000)),
                                         av(double_value=rng.random() * 10)])
        events = [(rng.choice(_EVENTS), _random_time(rng)) for _ in range(rng.randrange(3))]
        start, end = _random_time(rng), _random_time(rng)
        try:
            await send(door, hostile(attrs, start=start, end=end, events=events), sent)
        except AssertionError as exc:
            raise AssertionError(f"start={start} end={end} events={events} "
                                 f"attrs={attrs}: {exc}") from exc
