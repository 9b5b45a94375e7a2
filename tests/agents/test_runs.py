"""Agent run cost and calls per run, whatever order and request the spans come in
(agents/runs.py, collector/exporters/agent_runs.py), on real producers' spans."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import Tracer, set_span_in_context

from llm_observe.collector.exporters.agent_runs import AgentRunExporter
from llm_observe.otlp.walk import walk
from tests.agents.helpers import DATA, Run, captured, split
from tests.receiver.conftest import record_spans

CAPTURED = sorted(p.stem for p in DATA.glob("*.pb"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run_with_clock() -> tuple[Run, AgentRunExporter, Clock]:
    run = Run()
    exporter = next(e for e in run.collector.pipeline.exporters
                    if isinstance(e, AgentRunExporter))
    clock = Clock()
    exporter.clock = clock
    return run, exporter, clock


def runs(run: Run) -> dict[str, Any]:
    v = run.value
    return {"runs": v("llm_agent_run_cost_usd_micro_count"),
            "cost": v("llm_agent_run_cost_usd_micro_sum"),
            "usd": v("llm_agent_cost_usd_total"),
            "calls": v("gen_ai_invoke_agent_inference_calls_sum"),
            "tools": v("gen_ai_invoke_agent_tool_calls_sum"),
            "incomplete": v("llm_agent_runs_incomplete_total"),
            "late": v("llm_agent_run_late_spans_total")}


@pytest.mark.parametrize("parts", [1, 3, 20, -20])
@pytest.mark.parametrize("name", CAPTURED)
def test_each_captured_run_is_one_run_of_two_calls_and_one_tool(name: str, parts: int) -> None:
    run, exporter, clock = run_with_clock()
    requests = split(captured(name), abs(parts))
    sent = [run.send(r) for r in (reversed(requests) if parts < 0 else requests)]
    llm = [s for w in sent for s in w.llm]
    counted = [s for s in llm if s.duplicate_of is None]
    assert len(counted) == 2  # one call, one count (agents/dedup.py)
    # the run's calls are the inner spans (those with no LLM child), whatever came first
    inner = [s for s in llm if s.span_id not in {c.parent_span_id for c in llm}]
    assert len(inner) == 2
    cost = sum(s.cost_usd_micro or 0 for s in inner)
    assert cost > 0
    # llm_* count the first to arrive: the wrapper only when it came in an earlier request
    wrappers_counted = sum(s not in inner for s in counted)
    assert run.value("llm_observe_dedup_wrapper_counted_total") == wrappers_counted
    assert run.value("llm_cost_usd_micro_total") == sum(s.cost_usd_micro or 0 for s in counted)
    if wrappers_counted == 0:
        assert run.value("llm_cost_usd_micro_total") == cost  # run and llm_* agree
    assert runs(run)["runs"] == 0  # not before the run settled
    clock.now += 5
    exporter.flush()
    got = runs(run)
    assert got == {"runs": 1, "cost": cost, "usd": pytest.approx(cost / 1e6), "calls": 2,
                   "tools": 1, "incomplete": 0, "late": 0}
    assert run.value("llm_agent_run_cost_usd_micro_count",
                     gen_ai_agent_name="Weather agent") == 1


def nested(tracer: Tracer) -> None:
    outer = tracer.start_span("invoke_agent triage", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"})
    ctx = set_span_in_context(outer)
    chat(tracer, ctx)
    inner = tracer.start_span("invoke_agent billing", context=ctx, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing"})
    ictx = set_span_in_context(inner)
    chat(tracer, ictx)
    chat(tracer, ictx)
    tracer.start_span("execute_tool refund", context=ictx, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund"}).end()
    inner.end()
    outer.end()


def chat(tracer: Tracer, ctx: Any) -> None:
    tracer.start_span("chat gpt-4o", context=ctx, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100}).end()


def test_a_call_belongs_to_its_nearest_agent() -> None:
    run, exporter, clock = run_with_clock()
    run.send_spans(record_spans(nested))
    clock.now += 5
    exporter.flush()
    v = run.value
    assert v("gen_ai_invoke_agent_inference_calls_sum", gen_ai_agent_name="triage") == 1
    assert v("gen_ai_invoke_agent_inference_calls_sum", gen_ai_agent_name="billing") == 2
    assert v("gen_ai_invoke_agent_tool_calls_sum", gen_ai_agent_name="billing") == 1
    assert v("gen_ai_invoke_agent_tool_calls_sum", gen_ai_agent_name="triage") == 0
    one = v("llm_agent_run_cost_usd_micro_sum", gen_ai_agent_name="triage")
    assert v("llm_agent_run_cost_usd_micro_sum", gen_ai_agent_name="billing") == 2 * one > 0


def test_a_call_after_its_run_closed_is_late_and_not_added() -> None:
    run, exporter, clock = run_with_clock()
    parts = split(captured("openai_agents_openinference_chat"), 20)
    first_call = next(i for i, p in enumerate(parts) if walk(p).llm)  # the 1st LLM span
    for i, part in enumerate(parts):
        if i != first_call:
            run.send(part)
    clock.now += 5
    exporter.flush()
    assert runs(run)["calls"] == 1
    run.send(parts[first_call])  # sent again: the same span id arrives after the close
    exporter.flush()
    assert runs(run)["late"] == 1 and runs(run)["calls"] == 1 and runs(run)["runs"] == 1


def test_children_whose_agent_never_arrives_count_one_incomplete_run() -> None:
    run, exporter, clock = run_with_clock()
    request = captured("openai_agents_openinference_chat")
    for part in split(request, 20):
        if not any(s.name in ("Weather agent", "Agent workflow")
                   for rs in part.resource_spans for ss in rs.scope_spans for s in ss.spans):
            run.send(part)
    clock.now += 5
    exporter.flush()
    assert runs(run)["runs"] == 0
    clock.now += 600  # the documented timeout (agents.runs.TIMEOUT_S)
    exporter.flush()
    assert runs(run)["incomplete"] == 1
    assert exporter.tracker.traces == {}


def test_an_agent_span_with_no_children_is_a_run_of_nothing() -> None:
    run, exporter, clock = run_with_clock()
    run.send_spans(record_spans(lambda t: t.start_span("invoke_agent idle", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "idle"}).end()))
    clock.now += 5
    exporter.flush()
    assert runs(run) == {"runs": 1, "cost": 0, "usd": 0, "calls": 0, "tools": 0,
                         "incomplete": 0, "late": 0}


def test_a_run_of_100_000_children_is_bounded() -> None:
    from llm_observe.agents.runs import MAX_SPANS

    def app(tracer: Tracer) -> None:
        agent = tracer.start_span("invoke_agent big", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "big"})
        ctx = set_span_in_context(agent)
        for i in range(100_000):
            tracer.start_span("execute_tool t", context=ctx, attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i % 7}",
                "gen_ai.conversation.id": f"conv-{i}", "gen_ai.tool.call.id": f"c{i}"}).end()
        agent.end()
    run, exporter, clock = run_with_clock()
    spans = record_spans(app)
    for i in range(0, len(spans), 5_000):  # as a batch processor would send them
        run.send_spans(spans[i:i + 5_000])
    assert sum(len(t.links) for t in exporter.tracker.traces.values()) <= MAX_SPANS + 1
    clock.now += 5
    exporter.flush()
    got = runs(run)
    assert got["runs"] == 1
    assert got["tools"] == MAX_SPANS  # the agent span has a place past the bound
    assert run.value("llm_agent_run_spans_dropped_total") == 100_000 - MAX_SPANS
    # names under the label guard, ids never labels
    exposition = run.collector.registry
    from prometheus_client import generate_latest
    text = generate_latest(exposition).decode()
    assert "conv-" not in text and "c99999" not in text
