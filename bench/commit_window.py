"""The commit -> answer window of write-ahead mode (issue #26, 2): how long a request stays
unanswered after its spans are fsynced in the spool (and, counted after commit, recorded
in the series). A process killed inside it leaves the spans on disk (delivered) while the
sender sees no answer and retries: delivered twice, and with ``--workers`` counted twice.

In-process: the real collector (every processor, the Prometheus exporter, the forwarder
in write-ahead mode on a temporary spool, Tempo down) behind the gRPC door on loopback;
``--senders`` threads send ``--requests`` requests of 50 spans each, back to back. The
window of a request is from the forwarder's ``export`` returning (on disk) to the core's
``handle`` returning (the answer is then serialised and written: microseconds more).
Prints JSON lines: the window's median, p99 and max in ms, and ``share_of_time``: the sum
of the windows over the wall time, about the chance that a SIGKILL at a random moment of
such a load lands in a window.

Run from the repository root: ``python -m bench.commit_window [--requests 400]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from prometheus_client import CollectorRegistry

from bench._common import emit
from llm_observe.collector.assembly import build_collector
from llm_observe.collector.exporters.otlp_forwarder import OtlpForwarder, forwarder_from_settings
from llm_observe.collector.settings import Settings
from llm_observe.receiver import start_receiver
from llm_observe.receiver.export import ExportCore
from tests.cli.test_serve import free_port
from tests.collector.exporters.test_write_ahead import requests_of_spans

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class Windows:
    """Wraps the two methods whose returns bound the window (measurement only)."""

    def __init__(self) -> None:
        self.committed: dict[int, float] = {}
        self.seconds: list[float] = []
        export, handle = OtlpForwarder.export, ExportCore.handle

        async def timed_export(fwd: OtlpForwarder, batch: Any) -> None:
            await export(fwd, batch)
            self.committed[id(batch.origin)] = time.perf_counter()

        async def timed_handle(core: ExportCore, walked: Any) -> Any:
            outcome = await handle(core, walked)
            began = self.committed.pop(id(walked), None)
            if began is not None:
                self.seconds.append(time.perf_counter() - began)
            return outcome

        OtlpForwarder.export = timed_export  # type: ignore[method-assign]
        ExportCore.handle = timed_handle  # type: ignore[method-assign]


async def run(args: argparse.Namespace) -> None:
    windows = Windows()
    with tempfile.TemporaryDirectory(prefix="llm-observe-window-") as spool:
        settings = Settings(embedding_enabled=False, spool_dir=spool, write_ahead=True,
                            tempo_endpoint=f"127.0.0.1:{free_port()}")  # Tempo is down
        registry = CollectorRegistry()
        forwarder = forwarder_from_settings(settings, registry)
        collector = build_collector(settings, registry, exporters=[forwarder] if forwarder
                                    else [])
        await collector.pipeline.start()
        door = await start_receiver(collector.pipeline, registry, "127.0.0.1", 0, 16 << 20)
        per_sender = args.requests // args.senders
        requests = [bytes(encode_spans(spans).SerializeToString())
                    for spans in requests_of_spans(per_sender, 50)]

        def send() -> None:
            channel = grpc.insecure_channel(f"127.0.0.1:{door.port}")
            export = channel.unary_unary(EXPORT)
            for data in requests:
                export(data, timeout=10)
            channel.close()

        began = time.perf_counter()
        await asyncio.gather(*(asyncio.to_thread(send) for _ in range(args.senders)))
        wall = time.perf_counter() - began
        await door.stop(1)
        await collector.pipeline.shutdown(0.1)
    w = sorted(windows.seconds)
    extra = {"requests": len(w), "senders": args.senders}
    emit("commit_window", "window_median", statistics.median(w) * 1e3, "ms", **extra)
    emit("commit_window", "window_p99", w[int(len(w) * 0.99)] * 1e3, "ms", **extra)
    emit("commit_window", "window_max", w[-1] * 1e3, "ms", **extra)
    emit("commit_window", "share_of_time", sum(w) / wall, "ratio", **extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--senders", type=int, default=4)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
