"""The OTLP/HTTP door in ``bench.receiver``: its load process and its request bodies.

The same 512-span GenAI requests as the gRPC runs, posted as ``application/x-protobuf``
and as OTLP/JSON (written by the official protobuf JSON printer, ids in hex) from
``--streams`` concurrent keep-alive connections; a 429/503 is retried after Retry-After,
as the SDKs do. Figures are spans/s answered 200, as a ratio of the gRPC door (``full``)
with the same texts in the same run.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.receiver.httpdoor import otlp_json

BATCH = 512
CONTENT_TYPES = {"proto": "application/x-protobuf", "json": "application/json"}
TARGETS = {"proto": 0.8, "json": 0.5}  # x the gRPC door (issue 12)


def http_bodies(requests: list[bytes], encoding: str) -> list[bytes]:
    """The protobuf requests as the HTTP body of ``encoding`` (proto: unchanged)."""
    if encoding == "proto":
        return requests
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    return [otlp_json(ExportTraceServiceRequest.FromString(r)) for r in requests]


def run_load_http(port: int, bodies: list[bytes], content_type: str, seconds: float,
                  warmup: float, streams: int, results: Any) -> None:
    """POST bodies (cycled) from ``streams`` concurrent connections for ``seconds``."""
    import aiohttp

    async def main() -> tuple[int, list[float], int]:
        url = f"http://127.0.0.1:{port}/v1/traces"
        start = time.perf_counter()
        measure_from, deadline = start + warmup, start + warmup + seconds
        latencies: list[float] = []
        accepted = refused = 0
        next_index = 0
        connector = aiohttp.TCPConnector(limit=streams)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def stream() -> None:
                nonlocal accepted, refused, next_index
                while time.perf_counter() < deadline:
                    index, next_index = next_index % len(bodies), next_index + 1
                    t0 = time.perf_counter()
                    async with session.post(url, data=bodies[index],
                                            headers={"content-type": content_type}) as resp:
                        await resp.read()
                        if resp.status != 200:
                            refused += 1
                            await asyncio.sleep(float(resp.headers.get("retry-after", 0.2)))
                            continue
                    if t0 >= measure_from:
                        latencies.append(time.perf_counter() - t0)
                        accepted += BATCH
            await asyncio.gather(*(stream() for _ in range(streams)))
        return accepted, latencies, refused

    results.put(asyncio.run(main()))


async def start_http_door(collector: Any, registry: Any, max_bytes: int) -> Any:
    """The HTTP door on the benchmark's collector (port 0)."""
    from llm_observe.receiver import start_http_receiver
    return await start_http_receiver(collector.pipeline, registry, "127.0.0.1", 0, max_bytes)


def ratio_figures(figures: dict[str, tuple[float, float, float]]) -> dict[str, dict[str, Any]]:
    """Extra fields of each HTTP run: its ratio to the gRPC door with the same texts."""
    out: dict[str, dict[str, Any]] = {}
    for name, (rate, _, cpu_us) in figures.items():
        if not name.startswith("http_"):
            continue
        encoding = name.split("_")[1]
        grpc = figures.get("full_text" if name.endswith("_text") else "full")
        if grpc:
            out[name] = {"ratio_vs_grpc": round(rate / grpc[0], 3),
                         "cpu_ratio_vs_grpc": round(grpc[2] / cpu_us, 3) if cpu_us else None,
                         "target": f"ratio >= {TARGETS[encoding]}"}
    return out
