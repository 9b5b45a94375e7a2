"""``llm-observe serve --workers N`` as real processes: every door answers on the shared
ports, spans spread over the workers, /metrics is exactly what one process gives, a
worker killed with SIGKILL is restarted and loses no acknowledged span (write-ahead),
SIGTERM drains every worker."""

from __future__ import annotations

import asyncio
import glob
import os
import re
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Tracer
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.cli.worker import parse_workers
from llm_observe.collector.settings import Settings
from tests.cli.test_serve import Served, call, env, free_port, one_line, run_to_exit, start
from tests.collector.exporters.test_write_ahead import (
    requests_of_spans,
    send_until_stopped,
    wait_until_empty,
)
from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import T0, export, llm_span, record_spans

MODELS = (("gpt-4o", "openai"), ("gpt-4o-mini", "openai"),
          ("claude-3-5-sonnet-20241022", "anthropic"))
HTTP_REQUESTS, GRPC_REQUESTS, RECORDS, PER_REQUEST = 40, 10, 10, 25
# time spent differs from run to run; the scrape-time families are compared apart
NOT_COMPARED = ("_created", "_seconds_total", "_seconds_bucket", "_seconds_sum",
                "_seconds_count")


def workload() -> list[Sequence[ReadableSpan]]:
    """Requests of SDK spans: three models, three services, errors, varied latencies."""
    def request(q: int) -> Sequence[ReadableSpan]:
        def build(tracer: Tracer) -> None:
            for i in range(PER_REQUEST):
                model, provider = MODELS[(q + i) % len(MODELS)]
                llm_span(tracer, f"chat {model}", {
                    "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                    "gen_ai.request.model": model, "gen_ai.usage.input_tokens": 10 + i,
                    "gen_ai.usage.output_tokens": 5 + q,
                    "gen_ai.response.finish_reasons": ("stop",)},
                    start=T0 + q * 1000 + i, duration_ms=40 + 97 * i + q, error=i % 11 == 0)
        return record_spans(build, service=f"svc-{q % 3}")

    return [request(q) for q in range(HTTP_REQUESTS + GRPC_REQUESTS)]


def send(requests: list[Sequence[ReadableSpan]], api: int, grpc: int, http: int) -> None:
    """Each request on a new connection: OTLP/HTTP, OTLP/gRPC, then the REST API."""
    for spans in requests[:HTTP_REQUESTS]:
        exporter = HttpSpanExporter(endpoint=f"http://127.0.0.1:{http}/v1/traces", timeout=10)
        try:
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
    for spans in requests[HTTP_REQUESTS:]:
        assert export(f"127.0.0.1:{grpc}", spans) is SpanExportResult.SUCCESS
    for i in range(RECORDS):
        status, _ = call("POST", f"http://127.0.0.1:{api}/v1/metrics/record",
                         {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 100 + i,
                          "completion_tokens": 7, "latency_ms_total": 300 * i,
                          "service_name": "api"})
        assert status == 200


