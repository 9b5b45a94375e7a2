"""Instrumentation overhead: what llm-observe adds to an LLM call in the app process.

Run: ``python -m bench.instrument [--quick]``. One JSON line per figure.

- ``openai_nonstream_added_us``: patched minus unpatched ``chat.completions.create``,
  transport in-process (``httpx.MockTransport``) so only our overhead is measured;
  median of paired runs, thread CPU time. Target <= 40 us.
- ``openai_stream_added_us_per_chunk``: the same for a stream read to the end, as the
  marginal cost of a chunk (40- vs 20-chunk streams, provider usage chunk included).
  Target <= 2 us. Also per whole 20-chunk stream, with and without the usage chunk
  (without it, tokens are counted locally at the end).
- ``openai_nonstream_path_us``, ``stream_path_us_per_chunk``: the same code paths in a
  tight loop without the SDK around them (warm caches): what our code itself costs.
- ``observe_added_us``, ``llm_span_added_us``: decorator and context manager around
  an empty body.
- ``cpu_per_span_us``: process CPU (all threads) per patched call minus the unpatched
  call, with the real OTLP gRPC exporter sending to a loopback sink in another process.
- ``burst_dropped_*``: spans lost when 20,000 ``llm_span`` blocks run in a tight loop,
  by the stock BatchSpanProcessor (queue 2,048) vs ours, both exporting OTLP to the sink.

Spans go to an SDK TracerProvider; except for the CPU/burst figures its exporter
discards, so the figures are what the calling thread pays.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import openai
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from bench._common import emit, pin_one_core, quick
from llm_observe import instrument
from llm_observe.instrument import CountingBatchSpanProcessor

BENCH = "instrument"
MESSAGES = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Summarise the quarterly report in three bullet points."}]


class NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def completion_json() -> bytes:
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Revenue grew 12%. Churn fell."}}],
        "usage": {"prompt_tokens": 25, "completion_tokens": 9, "total_tokens": 34},
    }).encode()


def sse_body(chunks: int, usage: bool) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-2024-08-06"}
    events = [{**base, "choices": [{"index": 0, "delta": {"content": f"tok{i} "},
                                    "finish_reason": None}]} for i in range(chunks)]
    events[-1]["choices"][0]["finish_reason"] = "stop"
    if usage:
        events.append({**base, "choices": [],
                       "usage": {"prompt_tokens": 25, "completion_tokens": chunks,
                                 "total_tokens": 25 + chunks}})
    lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def client(body: bytes, content_type: str) -> openai.OpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=body)

    return openai.OpenAI(api_key="k", base_url="https://api.openai.com/v1", max_retries=0,
                         http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def per_call_us(fn: Callable[[], Any], n: int, repeats: int = 15) -> float:
    """Best over repeats of the calling thread's CPU time per call, in microseconds.

    Thread CPU time, not wall time: the machine is shared, and another process taking
    the core would otherwise be billed to whichever variant ran at that moment. The
    minimum is the run least disturbed by cache and frequency noise.
    """
    for _ in range(min(n, 200)):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time_ns() - start) / n / 1000)
    return best


def added(fn: Callable[[], Any], pairs: int, n: int) -> tuple[float, float, float]:
    """(unpatched us/call, median added us/call, IQR/2 of it) from ``pairs`` back-to-back
    (unpatched, patched) runs of ``n`` calls, thread CPU time.

    Paired differences cancel the slow drifts of a shared machine; what is left is the
    real cost of our code *inside* a real SDK call, where it runs with cold caches (the
    same code in a tight loop, ``*_path_*`` below, is several times cheaper)."""
    for _ in range(50):
        fn()
    bases, diffs = [], []
    for _ in range(pairs):
        instrument.uninstrument_all()
        base = per_call_us(fn, n, 1)
        instrument.init_auto_instrumentation()
        diffs.append(per_call_us(fn, n, 1) - base)
        bases.append(base)
    instrument.uninstrument_all()
    diffs.sort()
    quarter = len(diffs) // 4
    spread = (diffs[-quarter] - diffs[quarter]) / 2
    return statistics.median(bases), statistics.median(diffs), spread


def main() -> None:
    pin_one_core()
    n = 300 if quick() else 3000
    provider = TracerProvider()
    provider.add_span_processor(CountingBatchSpanProcessor(NullExporter()))
    instrument.use_tracer_provider(provider)

    pairs = 40 if quick() else 200
    plain = client(completion_json(), "application/json")
    call = lambda: plain.chat.completions.create(model="gpt-4o", messages=MESSAGES)  # noqa: E731
    base, extra, spread = added(call, pairs, 20)
    emit(BENCH, "openai_nonstream_baseline_us", base, "us/call")
    emit(BENCH, "openai_nonstream_added_us", extra, "us/call", target="<= 40",
         ratio=round((base + extra) / base, 3), plus_minus=round(spread, 1))

    stream_costs = {}
    for chunks in (20, 40):
        streaming = client(sse_body(chunks, usage=True), "text/event-stream")

        def read(c: openai.OpenAI = streaming) -> None:
            for _ in c.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True,
                                               stream_options={"include_usage": True}):
                pass

        stream_costs[chunks] = added(read, pairs // 2, 5)
    base20, extra20, spread20 = stream_costs[20]
    emit(BENCH, "openai_stream20_baseline_us", base20, "us/stream")
    emit(BENCH, "openai_stream20_added_us", extra20, "us/stream",
         ratio=round((base20 + extra20) / base20, 3), plus_minus=round(spread20, 1))
    emit(BENCH, "openai_stream_added_us_per_chunk", (stream_costs[40][1] - extra20) / 20,
         "us/chunk", target="<= 2",
         plus_minus=round((stream_costs[40][2] + spread20) / 20, 1))

    no_usage = client(sse_body(20, usage=False), "text/event-stream")

    def read_no_usage() -> None:
        for _ in no_usage.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True):
            pass

    _base, extra_nu, _spread = added(read_no_usage, pairs // 2, 5)
    emit(BENCH, "openai_stream20_no_usage_added_us", extra_nu, "us/stream",
         note="includes counting prompt and completion tokens locally")

    path_figures(plain, n)

    def bare() -> None:
        pass

    observed = instrument.observe("bench", "bare")(bare)

    def in_span() -> None:
        with instrument.llm_span("gpt-4o", "openai", "bench"):
            pass

    empty = per_call_us(bare, n * 3)
    emit(BENCH, "observe_added_us", per_call_us(observed, n * 3) - empty, "us/call")
    emit(BENCH, "llm_span_added_us", per_call_us(in_span, n * 3) - empty, "us/call")

    export_figures(plain, n)


def path_figures(plain: openai.OpenAI, n: int) -> None:
    """Our code path alone, the SDK's own work taken out: the patched ``create`` shell
    around a stub returning a parsed ChatCompletion, and the stream wrapper over
    pre-parsed chunks. Same code the patched call runs, without the ~1 ms of SDK noise."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    from llm_observe.instrument.calls import sync_wrapper
    from llm_observe.instrument.extract.openai import ChunkAccumulator
    from llm_observe.instrument.record import LlmCall
    from llm_observe.instrument.streams import SyncStream
    from llm_observe.instrument.targets import openai as target

    parsed = ChatCompletion.model_validate_json(completion_json())
    shell = sync_wrapper(target.SPEC)
    resource = plain.chat.completions
    kwargs = {"model": "gpt-4o", "messages": MESSAGES}

    def stub(**_: Any) -> ChatCompletion:
        return parsed

    base = per_call_us(lambda: stub(**kwargs), n * 3)
    emit(BENCH, "openai_nonstream_path_us", per_call_us(
        lambda: shell(stub, resource, (), kwargs), n * 3) - base, "us/call", target="<= 40")

    def chunks(count: int) -> list[ChatCompletionChunk]:
        return [ChatCompletionChunk.model_validate_json(line[6:])
                for line in sse_body(count, usage=True).decode().split("\n\n")
                if line.startswith("data: {")]

    costs = {}
    for count in (20, 40):
        items = chunks(count)

        def plain_read(items: list[ChatCompletionChunk] = items) -> None:
            for _ in iter(items):
                pass

        def observed_read(items: list[ChatCompletionChunk] = items) -> None:
            call = LlmCall("openai", "gpt-4o", prompt=MESSAGES)
            for _ in SyncStream(iter(items), call, ChunkAccumulator()):
                pass

        costs[count] = per_call_us(observed_read, n) - per_call_us(plain_read, n)
    emit(BENCH, "stream20_path_us", costs[20], "us/stream", note="span included")
    emit(BENCH, "stream_path_us_per_chunk", (costs[40] - costs[20]) / 20, "us/chunk",
         target="<= 2")


