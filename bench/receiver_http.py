"""The OTLP/HTTP door in ``bench.receiver``: its load process and its request bodies.

The same 512-span GenAI requests as the gRPC runs, posted as ``application/x-protobuf``
and as OTLP/JSON (written by the official protobuf JSON printer, ids in hex) from
``--streams`` concurrent keep-alive connections; a 429/503 is retried after Retry-After,
as the SDKs do. Figures are spans/s answered 200 and server CPU per span, each as a ratio
of the gRPC door (``full``) with the same texts, paired: the median over the repeats of
(HTTP run / the gRPC run of the same round), as the machine is shared and noisy.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

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

    from tests.receiver.httpdoor import otlp_json  # (not in the load process: heavy)
    return [otlp_json(ExportTraceServiceRequest.FromString(r)) for r in requests]


def run_load_http(port: int, bodies: list[bytes], content_type: str, seconds: float,
                  warmup: float, streams: int, results: Any) -> None:
    """POST bodies (cycled) from ``streams`` concurrent keep-alive connections for ``seconds``.

    The requests are built before the clock starts — request line, headers and body as one
    buffer each — and written to plain asyncio streams; an answer is read by its
    Content-Length. So the load process costs no more than the gRPC door's C-core client
    (both report their CPU per span) instead of a Python HTTP client's work per request on
    the server's 2-core machine; the server still parses every request in full.
    """
    raw = [(f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body for body in bodies]

    async def main() -> tuple[int, list[float], int, float]:
        cpu, sent = time.process_time(), 0
        start = time.perf_counter()
        measure_from, deadline = start + warmup, start + warmup + seconds
        latencies: list[float] = []
        accepted = refused = 0
        next_index = 0

        async def stream() -> None:
            nonlocal accepted, refused, next_index, sent
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            while time.perf_counter() < deadline:
                index, next_index = next_index % len(raw), next_index + 1
                t0 = time.perf_counter()
                writer.write(raw[index])
                head = await reader.readuntil(b"\r\n\r\n")
                status, headers = _answer_head(head)
                await reader.readexactly(int(headers.get("content-length", 0)))
                sent += BATCH
                if status != 200:
                    refused += 1
                    await asyncio.sleep(float(headers.get("retry-after", 0.2)))
                    continue
                if t0 >= measure_from:
                    latencies.append(time.perf_counter() - t0)
                    accepted += BATCH
            writer.close()
        await asyncio.gather(*(stream() for _ in range(streams)))
        return accepted, latencies, refused, (time.process_time() - cpu) / max(sent, 1) * 1e6

    results.put(asyncio.run(main()))


def _answer_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status and the headers (lower-case names) of an HTTP/1.1 answer's head."""
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ", 2)[1]), headers


async def start_http_door(collector: Any, registry: Any, max_bytes: int) -> Any:
    """The HTTP door on the benchmark's collector (port 0)."""
    from llm_observe.receiver import start_http_receiver
    return await start_http_receiver(collector.pipeline, registry, "127.0.0.1", 0, max_bytes)


def ratio_figures(samples: dict[str, list[tuple[float, float, float, float]]]
                  ) -> dict[str, dict[str, Any]]:
    """Extra fields of each HTTP run: its ratios to the gRPC door with the same texts,
    paired by round (``samples[name][i]``: round i's spans/s, p99 ms, server and load CPU
    µs/span)."""
    out: dict[str, dict[str, Any]] = {}
    for name, runs in samples.items():
        grpc = samples.get("full_text" if name.endswith("_text") else "full")
        if not name.startswith("http_") or not grpc:
            continue
        walls = [h[0] / g[0] for h, g in zip(runs, grpc, strict=True) if g[0]]
        cpus = [g[2] / h[2] for h, g in zip(runs, grpc, strict=True) if h[2]]
        out[name] = {"ratio_vs_grpc": round(statistics.median(walls), 3) if walls else None,
                     "cpu_ratio_vs_grpc": round(statistics.median(cpus), 3) if cpus else None,
                     "ratio_rounds": [round(r, 3) for r in walls],
                     "cpu_ratio_rounds": [round(r, 3) for r in cpus],
                     "target": f"ratio >= {TARGETS[name.split('_')[1]]}"}
    return out
