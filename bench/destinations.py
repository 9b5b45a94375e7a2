"""Forwarding benchmark: spans/s through one vs three destinations, and OTLP/HTTP vs gRPC
to one, as ratios measured in the same run.

This process drives the forwarding exporter the settings build (one ``OtlpForwarder``, or a
``Fanout`` over three) as the pipeline does (``has_room``, then ``export``) from
``--streams`` concurrent exporters of pre-walked 512-span requests (with ~200-character
texts, so the text policy costs what it costs); each destination's loopback sink runs in a
process of its own (gRPC: ``bench.receiver``'s; OTLP/HTTP: an aiohttp endpoint here). A run
ends when every sink has every span. Setups, run alternately ``--repeats`` times:

- ``grpc_1``: one gRPC destination; ``http_1``: one OTLP/HTTP destination;
- ``grpc_3``: three gRPC destinations, same text policy (one encoding, three deliveries);
- ``grpc_3_mixed``: three gRPC destinations, ``redacted`` / ``full`` / ``none`` (three
  encodings).

Prints JSON lines: ``<setup>_spans_per_s`` (spans taken per second, each delivered to every
destination), ``<setup>_cpu_us_per_span`` (this process), and the ratios
``three_vs_one`` (grpc_3 / grpc_1), ``three_mixed_vs_one``, ``http_vs_grpc``
(http_1 / grpc_1), each the median of per-repeat ratios.

``python -m bench.destinations [--quick] [--spans 100000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import time
from typing import Any

from bench._common import emit
from bench.receiver import BATCH
from bench.receiver_sink import Sink
from bench.write_ahead import batches, wait_for_room

SETUPS = ("grpc_1", "http_1", "grpc_3", "grpc_3_mixed")


def run_http_sink(ready: Any, commands: Any, answers: Any) -> None:
    """An OTLP/HTTP endpoint counting the spans it takes (a process of its own)."""
    from aiohttp import web
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    count = 0

    async def handle(request: web.Request) -> web.Response:
        nonlocal count
        decoded = ExportTraceServiceRequest.FromString(await request.read())
        count += sum(len(ss.spans) for rs in decoded.resource_spans for ss in rs.scope_spans)
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def main() -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/traces", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ready.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, commands.get) != "quit":  # "count"
            answers.put((count, 0))
        await runner.cleanup()
    asyncio.run(main())


class HttpSink(Sink):
    def __init__(self, ctx: Any) -> None:  # the gRPC Sink's protocol, another server
        self.commands, self.answers, ready = ctx.Queue(), ctx.Queue(), ctx.Queue()
        self.process = ctx.Process(target=run_http_sink, args=(ready, self.commands,
                                                               self.answers))
        self.process.start()
        self.port = ready.get(timeout=30)


def exporter(setup: str, grpc: list[Sink], http: Sink) -> Any:
    from prometheus_client import CollectorRegistry

    from llm_observe.collector.exporters.otlp_forwarder.configure import forwarder
    from llm_observe.collector.exporters.otlp_forwarder.destinations import Destination
    from llm_observe.collector.exporters.otlp_forwarder.fanout import Fanout
    from llm_observe.collector.settings import Settings

    registry, settings = CollectorRegistry(), Settings()
    if setup == "http_1":
        found = [Destination("http", f"http://127.0.0.1:{http.port}/v1/traces",
                             "http/protobuf")]
    else:
        n = 1 if setup == "grpc_1" else 3
        texts = ("redacted", "full", "none") if setup.endswith("mixed") else ("redacted",) * 3
        found = [Destination(f"d{i}", f"127.0.0.1:{sink.port}", text=texts[i])
                 for i, sink in enumerate(grpc[:n])]
    made = [forwarder(d, settings, registry) for d in found]
    return made[0] if len(made) == 1 else Fanout(made)


async def run(setup: str, grpc: list[Sink], http: Sink, work: list[Any], n_requests: int,
              streams: int) -> tuple[float, float]:
    """One run: (spans/s taken, CPU µs per span)."""
    fwd = exporter(setup, grpc, http)
    sinks = [http] if setup == "http_1" else grpc[:1 if setup == "grpc_1" else 3]
    loop = asyncio.get_running_loop()
    before = [s.count()[0] for s in sinks]
    await fwd.start()
    total, next_request = n_requests * BATCH, 0

    async def stream() -> None:
        nonlocal next_request
        while next_request < n_requests:
            batch = work[next_request % len(work)]
            next_request += 1
            await wait_for_room(fwd, batch.size)
            await fwd.export(batch)

    cpu, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(stream() for _ in range(streams)))
    for sink, was in zip(sinks, before, strict=True):
        while (await loop.run_in_executor(None, sink.count))[0] - was < total:  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # another process's count: nothing to wait on here
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    await fwd.shutdown(10)
    return total / elapsed, cpu / total * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--spans", type=int, default=100_000, help="spans per run")
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.spans, args.repeats = 20_000, 2
    n_requests = max(1, args.spans // BATCH)
    ctx = mp.get_context("spawn")
    grpc, http = [Sink(ctx) for _ in range(3)], HttpSink(ctx)
    try:
        work = batches(text=True)
        runs: dict[str, list[tuple[float, float]]] = {s: [] for s in SETUPS}
        for _ in range(args.repeats):  # alternate: every setup sees the same machine
            for setup in SETUPS:
                runs[setup].append(asyncio.run(run(setup, grpc, http, work, n_requests,
                                                   args.streams)))
        extra = {"batch": BATCH, "streams": args.streams, "spans": n_requests * BATCH,
                 "repeats": args.repeats, "text": True}
        for setup, samples in runs.items():
            emit("destinations", f"{setup}_spans_per_s",
                 statistics.median(s[0] for s in samples), "spans/s", **extra)
            emit("destinations", f"{setup}_cpu_us_per_span",
                 statistics.median(s[1] for s in samples), "us", **extra)
        for name, num, den in (("three_vs_one", "grpc_3", "grpc_1"),
                               ("three_mixed_vs_one", "grpc_3_mixed", "grpc_1"),
                               ("http_vs_grpc", "http_1", "grpc_1")):
            ratios = [a[0] / b[0] for a, b in zip(runs[num], runs[den], strict=True)]
            emit("destinations", name, statistics.median(ratios), "ratio", **extra,
                 per_repeat=[round(r, 3) for r in ratios])
    finally:
        for sink in (*grpc, http):
            sink.close()


if __name__ == "__main__":
    main()
