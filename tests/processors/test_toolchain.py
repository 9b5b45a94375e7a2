"""Tool-call chains (spec 4.14): cumulative cost per trace, transition spans, bounds."""

from __future__ import annotations

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from llm_observe.otlp.encode import transition_bytes
from llm_observe.processors.toolchain import (
    MAX_STEP_COST_USD_MICRO,
    MAX_TRACE_COST_USD_MICRO,
    ToolchainProcessor,
    ToolChainTracker,
)
from llm_observe.span import LlmSpan, TransitionSpan


def call(trace: str, span: str, cost: int | None, finish: str = "stop",
         start: int = 1_000_000_000) -> LlmSpan:
    return LlmSpan("gpt-4o", "openai", service_name="agent", trace_id=trace, span_id=span,
                   cost_usd_micro=cost, finish_reason=finish, start_time_ns=start,
                   latency_ms_total=250)


def test_a_tool_call_chain_accumulates_cost_and_emits_a_transition_per_turn() -> None:
    processor = ToolchainProcessor(ToolChainTracker())
    first = call("t1", "a" * 16, 100, "tool_calls")
    second = call("t1", "b" * 16, 40, "tool_calls")
    last = call("t1", "c" * 16, 10, "stop")
    unrelated = call("t2", "d" * 16, 999, "stop")
    processor.process([first, unrelated])
    processor.process([second, last])

    assert [s.trace_cost_usd_micro for s in (first, second, last)] == [100, 140, 150]
    assert unrelated.trace_cost_usd_micro is None and unrelated.transition is None
    assert last.transition is None
    t1, t2 = first.transition, second.transition
    assert isinstance(t1, TransitionSpan) and isinstance(t2, TransitionSpan)
    assert (t1.trace_id, t1.parent_span_id, t1.name) == ("t1", "a" * 16, "tool calls (turn 1)")
    assert t2.name == "tool calls (turn 2)"
    assert t1.attributes["llm_observe.trace_cost_usd_micro"] == 100
    assert t2.attributes["llm_observe.trace_cost_usd_micro"] == 140
    assert t1.start_time_ns == 1_000_000_000 + 250 * 1_000_000  # when the LLM call ended
    assert len(t1.span_id) == 16 and t1.span_id != t2.span_id


def test_the_transition_id_is_stable_for_the_same_span() -> None:
    a = ToolchainProcessor(ToolChainTracker())
    b = ToolchainProcessor(ToolChainTracker())
    x, y = call("t", "e" * 16, 1, "tool_calls"), call("t", "e" * 16, 1, "tool_calls")
    a.process([x])
    b.process([y])
    assert x.transition.span_id == y.transition.span_id


def test_state_is_bounded_by_lru_and_ttl() -> None:
    now = [0.0]
    tracker = ToolChainTracker(max_traces=2, ttl_s=10, clock=lambda: now[0])
    for trace in ("a", "b", "c"):
        tracker.track(trace, 5, finish_reason="tool_calls", open_chain=False)
    assert tracker.get("a") is None and len(tracker) == 2  # least recently used went
    now[0] = 11.0
    assert tracker.get("b") is None  # idle past the TTL
    assert tracker.evicted == 2


def test_clear_forgets_one_or_all_chains() -> None:
    tracker = ToolChainTracker()
    for trace in ("a", "b"):
        tracker.track(trace, 5)
    assert tracker.clear("a") == 1 and tracker.clear("a") == 0
    assert tracker.clear() == 1 and len(tracker) == 0


def test_the_cumulative_cost_saturates_instead_of_overflowing_int64() -> None:
    # 18,500 steps of $1B used to sum to 1.85e19 micro-USD: past int64, the forwarded
    # llm_observe.trace_cost_usd_micro attribute could not be encoded.
    tracker = ToolChainTracker()
    for _ in range(18_500):
        state = tracker.track("t", 10**15)
    assert state is not None and state.cost_saturated
    assert state.cumulative_cost_usd_micro == MAX_TRACE_COST_USD_MICRO < 2**53
    span = call("t", "f" * 16, MAX_STEP_COST_USD_MICRO, "tool_calls")
    ToolchainProcessor(tracker).process([span])
    assert span.trace_cost_usd_micro == MAX_TRACE_COST_USD_MICRO
    assert span.transition is not None
    forwarded = Span.FromString(transition_bytes(span.transition))
    (cost,) = [kv.value.int_value for kv in forwarded.attributes
               if kv.key == "llm_observe.trace_cost_usd_micro"]
    assert cost == MAX_TRACE_COST_USD_MICRO


def test_costs_below_the_cap_add_exactly_and_nothing_negative_is_added() -> None:
    tracker = ToolChainTracker()
    tracker.track("t", MAX_TRACE_COST_USD_MICRO - 5)
    tracker.track("t", -(10**12))  # no cost stage produces it; it must not lower the sum
    state = tracker.track("t", 4)
    assert state is not None and not state.cost_saturated
    assert state.cumulative_cost_usd_micro == MAX_TRACE_COST_USD_MICRO - 1
    state = tracker.track("t", 4)
    assert state is not None and state.cost_saturated
    assert state.as_dict()["cumulative_cost_usd_micro"] == MAX_TRACE_COST_USD_MICRO
