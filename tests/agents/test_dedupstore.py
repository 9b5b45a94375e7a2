"""One call, one count across workers (agents/dedupstore.py): the captured wrapper pairs'
spans spread over two whole collectors sharing a real Redis are each counted once; the same
spread without Redis counts them twice; Redis down falls back to each process's memory,
counted, never raising."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from llm_observe.agents.dedup import DedupProcessor
from llm_observe.agents.dedupstore import SharedWrapperMemory
from llm_observe.otlp.walk import Walked, walk
from llm_observe.span import LlmSpan
from tests.agents.helpers import captured, split
from tests.agents.test_runstore import Worker
from tests.redisd import REDIS, free_port, redis_server

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
# the captures whose four LLM spans are two wrapper pairs (tests/data/agents)
PAIRS = [f"openai_agents_{p}_{api}_with_client" for p in ("openinference", "openllmetry")
         for api in ("chat", "responses")
         if (p, api) != ("openllmetry", "responses")]


def llm(trace: str, span: str, parent: str) -> LlmSpan:
    return LlmSpan(model="gpt-4o", provider="openai", trace_id=trace, span_id=span,
                   parent_span_id=parent)


def spread(parts: list[Any]) -> list[int]:
    """Which of two workers gets each part: the k-th part holding LLM spans goes to worker
    (k // 2) % 2, which puts the two halves of each captured pair on different workers
    (their parts come in the order inner 1, inner 2, wrapper 1, wrapper 2)."""
    out, k = [], 0
    for i, p in enumerate(parts):
        if walk(p).llm:
            out.append((k // 2) % 2)
            k += 1
        else:
            out.append(i % 2)
    return out


def split_pairs(sent: list[tuple[int, Walked]]) -> bool:
    """Every wrapper pair's two spans went to different workers."""
    where = {s.span_id: k for k, w in sent for s in w.llm}
    parents = {s.span_id: s.parent_span_id for _, w in sent for s in w.llm}
    pairs = [(c, p) for c, p in parents.items() if p in where]
    return len(pairs) == 2 and all(where[c] != where[p] for c, p in pairs)


def counted(workers: list[Worker], name: str) -> float:
    return sum(w.value(name) for w in workers)


def memory(w: Worker) -> SharedWrapperMemory:
    dedup = w.collector.pipeline.chain.processors[0]
    assert isinstance(dedup, DedupProcessor)
    assert isinstance(dedup.memory, SharedWrapperMemory)
    return dedup.memory


@pytest.mark.parametrize("order", ["alternate", "reversed"])
@pytest.mark.parametrize("name", PAIRS)
def test_a_pair_split_over_two_workers_counts_once(url: str, name: str, order: str) -> None:
    a, b = Worker(url), Worker(url)
    parts = split(captured(name), 20)  # one span a request: every pair is split
    if order == "reversed":
        parts.reverse()
    sent = [(k, (a, b)[k].send(p)) for k, p in zip(spread(parts), parts, strict=True)]
    assert split_pairs(sent)
    llm = [s for _, w in sent for s in w.llm]
    assert len(llm) == 4
    assert counted([a, b], "llm_spans_total") == 2
    # first arrival counts: in order the inner (client) spans, reversed the wrappers
    first = [s for s in llm if s.duplicate_of is None]
    assert counted([a, b], "llm_cost_usd_micro_total") == sum(s.cost_usd_micro or 0
                                                              for s in first)
    wrappers = 2 if order == "reversed" else 0
    assert counted([a, b], "llm_observe_dedup_wrapper_counted_total") == wrappers
    assert counted([a, b], "llm_observe_dedup_duplicates_total") == 2
    assert counted([a, b], "llm_observe_shared_state_errors_total") == 0


def test_without_redis_the_same_spread_counts_each_call_twice() -> None:
    """The failure this module fixes: the spread over two per-process collectors."""
    a, b = Worker(None), Worker(None)
    parts = split(captured(PAIRS[0]), 20)
    sent = [(k, (a, b)[k].send(p)) for k, p in zip(spread(parts), parts, strict=True)]
    assert split_pairs(sent)
    assert counted([a, b], "llm_spans_total") == 4


def test_only_batches_with_a_lone_llm_span_make_a_round_trip(url: str) -> None:
    w = Worker(url)
    mem = memory(w)
    w.send(captured(PAIRS[0]))  # both pairs inside one request: found locally
    assert mem.round_trips == 0 and w.value("llm_spans_total") == 2
    parts = split(captured(PAIRS[0]), 20)
    sent = [w.send(p) for p in parts]
    assert mem.round_trips == sum(1 for s in sent if s.llm)  # one call per batch, at most


def pair(n: int) -> list[tuple[LlmSpan, LlmSpan]]:
    out = []
    for i in range(n):
        trace = f"{i:032x}"
        wrapper = llm(trace, f"{2 * i + 1:016x}", "ab" * 8)
        inner = llm(trace, f"{2 * i + 2:016x}", wrapper.span_id)
        out.append((wrapper, inner))
    return out


def test_two_workers_racing_with_the_halves_of_many_pairs_count_each_once(url: str) -> None:
    pairs = pair(2000)
    mems = [SharedWrapperMemory(url), SharedWrapperMemory(url)]
    halves = [[w for w, _ in pairs], [i for _, i in pairs]]

    def mark(k: int) -> None:
        for start in range(0, len(pairs), 50):  # 40 batches each, interleaved in time
            mems[k].mark(halves[k][start:start + 50])
    threads = [threading.Thread(target=mark, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all((w.duplicate_of is None) != (i.duplicate_of is None) for w, i in pairs)
    assert sum(m.duplicates for m in mems) == len(pairs)


def test_redis_down_falls_back_to_the_process_memory_counted(tmp_path: Path) -> None:
    port = free_port()
    with redis_server(tmp_path, port=port) as live:
        a = Worker(live)
    parts = split(captured(PAIRS[0]), 20)
    for p in parts:  # Redis is gone: no crash, first arrival in this process
        a.send(p)
    assert a.value("llm_spans_total") == 2
    assert a.value("llm_observe_shared_state_errors_total", op="dedup") >= 1
    with redis_server(tmp_path, port=port):  # back: shared again after retry_s
        memory(a).health._down_until = 0.0
        b = Worker(live)
        parts = split(captured(PAIRS[1]), 20)
        for k, p in zip(spread(parts), parts, strict=True):
            (a, b)[k].send(p)
        assert counted([a, b], "llm_spans_total") == 4


def test_hostile_ids_through_redis_neither_crash_nor_double_count(url: str) -> None:
    mem = SharedWrapperMemory(url)
    odd = [llm("", "", ""), llm("t", "s", "s"),  # no ids; a self-parenting span
           llm("x" * 4000, "\x00\xff", "p")]
    mem.mark(odd)
    mem.mark(odd)  # a resend: the same ids again
    assert odd[1].duplicate_of is None  # self-parenting is no wrapper of itself


# --- consumer marks (agents/consumerstore.py) ---------------------------------------------

def tool_then_agent() -> list[Any]:
    """A flagged tool (with its turn) in one request, its agent span in the next."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from llm_observe.otlp.walk import decode_request
    from tests.agents.test_consumers import agent_then_tool
    from tests.receiver.conftest import record_spans
    request = decode_request(encode_spans(record_spans(agent_then_tool)).SerializeToString())
    parts = split(request, 2)
    assert [len(walk(p).agents) for p in parts] == [1, 1]  # the tool; the agent
    return parts


def marked(w: Walked) -> list[str]:
    from tests.agents.test_untrusted import forwarded
    return [name for name, a in forwarded(w).items()
            if a.get("llm_observe.tool_output_flagged") is True]


def test_the_agent_on_another_worker_is_marked(url: str) -> None:
    a, b = Worker(url), Worker(url)
    tool, agent = tool_then_agent()
    assert marked(a.send(tool)) == []
    assert marked(b.send(agent)) == ["invoke_agent a"]
    assert marked(a.send(agent)) == []  # taken by b: one mark, not one per worker


def test_without_redis_the_agent_on_another_worker_is_not_marked() -> None:
    a, b = Worker(None), Worker(None)
    tool, agent = tool_then_agent()
    a.send(tool)
    assert marked(b.send(agent)) == []  # the failure the shared memory fixes
    assert marked(a.send(agent)) == ["invoke_agent a"]  # per process it works


def test_consumer_marks_with_redis_down_use_the_process_memory(tmp_path: Path) -> None:
    port = free_port()
    with redis_server(tmp_path, port=port) as live:
        a = Worker(live)
    tool, agent = tool_then_agent()
    a.send(tool)  # Redis gone: remembered here, counted
    assert a.value("llm_observe_shared_state_errors_total", op="consumers") == 1
    assert marked(a.send(agent)) == ["invoke_agent a"]


def test_only_requests_that_need_it_make_a_consumer_round_trip(url: str) -> None:
    from llm_observe.agents.consumerstore import SharedConsumers
    from llm_observe.processors.untrusted import UntrustedTextProcessor
    from tests.cli.test_supervisor_dedup import wrapper_pair as wrapper_and_client
    from tests.receiver.conftest import record_spans
    w = Worker(url)
    stage = next(p for p in w.collector.pipeline.chain.processors
                 if isinstance(p, UntrustedTextProcessor))
    assert isinstance(stage.consumers, SharedConsumers) and stage.blocking

    def consumers(w: Worker) -> SharedConsumers:
        stage = next(p for p in w.collector.pipeline.chain.processors
                     if isinstance(p, UntrustedTextProcessor))
        assert isinstance(stage.consumers, SharedConsumers)
        return stage.consumers
    plain = Worker(url)
    plain.send_spans(record_spans(wrapper_and_client))  # LLM calls only: not looked up
    tool, agent = tool_then_agent()
    w.send(tool)  # a flagged tool, no agent span: one call, to remember its ancestor
    assert stage.consumers.round_trips == 1
    w.send(agent)  # an agent span: one call, to find what it was awaited for
    assert stage.consumers.round_trips == 2
    assert consumers(plain).round_trips == 0
