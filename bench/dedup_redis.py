"""What sharing the wrapper memory through Redis costs per LLM span (agents/dedupstore.py
against agents/dedup.py's per-process memory), in the same run.

Workloads, 512-span batches, each span new (so every one is remembered): ``roots`` (a plain
app's root calls), ``parented`` (calls under a span of another request: an HTTP server
span, an agent's turn), ``pairs`` (wrapper + client span in the same batch: no round trip).
Per span: the caller's CPU time (``time.process_time``: building the arguments, redis-py,
decoding) and wall time (with Redis's own work and the loopback round trip), and Redis's
CPU (``INFO cpu``) per span; fastest of ``--repeats``.

    python -m bench.dedup_redis [--repeats 7] [--batch 512]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import emit


def spans(kind: str, n: int, seq: int) -> list[Any]:
    from llm_observe.span import LlmSpan

    out = []
    for i in range(n):
        trace = f"{seq:016x}{i:016x}"
        if kind == "pairs" and i % 2:
            parent = out[-1].span_id
        else:
            parent = None if kind == "roots" else f"{i + 1:016x}"
        span = LlmSpan(model="gpt-4o", provider="openai", trace_id=trace,
                       span_id=f"{seq:08x}{i:08x}", parent_span_id=parent)
        if kind == "pairs" and not i % 2:
            span.trace_id = f"{seq:016x}{i + 1:016x}"  # the next span's wrapper
        out.append(span)
    if kind == "pairs":  # inner first, wrapper second (their export order)
        for k in range(0, n - 1, 2):
            out[k], out[k + 1] = out[k + 1], out[k]
    return out


def redis_cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def best(mark: Callable[[list[Any]], None], kind: str, n: int, repeats: int,
         client: Any = None) -> tuple[float, float, float]:
    """Fastest (cpu, wall, redis cpu) µs per span over ``repeats`` fresh batches."""
    seq = int(time.time() * 1000) % 2**32
    mark(spans(kind, n, seq))  # warm: scripts loaded, pool connected
    out = (float("inf"),) * 3
    for r in range(repeats):
        batch = spans(kind, n, seq + 1 + r)
        rc = redis_cpu(client) if client is not None else 0.0
        c, w = time.process_time(), time.perf_counter()
        mark(batch)
        c, w = time.process_time() - c, time.perf_counter() - w
        rc = redis_cpu(client) - rc if client is not None else 0.0
        out = tuple(min(a, b) for a, b in zip(out, (c, w, rc), strict=True))  # type: ignore[assignment]
    return tuple(x * 1e6 / n for x in out)  # type: ignore[return-value]


def main() -> None:
    import redis

    from llm_observe.agents.dedup import WrapperMemory
    from llm_observe.agents.dedupstore import SharedWrapperMemory
    from tests.redisd import redis_server

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, redis_server(Path(d)) as url:
        client = redis.Redis.from_url(url)
        for kind in ("roots", "parented", "pairs"):
            local = best(WrapperMemory().mark, kind, args.batch, args.repeats)
            shared = SharedWrapperMemory(url)
            red = best(shared.mark, kind, args.batch, args.repeats, client)
            assert shared.health.available() and not shared.local.duplicates, "fell back"
            for what, i in (("cpu", 0), ("wall", 1)):
                emit("dedup_redis", f"{kind}_{what}_us_per_span", red[i], "us", batch=args.batch,
                     local_us=round(local[i], 3), ratio=round(red[i] / local[i], 1))
            emit("dedup_redis", f"{kind}_redis_cpu_us_per_span", red[2], "us",
                 batch=args.batch, round_trips=shared.round_trips)


if __name__ == "__main__":
    main()
