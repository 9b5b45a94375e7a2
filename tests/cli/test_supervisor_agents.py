"""``serve --workers 2`` sharing one real Redis: agent runs whose spans arrive one per request,
each on a new connection (so they land on both workers), are each recorded once, whole: run
count, model calls, tool calls and cost as one process records them (agents/runstore.py)."""

from __future__ import annotations

import glob
import signal
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from prometheus_client.multiprocess import MultiProcessCollector

from tests.agents.test_runs import nested
from tests.cli.test_serve import start
from tests.cli.test_supervisor import ports, scrape, wait_for, workers_of
from tests.receiver.conftest import record_spans
from tests.redisd import REDIS, redis_server

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
RUNS = 12


def send_each_alone(http_port: int, spans: Sequence[ReadableSpan]) -> None:
    """Each span as its own OTLP/HTTP request on a new connection (so they land on both
    workers)."""
    for span in spans:
        exporter = HttpSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces",
                                    timeout=10)
        try:
            assert exporter.export([span]) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()


def accepted(mp: Path, pid: int) -> float:
    files = glob.glob(str(mp / f"counter_{pid}.db"))
    return sum(s.value for m in MultiProcessCollector.merge(files) for s in m.samples
               if s.name == "llm_observe_receiver_spans_accepted_total")


def test_runs_spread_over_two_workers_are_each_recorded_once_whole(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        mp = tmp_path / "mp"
        p, environ = ports(PROMETHEUS_MULTIPROC_DIR=str(mp), LLM_OBSERVE_REDIS_URL=url)
        served = start("--workers", "2", environ=environ)
        try:
            pids = workers_of(served.proc.pid)
            for _ in range(RUNS):
                send_each_alone(p["http"], record_spans(nested))
            key = ("llm_agent_run_cost_usd_micro_count", (("gen_ai_agent_name", "billing"),))
            wait_for(lambda: scrape(p["metrics"]).get(key) == RUNS, timeout=30)
            got = scrape(p["metrics"])

            def v(name: str, agent: str) -> float | None:
                return got.get((name, (("gen_ai_agent_name", agent),)))
            assert v("llm_agent_run_cost_usd_micro_count", "triage") == RUNS
            assert v("gen_ai_invoke_agent_inference_calls_sum", "billing") == 2 * RUNS
            assert v("gen_ai_invoke_agent_inference_calls_sum", "triage") == RUNS
            assert v("gen_ai_invoke_agent_tool_calls_sum", "billing") == RUNS
            assert v("gen_ai_invoke_agent_tool_calls_sum", "triage") == 0
            one = v("llm_agent_run_cost_usd_micro_sum", "triage")
            assert one and v("llm_agent_run_cost_usd_micro_sum", "billing") == 2 * one
            assert got.get(("llm_agent_runs_incomplete_total", ())) == 0
            per_worker = [accepted(mp, pid) for pid in pids]
            assert all(n > 0 for n in per_worker), per_worker  # the runs' spans hit both
        finally:
            code, err = served.stop(signal.SIGTERM)
        assert code == 0 and "Traceback" not in err, err
