"""Agent runs shared through a real Redis (agents/runstore.py): one run's spans spread over
two whole collectors (two workers or replicas) sharing one Redis are one run, closed by one
of them, with the whole run's calls, tools and cost; Redis down degrades to per-process
runs, counted, never raising."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from llm_observe.agents.classify import AGENT, TOOL, AgentOp
from llm_observe.agents.runstore import OPEN, PREFIX, TRACES, RedisRunStore
from llm_observe.collector.exporters.agent_runs import AgentRunExporter
from llm_observe.otlp.walk import walk
from tests.agents.helpers import DATA, Run, captured, split
from tests.agents.test_runs import nested, runs
from tests.receiver.conftest import record_spans
from tests.redisd import REDIS, free_port, redis_server

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
CAPTURED = sorted(p.stem for p in DATA.glob("*.pb"))


class Worker(Run):
    """A whole collector as one worker of ``serve --workers N`` builds it."""

    def __init__(self, url: str | None) -> None:
        from llm_observe.collector.assembly import build_collector
        from llm_observe.collector.settings import Settings
        self.collector = build_collector(Settings(embedding_enabled=False, redis_url=url))
        self.exporter = next(e for e in self.collector.pipeline.exporters
                             if isinstance(e, AgentRunExporter))

    def settle(self) -> None:
        """What the 1 s tick does once the runs settled (5 s after their agent span)."""
        self.exporter.flush(late_by=self.exporter.tracker.settle_s + 0.5)


def total(workers: list[Worker]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w in workers:
        for k, v in runs(w).items():
            out[k] = out.get(k, 0) + v
    return out


@pytest.mark.parametrize("order", ["alternate", "reversed"])
@pytest.mark.parametrize("name", CAPTURED)
def test_a_run_spread_over_two_workers_is_one_run(url: str, name: str, order: str) -> None:
    a, b = Worker(url), Worker(url)
    assert a.exporter.tracker.blocking
    parts = split(captured(name), 20)
    if order == "reversed":
        parts.reverse()
    for i, p in enumerate(parts):
        (a, b)[i % 2].send(p)
    # the run's calls: the inner span of each wrapper pair, whichever came first and
    # wherever (runs.close), so the run costs what the client spans say
    llm = [s for p in parts for s in walk(p).llm]
    cost = sum(s.cost_usd_micro or 0 for s in Run().send(captured(name)).llm
               if s.span_id not in {c.parent_span_id for c in llm})
    assert cost != 0
    a.exporter.flush()  # not settled yet: nothing closes
    assert total([a, b])["runs"] == 0
    b.settle()
    a.settle()
    got = total([a, b])
    assert got == {"runs": 1, "cost": cost, "usd": pytest.approx(cost / 1e6), "calls": 2,
                   "tools": 1, "incomplete": 0, "late": 0}
    assert runs(b)["runs"] == 1 and runs(a)["runs"] == 0  # the first to flush closed it
    left = redis.Redis.from_url(url)
    assert left.zcard(OPEN) == 0
    assert not any(k.startswith(b"m:") for key in left.scan_iter(PREFIX + "*")
                   for k in left.hkeys(key))  # every member taken by its run


def test_without_redis_the_same_spread_is_measured_in_parts() -> None:
    """The failure this module fixes: the same spread over two per-process collectors."""
    a, b = Worker(None), Worker(None)
    for i, p in enumerate(split(captured(CAPTURED[0]), 20)):
        (a, b)[i % 2].send(p)
    a.settle()
    b.settle()
    got = total([a, b])
    assert (got["runs"], got["calls"], got["tools"]) != (1, 2, 1)


def test_many_runs_flushed_by_both_workers_at_once_are_each_recorded_once(url: str) -> None:
    a, b = Worker(url), Worker(url)
    for i in range(30):
        spans = list(record_spans(nested))
        for j, span in enumerate(spans):  # every span its own request, on either worker
            (a, b)[(i + j) % 2].send_spans([span])
    barrier = threading.Barrier(2)

    def settle(w: Worker) -> None:
        barrier.wait()
        w.settle()
    threads = [threading.Thread(target=settle, args=(w,)) for w in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    v = lambda name, **kw: a.value(name, **kw) + b.value(name, **kw)  # noqa: E731
    assert v("llm_agent_run_cost_usd_micro_count") == 60  # triage and billing, 30 times
    assert v("gen_ai_invoke_agent_inference_calls_sum", gen_ai_agent_name="billing") == 60
    assert v("gen_ai_invoke_agent_inference_calls_sum", gen_ai_agent_name="triage") == 30
    assert v("gen_ai_invoke_agent_tool_calls_sum", gen_ai_agent_name="billing") == 30
    one = v("llm_agent_run_cost_usd_micro_sum", gen_ai_agent_name="triage")
    assert v("llm_agent_run_cost_usd_micro_sum", gen_ai_agent_name="billing") == 2 * one > 0


def test_a_call_resent_to_the_other_worker_after_the_close_is_late_once(url: str) -> None:
    a, b = Worker(url), Worker(url)
    parts = split(captured(CAPTURED[0]), 20)
    for i, p in enumerate(parts):
        (a, b)[i % 2].send(p)
    a.settle()
    b.settle()
    call = next(p for p in parts if walk(p).llm)
    b.send(call)  # the same span id again, after its run was measured
    a.settle()
    b.settle()
    got = total([a, b])
    assert (got["runs"], got["calls"], got["late"]) == (1, 2, 1)


def test_bounds_hold_in_redis(url: str) -> None:
    store = RedisRunStore(url, max_spans=50)
    trace, agent = "ab" * 16, "cd" * 8
    calls = [(trace, f"{i:016x}", agent, 1, 2, 10) for i in range(200)]
    store.add(0.0, [], calls, [])
    op = AgentOp(AGENT, "big", 1.0, trace_id=bytes.fromhex(trace),
                 span_id=bytes.fromhex(agent), start_ns=0, end_ns=10)
    tool = AgentOp(TOOL, "t", 1.0, trace_id=bytes.fromhex(trace), span_id=b"\x01" * 8,
                   parent_id=bytes.fromhex(agent), start_ns=1, end_ns=2)
    store.add(0.0, [], [], [op, tool])
    (run,) = store.flush(10.0)
    assert (run.agent, run.model_calls, run.cost_usd_micro, run.tool_calls) == ("big", 50, 500,
                                                                                0)
    assert store.counts.dropped == 151  # 150 calls and the tool past the bound
    assert redis.Redis.from_url(url).hlen(PREFIX + trace) < 120


def test_idle_traces_are_swept_once_and_orphans_count_incomplete(url: str) -> None:
    a = RedisRunStore(url, timeout_s=60)
    b = RedisRunStore(url, timeout_s=60)
    a.add(0.0, [], [("ef" * 16, "01" * 8, "02" * 8, 1, 2, 5)],
          [AgentOp(TOOL, "t", 1.0, trace_id=bytes.fromhex("ef" * 16), span_id=b"\x03" * 8,
                   parent_id=b"\x02" * 8)])  # the agent span 0202.. never comes
    assert a.flush(30.0) == [] and b.flush(30.0) == []
    assert a.counts.incomplete + b.counts.incomplete == 0
    a.flush(100.0)
    b.flush(100.0)
    assert a.counts.incomplete + b.counts.incomplete == 1
    r = redis.Redis.from_url(url)
    assert r.zcard(TRACES) == 0 and not r.exists(PREFIX + "ef" * 16)


def test_redis_killed_mid_run_degrades_counted_and_recovers(tmp_path: Path) -> None:
    port = free_port()
    parts = split(captured(CAPTURED[0]), 20)
    half = len(parts) // 2
    assert half >= 3
    with redis_server(tmp_path, port=port) as url:
        a, b = Worker(url), Worker(url)
        for w in (a, b):
            w.exporter.tracker.health.retry_s = 0.2  # type: ignore[attr-defined]
        for i, p in enumerate(parts[:half]):
            (a, b)[i % 2].send(p)
    for i, p in enumerate(parts[half:]):  # Redis is gone: no crash, per-process runs
        (a, b)[i % 2].send(p)
    a.settle()
    b.settle()
    errors = sum(w.value("llm_observe_shared_state_errors_total") for w in (a, b))
    degraded = sum(w.value("llm_agent_run_degraded_spans_total") for w in (a, b))
    assert errors >= 2 and degraded > 0
    time.sleep(0.3)
    with redis_server(tmp_path, port=port):  # back: shared again after retry_s
        before = total([a, b])["runs"]
        for i, p in enumerate(split(captured(CAPTURED[1]), 20)):
            (a, b)[i % 2].send(p)
        a.settle()
        b.settle()
        after = total([a, b])
        assert after["runs"] - before == 1


def test_hostile_spans_through_redis_neither_crash_nor_hang(url: str) -> None:
    store = RedisRunStore(url)
    trace = bytes.fromhex("12" * 16)
    me, other = b"\x05" * 8, b"\x06" * 8
    ops = [AgentOp(AGENT, "x" * 100_000 + "\u202e\x00\"'", 1.0, trace_id=trace, span_id=me,
                   parent_id=me, end_ns=10),  # self-parenting, a huge hostile name
           AgentOp(TOOL, "", 1.0, trace_id=trace, span_id=other, parent_id=b"\x07" * 8),
           AgentOp(TOOL, "", 1.0, trace_id=trace, span_id=b"\x07" * 8, parent_id=other),
           AgentOp(AGENT, "", 1.0)]  # no ids at all
    store.add(0.0, [("", "", "")], [(trace.hex(), "08" * 8, me.hex(), 1, 2, 3)], ops)
    closed = store.flush(10.0)
    assert sorted(r.model_calls for r in closed) == [0, 1]  # the cycle owns nothing
    assert {r.agent[-3:] for r in closed} == {"", "\x00\"'"}  # the name as sent
