"""MCP client and server calls of the real MCP Python SDK (mcp 2.x, its own OpenTelemetry
support), traced once ``init_auto_instrumentation()`` found it: the spans go where
llm-observe's go, the client's ``tools/call`` span names its tool, and the collector measures
them (instrument/targets/mcp.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llm_observe import instrument

pytest.importorskip("mcp.shared._otel")  # mcp 2.x: the SDK's own OpenTelemetry support


def server() -> Any:
    from mcp.server.mcpserver import MCPServer
    app = MCPServer("orders")

    @app.tool()
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"Order {order} shipped."

    @app.tool()
    def broken(order: str) -> str:
        """Always fails."""
        raise ValueError("no such order")

    return app


SERVER_APP = """
from mcp.server.mcpserver import MCPServer
app = MCPServer("orders")

@app.tool()
def lookup(order: str) -> str:
    return f"Order {order} shipped."

app.run("stdio")
"""


async def calls() -> None:
    """The in-process server (its SERVER spans here) and a stdio server in a subprocess,
    for the client's JSON-RPC requests (its CLIENT spans: the in-memory transport skips
    the JSON-RPC dispatcher that makes them)."""
    import sys

    from mcp import Client, StdioServerParameters
    async with Client(server()) as client:
        await client.call_tool("lookup", {"order": "88213"})
        await client.call_tool("broken", {"order": "1"})
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER_APP])
    async with Client(params) as client:
        await client.call_tool("lookup", {"order": "88213"})


def test_mcp_spans_reach_our_provider_with_the_tool_named(instrumented: Any) -> None:
    assert instrument.instrumentation_status()["mcp"] in ("patched", "waiting for import")
    asyncio.run(calls())
    assert instrument.instrumentation_status()["mcp"] == "patched"
    got = instrumented.exporter.get_finished_spans()
    client = {s.name: dict(s.attributes or {}) for s in got if s.name.startswith("MCP send")}
    assert client["MCP send tools/call lookup"]["gen_ai.tool.name"] == "lookup"
    assert client["MCP send tools/call lookup"]["mcp.method.name"] == "tools/call"
    server_spans = {s.name: dict(s.attributes or {}) for s in got
                    if s.name.startswith("tools/call")}
    assert server_spans["tools/call broken"]["error.type"] == "tool_error"

    # the collector measures them: client and server families, by method and tool
    from tests.agents.helpers import Run
    run = Run()
    run.send_spans(got)
    v = run.value
    assert v("mcp_client_operation_duration_seconds_count", mcp_method_name="tools/call",
             gen_ai_tool_name="lookup") == 1
    assert v("mcp_server_operation_duration_seconds_count", mcp_method_name="tools/call",
             gen_ai_tool_name="broken", error_type="tool_error") == 1


def test_unpatched_the_sdk_tracer_is_its_own_again(instrumented: Any) -> None:
    asyncio.run(calls())
    instrument.uninstrument_all()
    instrumented.exporter.clear()
    asyncio.run(calls())  # back on the SDK's global-provider tracer: none of ours
    assert not [s for s in instrumented.exporter.get_finished_spans()
                if s.name.startswith("MCP send")]
    instrument.init_auto_instrumentation()
