"""Agent, tool, workflow and MCP spans of each producer, shaped as each emits them (real
openai-agents captures in test_metrics_e2e; here the rule table row by row), and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanKind, Tracer

from llm_observe.agents.classify import AgentOp
from tests.agents.helpers import walk_built
from tests.receiver.conftest import T0


def ops(*spans: tuple[str, dict[str, Any]], kind: SpanKind = SpanKind.INTERNAL,
        error: bool = False, nested: bool = False, duration_ms: int = 250) -> list[AgentOp]:
    def build(t: Tracer) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode
        parent = t.start_span("app", start_time=T0) if nested else None
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        for name, attributes in spans:
            span = t.start_span(name, context=ctx, kind=kind, start_time=T0,
                                attributes=attributes)
            if error:
                span.set_status(Status(StatusCode.ERROR, "boom"))
            span.end(end_time=T0 + duration_ms * 1_000_000)
        if parent is not None:
            parent.end(end_time=T0 + duration_ms * 1_000_000)
    w = walk_built(build)
    assert not w.llm
    return w.agents


def one(name: str, attributes: dict[str, Any], **kw: Any) -> AgentOp | None:
    found = ops((name, attributes), **kw)
    assert len(found) <= 1
    return found[0] if found else None


def shape(op: AgentOp | None) -> tuple[str, str, str, str, str] | None:
    return None if op is None else (op.kind, op.name, op.tool_type, op.method, op.error_type)


@pytest.mark.parametrize(("attributes", "expected"), [
    # GenAI semconv (semantic-conventions-genai model/gen-ai/spans.yaml)
    ({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Planner",
      "gen_ai.agent.id": "asst_123", "gen_ai.conversation.id": "conv_1"},
     ("agent", "Planner", "", "", "")),
    ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
      "gen_ai.tool.type": "function", "gen_ai.tool.call.id": "call_9"},
     ("tool", "search", "function", "", "")),
    ({"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "triage"},
     ("workflow", "triage", "", "", "")),
    ({"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "Planner"}, None),
    # OpenInference (openinference-instrumentation-openai-agents _processor.py)
    ({"openinference.span.kind": "AGENT", "agent.name": "Weather agent"},
     ("agent", "Weather agent", "", "", "")),
    ({"openinference.span.kind": "AGENT"}, ("workflow", "the span", "", "", "")),
    ({"openinference.span.kind": "TOOL", "tool.name": "get_weather"},
     ("tool", "get_weather", "function", "", "")),
    ({"openinference.span.kind": "RETRIEVER"}, ("tool", "the span", "datastore", "", "")),
    ({"openinference.span.kind": "CHAIN"}, ("workflow", "the span", "", "", "")),
    ({"openinference.span.kind": "EMBEDDING"}, None),
    # OpenLLMetry (traceloop.span.kind, traceloop.entity.name)
    ({"traceloop.span.kind": "workflow", "traceloop.entity.name": "pipeline"},
     ("workflow", "pipeline", "", "", "")),
    ({"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"},
     ("agent", "researcher", "", "", "")),
    ({"traceloop.span.kind": "tool", "traceloop.entity.name": "calculator"},
     ("tool", "calculator", "function", "", "")),
    ({"traceloop.span.kind": "task", "traceloop.entity.name": "step"}, None),
    # Vercel AI SDK tool call span (ai.toolCall)
    ({"ai.operationId": "ai.toolCall", "ai.toolCall.name": "weather", "ai.toolCall.id": "x"},
     ("tool", "weather", "", "", "")),
    # no operation, a tool name (Pydantic AI's "running tool" span)
    ({"gen_ai.tool.name": "roll_die", "gen_ai.tool.call.id": "c"},
     ("tool", "roll_die", "", "", "")),
    # not ours
    ({"http.method": "GET"}, None),
])
def test_each_producers_spans(attributes: dict[str, Any],
                              expected: tuple[str, ...] | None) -> None:
    assert shape(one("the span", attributes)) == expected


def test_a_nested_chain_is_a_step_not_a_workflow() -> None:
    assert one("turn", {"openinference.span.kind": "CHAIN"}, nested=True) is None


def test_mcp_client_and_server_by_span_kind() -> None:
    attrs = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup",
             "gen_ai.operation.name": "execute_tool", "mcp.session.id": "s1"}
    assert shape(one("tools/call lookup", attrs, kind=SpanKind.CLIENT)) == \
        ("mcp_client", "lookup", "", "tools/call", "")
    assert shape(one("tools/call lookup", attrs, kind=SpanKind.SERVER)) == \
        ("mcp_server", "lookup", "", "tools/call", "")
    assert shape(one("initialize", {"mcp.method.name": "initialize"},
                     kind=SpanKind.CLIENT)) == ("mcp_client", "", "", "initialize", "")


def test_the_mcp_python_sdks_own_spans() -> None:
    # mcp 2.3: the client span (shared/jsonrpc_dispatcher.py) names the tool only in its
    # name; the server span (server/_otel.py) carries gen_ai.tool.name and execute_tool
    client = {"mcp.method.name": "tools/call", "jsonrpc.request.id": "7"}
    assert shape(one("MCP send tools/call lookup", client, kind=SpanKind.CLIENT)) == \
        ("mcp_client", "lookup", "", "tools/call", "")
    assert shape(one("MCP send tools/list", {"mcp.method.name": "tools/list",
                                             "jsonrpc.request.id": "8"},
                     kind=SpanKind.CLIENT)) == ("mcp_client", "", "", "tools/list", "")
    server = {"mcp.method.name": "tools/call", "mcp.protocol.version": "2025-11-25",
              "jsonrpc.request.id": "7", "gen_ai.operation.name": "execute_tool",
              "gen_ai.tool.name": "lookup", "error.type": "tool_error"}
    assert shape(one("tools/call lookup", server, kind=SpanKind.SERVER, error=True)) == \
        ("mcp_server", "lookup", "", "tools/call", "tool_error")
    assert shape(one("MCP send tools/call " + "x" * 10_000, client,
                     kind=SpanKind.CLIENT)) == ("mcp_client", "x" * 256, "", "tools/call", "")


def test_error_type_from_the_attribute_or_the_status() -> None:
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    assert one("t", {**tool, "error.type": "tool_error"}).error_type == "tool_error"
    assert one("t", tool, error=True).error_type == "_OTHER"
    assert one("t", tool).error_type == ""


def test_duration_in_seconds() -> None:
    op = one("t", {"gen_ai.operation.name": "execute_tool"}, duration_ms=1500)
    assert op is not None and op.duration_s == 1.5


# --- bad input ---------------------------------------------------------------------------

def test_a_tool_span_with_no_name_is_unknown() -> None:
    assert one("", {"gen_ai.operation.name": "execute_tool"}).name == "unknown"
    assert one("", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "  "}
               ).name == "unknown"
    assert one("", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": 42}
               ).name == "unknown"
    assert one("", {"gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": ["a", "b"]}).name == "unknown"


def test_huge_names_are_cut() -> None:
    op = one("x" * 100_000, {"openinference.span.kind": "TOOL",
                              "tool.name": "n" * 1_000_000})
    assert op is not None and op.name == "n" * 256


def test_an_end_before_the_start_is_not_measured() -> None:
    def build(t: Tracer) -> None:
        s = t.start_span("t", start_time=T0 + 10**9,
                         attributes={"gen_ai.operation.name": "execute_tool"})
        s.end(end_time=T0)
    assert walk_built(build).agents == []


def test_an_agent_span_with_no_children_is_one_run() -> None:
    found = ops(("invoke_agent lonely", {"gen_ai.operation.name": "invoke_agent",
                                         "gen_ai.agent.name": "lonely"}))
    assert [shape(o) for o in found] == [("agent", "lonely", "", "", "")]
