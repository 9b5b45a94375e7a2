"""Write-ahead benchmark: the OTLP forwarder in write-ahead mode against its default mode.

Two processes: this one drives an ``OtlpForwarder`` (as the pipeline does: ask
``has_room``, wait while there is none, then ``export``) from ``--streams`` concurrent
exporters, each exporting pre-walked 512-span requests (the batches the receiver
hands over, reused: the forwarder must not mutate them); a loopback OTLP sink in its
own process (``bench.receiver``'s) stands in for Tempo. A run ends when the sink has
received every span. The two modes run alternately ``--repeats`` times in the same run,
each with a fresh spool directory; medians are kept. Prints JSON lines:

- ``<mode>_spans_per_s``: spans delivered to the sink per second (export to last
  span received) — what the forwarder sustains;
- ``<mode>_export_p99_ms``: p99 of one ``export`` call, the time the receiver's answer
  waits for the forwarder (in write-ahead mode: until the batch is fsynced);
- ``<mode>_cpu_us_per_span``: this process's CPU time (loop and executor threads) per span;
- ``write_ahead_ratio``: write-ahead spans/s over default spans/s (median of the
  per-repeat ratios, each pair run back to back).

``_text`` figures use spans with ~200-character prompt and completion (bigger files).

Run from the repository root:
``python -m bench.write_ahead [--quick] [--spans 200000] [--repeats 3] [--spool-dir DIR]``
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import shutil
import statistics
import tempfile
import time
from typing import Any

from bench._common import emit
from bench.receiver import BATCH, make_requests
from bench.receiver_sink import Sink

MODES = ("default", "write_ahead")


def batches(text: bool) -> list[Any]:
    """Pipeline batches as the receiver builds them: LLM spans + the walked request."""
    from llm_observe.otlp.walk import decode_request, walk
    from llm_observe.pipeline import Batch

    walked = [walk(decode_request(data)) for data in make_requests(16, text)]
    return [Batch(w.llm, w) for w in walked]


async def wait_for_room(forwarder: Any, n: int) -> None:
    """Backpressure: try again shortly, as a sender told RESOURCE_EXHAUSTED does."""
    while True:
        if forwarder.has_room(n):
            return
        await asyncio.sleep(0.005)


async def run_mode(mode: str, sink: Sink, work: list[Any], n_requests: int, streams: int,
                   spool_parent: str | None) -> tuple[float, float, float]:
    """One run: (spans/s delivered, export p99 ms, CPU µs per span)."""
    from prometheus_client import CollectorRegistry

    from llm_observe.collector.exporters.otlp_forwarder import OtlpForwarder
    from llm_observe.pipeline.selfmetrics import forwarder_metrics

    spool = tempfile.mkdtemp(prefix="bench-wal-", dir=spool_parent)
    forwarder = OtlpForwarder(f"127.0.0.1:{sink.port}", forwarder_metrics(CollectorRegistry()),
                              spool_dir=spool, write_ahead=mode == "write_ahead")
    await forwarder.start()
    before, _ = sink.count()
    total = n_requests * BATCH
    latencies: list[float] = []
    next_request = 0

    async def stream() -> None:
        nonlocal next_request
        while next_request < n_requests:
            batch = work[next_request % len(work)]
            next_request += 1
            await wait_for_room(forwarder, batch.size)
            t0 = time.perf_counter()
            await forwarder.export(batch)
            latencies.append(time.perf_counter() - t0)

    loop = asyncio.get_running_loop()
    cpu, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(stream() for _ in range(streams)))
    while True:  # until the sink has every span
        received, _ = await loop.run_in_executor(None, sink.count)
        if received - before >= total:
            break
        await asyncio.sleep(0.02)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    await forwarder.shutdown(10)
    shutil.rmtree(spool, ignore_errors=True)
    p99 = statistics.quantiles(latencies, n=100)[98] * 1000 if len(latencies) > 2 else 0.0
    return total / elapsed, p99, cpu / total * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--spans", type=int, default=200_000, help="spans per run")
    parser.add_argument("--streams", type=int, default=4, help="concurrent exports")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--spool-dir", default=None, help="where the spools go (default: tmp)")
    args = parser.parse_args()
    if args.quick:
        args.spans, args.repeats = 30_000, 2
    n_requests = max(1, args.spans // BATCH)
    sink = Sink(mp.get_context("spawn"))
    try:
        for text in (False, True):
            work = batches(text)
            suffix = "_text" if text else ""
            runs: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
            for _ in range(args.repeats):  # alternate: both modes see the same machine
                for mode in MODES:
                    runs[mode].append(asyncio.run(run_mode(
                        mode, sink, work, n_requests, args.streams, args.spool_dir)))
            extra: dict[str, Any] = {"batch": BATCH, "streams": args.streams,
                                     "spans": n_requests * BATCH, "repeats": args.repeats,
                                     "text": text}
            for mode, samples in runs.items():
                rate, p99, cpu = (statistics.median(s[i] for s in samples) for i in range(3))
                emit("write_ahead", f"{mode}{suffix}_spans_per_s", rate, "spans/s", **extra)
                emit("write_ahead", f"{mode}{suffix}_export_p99_ms", p99, "ms", **extra)
                emit("write_ahead", f"{mode}{suffix}_cpu_us_per_span", cpu, "us", **extra)
            ratios = [w[0] / d[0] for d, w in zip(runs["default"], runs["write_ahead"],
                                                  strict=True)]
            emit("write_ahead", f"write_ahead_ratio{suffix}", statistics.median(ratios),
                 "ratio", **extra, per_repeat=[round(r, 3) for r in ratios])
    finally:
        sink.close()


if __name__ == "__main__":
    main()
