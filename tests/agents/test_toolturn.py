"""One finish reason for a tool-call turn, whichever way the producer says it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import Tracer

from llm_observe.collector.exporters.prometheus import LlmMetrics
from tests.agents.helpers import walk_built
from tests.receiver.conftest import llm_span

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5}


def finish_of(attributes: dict[str, Any]) -> str | None:
    w = walk_built(lambda t: llm_span(t, "chat gpt-4o", attributes))
    assert len(w.llm) == 1
    return w.llm[0].finish_reason


@pytest.mark.parametrize("reason", ["tool_call", "tool_calls", "TOOL_CALL"])
def test_semconv_and_openai_tool_call_reasons_are_one(reason: str) -> None:
    assert finish_of({**CHAT, "gen_ai.response.finish_reasons": [reason]}) == "tool_calls"


def test_one_label_value_and_the_chain_opens_for_both() -> None:
    from llm_observe.processors.toolchain import ToolchainProcessor, ToolChainTracker

    def build(t: Tracer) -> None:
        llm_span(t, "a", {**CHAT, "gen_ai.response.finish_reasons": ["tool_call"]})
        llm_span(t, "b", {**CHAT, "gen_ai.response.finish_reasons": ["tool_calls"]})
    w = walk_built(build)
    ToolchainProcessor(ToolChainTracker()).process(w.llm)
    assert all(s.transition is not None for s in w.llm)  # both opened/extended a chain
    metrics = LlmMetrics()
    metrics.record(w.llm)
    values = {s.labels["finish_reason"]: s.value
              for m in metrics.registry.collect() if m.name == "llm_finish_reason"
              for s in m.samples if s.name.endswith("_total")}
    assert values == {"tool_calls": 2.0}


SEMCONV_OUT = [{"role": "assistant", "finish_reason": "stop", "parts": [
    {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}]}]
TEXT_OUT = [{"role": "assistant", "finish_reason": "stop", "parts": [
    {"type": "text", "content": 'say {"type": "tool_call"} to me'}]}]


@pytest.mark.parametrize(("extra", "expected"), [
    ({"gen_ai.output.messages": json.dumps(SEMCONV_OUT)}, "tool_calls"),
    ({"gen_ai.output.messages": json.dumps(SEMCONV_OUT, separators=(",", ":"))}, "tool_calls"),
    # the words "tool_call" inside a text part are text, not a call
    ({"gen_ai.output.messages": json.dumps(TEXT_OUT)}, "stop"),
    ({"llm.output_messages.0.message.role": "assistant",
      "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather"},
     "tool_calls"),
    ({"gen_ai.completion.0.tool_calls.0.name": "get_weather"}, "tool_calls"),
    ({"ai.response.toolCalls": '[{"toolName":"get_weather"}]'}, "tool_calls"),
    # a tool call in the INPUT (an earlier turn's) says nothing about this turn
    ({"llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_weather"},
     "stop"),
    ({}, "stop"),
])
def test_stop_with_a_tool_call_part_is_a_tool_call_turn(extra: dict[str, Any],
                                                        expected: str) -> None:
    attrs = {**CHAT, "gen_ai.response.finish_reasons": ["stop"], **extra}
    assert finish_of(attrs) == expected


def test_length_with_a_tool_call_part_stays_length() -> None:
    attrs = {**CHAT, "gen_ai.response.finish_reasons": ["length"],
             "gen_ai.output.messages": json.dumps(SEMCONV_OUT)}
    assert finish_of(attrs) == "length"
