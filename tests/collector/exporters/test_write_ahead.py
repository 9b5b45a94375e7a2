"""Write-ahead mode of the OTLP forwarder: a span is on disk before its request is
answered. The forwarder against a real loopback OTLP server and a real spool directory,
then ``llm-observe serve`` as a real process killed with SIGKILL mid-outage."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.otlp_forwarder import forwarder_from_settings
from llm_observe.collector.settings import Settings
from llm_observe.pipeline import Backpressure
from tests.cli.test_serve import Served, env, free_port, start
from tests.collector.exporters.test_otlp_forwarder import (
    forwarder,
    sample,
    spans,
    spool_files,
)
from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import T0, llm_span, record_spans


def ids_in(path: Path) -> set[bytes]:
    """Span ids of one spool file, parsed as the backend will parse it."""
    request = ExportTraceServiceRequest.FromString(path.read_bytes())
    return {s.span_id for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans}


def span_ids(start: int, n: int) -> set[bytes]:
    return {bytes.fromhex(f"{i:016x}") for i in range(start, start + n)}


async def wait_until_empty(directory: Path, timeout: float = 10.0) -> None:
    """Until every spool file is deleted (delivered)."""
    for _ in range(int(timeout / 0.01)):
        if not spool_files(directory):
            return
        await asyncio.sleep(0.01)
    raise TimeoutError(f"{len(spool_files(directory))} spool files left")


def temp_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.tmp"))


async def test_export_returns_once_the_spans_are_in_a_complete_file(
        sink: OtlpSink, tmp_path: Path) -> None:
    await sink.stop()  # nothing is delivered meanwhile: what is on disk is all there is
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry, spool_dir=str(tmp_path), write_ahead=True)
    await fwd.export(spans(5))
    [path] = spool_files(tmp_path)
    assert ids_in(path) == span_ids(0, 5)
    assert temp_files(tmp_path) == []
    assert fwd.queued_spans == 0 and fwd.spooled_spans == 5  # nothing held only in memory
    assert sample(registry, "llm_observe_otlp_spool_spans") == 5
    await fwd.shutdown(0.1)
    assert sample(registry, "llm_observe_otlp_dropped_spans_total", reason="shutdown") == 0
    assert spool_files(tmp_path) == [path]  # left for the next run, not dropped


async def test_files_are_removed_once_the_backend_took_them(sink: OtlpSink,
                                                            tmp_path: Path) -> None:
    registry = CollectorRegistry()
    fwd = forwarder(sink, registry, spool_dir=str(tmp_path), write_ahead=True)
    for i in range(4):
        await fwd.export(spans(50, start=i * 50))
    await sink.wait_for_spans(200)
    await wait_until_empty(tmp_path)
    await fwd.shutdown(1)
    assert {s.span_id for s in sink.spans()} == span_ids(0, 200)
    assert sample(registry, "llm_observe_otlp_exported_spans_total") == 200
    assert fwd.spooled_spans == 0


async def test_a_full_spool_leaves_no_room_until_the_backend_takes_it(
        sink: OtlpSink, tmp_path: Path) -> None:
    await sink.stop()
    fwd = forwarder(sink, spool_dir=str(tmp_path), write_ahead=True, spool_max_bytes=4000,
                    max_spans=1_000_000)  # the memory bounds play no part in this mode
    assert fwd.has_room(10_000)  # an empty spool takes even an oversized request
    await fwd.export(spans(10, prompt_text="x" * 300))  # ~4.5 kB on disk
    assert not fwd.has_room(1)
    await sink.start()
    await sink.wait_for_spans(10)
    await wait_until_empty(tmp_path)
    assert fwd.has_room(10)
    await fwd.shutdown(1)


async def test_concurrent_exports_share_a_commit_and_each_span_is_sent_once(
        sink: OtlpSink, tmp_path: Path) -> None:
    await sink.stop()
    fwd = forwarder(sink, spool_dir=str(tmp_path), write_ahead=True, workers=4)
    await asyncio.gather(*(fwd.export(spans(1, start=i)) for i in range(40)))
    files = spool_files(tmp_path)
    # 40 exports at once: one round for the first, one for the 39 that came meanwhile
    assert len(files) <= 2
    assert set().union(*(ids_in(f) for f in files)) == span_ids(0, 40)
    await sink.start()
    await sink.wait_for_spans(40)
    await wait_until_empty(tmp_path)
    await fwd.shutdown(1)
    assert sorted(s.span_id for s in sink.spans()) == sorted(span_ids(0, 40))


async def test_a_write_cut_short_before_its_rename_is_never_sent(sink: OtlpSink,
                                                                 tmp_path: Path) -> None:
    await sink.stop()
    first = forwarder(sink, spool_dir=str(tmp_path), write_ahead=True)
    await first.export(spans(5))
    await first.export(spans(5, start=100))
    await first.shutdown(0)
    # The process dies while writing the second file: its bytes are in the temporary
    # name only, half of them; that request was never answered OK.
    _, cut = spool_files(tmp_path)
    half = cut.with_suffix(".tmp")
    half.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    cut.unlink()
    await sink.start()
    second = forwarder(sink, spool_dir=str(tmp_path), write_ahead=True)
    assert second.spooled_spans == 5 and not half.exists()
    await second.start()
    await sink.wait_for_spans(5)
    await wait_until_empty(tmp_path)
    await second.shutdown(1)
    assert {s.span_id for s in sink.spans()} == span_ids(0, 5) == ids_in_sink_once(sink)


def ids_in_sink_once(sink: OtlpSink) -> set[bytes]:
    ids = [s.span_id for s in sink.spans()]
    assert len(ids) == len(set(ids)), "a span was sent twice"
    return set(ids)


async def test_an_unwritable_spool_answers_backpressure_not_ok(
        sink: OtlpSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fwd = forwarder(sink, spool_dir=str(tmp_path), write_ahead=True)
    assert fwd.spool is not None

    def disk_full(batches: object) -> list[Path]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fwd.spool, "write_many", disk_full)
    with pytest.raises(Backpressure):
        await fwd.export(spans(3))
    assert not fwd.has_room(1)  # left out for a while: the doors answer backpressure
    await fwd.shutdown(0.5)
    assert sink.span_count == 0 and spool_files(tmp_path) == []


async def test_shutdown_delivers_the_spool_within_its_timeout(sink: OtlpSink,
                                                              tmp_path: Path) -> None:
    await sink.stop()
    fwd = forwarder(sink, spool_dir=str(tmp_path), write_ahead=True)
    await fwd.export(spans(30))
    await sink.start()
    await fwd.shutdown(10)  # the backend is back: the drain sends the files, as memory
    assert sink.span_count == 30 and spool_files(tmp_path) == []


async def test_settings_turn_write_ahead_on(tmp_path: Path) -> None:
    settings = Settings(tempo_endpoint=f"127.0.0.1:{free_port()}", spool_dir=str(tmp_path),
                        write_ahead=True)
    fwd = forwarder_from_settings(settings, CollectorRegistry())
    assert fwd is not None
    await fwd.export(spans(2))
    assert len(spool_files(tmp_path)) == 1 and fwd.queued_spans == 0  # on disk at return
    await fwd.shutdown(0)


# --- a real process killed mid-outage ------------------------------------------------

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 50, "gen_ai.response.finish_reasons": ("stop",)}


def requests_of_spans(n_requests: int, per_request: int) -> list[list[object]]:
    """SDK spans, ``per_request`` a request: LLM spans and a plain span among them."""
    def build(tracer: Tracer) -> None:
        for i in range(per_request - 1):
            llm_span(tracer, "chat gpt-4o", CHAT, start=T0 + i)
        tracer.start_span("db query", start_time=T0).end(end_time=T0 + 1000)

    return [list(record_spans(build)) for _ in range(n_requests)]


def send_until_stopped(endpoint: str, batches: list[list[object]], acked: set[int],
                       stop: threading.Event) -> None:
    """Export with the SDK's exporter; a request's span ids count once it answered OK."""
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=5)
    try:
        for batch in batches:
            if stop.is_set():
                return
            if exporter.export(batch) is SpanExportResult.SUCCESS:  # type: ignore[arg-type]
                acked.update(span.context.span_id for span in batch)  # type: ignore[attr-defined]
    finally:
        exporter.shutdown()


async def test_sigkill_mid_outage_loses_no_acknowledged_span(tmp_path: Path) -> None:
    sink_port = free_port()  # Tempo is down: nothing listens there yet
    spool, otlp = tmp_path / "spool", free_port()
    environ = env(LLM_OBSERVE_TEMPO_ENDPOINT=f"127.0.0.1:{sink_port}",
                  LLM_OBSERVE_SPOOL_DIR=str(spool), LLM_OBSERVE_WRITE_AHEAD="true",
                  LLM_OBSERVE_OTLP_PORT=str(otlp), LLM_OBSERVE_PORT=str(free_port()),
                  LLM_OBSERVE_METRICS_PORT=str(free_port()))
    served: Served = await asyncio.to_thread(start, environ=environ)
    acked: set[int] = set()
    stop = threading.Event()
    senders = [threading.Thread(target=send_until_stopped, daemon=True,
                                args=(f"127.0.0.1:{otlp}", requests_of_spans(200, 50), acked,
                                      stop)) for _ in range(2)]
    try:
        for thread in senders:
            thread.start()
        for _ in range(6000):  # requests are answered while Tempo is down...
            if len(acked) >= 2000:
                break
            await asyncio.sleep(0.01)
        assert len(acked) >= 2000, "serve answered too few requests in 60 s"
        served.proc.send_signal(signal.SIGKILL)  # ...and the process dies mid-stream
        await asyncio.to_thread(served.proc.wait, 10)
    finally:
        stop.set()
        if served.proc.poll() is None:
            served.proc.kill()
        for thread in senders:
            await asyncio.to_thread(thread.join, 30)
    assert spool_files(spool), "the acknowledged spans should be on disk"

    sink = OtlpSink(port=sink_port)
    await sink.start()  # Tempo comes back, then the collector, with the same spool
    restarted: Served = await asyncio.to_thread(start, environ=environ)
    try:
        await sink.wait_for_spans(len(acked), timeout=60)
        await wait_until_empty(spool, timeout=30)
    finally:
        code, err = await asyncio.to_thread(restarted.stop, signal.SIGTERM)
        await sink.stop()
    received = {int.from_bytes(s.span_id, "big") for s in sink.spans()}
    assert acked - received == set(), f"{len(acked - received)} acknowledged spans lost"
    assert code == 0 and "Traceback" not in err
