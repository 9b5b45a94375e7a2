"""``serve --workers``: 1 vs 2 workers, and the cost of multiprocess metric updates
(issue 16). Run by ``python -m bench.receiver`` (``--only workers``).

- ``workers_<N>[_text]``: ``llm-observe serve --workers N`` as a real process tree
  (N=1 is the single process, no supervisor), the OTLP forwarder sending to the loopback
  sink, loaded from a separate process over 16 gRPC connections of their own
  (SO_REUSEPORT spreads connections, not requests). Spans/s answered OK, the server
  tree's CPU µs per span (supervisor + workers, from /proc), and the load generator's
  own CPU µs per span beside it, and the sink's (it decodes every forwarded span): this
  machine has 2 cores, so load and sink compete with the workers and the 2-worker figure
  is a floor, not what a bigger host gives.
- ``metrics_update``: ns per counter ``.inc`` and µs per span through
  ``LlmMetrics.record`` (512-span batches), prometheus_client's default values vs its
  multiprocess ``MmapedValue`` (``PROMETHEUS_MULTIPROC_DIR`` set), each in a fresh
  process, alternated ``--repeats`` times; ratio multiprocess / single.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import emit, quick

READY = "ready:"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_load_connections(port: int, requests: list[bytes], seconds: float, warmup: float,
                         streams: int, results: Any) -> None:
    """Like ``bench.receiver.run_load``, but each stream on a TCP connection of its own;
    reports (spans in the window, spans in all, this process's CPU seconds in all)."""
    import asyncio

    import grpc

    from bench.receiver import BATCH, PATH

    async def main() -> tuple[int, int]:
        start = time.perf_counter()
        measure_from, deadline = start + warmup, start + warmup + seconds
        window = total = 0
        counter = iter(range(1 << 62))

        async def stream() -> None:
            nonlocal window, total
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
                ("grpc.use_local_subchannel_pool", 1)])  # no connection shared with others
            rpc = channel.unary_unary(PATH)
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                try:
                    await rpc(requests[next(counter) % len(requests)], timeout=60)
                except grpc.aio.AioRpcError:
                    await asyncio.sleep(0.2)  # backpressure: retry later, as an SDK does
                    continue
                total += BATCH
                if t0 >= measure_from:
                    window += BATCH
            await channel.close()

        await asyncio.gather(*(stream() for _ in range(streams)))
        return window, total

    cpu = time.process_time()
    window, total = asyncio.run(main())
    results.put((window, total, time.process_time() - cpu))


def connections(args: Any) -> int:
    """At least 16: SO_REUSEPORT hashes each connection to a worker, and 4 connections
    split 3:1 or 4:0 between 2 workers more often than not."""
    return max(16, args.streams)


def _tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid, *map(int, children.read_text().split())] if children.exists() else [pid]
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _serve(workers: int, sink_port: int) -> tuple[subprocess.Popen[str], int]:
    otlp = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
    env.update(LLM_OBSERVE_EMBEDDING_ENABLED="false", LLM_OBSERVE_OTLP_HTTP_PORT="0",
               LLM_OBSERVE_TEMPO_ENDPOINT=f"127.0.0.1:{sink_port}",
               LLM_OBSERVE_LOG_LEVEL="warning")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_observe.cli", "serve", "--workers", str(workers),
         "--port", str(_free_port()), "--metrics-port", str(_free_port()),
         "--otlp-port", str(otlp)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if READY in line:
            return proc, otlp
    raise RuntimeError(f"serve --workers {workers} exited {proc.wait()}")


def one_run(ctx: Any, workers: int, requests: list[bytes], args: Any,
            sink: Any) -> tuple[float, float, float, float]:
    """(spans/s, server, load and sink CPU µs per span) of one server run."""
    proc, port = _serve(workers, sink.port)
    try:
        results = ctx.Queue()
        load = ctx.Process(target=run_load_connections,
                           args=(port, requests, args.seconds, args.warmup,
                                 connections(args), results))
        cpu, sink_cpu = _tree_cpu_s(proc.pid), _tree_cpu_s(sink.process.pid)
        load.start()
        window, total, load_cpu = results.get(timeout=args.seconds + args.warmup + 120)
        server_cpu = _tree_cpu_s(proc.pid) - cpu
        sink_cpu = _tree_cpu_s(sink.process.pid) - sink_cpu
        load.join()
    finally:
        proc.terminate()
        proc.wait(60)
    return window / args.seconds, server_cpu / max(total, 1) * 1e6, \
        load_cpu / max(total, 1) * 1e6, sink_cpu / max(total, 1) * 1e6


