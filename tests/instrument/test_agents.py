"""agent_span / tool_span: semconv-shaped spans, nested around llm_span, measured by the
collector as one agent run and one tool call."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import StatusCode

from llm_observe import instrument
from tests.agents.helpers import Run
from tests.instrument.conftest import Spans


def by_name(spans: Spans) -> dict[str, object]:
    return {s.name: s for s in spans.exporter.get_finished_spans()}


def test_agent_tool_and_llm_spans_nest_and_are_semconv_shaped(spans: Spans) -> None:
    with instrument.agent_span("planner", conversation_id="conv-1") as agent:
        with instrument.tool_span("search", call_id="call-1") as tool:
            tool.set_attribute("gen_ai.tool.call.result", "3 hits")
        with instrument.llm_span("gpt-4o", "openai") as llm:
            llm.set_metadata("prompt_tokens", 10)
    got = by_name(spans)
    a, t, m = got["invoke_agent planner"], got["execute_tool search"], got[llm.span.name]
    assert dict(a.attributes) == {"gen_ai.operation.name": "invoke_agent",  # type: ignore[attr-defined]
                                  "gen_ai.agent.name": "planner",
                                  "gen_ai.conversation.id": "conv-1"}
    assert dict(t.attributes) == {"gen_ai.operation.name": "execute_tool",  # type: ignore[attr-defined]
                                  "gen_ai.tool.name": "search", "gen_ai.tool.type": "function",
                                  "gen_ai.tool.call.id": "call-1",
                                  "gen_ai.tool.call.result": "3 hits"}
    agent_id = a.context.span_id  # type: ignore[attr-defined]
    assert t.parent.span_id == agent_id and m.parent.span_id == agent_id  # type: ignore[attr-defined]
    assert agent.span is None  # the handle lets go of the span once it ended


def test_a_failing_tool_is_an_error_span_and_the_exception_is_the_users(spans: Spans) -> None:
    class QuotaExceeded(Exception):
        pass
    boom = QuotaExceeded("no more")
    with pytest.raises(QuotaExceeded) as raised, instrument.tool_span("search"):
        raise boom
    assert raised.value is boom
    span = by_name(spans)["execute_tool search"]
    assert span.status.status_code == StatusCode.ERROR  # type: ignore[attr-defined]
    assert span.attributes["error.type"] == (  # type: ignore[attr-defined]
        f"{__name__}.{QuotaExceeded.__qualname__}")


def test_decorators_make_one_span_per_call_sync_and_async(spans: Spans) -> None:
    @instrument.tool_span("add")
    def add(a: int, b: int) -> int:
        return a + b

    @instrument.agent_span("runner")
    async def run() -> int:
        return add(1, 2) + add(3, 4)

    assert asyncio.run(run()) == 10
    names = [s.name for s in spans.exporter.get_finished_spans()]
    assert sorted(names) == ["execute_tool add", "execute_tool add", "invoke_agent runner"]


def test_a_nameless_tool_still_makes_a_span(spans: Spans) -> None:
    with instrument.tool_span(""):
        pass
    (span,) = spans.exporter.get_finished_spans()
    assert span.name == "execute_tool" and "gen_ai.tool.name" not in span.attributes


def test_our_failure_never_breaks_the_app(spans: Spans,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_observe.instrument import agents

    def broken() -> None:
        raise RuntimeError("tracer gone")
    monkeypatch.setattr(agents, "get_tracer", broken)
    with instrument.agent_span("planner") as handle:
        handle.set_attribute("x", 1)
        result = 42
    assert result == 42 and not spans.exporter.get_finished_spans()


def test_the_collector_counts_one_run_one_tool_call_and_the_llm_call(spans: Spans) -> None:
    with instrument.agent_span("planner"):
        with instrument.tool_span("search", tool_type="datastore"):
            pass
        with instrument.llm_span("gpt-4o", "openai") as llm:
            llm.set_metadata("prompt_tokens", 10)
            llm.set_metadata("completion_tokens", 5)
    run = Run()
    run.send_spans(spans.exporter.get_finished_spans())
    assert run.value("gen_ai_invoke_agent_duration_seconds_count",
                     gen_ai_agent_name="planner", error_type="") == 1
    assert run.value("gen_ai_execute_tool_duration_seconds_count", gen_ai_tool_name="search",
                     gen_ai_tool_type="datastore") == 1
    assert run.value("llm_spans_total", model="gpt-4o") == 1
