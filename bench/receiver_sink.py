"""The loopback OTLP sink the receiver benchmarks forward to, standing in for Tempo: a
process of its own that counts the spans it receives (and their unique span ids), and
that ``Sink.commands`` can take down and bring back (``bench.receiver``'s outage case).
"""

from __future__ import annotations

import asyncio
from typing import Any


def run_sink(ready: Any, commands: Any, answers: Any) -> None:
    """Loopback OTLP sink: counts spans (unique ids too); 'down'/'up' stop/restart it."""
    import grpc

    from llm_observe.otlp.wire import Request

    seen: set[bytes] = set()
    count = 0

    async def handler(data: bytes, context: Any) -> bytes:
        nonlocal count
        for rs in Request.FromString(data).resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    count += 1
                    seen.add(span.span_id)
        return b""

    async def serve(port: int) -> Any:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(handler)}),))
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        return server, bound

    async def main() -> None:
        server, port = await serve(0)
        ready.put(port)
        loop = asyncio.get_running_loop()
        while True:
            command = await loop.run_in_executor(None, commands.get)
            if command == "down":
                await server.stop(0)
            elif command == "up":
                server, _ = await serve(port)
            elif command == "count":
                answers.put((count, len(seen)))
            elif command == "quit":
                await server.stop(0)
                return
    asyncio.run(main())


class Sink:
    def __init__(self, ctx: Any) -> None:
        self.commands, self.answers, ready = ctx.Queue(), ctx.Queue(), ctx.Queue()
        self.process = ctx.Process(target=run_sink, args=(ready, self.commands, self.answers))
        self.process.start()
        self.port = ready.get(timeout=30)

    def count(self) -> tuple[int, int]:
        self.commands.put("count")
        result: tuple[int, int] = self.answers.get(timeout=30)
        return result

    def close(self) -> None:
        self.commands.put("quit")
        self.process.join(10)
