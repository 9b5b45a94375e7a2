"""OTLP receiver benchmark (issues 4, 12): floor vs full receiver, with and without text,
outage; the OTLP/HTTP door (protobuf, JSON) as a ratio of the gRPC door.

Three processes per run, as in production: the load (a grpc client sending
pre-encoded 512-span requests from N concurrent streams), the server under test,
and a loopback OTLP sink standing in for Tempo. Prints JSON lines:

- ``floor_aio`` / ``floor_thread``: a bare TraceService (grpc.aio, and a sync
  thread-pool server) that only decodes each request with the official
  opentelemetry-proto classes and walks every span's attributes into a dict;
- ``full``: ``start_receiver`` + every processor ``build_collector`` assembles +
  Prometheus exporter + OTLP forwarder to the sink; ratio against the aio floor;
- ``*_text``: the same with ~200-character prompt and completion on every span;
- ``http_proto`` / ``http_json`` (``*_text``): the full receiver through the OTLP/HTTP
  door (bench/receiver_http.py), ``ratio_vs_grpc`` against ``full`` (``full_text``);
- ``workers_1`` / ``workers_2`` (``*_text``): ``serve --workers N`` as a real process tree,
  and the multiprocess metric update cost (bench/receiver_workers.py);
- ``outage``: the sink stops for ``--outage-s`` seconds mid-run and comes back;
  the load retries refused requests as an SDK does; spans lost = accepted - received.

Spans/s counts spans the server answered OK; p99 is the client-side latency of one
Export call; server CPU µs per span is the server process's CPU time over the spans
it took (less sensitive than wall time to other work on a shared machine). Servers
are run alternately ``--repeats`` times and the median of each figure is kept.

Run from the repository root:
``python -m bench.receiver [--quick] [--outage-s 30] [--seconds 5] [--repeats 3]
[--only workers | --only http | --only a,b] [--baseline 51b5287[,ba477de]]``

``--baseline COMMIT[,COMMIT]`` runs each commit's own receiver (bench/baseline.py: a git
worktree beside the repository) as ``base_<commit>_full*`` beside each ``full*`` run,
alternating, and adds ``ratio_vs_<commit>`` (spans/s) and ``cpu_ratio_vs_<commit>`` (its
server CPU per span / ours) to the ``full*`` figures: medians of per-round paired ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import random
import statistics
import time
from typing import Any

from bench._common import COMPLETIONS, PROMPTS, distinct, emit
from bench.receiver_sink import Sink

BATCH = 512
PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("claude-3-5-sonnet-20241022",
          "anthropic"), ("gemini-1.5-pro", "gemini"), ("mistral-large-latest", "mistral")]
SERVICES = ["checkout", "search", "support", "reports"]


# --- load ---------------------------------------------------------------------------

def make_requests(n_requests: int, text: bool, seed: int = 42) -> list[bytes]:
    """Distinct ExportTraceServiceRequests of BATCH GenAI-semconv spans each."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    def kv(key: str, value: Any) -> KeyValue:
        if isinstance(value, bool):
            return KeyValue(key=key, value=AnyValue(bool_value=value))
        if isinstance(value, int):
            return KeyValue(key=key, value=AnyValue(int_value=value))
        if isinstance(value, float):
            return KeyValue(key=key, value=AnyValue(double_value=value))
        if isinstance(value, list):
            any_value = AnyValue()
            any_value.array_value.values.extend(AnyValue(string_value=v) for v in value)
            return KeyValue(key=key, value=any_value)
        return KeyValue(key=key, value=AnyValue(string_value=value))

    r = random.Random(seed)
    out = []
    for q in range(n_requests):
        req = ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        rs.resource.attributes.extend([kv("service.name", SERVICES[q % len(SERVICES)]),
                                       kv("telemetry.sdk.language", "python")])
        ss = rs.scope_spans.add()
        ss.scope.name = "opentelemetry.instrumentation.openai"
        for i in range(BATCH):
            model, provider = MODELS[i % len(MODELS)]
            span = ss.spans.add(trace_id=r.randbytes(16), span_id=r.randbytes(8),
                                parent_span_id=r.randbytes(8), name=f"chat {model}", kind=3)
            latency_ms = r.randint(900, 9000)
            span.start_time_unix_nano = 1_750_000_000_000_000_000 + i * 1000
            span.end_time_unix_nano = span.start_time_unix_nano + latency_ms * 10**6
            span.status.code = 1
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                "gen_ai.request.model": model, "gen_ai.response.model": model,
                "gen_ai.response.id": f"chatcmpl-{q}-{i}", "gen_ai.usage.input_tokens":
                r.randint(30, 60), "gen_ai.usage.output_tokens": r.randint(20, 50),
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.response.time_to_first_chunk": r.randint(50, 800) / 1000,
                "server.address": "api.example.com", "server.port": 443,
                "gen_ai.request.temperature": 0.7}
            if i % 17 == 0:
                attrs["llm_observe.retry_count"] = 1
            if text:
                # Eight texts, each span's a variant of its own (bench/_common.py distinct).
                attrs["llm_observe.prompt"] = distinct(PROMPTS[(q + i) % len(PROMPTS)],
                                                       q * BATCH + i)
                attrs["llm_observe.completion"] = distinct(
                    COMPLETIONS[(q + i) % len(COMPLETIONS)], q * BATCH + i)
            span.attributes.extend(kv(k, v) for k, v in attrs.items())
        out.append(req.SerializeToString())
    return out


