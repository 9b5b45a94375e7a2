"""Tool-call chains shared through a real Redis: two trackers (two workers or replicas) see
one chain per trace; Redis down degrades to per-process state, counted, never raising."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from prometheus_client import CollectorRegistry

from llm_observe.processors.chainstore import PREFIX, RedisChainTracker
from llm_observe.processors.toolchain import (
    MAX_TRACE_COST_USD_MICRO,
    ToolchainProcessor,
    ToolChainTracker,
)
from llm_observe.span import LlmSpan
from tests.redisd import REDIS, free_port, redis_server

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


def _tracker(url: str, **kw: float) -> tuple[RedisChainTracker, CollectorRegistry]:
    registry = CollectorRegistry()
    return RedisChainTracker(url, registry, **kw), registry


def _span(trace: str, span: str, cost: int, finish: str = "stop") -> LlmSpan:
    return LlmSpan(model="gpt-4o", provider="openai", service_name="agent", trace_id=trace,
                   span_id=span, cost_usd_micro=cost, finish_reason=finish)


def test_two_workers_share_one_chain_per_trace(redis_url: str) -> None:
    a, _ = _tracker(redis_url)
    b, _ = _tracker(redis_url)
    first = ToolchainProcessor(a, blocking=True)
    second = ToolchainProcessor(b, blocking=True)
    turn1 = [_span("t1", "s1", 1000, "tool_calls"), _span("t2", "x1", 5)]  # t2: no chain
    first.process(turn1)
    turn2 = [_span("t1", "s2", 250, "tool_calls")]
    second.process(turn2)  # the next turn lands on the other worker
    turn3 = [_span("t1", "s3", 40)]
    first.process(turn3)
    assert turn1[0].trace_cost_usd_micro == 1000 and turn1[1].trace_cost_usd_micro is None
    assert turn2[0].trace_cost_usd_micro == 1250
    assert turn3[0].trace_cost_usd_micro == 1290
    assert turn2[0].transition is not None and "turn 2" in turn2[0].transition.name
    state = b.get("t1")
    assert state is not None
    assert (state.steps, state.tool_call_turns, state.cumulative_cost_usd_micro,
            state.last_span_id) == (3, 2, 1290, "s3")
    assert a.get("t2") is None
    ttl = redis.Redis.from_url(redis_url).ttl(PREFIX + "t1")
    assert 3000 < ttl <= 3600  # idle chains expire (ttl_s)


def test_cost_saturates_and_rest_style_tracking_opens_a_chain(redis_url: str) -> None:
    tracker, _ = _tracker(redis_url)
    for _ in range(3):
        state = tracker.track("big", MAX_TRACE_COST_USD_MICRO // 2 + 1, open_chain=True)
    assert state is not None and state.cumulative_cost_usd_micro == MAX_TRACE_COST_USD_MICRO
    assert state.cost_saturated and state.steps == 3
    assert tracker.clear("big") == 1 and tracker.get("big") is None
    tracker.track("c1", 1, open_chain=True)
    tracker.track("c2", 1, open_chain=True)
    assert tracker.clear(None) >= 2 and tracker.get("c1") is None


def test_same_results_as_the_in_process_tracker(redis_url: str) -> None:
    shared, _ = _tracker(redis_url)
    local = ToolChainTracker()
    items = [("p1", 10, "a", "tool_calls", False), ("p1", 20, "b", "stop", False),
             ("p2", 7, "c", "stop", False), ("p1", -5, "d", "tool_calls", False),
             ("p3", None, "e", "tool_calls", False)]
    got = [(s.steps, s.tool_call_turns, s.cumulative_cost_usd_micro) if s else None
           for s in shared.track_many(items)]
    want = [(s.steps, s.tool_call_turns, s.cumulative_cost_usd_micro) if s else None
            for s in local.track_many(items)]
    assert got == want == [(1, 1, 10), (2, 1, 30), None, (3, 2, 30), (1, 1, 0)]


def test_redis_down_degrades_to_local_state_counted_and_fast(tmp_path: Path) -> None:
    port = free_port()
    tracker, registry = _tracker(f"redis://127.0.0.1:{port}/0", retry_s=0.5)
    spans = [_span("d1", "s1", 100, "tool_calls"), _span("d1", "s2", 50)]
    ToolchainProcessor(tracker, blocking=True).process(spans)  # nothing listens: no raise
    assert spans[1].trace_cost_usd_micro == 150  # this process's own chain
    errors = registry.get_sample_value("llm_observe_shared_state_errors_total",
                                       {"op": "track"})
    assert errors == 1
    assert registry.get_sample_value("llm_observe_shared_state_degraded_spans_total") == 2
    t0 = time.perf_counter()
    for _ in range(50):  # within retry_s Redis is not asked again
        tracker.track("d2", 1, open_chain=True)
    assert time.perf_counter() - t0 < 0.25
    assert registry.get_sample_value("llm_observe_shared_state_errors_total",
                                     {"op": "track"}) == 1
    time.sleep(0.6)
    with redis_server(tmp_path, port=port):  # Redis is back: shared again after retry_s
        state = tracker.track("d3", 9, open_chain=True)
        assert state is not None
        assert redis.Redis(port=port).hget(PREFIX + "d3", "cost") == b"9"
