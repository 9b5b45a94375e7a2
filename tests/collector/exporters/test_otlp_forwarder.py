"""The OTLP forwarder against a real loopback OTLP server: retry, RetryInfo, permanent
errors, timeouts, drain on shutdown, an outage with nothing lost, the spool across a
restart, the queue bounds, and what the forwarded spans carry."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.exporters.otlp_forwarder import (
    Backoff,
    OtlpForwarder,
    forwarder_from_settings,
)
from llm_observe.collector.settings import Settings
from llm_observe.pipeline.selfmetrics import forwarder_metrics
from llm_observe.scan import Finding
from llm_observe.span import LlmSpan
from tests.fakes.otlp_sink import OtlpSink, attributes

FAST = Backoff(initial=0.02, maximum=0.1)


def forwarder(sink: OtlpSink, registry: CollectorRegistry | None = None,
              **kw: object) -> OtlpForwarder:
    kw.setdefault("backoff", FAST)
    return OtlpForwarder(sink.endpoint, forwarder_metrics(registry or CollectorRegistry()),
                         **kw)  # type: ignore[arg-type]


def spans(n: int, start: int = 0, **fields: object) -> list[LlmSpan]:
    return [LlmSpan(model="gpt-4o", provider="openai", service_name="svc", prompt_tokens=10,
                    completion_tokens=5, latency_ms_total=100, span_id=f"{i:016x}",
                    trace_id=f"{i:032x}", start_time_ns=1_750_000_000_000_000_000,
                    cost_usd_micro=75, price_version="v1", **fields)  # type: ignore[arg-type]
            for i in range(start, start + n)]


def spool_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.otlp"))


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    """One sample by exact labels; a forwarder series' ``destination`` is ``tempo`` (the
    name of the one-destination case) unless given."""
    if name.startswith("llm_observe_otlp_"):
        labels.setdefault("destination", "tempo")
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return 0.0


async def test_retries_retryable_codes_until_delivered(sink: OtlpSink) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry)
    for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED,
                 grpc.StatusCode.DEADLINE_EXCEEDED):
        sink.fail_next(code)
    await fwd.export(spans(3))
    await sink.wait_for_spans(3)
    await fwd.shutdown(1)
    assert sink.calls == 4
    for code in ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"):
        assert sample(registry, "llm_observe_otlp_export_retries_total", code=code) == 1
    assert sample(registry, "llm_observe_otlp_exported_spans_total") == 3
    assert sample(registry, "llm_observe_otlp_queue_spans") == 0


async def test_retry_info_from_the_backend_is_honoured(sink: OtlpSink) -> None:
    # our own backoff would wait a minute; the backend asks for 50 ms and gets it
    fwd = forwarder(sink, backoff=Backoff(initial=60, maximum=60))
    sink.fail_next(grpc.StatusCode.RESOURCE_EXHAUSTED, retry_after_s=0.05)
    await fwd.export(spans(1))
    await sink.wait_for_spans(1, timeout=5)
    await fwd.shutdown(1)


async def test_a_permanent_error_drops_the_batch_without_retrying(
        sink: OtlpSink, caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry, workers=1)
    sink.fail_next(grpc.StatusCode.INVALID_ARGUMENT, message="bad span ids")
    with caplog.at_level(logging.ERROR):
        await fwd.export(spans(2))
        for _ in range(100):
            if sample(registry, "llm_observe_otlp_dropped_spans_total",
                      reason="permanent_error"):
                break
            await asyncio.sleep(0.01)
    await fwd.export(spans(1, start=10))
    await sink.wait_for_spans(1)
    await fwd.shutdown(1)
    assert sink.calls == 2  # one refused attempt, one good batch: no retry of the bad one
    assert sample(registry, "llm_observe_otlp_dropped_spans_total", reason="permanent_error") == 2
    assert "refused 2 spans permanently (INVALID_ARGUMENT: bad span ids)" in caplog.text


async def test_spans_the_backend_rejects_are_counted(sink: OtlpSink) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry)
    sink.reject_next(1, "span too old")
    await fwd.export(spans(3))
    await sink.wait_for_spans(2)
    await fwd.shutdown(1)
    assert sample(registry, "llm_observe_otlp_dropped_spans_total",
                  reason="rejected_by_backend") == 1
    assert sample(registry, "llm_observe_otlp_exported_spans_total") == 2


async def test_a_slow_backend_times_out_per_attempt_and_is_retried(sink: OtlpSink) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry, timeout_s=0.2)
    sink.slow_next(2.0)
    await fwd.export(spans(1))
    await sink.wait_for_spans(1, timeout=5)
    await fwd.shutdown(1)
    assert sample(registry, "llm_observe_otlp_export_retries_total", code="DEADLINE_EXCEEDED") == 1


async def test_shutdown_drains_the_queue(sink: OtlpSink) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry, batch_spans=100)
    for i in range(20):
        await fwd.export(spans(100, start=i * 100))
    await fwd.shutdown(10)
    assert sink.span_count == 2000
    assert sample(registry, "llm_observe_otlp_dropped_spans_total", reason="shutdown") == 0


async def test_shutdown_with_the_backend_down_counts_what_it_drops(
        sink: OtlpSink, caplog: pytest.LogCaptureFixture) -> None:
    await sink.stop()
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry)
    await fwd.export(spans(7))
    with caplog.at_level(logging.ERROR):
        await fwd.shutdown(0.2)
    assert sample(registry, "llm_observe_otlp_dropped_spans_total", reason="shutdown") == 7
    assert "dropped 7 spans" in caplog.text


async def test_an_outage_loses_nothing(sink: OtlpSink) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry, batch_spans=50)
    await fwd.export(spans(100))
    await sink.wait_for_spans(100)
    await sink.stop()  # Tempo goes down mid-run...
    for i in range(1, 11):
        assert fwd.has_room(100)
        await fwd.export(spans(100, start=i * 100))
        await asyncio.sleep(0.02)
    assert fwd.queued_spans >= 900  # ...the queue holds what arrives meanwhile...
    await sink.start()  # ...and it comes back on the same port
    await sink.wait_for_spans(1100, timeout=10)
    await fwd.shutdown(5)
    ids = {s.span_id for s in sink.spans()}
    assert len(ids) == 1100 == sample(registry, "llm_observe_otlp_exported_spans_total")
    assert sample(registry, "llm_observe_otlp_export_retries_total", code="UNAVAILABLE") >= 1


async def test_the_queue_is_bounded_by_spans_and_bytes(sink: OtlpSink) -> None:
    await sink.stop()
    by_spans = forwarder(sink, max_spans=10)
    await by_spans.export(spans(8))
    assert by_spans.has_room(2) and not by_spans.has_room(3)
    by_bytes = forwarder(sink, max_bytes=1000)
    assert by_bytes.has_room(10_000)  # an empty queue takes even an oversized request
    await by_bytes.export(spans(8, prompt_text="x" * 200))
    assert not by_bytes.has_room(1)
    await by_spans.shutdown(0)
    await by_bytes.shutdown(0)


async def test_the_spool_carries_an_outage_across_a_restart(sink: OtlpSink,
                                                             tmp_path: Path) -> None:
    await sink.stop()
    registry = CollectorRegistry()
    first = forwarder(sink, registry, max_spans=20, spool_dir=str(tmp_path))
    for i in range(5):  # 100 spans, 20 fit in memory: the rest overflow to disk
        assert first.has_room(20)
        await first.export(spans(20, start=i * 20))
    assert first.spooled_spans == 80
    assert sample(registry, "llm_observe_otlp_spool_spans") == 80
    await first.shutdown(0.1)  # memory goes to the spool too
    assert len(spool_files(tmp_path)) >= 5 and first.spooled_spans == 100

    await sink.start()
    second = forwarder(sink, CollectorRegistry(), spool_dir=str(tmp_path))  # "restart"
    assert second.spooled_spans == 100
    await second.start()
    await sink.wait_for_spans(100)
    await second.shutdown(5)
    assert {s.span_id for s in sink.spans()} == {bytes.fromhex(f"{i:016x}") for i in range(100)}
    assert spool_files(tmp_path) == [] and second.spooled_spans == 0


async def test_concurrent_workers_send_each_spooled_batch_once(sink: OtlpSink,
                                                               tmp_path: Path) -> None:
    # Workers read spool files in an executor: a file one of them is reading must not
    # be taken by another meanwhile, or Tempo gets the batch twice.
    await sink.stop()
    first = forwarder(sink, max_spans=10, spool_dir=str(tmp_path))
    for i in range(8):
        await first.export(spans(10, start=i * 10))
    await first.shutdown(0.1)
    assert first.spooled_spans == 80
    await sink.start()
    second = forwarder(sink, CollectorRegistry(), spool_dir=str(tmp_path), workers=4)
    await second.start()
    await sink.wait_for_spans(80)
    await second.shutdown(5)
    ids = [s.span_id for s in sink.spans()]
    assert sorted(ids) == [bytes.fromhex(f"{i:016x}") for i in range(80)]
    assert second.spooled_spans == 0


async def test_a_request_the_backend_finds_too_large_is_split_and_forwarding_goes_on(
        ) -> None:
    # Tempo and the OTel Collector accept 4 MiB by default, the receiver 16 MiB: a batch
    # over the backend's limit is sent again in halves; a single span over it is dropped
    # and counted, and never stalls the spans behind it.
    small = OtlpSink(max_message_bytes=64 * 1024)
    await small.start()
    try:
        registry = CollectorRegistry()
        fwd = forwarder(small, registry)
        text = "x" * 20_000
        await fwd.export(spans(10, prompt_text=text))  # ~200 kB: over the limit together
        await fwd.export(spans(1, start=10, prompt_text="y" * 100_000))  # over it alone
        await fwd.export(spans(5, start=11))
        await small.wait_for_spans(15)
        await fwd.shutdown(5)
    finally:
        await small.stop()
    got = sorted(int(s.span_id.hex(), 16) for s in small.spans())
    assert got == [*range(10), *range(11, 16)]
    assert sample(registry, "llm_observe_otlp_dropped_spans_total", reason="too_large") == 1
    assert sample(registry, "llm_observe_otlp_exported_spans_total") == 15


async def test_a_spool_that_cannot_be_written_does_not_turn_off_backpressure(
        sink: OtlpSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await sink.stop()
    fwd = forwarder(sink, max_spans=10, spool_dir=str(tmp_path))
    assert fwd.spool is not None

    def disk_full(spans: int, data: bytes) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fwd.spool, "write", disk_full)
    await fwd.export(spans(10))  # memory is full now
    assert fwd.has_room(10)  # the spool has room as far as it knows
    await fwd.export(spans(10, start=10))  # the write fails: kept in memory, not lost
    assert fwd.queued_spans == 20
    assert not fwd.has_room(10)  # backpressure, not an ever-growing memory queue
    await sink.start()
    await sink.wait_for_spans(20)
    await fwd.shutdown(5)


async def test_spans_from_the_rest_doors_are_built_with_their_enrichment(sink: OtlpSink) -> None:
    fwd = forwarder(sink)
    [span] = spans(1, prompt_text="mail me at bob@example.com", completion_text="ok",
                   pii_detected=True, finish_reason="stop", session_id="s1")
    span.findings = [Finding("pii", "email", 11, 26, field="prompt")]
    span.trace_cost_usd_micro = 300
    await fwd.export([span])
    await sink.wait_for_spans(1)
    await fwd.shutdown(1)
    [out] = sink.spans()
    a = attributes(out)
    assert out.name == "chat gpt-4o" and out.span_id == bytes.fromhex("0000000000000000")
    assert (a["gen_ai.request.model"], a["gen_ai.provider.name"]) == ("gpt-4o", "openai")
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.response.finish_reasons"]) == (10, ["stop"])
    assert (a["llm_observe.cost_usd_micro"], a["llm_observe.price_version"]) == (75, "v1")
    assert a["llm_observe.trace_cost_usd_micro"] == 300
    assert a["llm_observe.prompt"] == "mail me at [REDACTED:EMAIL]"
    assert out.end_time_unix_nano - out.start_time_unix_nano == 100_000_000
    resource = {kv.key: kv.value.string_value for kv in sink.requests[0].resource_spans[0]
                .resource.attributes}
    assert resource == {"service.name": "svc"}


async def test_redaction_can_be_turned_off(sink: OtlpSink) -> None:
    fwd = forwarder(sink, redact_pii=False)
    [span] = spans(1, prompt_text="mail me at bob@example.com", pii_detected=True)
    span.findings = [Finding("pii", "email", 11, 26, field="prompt")]
    await fwd.export([span])
    await sink.wait_for_spans(1)
    await fwd.shutdown(1)
    assert attributes(sink.spans()[0])["llm_observe.prompt"] == "mail me at bob@example.com"


def test_settings_decide_whether_there_is_a_forwarder(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    assert forwarder_from_settings(Settings(), registry) is None
    fwd = forwarder_from_settings(Settings(tempo_endpoint="localhost:4319", queue_max_spans=7,
                                           spool_dir=str(tmp_path), redact_pii=False), registry)
    assert fwd is not None and fwd.max_spans == 7 and fwd.spool is not None
    assert fwd.encoder.redact_pii is False
