"""Agent, tool, workflow and MCP spans of each producer, shaped as each emits them (real
openai-agents captures in test_metrics_e2e; here the rule table row by row), and bad input."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import SpanKind, Tracer

from llm_observe.agents.classify import AgentOp
from llm_observe.otlp.walk import decode_request
from tests.agents.helpers import Run, walk_built
from tests.receiver.conftest import T0, record_spans


def ops(*spans: tuple[str, dict[str, Any]], kind: SpanKind = SpanKind.INTERNAL,
        error: bool = False, nested: bool = False, duration_ms: int = 250) -> list[AgentOp]:
    def build(t: Tracer) -> None:
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


def test_a_request_of_20000_tool_spans_with_a_name_and_a_call_id_each_stays_bounded() -> None:
    def build(t: Tracer) -> None:
        run = t.start_span("invoke_agent big", start_time=T0, attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "big"})
        ctx = trace.set_span_in_context(run)
        for i in range(20_000):
            s = t.start_span("execute_tool", context=ctx, start_time=T0, attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"tool-{i}",
                "gen_ai.tool.call.id": f"call-{i}", "gen_ai.conversation.id": f"conv-{i}"})
            s.end(end_time=T0 + 1_000_000)
        run.end(end_time=T0 + 10**9)
    request = encode_spans(record_spans(build)).SerializeToString()
    run = Run()
    began = time.perf_counter()
    w = run.send(decode_request(request))
    assert time.perf_counter() - began < 30
    assert len(w.agents) == 20_001
    assert run.value("gen_ai_execute_tool_duration_seconds_count") == 20_000  # all counted
    assert run.value("gen_ai_invoke_agent_duration_seconds_count") == 1  # no children needed
    names = {s.labels["gen_ai_tool_name"] for m in run.collector.registry.collect()
             for s in m.samples if s.name == "gen_ai_execute_tool_duration_seconds_count"}
    assert len(names) == 501 and "__overflow__" in names  # max_models (500) + overflow
