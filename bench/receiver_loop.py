"""The event loop's share of a text span: each exporter's ``export`` alone (issue 24).

``bench.receiver_ir --threads`` counts the loop thread's whole serving; this splits the
exporters that run on it (the forwarder aside: its send is gRPC's): the Prometheus record
(spec + GenAI + exemplars), the agent-op histograms and the agent-run tracker, over
``bench.receiver``'s requests after the real processor chain (as the server hands them
over). Instructions per span by callgrind between two markers (``--instructions``), else
CPU µs per span (median of ``--repeats``; a fresh collector each repeat).

    python -m bench.receiver_loop [--requests 8] [--repeats 5] [--instructions]
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench._common import callgrind_sections, emit, run_sections, sections_args


def exporters(n_requests: int) -> tuple[int, list[tuple[str, Callable[[], None]]]]:
    """(spans, [(exporter, export every batch once)]) in the pipeline's order."""
    from prometheus_client import CollectorRegistry

    from bench.receiver import make_requests
    from llm_observe.collector.assembly import build_collector
    from llm_observe.collector.settings import Settings
    from llm_observe.otlp.walk import decode_request, walk
    from llm_observe.pipeline import Batch

    collector = build_collector(Settings(), CollectorRegistry())
    chain = collector.pipeline.chain
    chain.warm()

    def batches(seed: int) -> list[Batch]:
        out = []
        for request in make_requests(n_requests, text=True, seed=seed):
            walked = walk(decode_request(request))
            out.append(Batch(walked.llm, walked))
            chain.run(out[-1])
        return out

    # the first call warms (label sets made); later ones run other traces (the run tracker
    # would otherwise find its traces waiting already)
    warm, measured = batches(42), batches(43)
    loop = asyncio.new_event_loop()

    def export(e: Any) -> Callable[[], None]:
        todo = [warm]

        async def run() -> None:
            for b in todo.pop() if todo else measured:
                await e.export(b)
        return lambda: loop.run_until_complete(run())

    return n_requests * 512, [(e.name, export(e)) for e in collector.pipeline.exporters]


def child(n_requests: int) -> None:
    run_sections(exporters(n_requests)[1])


def instructions(n_requests: int) -> dict[str, float]:
    return callgrind_sections("bench.receiver_loop", ["--requests", str(n_requests)],
                              n_requests * 512)


def main() -> None:
    args = sections_args(child)
    if args is None:
        return
    if args.instructions:
        for name, value in instructions(args.requests).items():
            emit("receiver_loop", name, value, "instructions/span", requests=args.requests)
        return
    times: dict[str, list[float]] = {}
    spans = 0
    for _ in range(args.repeats):
        spans, work = exporters(args.requests)
        for name, run in work:
            run()  # warm
            gc.collect()
            gc.disable()
            t0 = time.process_time()
            run()
            times.setdefault(name, []).append(time.process_time() - t0)
            gc.enable()
    for name, values in times.items():
        emit("receiver_loop", name, statistics.median(values) / spans * 1e6, "us/span",
             spans=spans)


if __name__ == "__main__":
    main()
