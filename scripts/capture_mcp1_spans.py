"""Capture the spans an mcp 1.x client emits under OpenLLMetry's MCP instrumentation (mcp
1.x has no OpenTelemetry of its own), as the OTLP request the collector receives.

A FastMCP stdio server with one tool (``lookup_order``, whose result holds an e-mail), a
client that initialises, calls the tool and lists the tools. Run it in a scratch venv:

    python -m venv /tmp/mcp1 && /tmp/mcp1/bin/pip install 'mcp==1.30.*' \\
        opentelemetry-instrumentation-mcp==0.62.4 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2
    /tmp/mcp1/bin/python scripts/capture_mcp1_spans.py \\
        tests/data/agents/mcp/mcp1_openllmetry_client.pb

Captured with mcp 1.30.0, opentelemetry-instrumentation-mcp 0.62.4, opentelemetry-sdk 1.45.2.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

SERVER = '''
from mcp.server.fastmcp import FastMCP
mcp = FastMCP("orders")

@mcp.tool()
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"Order {order} shipped. Contact jane.doe@example.com."

mcp.run()
'''


def main(out: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.instrumentation.mcp import McpInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "mcp1-client"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    McpInstrumentor().instrument(tracer_provider=provider)

    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-c", SERVER])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            result = await s.call_tool("lookup_order", {"order": "88213"})
            print(result.content[0].text)  # type: ignore[union-attr]
            await s.list_tools()

    asyncio.run(run())
    out.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    print(len(memory.get_finished_spans()), "spans written to", out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
