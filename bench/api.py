"""REST record throughput (issue 3): record and record-batch over real HTTP on loopback.

The server is ``llm-observe serve`` in its own process; this process is the load
generator (aiohttp client, keep-alive connections, fixed concurrency). For batch sizes
1 (``/v1/metrics/record``), 100 and 1,000 (``/v1/metrics/record-batch``) it prints
spans/s and the p50/p99 latency of one request. The baseline, measured in the same run,
is the same span records fed to the same pipeline in-process: once as ready ``LlmSpan``
objects (pipeline only) and once from the decoded JSON dicts (validation + pipeline).
``ratio_vs_inprocess`` = in-process spans/s over HTTP spans/s: the cost of the HTTP door
relative to the pipeline's own (target <= 2 for record-batch; >= 20,000 spans/s).

Run from the repository root: python -m bench.api [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp

from bench._common import emit, quick, rng
from llm_observe.collector.assembly import build_collector
from llm_observe.collector.settings import Settings
from llm_observe.span import LlmSpan

BENCH = "api"
MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"),
          ("claude-3-5-sonnet-20241022", "anthropic"), ("gemini-1.5-pro", "google"),
          ("mistral-large-latest", "mistral")]
SERVICES = ["checkout", "search", "support", "reports"]
FINISH = ["stop", "stop", "stop", "length", "tool_calls"]
# The collector both sides run: embeddings off (spans without text are never embedded
# anyway, and the warm-up would steal a core from the measurement).
SERVER_ENV = {"LLM_OBSERVE_EMBEDDING_ENABLED": "false", "LLM_OBSERVE_OTLP_PORT": "0"}


def span_records(n: int) -> list[dict[str, Any]]:
    """``n`` spec-2.1 span records as a client would send them (no prompt text)."""
    r = rng()
    out = []
    for i in range(n):
        model, provider = MODELS[i % len(MODELS)]
        total = r.randint(200, 9000)
        out.append({
            "model": model, "provider": provider, "service_name": SERVICES[i % len(SERVICES)],
            "prompt_tokens": r.randint(30, 4000), "completion_tokens": r.randint(20, 800),
            "latency_ms_total": total, "latency_ms_ttft": r.randint(20, min(total, 900)),
            "finish_reason": FINISH[i % len(FINISH)], "status": "error" if i % 50 == 0
            else "success", "pii_detected": i % 97 == 0, "injection_attempt": i % 211 == 0,
            "retry_count": 1 if i % 17 == 0 else 0,
        })
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server() -> tuple[subprocess.Popen[str], str]:
    port, metrics = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
    env.update(SERVER_ENV)
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_observe.cli", "serve", "--port", str(port),
         "--metrics-port", str(metrics), "--otlp-http-port", "0", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "ready:" in line:
            return proc, f"http://127.0.0.1:{port}"
    raise RuntimeError("llm-observe serve did not start")


async def load(base: str, path: str, payloads: list[bytes], concurrency: int) -> list[float]:
    """POST every payload with ``concurrency`` workers; the latency of each, in seconds."""
    latencies: list[float] = []
    queue = iter(payloads)
    connector = aiohttp.TCPConnector(limit=concurrency)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker() -> None:
            for body in queue:
                start = time.perf_counter()
                async with session.post(base + path, data=body, headers=headers) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{path}: HTTP {resp.status}")
                latencies.append(time.perf_counter() - start)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def payloads_for(records: list[dict[str, Any]], batch: int) -> tuple[str, list[bytes]]:
    if batch == 1:
        return "/v1/metrics/record", [json.dumps(r).encode() for r in records]
    return "/v1/metrics/record-batch", [
        json.dumps({"spans": records[i:i + batch]}).encode()
        for i in range(0, len(records), batch)]


async def in_process(records: list[dict[str, Any]], batch: int, *,
                     validate: bool) -> float:
    """Spans/s of the same records through the same pipeline, no HTTP."""
    collector = build_collector(Settings(embedding_enabled=False, otlp_port=0))
    pipeline = collector.pipeline
    chunks = [records[i:i + batch] for i in range(0, len(records), batch)]
    prebuilt = None if validate else [[LlmSpan.from_dict(r) for r in c] for c in chunks]
    start = time.perf_counter()
    for i, chunk in enumerate(chunks):
        spans = [LlmSpan.from_dict(r) for r in chunk] if prebuilt is None else prebuilt[i]
        await pipeline.submit(spans)
    elapsed = time.perf_counter() - start
    await pipeline.shutdown()
    return len(records) / elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(base: str, records: list[dict[str, Any]], batch: int,
                  concurrency: int) -> dict[str, Any]:
    """One round: the records over HTTP, then the same records in-process (twice)."""
    path, bodies = payloads_for(records, batch)
    start = time.perf_counter()
    latencies = await load(base, path, bodies, concurrency)
    http_rate = len(records) / (time.perf_counter() - start)
    return {"http": http_rate, "latencies": latencies,
            "pipeline": await in_process(records, batch, validate=False),
            "validated": await in_process(records, batch, validate=True)}


async def main() -> None:
    small = quick()
    # (batch, spans per round, concurrency). The machine is shared: each figure is the
    # median of ROUNDS rounds, and each round runs HTTP and in-process back to back, so a
    # burst of background load hits both sides of a ratio alike.
    plan = [(1, 1_000 if small else 6_000, 8), (100, 10_000 if small else 60_000, 4),
            (1000, 10_000 if small else 100_000, 2)]
    rounds = 3
    proc, base = start_server()
    try:
        warm = span_records(2_000)
        for batch in (1, 100, 1000):
            path, bodies = payloads_for(warm, batch)
            await load(base, path, bodies, 4)
        for batch, n, concurrency in plan:
            records = span_records(n)
            results = [await measure(base, records, batch, concurrency) for _ in range(rounds)]
            http_rate = statistics.median(r["http"] for r in results)
            pipeline_rate = statistics.median(r["pipeline"] for r in results)
            validated_rate = statistics.median(r["validated"] for r in results)
            latencies = [x for r in results for x in r["latencies"]]
            common = {"batch": batch, "spans": n, "rounds": rounds, "concurrency": concurrency}
            emit(BENCH, "http_spans_per_s", http_rate, "spans/s", **common)
            emit(BENCH, "http_request_p50_ms", 1000 * statistics.median(latencies), "ms",
                 **common)
            emit(BENCH, "http_request_p99_ms", 1000 * pct(latencies, 0.99), "ms", **common)
            emit(BENCH, "inprocess_pipeline_spans_per_s", pipeline_rate, "spans/s", **common)
            emit(BENCH, "inprocess_validate_pipeline_spans_per_s", validated_rate, "spans/s",
                 **common)
            emit(BENCH, "ratio_vs_inprocess",
                 statistics.median(r["pipeline"] / r["http"] for r in results), "x",
                 **common, baseline="inprocess_pipeline")
            emit(BENCH, "ratio_vs_inprocess_validated",
                 statistics.median(r["validated"] / r["http"] for r in results), "x",
                 **common, baseline="inprocess_validate_pipeline")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


if __name__ == "__main__":
    asyncio.run(main())
