"""Hostile-load benchmark (hostile-input issue): a well-behaved client beside each attack.

``llm-observe serve`` runs in its own process (embeddings on, as shipped). For each case a
well-behaved client records one span every 20 ms over the REST API and a prober GETs
``/v1/metrics/health`` every 50 ms, while a hostile client attacks for ``--seconds``:

- ``quiet``: no attack (the baseline of the same run);
- ``surrogate``: records whose model is ``"m\\ud800"``, scraping /metrics between them;
- ``cardinality``: 500 models x 40 services through record-batch, /metrics scraped (the
  slowest scrape is a figure too: the label-set budget is full after a few batches);
- ``big_prompt``: OTLP spans with a 15 MiB prompt and no token counts;
- ``sampled_flood``: OTLP requests of 512 spans all marked ``llm_observe.is_sampled``;
- ``bad_numbers``: OTLP spans with end time 0 and a first-chunk event at 2**64-1;
- ``gzip_bomb``: a 1 MB gzip body that inflates to 1 GiB on POST /v1/metrics/record;
- ``cost_flood``: tool-call/track with cost 1e15.

Figures per case: the well-behaved client's p99 (and its ratio to the quiet p99), the
worst probe latency (beside it, the worst lag of this process's own event loop, which the
probe waits on too: a figure near the probe's means the bench, not the server), and
whether /metrics still answers 200 afterwards. Targets: worst probe <= 100 ms, p99 within
2x of quiet. Run: ``python -m bench.hostile [--seconds 5] [--only cardinality] [--trace
FILE]`` (``--trace``: what holds the server's event loop, ``bench/looplag``).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from bench._common import emit

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
GOOD = {"model": "gpt-4o", "provider": "openai", "service_name": "good", "prompt_tokens": 10,
        "completion_tokens": 5, "latency_ms_total": 900, "status": "success"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, trace: str = "") -> None:
        self.port, self.metrics, self.otlp = free_port(), free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
        if trace:  # bench/looplag/sitecustomize.py: what holds the server's event loop
            env["BENCH_LOOPLAG"] = trace
            env["PYTHONPATH"] = os.pathsep.join(
                [os.path.join(os.path.dirname(__file__), "looplag"),
                 *filter(None, [env.get("PYTHONPATH")])])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llm_observe.cli", "serve", "--port", str(self.port),
             "--metrics-port", str(self.metrics), "--otlp-port", str(self.otlp),
             "--otlp-http-port", "0", "--log-level", "error"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "ready:" in line:
                break
        else:
            raise RuntimeError("llm-observe serve did not start")
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def otlp_request(n: int, attrs: dict[str, Any], *, start: int = 1_750_000_000_000_000_000,
                 end: int | None = None, event_at: int | None = None) -> bytes:
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for _ in range(n):
        span = Span(trace_id=os.urandom(16), span_id=os.urandom(8), name="chat",
                    start_time_unix_nano=start,
                    end_time_unix_nano=start + 900_000_000 if end is None else end,
                    attributes=[_kv(k, v) for k, v in attrs.items()])
        if event_at is not None:
            span.events.add(time_unix_nano=event_at, name="gen_ai.content.completion.chunk")
        scope.spans.append(span)
    return request.SerializeToString()


async def otlp_loop(server: Server, payload: bytes, stop: asyncio.Event) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.otlp}", options=[
            ("grpc.max_send_message_length", 64 << 20)]) as channel:
        call = channel.unary_unary(EXPORT)
        while not stop.is_set():
            try:
                await call(payload, timeout=30)
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.05)


async def http_loop(session: aiohttp.ClientSession, stop: asyncio.Event,
                    send: Callable[[], Awaitable[Any]]) -> None:
    while not stop.is_set():
        try:
            await send()
        except aiohttp.ClientError:
            await asyncio.sleep(0.05)


SCRAPES: list[tuple[float, int]] = []  # the cardinality case's scrapes: (seconds, lines)


def attack(name: str, server: Server, session: aiohttp.ClientSession,
           stop: asyncio.Event) -> Awaitable[None] | None:
    base, scrape = server.base, f"http://127.0.0.1:{server.metrics}/metrics"
    if name == "surrogate":
        body = json.dumps({**GOOD, "model": "m\ud800"}).encode()  # the \ud800 escape

        async def send() -> None:
            await (await session.post(f"{base}/v1/metrics/record", data=body,
                                      headers={"Content-Type": "application/json"})).read()
            await (await session.get(scrape)).read()
        return http_loop(session, stop, send)
    if name == "cardinality":
        batches = [json.dumps({"spans": [{**GOOD, "model": f"m{m}", "service_name": f"s{s}"}
                                         for m in range(m0, m0 + 25) for s in range(40)]})
                   for m0 in range(0, 500, 25)]
        state = {"i": 0}

        async def send() -> None:
            state["i"] += 1
            await (await session.post(f"{base}/v1/metrics/record-batch",
                                      data=batches[state["i"] % len(batches)],
                                      headers={"Content-Type": "application/json"})).read()
            if state["i"] % 5 == 0:
                began, lines = time.perf_counter(), 0
                async with session.get(scrape) as resp:
                    # read in pieces: one read() of ~27 MB joined and counted it on this
                    # process's loop, delaying the prober beside it by up to ~90 ms
                    async for piece in resp.content.iter_chunked(1 << 16):
                        lines += piece.count(b"\n")
                SCRAPES.append((time.perf_counter() - began, lines))
        return http_loop(session, stop, send)
    if name == "big_prompt":
        return otlp_loop(server, otlp_request(1, {"gen_ai.request.model": "gpt-4o",
                                                  "gen_ai.prompt": "word " * 3_145_728}), stop)
    if name == "sampled_flood":
        return otlp_loop(server, otlp_request(512, {
            "gen_ai.request.model": "gpt-4o", "llm_observe.is_sampled": True,
            "llm_observe.prompt": "Summarise the attached report in three bullet points."}),
            stop)
    if name == "bad_numbers":
        return otlp_loop(server, otlp_request(64, {"gen_ai.request.model": "gpt-4o"}, end=0,
                                              event_at=2**64 - 1), stop)
    if name == "gzip_bomb":
        bomb = gzip.compress(b" " * (1 << 30), compresslevel=9)

        async def send() -> None:
            await (await session.post(f"{base}/v1/metrics/record", data=bomb, headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"})).read()
        return http_loop(session, stop, send)
    if name == "cost_flood":
        async def send() -> None:
            await (await session.post(f"{base}/v1/tool-call/track", json={
                "trace_id": "t" * 32, "cost_usd_micro": 10**15,
                "finish_reason": "tool_calls"})).read()
        return http_loop(session, stop, send)
    return None


async def run_case(name: str, server: Server, seconds: float) -> dict[str, float]:
    stop = asyncio.Event()
    latencies: list[float] = []
    probes: list[float] = []
    async with aiohttp.ClientSession() as good, aiohttp.ClientSession() as bad:
        async def well_behaved() -> None:
            while not stop.is_set():
                t = time.perf_counter()
                await (await good.post(f"{server.base}/v1/metrics/record", json=GOOD)).read()
                latencies.append(time.perf_counter() - t)
                await asyncio.sleep(0.02)

        async def prober() -> None:
            while not stop.is_set():
                t = time.perf_counter()
                await (await good.get(f"{server.base}/v1/metrics/health")).read()
                probes.append(time.perf_counter() - t)
                await asyncio.sleep(0.05)

        lag = [0.0]

        async def heartbeat() -> None:  # this process's own loop lag: the probe waits on it too
            while not stop.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.002)
                lag[0] = max(lag[0], time.perf_counter() - t - 0.002)

        hostile = attack(name, server, bad, stop)
        tasks = [asyncio.ensure_future(well_behaved()), asyncio.ensure_future(prober()),
                 asyncio.ensure_future(heartbeat())]
        if hostile is not None:
            tasks.append(asyncio.ensure_future(hostile))
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.wait(tasks, timeout=60)
        async with good.get(f"http://127.0.0.1:{server.metrics}/metrics") as resp:
            metrics_ok = resp.status == 200
    latencies.sort()
    return {"p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
            "worst_probe_ms": max(probes) * 1000, "records": len(latencies),
            "client_lag_ms": lag[0] * 1000,
            "metrics_ok": float(metrics_ok)}


CASES = ("quiet", "surrogate", "cardinality", "big_prompt", "sampled_flood", "bad_numbers",
         "gzip_bomb", "cost_flood")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--trace", default="", help="log what holds the server's event "
                        "loop to this file (bench/looplag/sitecustomize.py)")
    args = parser.parse_args()
    quiet_p99 = None
    for name in CASES:
        if args.only and name not in ("quiet", *args.only.split(",")):
            continue
        server = Server(args.trace)  # a fresh collector per case: no case inherits another's damage
        try:
            fig = await run_case(name, server, args.seconds)
        finally:
            server.stop()
        if name == "quiet":
            quiet_p99 = fig["p99_ms"]
        ratio = fig["p99_ms"] / quiet_p99 if quiet_p99 else 1.0
        emit("hostile", f"{name}_good_client_p99_ms", fig["p99_ms"], "ms",
             ratio_vs_quiet=round(ratio, 2), target="<= 2x quiet")
        emit("hostile", f"{name}_worst_probe_ms", fig["worst_probe_ms"], "ms", target="<= 100",
             bench_loop_lag_ms=round(fig["client_lag_ms"], 1))
        emit("hostile", f"{name}_metrics_ok_after", fig["metrics_ok"], "bool",
             good_records=fig["records"])
        if name == "cardinality" and SCRAPES:  # the label-set budget fills within a scrape or two
            slowest = max(SCRAPES)
            emit("hostile", "cardinality_slowest_scrape_s", slowest[0], "s", lines=slowest[1],
                 scrapes=len(SCRAPES), target="<= 1")


if __name__ == "__main__":
    asyncio.run(main())