def run_load(port: int, requests: list[bytes], seconds: float, warmup: float, streams: int,
             once: bool, results: Any) -> None:
    """Send requests (cycled, or each once) from ``streams`` concurrent calls."""
    import grpc
    from google.rpc import error_details_pb2

    async def main() -> tuple[int, list[float], int, float]:
        cpu = time.process_time()  # (grpc's C-core threads count: process-wide)
        sent = 0
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024)])
        rpc = channel.unary_unary(PATH)
        start = time.perf_counter()
        measure_from, deadline = start + warmup, start + warmup + seconds
        latencies: list[float] = []
        accepted = refused = 0
        queue = list(range(len(requests)))
        next_index = 0

        async def stream() -> None:
            nonlocal accepted, refused, next_index, sent
            while once or time.perf_counter() < deadline:
                if once:
                    if not queue:
                        return
                    index = queue.pop(0)
                else:
                    index, next_index = next_index % len(requests), next_index + 1
                while True:
                    t0 = time.perf_counter()
                    try:
                        await rpc(requests[index], timeout=60)
                    except grpc.aio.AioRpcError as error:
                        refused += 1
                        delay = 0.2
                        for key, value in error.trailing_metadata() or ():
                            if key == "google.rpc.retryinfo-bin":
                                info = error_details_pb2.RetryInfo.FromString(value)
                                delay = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
                        await asyncio.sleep(delay)
                        continue
                    t1 = time.perf_counter()
                    sent += BATCH
                    if once or t0 >= measure_from:
                        latencies.append(t1 - t0)
                        accepted += BATCH
                    break

        await asyncio.gather(*(stream() for _ in range(streams)))
        await channel.close()
        return accepted, latencies, refused, (time.process_time() - cpu) / max(sent, 1) * 1e6

    results.put(asyncio.run(main()))


# --- servers ------------------------------------------------------------------------