def workers(ctx: Any, plain: list[bytes], text: list[bytes], args: Any, sink: Any) -> None:
    """1 vs 2 workers, alternated ``args.repeats`` times; then the metric update cost."""
    runs = [(f"workers_{n}{suffix}", n, reqs) for suffix, reqs in (("", plain),
                                                                   ("_text", text))
            for n in (1, 2)]
    samples: dict[str, list[tuple[float, ...]]] = {name: [] for name, _, _ in runs}
    load_average = os.getloadavg()[0]  # other work on the host, before this run
    for _ in range(args.repeats):
        for name, n, reqs in runs:
            samples[name].append(one_run(ctx, n, reqs, args, sink))
    figures = {k: tuple(statistics.median(x[i] for x in v) for i in range(4))
               for k, v in samples.items()}
    for name, (rate, server_us, load_us, sink_us) in figures.items():
        base = figures[name.replace("workers_2", "workers_1")]
        extra = {"connections": connections(args), "repeats": args.repeats, "cores": os.cpu_count(),
                 "text": name.endswith("_text"), "load_cpu_us_per_span": round(load_us, 2),
                 "sink_cpu_us_per_span": round(sink_us, 2),
                 "load_average_before": round(load_average, 2),
                 "ratio_vs_1_worker": round(rate / base[0], 3),
                 "server_cpu_ratio_vs_1_worker": round(server_us / base[1], 3)}
        emit("receiver", f"{name}_spans_per_s", rate, "spans/s", **extra)
        emit("receiver", f"{name}_server_cpu_us_per_span", server_us, "us", **extra)
    metrics_update(args.repeats)


_CHILD = """
import json, time
from prometheus_client import CollectorRegistry, Counter
from bench.processors import make_spans
from llm_observe.collector.exporters.prometheus import LlmMetrics
n = {n}
child = Counter("bench_updates", "bench", ["a"], registry=CollectorRegistry()).labels("x")
spans = make_spans(n, True)
for s in spans:
    s.cost_usd_micro = 1234
metrics = LlmMetrics(CollectorRegistry())
metrics.record(spans[:512])  # every label set's children exist before the clock starts
inc_ns, span_us = [], []
for _ in range(5):  # the fastest of 5: the least disturbed by the other work on the host
    t = time.perf_counter()
    for _ in range(n):
        child.inc(1)
    inc_ns.append((time.perf_counter() - t) / n * 1e9)
    t = time.perf_counter()
    for i in range(0, n, 512):
        metrics.record(spans[i:i + 512])
    span_us.append((time.perf_counter() - t) / n * 1e6)
print(json.dumps([min(inc_ns), min(span_us)]))
"""


def _metrics_child(multiprocess: bool, n: int) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    with tempfile.TemporaryDirectory() as path:
        if multiprocess:
            env["PROMETHEUS_MULTIPROC_DIR"] = path
        out = subprocess.run([sys.executable, "-c", _CHILD.format(n=n)], env=env, check=True,
                             capture_output=True, text=True).stdout
    inc_ns, span_us = json.loads(out)
    return float(inc_ns), float(span_us)


def metrics_update(repeats: int) -> None:
    n = 20_000 if quick() else 100_000
    single: list[tuple[float, float]] = []
    multi: list[tuple[float, float]] = []
    for _ in range(max(repeats, 3)):
        single.append(_metrics_child(False, n))
        multi.append(_metrics_child(True, n))
    for i, (figure, unit) in enumerate((("counter_inc", "ns"), ("record_per_span", "us"))):
        s = statistics.median(x[i] for x in single)
        m = statistics.median(x[i] for x in multi)
        emit("receiver", f"metrics_update_{figure}_single", s, unit)
        emit("receiver", f"metrics_update_{figure}_multiprocess", m, unit,
             ratio_vs_single=round(m / s, 3))
