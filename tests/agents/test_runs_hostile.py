"""Hostile shapes for agent runs (issue 25, "Bad input"): nothing crashes, nothing grows
without bound (agents/runs.py)."""

from __future__ import annotations

from llm_observe.agents.classify import AGENT, TOOL, AgentOp
from llm_observe.agents.runs import MAX_WAITING, RunTracker

T = b"\x01" * 16


def op(kind: str, span: bytes, parent: bytes = b"", name: str = "a") -> AgentOp:
    return AgentOp(kind, name, 1.0, trace_id=T, span_id=span, parent_id=parent,
                   position=(0, 0, 0), start_ns=0, end_ns=10)


def call(span: bytes, parent: bytes, cost: int = 7) -> tuple[str, str, str, int, int, int]:
    return (T.hex(), span.hex(), parent.hex(), 1, 2, cost)


def test_cycles_and_self_parenting_own_nothing() -> None:
    tracker = RunTracker(settle_s=0)
    a, b, s = b"A" * 8, b"B" * 8, b"S" * 8
    tracker.add(0, [(T.hex(), a.hex(), b.hex()), (T.hex(), b.hex(), a.hex())],
                [call(b"c" * 8, a), call(b"d" * 8, s)],
                [op(AGENT, s, s), op(TOOL, b"t" * 8, b"t" * 8)])
    (run,) = tracker.flush(1)
    # the self-parenting agent owns the call under it; the cycle and the selfish tool: none
    assert (run.model_calls, run.tool_calls, run.cost_usd_micro) == (1, 0, 7)
    assert tracker.flush(10_000) == []
    assert tracker.counts.incomplete == 1  # the members nobody owns, once the trace idles


def test_a_tool_span_with_no_name_is_a_tool_call_of_its_run() -> None:
    tracker = RunTracker(settle_s=0)
    tracker.add(0, [], [], [op(AGENT, b"A" * 8), op(TOOL, b"t" * 8, b"A" * 8, name="unknown")])
    (run,) = tracker.flush(1)
    assert run.tool_calls == 1


def test_calls_of_traces_that_never_show_an_agent_wait_in_a_bounded_fifo() -> None:
    tracker = RunTracker()
    for i in range(MAX_WAITING + 5_000):  # a plain LLM app: every call has a parent
        tracker.add(0, [], [(f"{i:032x}", "0" * 15 + "1", "0" * 15 + "2", 0, 1, 1)], [])
    assert tracker.waiting.n <= MAX_WAITING
    assert tracker.traces == {} and tracker.flush(10_000) == []
    assert tracker.counts.incomplete == 0  # no agent, tool or workflow span: no run at all


def test_many_traces_are_bounded_and_evicted_runs_counted() -> None:
    tracker = RunTracker(max_traces=100)
    for i in range(1_000):
        trace = i.to_bytes(16, "big")
        tracker.add(0, [], [], [AgentOp(AGENT, "a", 1.0, trace_id=trace, span_id=b"A" * 8,
                                        position=(0, 0, 0))])
    assert len(tracker.traces) == 100
    assert tracker.counts.incomplete == 900  # evicted before they settled: counted
    assert len(tracker.flush(10)) == 100