def run_floor(flavour: str, ready: Any, stop: Any, report: Any) -> None:
    """The floor: decode with the official classes, walk every attribute into a dict."""
    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    handled = 0

    def walk(data: bytes) -> bytes:
        nonlocal handled
        request = ExportTraceServiceRequest.FromString(data)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    _ = {kv.key: kv.value for kv in span.attributes}
                handled += len(ss.spans)
        return b""

    options = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    if flavour == "thread":
        from concurrent.futures import ThreadPoolExecutor
        server = grpc.server(ThreadPoolExecutor(8), options=options)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(lambda d, c: walk(d))}),))
        ready.put(server.add_insecure_port("127.0.0.1:0"))
        server.start()
        cpu = time.process_time()
        stop.get()
        report.put((handled, time.process_time() - cpu))
        server.stop(0)
        return

    async def main() -> None:
        async def handler(data: bytes, context: Any) -> bytes:
            return walk(data)
        server = grpc.aio.server(options=options)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(handler)}),))
        ready.put(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        cpu = time.process_time()
        await asyncio.get_running_loop().run_in_executor(None, stop.get)
        report.put((handled, time.process_time() - cpu))
        await server.stop(0)
    asyncio.run(main())


def run_full(sink_port: int, flavour: str, ready: Any, stop: Any, report: Any,
             queue_max_spans: int = 100_000, door: str = "grpc") -> None:
    """The product: start_receiver + build_collector + the OTLP forwarder to the sink;
    ``door`` "http" also starts the OTLP/HTTP door and hands out its port."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from bench.threads import GcTimes
    from llm_observe.collector.assembly import build_collector
    from llm_observe.collector.exporters.otlp_forwarder import forwarder_from_settings
    from llm_observe.collector.heap import settle_for_serving
    from llm_observe.collector.settings import Settings
    from llm_observe.receiver import start_receiver

    async def main() -> None:
        settings = Settings(tempo_endpoint=f"127.0.0.1:{sink_port}",
                            queue_max_spans=queue_max_spans)
        registry = CollectorRegistry()
        forwarder = forwarder_from_settings(settings, registry)
        assert forwarder is not None
        collector = build_collector(settings, registry, exporters=[forwarder])
        receiver = await start_receiver(collector.pipeline, registry, "127.0.0.1", 0,
                                        settings.otlp_max_message_bytes, flavour=flavour)
        http = None
        if door == "http":
            from bench.receiver_http import start_http_door
            http = await start_http_door(collector, registry, settings.otlp_max_message_bytes)
        # as `llm-observe serve` does: the pipeline started (processors warmed, the word
        # model loaded), then the start-up heap frozen, the young generation sized for
        # requests in flight, the 1 ms switch interval (collector/heap.py)
        await collector.pipeline.start()
        settle_for_serving()
        gc_times = GcTimes()  # the collector's share of the serving (bench/threads.py)
        ready.put((receiver.port if http is None else http.port,
                   [p.name for p in collector.pipeline.processors]))
        cpu = time.process_time()
        await asyncio.get_running_loop().run_in_executor(None, stop.get)
        cpu = time.process_time() - cpu
        gc_times.stop()
        if http is not None:
            await http.stop(1)
        await receiver.stop(1)
        await collector.pipeline.shutdown(60)
        text = generate_latest(registry).decode()
        samples = {s.name + str(sorted(s.labels.items())): s.value
                   for f in text_string_to_metric_families(text) for s in f.samples
                   if s.name.startswith("llm_observe_")}
        samples.update(gc_times.figures(cpu))
        handled = sum(v for k, v in samples.items()
                      if k.startswith("llm_observe_receiver_spans_accepted_total"))
        report.put((int(handled), cpu, samples))
    asyncio.run(main())


# --- orchestration ------------------------------------------------------------------

def throughput(ctx: Any, server: str, requests: list[bytes], args: argparse.Namespace,
               sink: Sink) -> tuple[float, float, float, float]:
    """Run one server under load; returns (spans/s, p99 ms, server CPU µs per span, the
    load process's CPU µs per span sent)."""
    ready, stop, report, results = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Queue()
    if server.startswith("base_"):  # a previous commit (--baseline), its own harness
        from bench.baseline import run_full_at
        flavour = "threads" if server.endswith("full_thread") else "aio"
        proc = ctx.Process(target=run_full_at, args=(args.baseline_roots[server.split("_")[1]],
                                                     sink.port, flavour, ready, stop, report))
    elif server.startswith("http_"):  # the OTLP/HTTP door: http_proto, http_json
        proc = ctx.Process(target=run_full, args=(sink.port, "aio", ready, stop, report,
                                                  100_000, "http"))
    elif server.startswith("full"):
        flavour = "threads" if server == "full_thread" else "aio"
        proc = ctx.Process(target=run_full, args=(sink.port, flavour, ready, stop, report))
    else:
        proc = ctx.Process(target=run_floor,
                           args=(server.removeprefix("floor_"), ready, stop, report))
    proc.start()
    started = ready.get(timeout=60)
    port = started[0] if isinstance(started, tuple) else started
    if server.startswith("http_"):
        from bench.receiver_http import CONTENT_TYPES, run_load_http
        encoding = server.split("_")[1]
        load = ctx.Process(target=run_load_http, args=(
            port, requests, CONTENT_TYPES[encoding], args.seconds, args.warmup, args.streams,
            results))
    else:
        load = ctx.Process(target=run_load, args=(port, requests, args.seconds, args.warmup,
                                                  args.streams, False, results))
    load.start()
    watch = None
    if getattr(args, "threads", False):  # per-thread CPU over the measured window
        from bench.threads import Window
        watch = Window(proc.pid, args.warmup, args.seconds)
    accepted, latencies, _, load_us = results.get(timeout=args.seconds + args.warmup + 120)
    load.join()
    threads = watch.table(accepted, accepted // BATCH) if watch is not None else None
    stop.put(True)
    handled, cpu, *rest = report.get(timeout=120)
    if threads is not None:  # ours reports its GC time too (a baseline's harness does not)
        gc_share = {k: v for k, v in rest[0].items() if k.startswith("gc_")} if rest else {}
        emit("receiver", f"{server}_threads", accepted / args.seconds, "spans/s",
             **threads, **gc_share)
    proc.join(120)
    p99 = statistics.quantiles(latencies, n=100)[98] * 1000 if len(latencies) > 2 else 0.0
    return accepted / args.seconds, p99, cpu / max(handled, 1) * 1e6, load_us


def unique_requests(n: int, bases: list[bytes]) -> list[bytes]:
    """``n`` requests cycled from ``bases`` with fresh span ids, so losses can be counted."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    out, counter = [], 0
    for i in range(n):
        request = ExportTraceServiceRequest.FromString(bases[i % len(bases)])
        for span in request.resource_spans[0].scope_spans[0].spans:
            counter += 1
            span.span_id = counter.to_bytes(8, "big")
        out.append(request.SerializeToString())
    return out


def outage(ctx: Any, requests: list[bytes], args: argparse.Namespace, sink: Sink) -> None:
    """Tempo stops for ``--outage-s`` while the load sends more than the queue holds."""
    ready, stop, report, results = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Queue()
    queue = 20_000 if args.quick else 100_000
    proc = ctx.Process(target=run_full, args=(sink.port, "aio", ready, stop, report, queue))
    proc.start()
    port, _ = ready.get(timeout=60)
    # Earlier throughput runs cycled the same span ids through the sink: count losses by
    # the unique ids this run adds, not by everything the sink ever received.
    before_received, before_unique = sink.count()
    load = ctx.Process(target=run_load, args=(port, requests, 0, 0, args.streams, True, results))
    load.start()
    time.sleep(1.0)
    sink.commands.put("down")
    time.sleep(args.outage_s)
    sink.commands.put("up")
    accepted, _, refused, _ = results.get(timeout=args.outage_s * 10 + 300)
    load.join()
    stop.put(True)  # the receiver stops; the forwarder drains (bounded) before exit
    _, _, forwarder = report.get(timeout=300)
    proc.join(60)
    received, unique = sink.count()
    lost = accepted - (unique - before_unique)
    emit("receiver", "outage_spans_lost", lost, "spans", accepted=accepted,
         received=received - before_received, unique_received=unique - before_unique,
         outage_s=args.outage_s, target=0, queue_max_spans=queue,
         refused_requests=refused,
         retries=sum(v for k, v in forwarder.items() if "retries_total" in k),
         dropped=sum(v for k, v in forwarder.items() if "dropped_spans_total" in k))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--outage-s", type=float, default=30.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", action="store_true", help="per-thread CPU, run-queue "
                        "wait and context switches of each server, each round (bench/threads.py)")
    parser.add_argument("--baseline", default="", help="commits (e.g. 51b5287,ba477de) "
                        "whose receiver runs beside each full run, alternating; ratios")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.outage_s = 1.5, 0.5, min(args.outage_s, 3.0)
        args.repeats = 1
    ctx = mp.get_context("spawn")
    sink = Sink(ctx)
    try:
        plain, text = make_requests(16, False), make_requests(16, True)
        from bench.receiver_http import http_bodies, ratio_figures
        runs = [("floor_aio", plain), ("floor_thread", plain), ("full", plain),
                ("full_thread", plain), ("floor_aio_text", text), ("full_text", text),
                ("http_proto", plain), ("http_json", http_bodies(plain, "json")),
                ("http_proto_text", text), ("http_json_text", http_bodies(text, "json"))]
        # --only a,b: runs whose name holds a or b; an HTTP run brings its gRPC baseline
        wanted = args.only.split(",")
        runs = [(n, r) for n, r in runs if not args.only or any(w in n for w in wanted)
                or (n in ("full", "full_text") and any("http" in w for w in wanted))]
        if args.baseline:  # each full run gets a twin per commit: base_<commit>_full_text
            from bench.baseline import worktree
            refs = args.baseline.split(",")
            args.baseline_roots = {ref: str(worktree(ref)) for ref in refs}
            runs += [(f"base_{ref}_{n}", r) for ref in refs for n, r in runs
                     if n.startswith("full")]
        # The machine is shared: alternate the servers (in reverse order every other
        # round, so a drift in load weighs on both alike) and keep the median of each.
        samples: dict[str, list[tuple[float, float, float, float]]] = {n: [] for n, _ in runs}
        for round_ in range(args.repeats):
            for name, requests in runs if round_ % 2 == 0 else runs[::-1]:
                samples[name].append(throughput(ctx, name.removesuffix("_text"), requests,
                                                args, sink))
        figures = {n: tuple(statistics.median(x[i] for x in v) for i in range(4))
                   for n, v in samples.items()}
        http_extra = ratio_figures(samples)
        if args.baseline:
            from bench.baseline import baseline_figures
            for name, extra_ in baseline_figures(samples, args.baseline.split(",")).items():
                http_extra.setdefault(name, {}).update(extra_)
        for name, (rate, p99, cpu_us, load_us) in figures.items():
            extra: dict[str, Any] = {"batch": BATCH, "streams": args.streams,
                                     "text": name.endswith("_text"), "repeats": args.repeats,
                                     **http_extra.get(name, {})}
            if name.startswith(("full", "base_")):
                floor = figures.get("floor_aio_text" if extra["text"] else "floor_aio")
                if floor:
                    extra["ratio_vs_floor_aio"] = round(rate / floor[0], 3)
                    extra["cpu_ratio_vs_floor_aio"] = round(floor[2] / cpu_us, 3)
                extra["target"] = ">= 20000 spans/s" if extra["text"] else "ratio >= 0.5"
            emit("receiver", f"{name}_spans_per_s", rate, "spans/s", **extra)
            emit("receiver", f"{name}_p99_ms", p99, "ms", **extra)
            emit("receiver", f"{name}_server_cpu_us_per_span", cpu_us, "us", **extra,
                 spans_per_cpu_s=round(1e6 / cpu_us) if cpu_us else None,
                 load_cpu_us_per_span=round(load_us, 2))
        if not args.only or "workers" in args.only:  # serve --workers 1 vs 2 (issue 16)
            from bench.receiver_workers import workers
            workers(ctx, plain, text, args, sink)
        if not args.only or "outage" in args.only:
            bases = make_requests(8, False, seed=7)
            outage(ctx, unique_requests(80 if args.quick else 400, bases), args, sink)
    finally:
        sink.close()


if __name__ == "__main__":
    main()
