"""Exemplars with ``serve --workers 2``: prometheus_client's multiprocess mode drops them, so
each worker writes its latest per series beside its metric files and the supervisor's
scrape merges them (``multiprocess_exemplars.py``). Real processes on loopback."""

from __future__ import annotations

import glob
import time
import urllib.request
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from llm_observe.collector.exporters.multiprocess_exemplars import (
    MergedExemplars,
    WorkerExemplars,
)
from tests.cli.test_serve import call, env, free_port, start
from tests.cli.test_supervisor import workers_of

OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


def _get(port: int, accept: str) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(resp.read().decode())


def _exemplar_traces(text: str, sample: str) -> set[str]:
    return {s.exemplar.labels["trace_id"] for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == sample and s.exemplar is not None}


def test_two_workers_serve_the_exemplars_of_the_spans_each_recorded(tmp_path: Path) -> None:
    api, metrics = free_port(), free_port()
    environ = env(LLM_OBSERVE_PORT=str(api), LLM_OBSERVE_METRICS_PORT=str(metrics),
                  LLM_OBSERVE_OTLP_PORT="0", PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    served = start("--workers", "2", environ=environ)
    sent: set[str] = set()
    try:
        pids = workers_of(served.proc.pid)
        deadline = time.monotonic() + 30
        # new connection per record: SO_REUSEPORT spreads them; go on until both workers
        # wrote exemplars (each flushes within a second of a change)
        i = 0
        while time.monotonic() < deadline:
            trace = f"{i + 1:032x}"
            status, _ = call("POST", f"http://127.0.0.1:{api}/v1/metrics/record", {
                "model": f"m{i % 5}", "provider": "openai", "service_name": "svc",
                "prompt_tokens": 100 + i, "completion_tokens": 7, "latency_ms_total": 300 + i,
                "trace_id": trace, "span_id": f"{i + 1:016x}"})
            assert status == 200
            sent.add(trace)
            i += 1
            files = {Path(p).name for p in glob.glob(str(tmp_path / "exemplars_*.json"))}
            if i >= 20 and files >= {f"exemplars_{pid}.json" for pid in pids}:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"not every worker wrote exemplars: {files}, workers {pids}")
        time.sleep(1.5)  # the last flush
        om = _get(metrics, OPENMETRICS)
        text = _get(metrics, "text/plain")
    finally:
        served.stop()
    latency = _exemplar_traces(om, "llm_latency_ms_total_bucket")
    tokens = _exemplar_traces(om, "llm_tokens_total")
    assert latency and latency <= sent and tokens and tokens <= sent
    assert len(latency) >= 5  # one per model at least: both workers' exemplars are merged
    assert " # {" not in text  # the text format carries none


def test_the_newest_exemplar_of_any_worker_wins(tmp_path: Path) -> None:
    from prometheus_client.samples import Exemplar

    class Value:  # what the store reads of a multiprocess value: its file key
        _key = '["llm_cost_usd_micro", "llm_cost_usd_micro_total", {"model": "m"}, "cost"]'

    old, new = WorkerExemplars(str(tmp_path), pid=1), WorkerExemplars(str(tmp_path), pid=2)
    old.keep(Value(), Exemplar({"trace_id": "a" * 32}, 5.0, 100.0))
    new.keep(Value(), Exemplar({"trace_id": "b" * 32}, 7.0, 200.0))
    assert old.flush() and new.flush() and not new.flush()  # unchanged: not written again
    merged = MergedExemplars(str(tmp_path))
    newest = merged._newest()
    assert [e.labels["trace_id"] for e in newest.values()] == ["b" * 32]
    (tmp_path / "exemplars_3.json").write_text("{not json")  # a torn or foreign file
    assert next(iter(merged._newest().values())).value == 7.0