def series(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples
            if not s.name.endswith(NOT_COMPARED)}


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = call("GET", f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    return series(text)


def processed(port: int) -> float:
    spans = HTTP_REQUESTS * PER_REQUEST + GRPC_REQUESTS * PER_REQUEST + RECORDS
    got = scrape(port).get(("llm_observe_processor_spans_total", (("processor", "cost"),)))
    return spans - (got or 0)


def wait_for(check: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def workers_of(supervisor: int) -> list[int]:
    path = Path(f"/proc/{supervisor}/task/{supervisor}/children")
    return [int(pid) for pid in path.read_text().split()]


def accepted_by(path: Path, pid: int) -> float:
    """Spans worker ``pid`` accepted, read from its own file with the library's reader."""
    files = glob.glob(str(path / f"counter_{pid}.db"))
    return sum(s.value for m in MultiProcessCollector.merge(files) for s in m.samples
               if s.name == "llm_observe_receiver_spans_accepted_total")


def ports(**extra: str) -> tuple[dict[str, int], dict[str, str]]:
    p = {"api": free_port(), "metrics": free_port(), "grpc": free_port(), "http": free_port()}
    return p, env(**{"LLM_OBSERVE_PORT": str(p["api"]),
                     "LLM_OBSERVE_METRICS_PORT": str(p["metrics"]),
                     "LLM_OBSERVE_OTLP_PORT": str(p["grpc"]),
                     "LLM_OBSERVE_OTLP_HTTP_PORT": str(p["http"]), **extra})


def test_two_workers_share_every_door_and_metrics_sum_to_one_process(tmp_path: Path) -> None:
    requests = workload()
    single_ports, environ = ports()
    single = start(environ=environ)
    try:
        send(requests, single_ports["api"], single_ports["grpc"], single_ports["http"])
        wait_for(lambda: processed(single_ports["metrics"]) == 0)
        expected = scrape(single_ports["metrics"])
    finally:
        assert single.stop()[0] == 0

    mp = tmp_path / "mp"
    p, environ = ports(PROMETHEUS_MULTIPROC_DIR=str(mp))
    served = start("--workers", "2", environ=environ)
    try:
        assert "| workers 2" in served.ready and f":{p['metrics']}/metrics" in served.ready
        pids = workers_of(served.proc.pid)
        assert len(pids) == 2
        # a second collector cannot slip onto the shared ports
        code, err = run_to_exit("--workers", "2", environ=environ)
        assert code == 1 and "address already in use" in one_line(err)
        status, health = call("GET", f"http://127.0.0.1:{p['api']}/v1/metrics/health")
        assert status == 200 and health["initialized"] is True and health["port"] == p["metrics"]

        send(requests, p["api"], p["grpc"], p["http"])
        wait_for(lambda: processed(p["metrics"]) == 0)  # scrape-time families lag <= 1 s
        got = scrape(p["metrics"])
        assert got[("llm_observe_workers", ())] == 2
        for key, value in expected.items():
            assert got.get(key) == value, key
        assert set(got) - set(expected) == {
            ("llm_observe_workers", ()), ("llm_observe_worker_restarts_total", (("worker", "0"),)),
            ("llm_observe_worker_restarts_total", (("worker", "1"),))}
        per_worker = [accepted_by(mp, pid) for pid in pids]
        assert all(n > 0 for n in per_worker), per_worker  # connections landed on both
        assert sum(per_worker) == (HTTP_REQUESTS + GRPC_REQUESTS) * PER_REQUEST
    finally:
        code, err = served.stop(signal.SIGTERM)
    assert code == 0 and "Traceback" not in err, err
    assert err.count("draining the pipeline") == 2  # each worker drained
    # the host's offload bounds (default: its cores) split over the two, not taken twice
    running = [int(m) for m in re.findall(r"api_scan_running=(\d+)", err)]
    assert len(running) == 2 and sum(running) == max(2, Settings().api_scan_running), err
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_a_killed_worker_is_restarted_and_no_acknowledged_span_is_lost(
        tmp_path: Path) -> None:
    sink_port = free_port()  # Tempo is down until the end: spans wait in the spools
    spool = tmp_path / "spool"
    p, environ = ports(LLM_OBSERVE_TEMPO_ENDPOINT=f"127.0.0.1:{sink_port}",
                       LLM_OBSERVE_SPOOL_DIR=str(spool), LLM_OBSERVE_WRITE_AHEAD="true",
                       LLM_OBSERVE_OTLP_HTTP_PORT="0")
    served: Served = await asyncio.to_thread(start, "--workers", "2", environ=environ)
    acked: set[int] = set()
    stop = threading.Event()
    senders = [threading.Thread(target=send_until_stopped, daemon=True,
                                args=(f"127.0.0.1:{p['grpc']}", requests_of_spans(300, 50),
                                      acked, stop)) for _ in range(4)]
    sink = OtlpSink(port=sink_port)
    try:
        for thread in senders:
            thread.start()
        for _ in range(6000):
            if len(acked) >= 3000:
                break
            await asyncio.sleep(0.01)
        assert len(acked) >= 3000, "the workers answered too few requests in 60 s"
        victim = workers_of(served.proc.pid)[0]
        os.kill(victim, signal.SIGKILL)  # mid-stream, the senders still sending
        await asyncio.sleep(2)
        stop.set()
        for thread in senders:
            await asyncio.to_thread(thread.join, 30)

        def restarted() -> bool:
            pids = workers_of(served.proc.pid)
            return len(pids) == 2 and victim not in pids \
                and scrape(p["metrics"]).get(("llm_observe_workers", ())) == 2
        await asyncio.to_thread(wait_for, restarted, 30)
        assert sum(v for (name, _), v in scrape(p["metrics"]).items()
                   if name == "llm_observe_worker_restarts_total") == 1
        await sink.start()  # Tempo is back: both spools drain, the victim's by its successor
        await sink.wait_for_spans(len(acked), timeout=60)
        for k in (0, 1):
            await wait_until_empty(spool / f"worker-{k}", timeout=30)
    finally:
        stop.set()
        code, err = await asyncio.to_thread(served.stop, signal.SIGTERM)
        await sink.stop()
    received = {int.from_bytes(s.span_id, "big") for s in sink.spans()}
    assert acked - received == set(), f"{len(acked - received)} acknowledged spans lost"
    assert code == 0 and "was killed by SIGKILL; restarting it" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "two", "-3", "1.5", "100000"])
def test_a_bad_workers_value_is_one_line_and_exit_2(value: str) -> None:
    code, err = run_to_exit(f"--workers={value}")
    assert code == 2 and "--workers must be a whole number" in one_line(err)


def test_a_bad_price_file_is_one_line_and_exit_2_with_workers_too(tmp_path: Path) -> None:
    (tmp_path / "model_prices.yaml").write_text(
        "- model: gpt-4o\n  provider: openai\n  input_price_per_1m: lots\n"
        "  output_price_per_1m: 10\n  version: v1\n")
    _, environ = ports()
    code, err = run_to_exit("--workers", "2", "--config-dir", str(tmp_path), environ=environ)
    assert code == 2 and "input_price_per_1m" in one_line(err)  # said once, by worker 0


def test_no_metrics_init_is_refused_with_workers() -> None:
    code, err = run_to_exit("--workers", "2", "--no-metrics-init")
    assert code == 2 and "--no-metrics-init needs one process" in one_line(err)


def test_auto_is_the_cores_this_process_may_use() -> None:
    assert parse_workers("auto") == len(os.sched_getaffinity(0))
    assert parse_workers(" 3 ") == 3