def export_figures(plain: openai.OpenAI, n: int) -> None:
    """CPU per span with the real OTLP exporter, and drops in a burst, vs a loopback sink."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    sink = subprocess.Popen([sys.executable, "-m", "bench.instrument", "--sink"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        endpoint = f"http://127.0.0.1:{_ask(sink, '')}"

        def cpu_per_call(processor: Any | None, calls: int) -> float:
            if processor is not None:
                provider = TracerProvider()
                provider.add_span_processor(processor)
                instrument.use_tracer_provider(provider)
                instrument.init_auto_instrumentation()
            start = time.process_time()
            for _ in range(calls):
                plain.chat.completions.create(model="gpt-4o", messages=MESSAGES)
            if processor is not None:
                processor.force_flush()
                instrument.uninstrument_all()
            return (time.process_time() - start) / calls * 1e6

        calls = max(n, 2000)
        base = cpu_per_call(None, calls)
        ours = CountingBatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True))
        emit(BENCH, "cpu_per_span_us", cpu_per_call(ours, calls) - base, "us/span",
             note="app-side CPU incl. OTLP export, all threads")

        burst = 5000 if quick() else 20000

        def burst_sent(processor: Any) -> int:
            before = _ask(sink, "count")
            provider = TracerProvider()
            provider.add_span_processor(processor)
            instrument.use_tracer_provider(provider)
            for _ in range(burst):
                with instrument.llm_span("gpt-4o", "openai", "burst"):
                    pass
            processor.force_flush()
            return _ask(sink, "count") - before

        stock_sent = burst_sent(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint,
                                                                    insecure=True)))
        ours = CountingBatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True))
        ours_sent = burst_sent(ours)
        emit(BENCH, "burst_dropped_stock_bsp", burst - stock_sent, "spans", of=burst)
        emit(BENCH, "burst_dropped_ours", burst - ours_sent, "spans", of=burst,
             counted=ours.dropped)
    finally:
        sink.terminate()
        sink.wait()


def _ask(sink: subprocess.Popen[str], question: str) -> int:
    assert sink.stdin is not None and sink.stdout is not None
    if question:
        time.sleep(0.5)  # let the last export land
        sink.stdin.write(question + "\n")
        sink.stdin.flush()
    return int(sink.stdout.readline())


def run_sink() -> None:
    """A loopback OTLP TraceService that counts spans (the bench's export target)."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    count = [0]

    class Sink(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> Any:
            count[0] += sum(len(ss.spans) for rs in request.resource_spans
                            for ss in rs.scope_spans)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Sink(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    for _line in sys.stdin:
        print(count[0], flush=True)


if __name__ == "__main__":
    run_sink() if "--sink" in sys.argv else main()
