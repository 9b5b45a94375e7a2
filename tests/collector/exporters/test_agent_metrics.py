"""The agent, tool, workflow and MCP histograms as Prometheus exposes them, from real
captured agent runs and from hostile input (names per span, ids per span)."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind, Tracer
from prometheus_client import generate_latest

from llm_observe.agents.classify import AgentOp
from llm_observe.collector.exporters.agents import AgentMetrics
from llm_observe.collector.exporters.label_sets import LabelLimits
from llm_observe.collector.exporters.prometheus import LlmMetrics
from tests.agents.helpers import Run, captured
from tests.receiver.conftest import T0, record_spans


def exposition(run: Run) -> str:
    return generate_latest(run.collector.registry).decode()


def test_a_real_agent_run_is_one_workflow_one_agent_run_and_one_tool_call() -> None:
    for producer, workflow in (("openinference", "Agent workflow"),
                               ("openllmetry", "Agent Workflow")):
        run = Run()
        run.send(captured(f"openai_agents_{producer}_responses_with_client"))
        text = exposition(run)
        assert ('gen_ai_invoke_agent_duration_seconds_count{error_type="",'
                'gen_ai_agent_name="Weather agent"} 1.0') in text
        assert ('gen_ai_execute_tool_duration_seconds_count{error_type="",'
                'gen_ai_tool_name="get_weather",gen_ai_tool_type="function"} 1.0') in text
        assert ('gen_ai_invoke_workflow_duration_seconds_count{error_type="",'
                f'gen_ai_workflow_name="{workflow}"}} 1.0') in text
        # the run's durations are its spans', in seconds: well under the fake's second
        assert 0 < run.value("gen_ai_invoke_agent_duration_seconds_sum") < 5


def build_mcp(t: Tracer) -> None:
    for kind, error in ((SpanKind.CLIENT, None), (SpanKind.CLIENT, "tool_error"),
                        (SpanKind.SERVER, None)):
        attrs = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup",
                 "gen_ai.operation.name": "execute_tool"}
        if error:
            attrs["error.type"] = error
        s = t.start_span("tools/call lookup", kind=kind, start_time=T0, attributes=attrs)
        s.end(end_time=T0 + 20_000_000)


def test_mcp_client_and_server_operations() -> None:
    run = Run()
    run.send_spans(record_spans(build_mcp))
    text = exposition(run)
    for line in (
        'mcp_client_operation_duration_seconds_count{error_type="",gen_ai_tool_name="lookup",'
        'mcp_method_name="tools/call"} 1.0',
        'mcp_client_operation_duration_seconds_count{error_type="tool_error",'
        'gen_ai_tool_name="lookup",mcp_method_name="tools/call"} 1.0',
        'mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="lookup",'
        'mcp_method_name="tools/call"} 1.0',
        'mcp_client_operation_duration_seconds_bucket{error_type="",gen_ai_tool_name="lookup",'
        'le="0.02",mcp_method_name="tools/call"} 1.0',
    ):
        assert line in text, line
    assert "gen_ai_execute_tool_duration_seconds_count{" not in text  # MCP is MCP's own


def metrics(limits: LabelLimits) -> tuple[AgentMetrics, LlmMetrics]:
    llm = LlmMetrics(limits=limits)
    return AgentMetrics(llm.registry, limits, llm.label_overflow), llm


def series(llm: LlmMetrics, family: str) -> int:
    return sum(1 for m in llm.registry.collect() if m.name == family
               for s in m.samples if s.name == f"{family}_count")


def test_a_name_per_span_is_bounded_and_counted() -> None:
    m, llm = metrics(LabelLimits(models=50, label_sets=10_000))
    m.record([AgentOp("tool", f"tool-{i}", 0.1, "", "function") for i in range(5_000)])
    assert series(llm, "gen_ai_execute_tool_duration_seconds") == 51  # 50 + __overflow__
    get = llm.registry.get_sample_value
    assert get("gen_ai_execute_tool_duration_seconds_count", {
        "gen_ai_tool_name": "__overflow__", "gen_ai_tool_type": "function",
        "error_type": ""}) == 4_950  # every call still counted
    assert get("llm_observe_label_overflow_total", {"label": "gen_ai_tool_name"}) == 4_950


def test_the_label_set_budget_holds_when_the_name_guard_is_wide() -> None:
    m, llm = metrics(LabelLimits(models=100_000, label_sets=100))
    m.record([AgentOp("agent", f"agent-{i}", 1.0) for i in range(1_000)])
    assert series(llm, "gen_ai_invoke_agent_duration_seconds") == 101
    assert llm.registry.get_sample_value("gen_ai_invoke_agent_duration_seconds_count", {
        "gen_ai_agent_name": "__overflow__", "error_type": "__overflow__"}) == 900


def test_a_conversation_id_per_span_never_becomes_a_label() -> None:
    def build(t: Tracer) -> None:
        for i in range(2_000):
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                "gen_ai.conversation.id": f"conv-{i}", "gen_ai.agent.id": f"id-{i}"}
            s = t.start_span("invoke_agent support", start_time=T0, attributes=attrs)
            s.end(end_time=T0 + 10**9)
    run = Run()
    run.send_spans(record_spans(build))
    text = exposition(run)
    assert "conv-" not in text and "id-1" not in text
    assert run.value("gen_ai_invoke_agent_duration_seconds_count",
                     gen_ai_agent_name="support") == 2_000


def test_control_characters_in_names_stay_renderable() -> None:
    m, llm = metrics(LabelLimits())
    m.record([AgentOp("tool", "bad\x00name\ud800", 0.1)])
    assert "bad\ufffdname\ufffd".encode() in generate_latest(llm.registry)
