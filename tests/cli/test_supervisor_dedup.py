"""``serve --workers 2``: wrapper pairs (an agent SDK's LLM span over the client's LLM span)
whose two spans arrive in two requests on new connections, so they land on both workers,
are each counted once with a real Redis (agents/dedupstore.py), and twice without it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from opentelemetry.trace import Tracer, set_span_in_context

from tests.cli.test_serve import start
from tests.cli.test_supervisor import ports, scrape, wait_for, workers_of
from tests.cli.test_supervisor_agents import accepted, send_each_alone
from tests.receiver.conftest import record_spans
from tests.redisd import REDIS, redis_server

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
PAIRS = 16
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100}


def wrapper_pair(tracer: Tracer) -> None:
    wrapper = tracer.start_span("chat gpt-4o", attributes=CHAT)  # the agent SDK's span
    tracer.start_span("chat gpt-4o", context=set_span_in_context(wrapper),
                      attributes={**CHAT, "gen_ai.response.model": "gpt-4o-2024-08-06"}).end()
    wrapper.end()


def total(got: dict[tuple[str, tuple[tuple[str, str], ...]], float], *names: str) -> float:
    return sum(v for (n, _), v in got.items() if n in names)


def counted_over_two_workers(tmp_path: Path, redis_url: str | None) -> dict[str, float]:
    """Send PAIRS pairs, one span a request on a new connection; the summed counters."""
    mp = tmp_path / "mp"
    extra = {"LLM_OBSERVE_REDIS_URL": redis_url} if redis_url else {}
    p, environ = ports(PROMETHEUS_MULTIPROC_DIR=str(mp), **extra)
    served = start("--workers", "2", environ=environ)
    try:
        pids = workers_of(served.proc.pid)
        for _ in range(PAIRS):  # the inner span ends, and is sent, first
            send_each_alone(p["http"], record_spans(wrapper_pair))
        # every LLM span is counted or a duplicate (the dedup family lags up to 1 s)
        wait_for(lambda: total(scrape(p["metrics"]), "llm_spans_total", "llm_observe_dedup_"
                               "duplicates_total") == 2 * PAIRS, timeout=30)
        got = scrape(p["metrics"])
        assert all(accepted(mp, pid) > 0 for pid in pids)  # the spans hit both workers
    finally:
        code, err = served.stop(signal.SIGTERM)
    assert code == 0 and "Traceback" not in err, err
    return {n: total(got, n) for n in ("llm_spans_total", "llm_cost_usd_micro_total",
                                  "llm_observe_dedup_duplicates_total",
                                  "llm_observe_dedup_wrapper_counted_total",
                                  "llm_observe_shared_state_errors_total")}


def test_pairs_split_over_two_workers_count_once_with_redis(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        got = counted_over_two_workers(tmp_path, url)
    assert got["llm_spans_total"] == PAIRS
    assert got["llm_observe_dedup_duplicates_total"] == PAIRS
    assert got["llm_observe_dedup_wrapper_counted_total"] == 0  # the inner came first
    assert got["llm_observe_shared_state_errors_total"] == 0


def test_without_redis_pairs_split_over_two_workers_count_twice(tmp_path: Path) -> None:
    got = counted_over_two_workers(tmp_path, None)
    # each pair whose halves reached different workers is counted by both (the kernel
    # spreads connections: about half of them; all 16 on one side has odds 2**-15)
    assert PAIRS < got["llm_spans_total"] <= 2 * PAIRS
    assert got["llm_spans_total"] + got["llm_observe_dedup_duplicates_total"] == 2 * PAIRS
