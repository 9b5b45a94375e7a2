"""The agent span that consumed a flagged tool output is marked, whatever request it is in
(agents/consumers.py)."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Tracer, set_span_in_context

from llm_observe.agents.classify import AGENT, AgentOp
from llm_observe.agents.consumers import Consumers
from llm_observe.otlp.wire import Request, Span
from tests.agents.helpers import Run, split
from tests.agents.test_untrusted import PLANTED, forwarded
from tests.receiver.conftest import record_spans

T = b"t" * 16


def agent_then_tool(tracer: Tracer) -> None:
    agent = tracer.start_span("invoke_agent a", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    turn = tracer.start_span("turn", context=set_span_in_context(agent))
    tracer.start_span("execute_tool t", context=set_span_in_context(turn), attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
        "gen_ai.tool.call.result": PLANTED}).end()
    turn.end()
    agent.end()


def test_the_agent_in_a_later_request_is_marked() -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from llm_observe.otlp.walk import decode_request
    request = decode_request(encode_spans(record_spans(agent_then_tool)).SerializeToString())
    run = Run()
    parts = [run.send(part) for part in split(request, 3)]  # tool, turn, agent: in order
    marked = [name for w in parts for name, a in forwarded(w).items()
              if a.get("llm_observe.tool_output_flagged") is True]
    assert marked == ["invoke_agent a"]


def test_a_clean_tool_marks_nothing() -> None:
    run = Run()
    w = run.send_spans(record_spans(lambda tracer: tracer.start_span("execute_tool t").end()))
    assert w.marked == []


def _request(*spans: tuple[bytes, bytes]) -> Any:
    req = Request()
    ss = req.resource_spans.add().scope_spans.add()
    for span_id, parent in spans:
        ss.spans.append(Span(trace_id=T, span_id=span_id, parent_span_id=parent))
    return req


def _agent(span_id: bytes, parent: bytes = b"") -> AgentOp:
    return AgentOp(AGENT, "a", 1.0, trace_id=T, span_id=span_id, parent_id=parent,
                   position=(0, 0, 0), end_ns=10)


def test_cycles_and_self_parenting_end_the_walk() -> None:
    c = Consumers()
    cycle = _request((b"A" * 8, b"B" * 8), (b"B" * 8, b"A" * 8))
    assert c.marks(cycle, [], [(T, b"A" * 8, 0, 1)]) == []
    selfish = _request((b"S" * 8, b"S" * 8))
    assert c.marks(selfish, [], [(T, b"S" * 8, 0, 1)]) == []


def test_the_memory_of_awaited_ancestors_is_bounded() -> None:
    c = Consumers(max_pending=100)
    for i in range(10_000):  # each flagged tool's parent never arrives
        c.marks(_request(), [], [(T, i.to_bytes(8, "big"), 0, 1)])
    assert len(c._pending) == 100
    # the newest are kept: a late agent of one of them is still found
    late = (9_999).to_bytes(8, "big")
    assert c.marks(_request((late, b"")), [_agent(late)], []) == [(0, 0, 0)]


def test_an_awaited_ancestor_is_forgotten_after_its_ttl() -> None:
    now = [0.0]
    c = Consumers(ttl_s=600, clock=lambda: now[0])
    late = b"L" * 8
    c.marks(_request(), [], [(T, late, 0, 1)])  # its agent is awaited
    now[0] = 601
    assert c.marks(_request((late, b"")), [_agent(late)], []) == []
    assert c._pending == {}
