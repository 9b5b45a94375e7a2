"""Trace exemplars end to end: an OTLP span sent to a real ``serve``, scraped by Debian's real
Prometheus started the way ``serve --with-prometheus`` starts it (exemplar storage on), is
found by ``/api/v1/query_exemplars`` under its own trace id on the latency, TTFT, cost and
token series."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from llm_observe.provisioning.local_prometheus import (
    find_prometheus,
    start_local_prometheus,
    stop_local_prometheus,
    wait_ready,
)
from tests.provisioning.conftest import _start_serve, _stop, free_port

pytestmark = pytest.mark.skipif(find_prometheus() is None, reason="no prometheus binary")

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"


def _kv(key: str, value: str | int) -> KeyValue:
    v = AnyValue(string_value=value) if isinstance(value, str) else AnyValue(int_value=value)
    return KeyValue(key=key, value=v)


def _request(trace: str, span: str, latency_ms: int) -> bytes:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", "exemplar-app"))
    s = rs.scope_spans.add().spans.add()
    start = time.time_ns()
    s.CopyFrom(Span(trace_id=bytes.fromhex(trace), span_id=bytes.fromhex(span), name="chat gpt-4o",
                    kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=start,
                    end_time_unix_nano=start + latency_ms * 1_000_000))
    s.attributes.extend([_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.system", "openai"),
                         _kv("gen_ai.request.model", "gpt-4o"),
                         _kv("gen_ai.usage.input_tokens", 1200),
                         _kv("gen_ai.usage.output_tokens", 300)])
    ev = s.events.add()
    ev.name = "gen_ai.content.completion.chunk"  # a first chunk: the span has a TTFT
    ev.time_unix_nano = start + 150_000_000
    return req.SerializeToString()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    api, metrics, otlp = free_port(), free_port(), free_port()
    proc = _start_serve(api, metrics, otlp_http=otlp)
    out: Path = tmp_path_factory.mktemp("prometheus")
    ui = free_port()
    prom = start_local_prometheus(out, metrics, ui, scrape_interval="1s")
    try:
        wait_ready(ui, prom)
        yield otlp, f"http://127.0.0.1:{ui}"
    finally:
        stop_local_prometheus(prom)
        _stop(proc)


def _exemplars(prom: str, query: str) -> list[dict[str, object]]:
    now = time.time()
    resp = httpx.get(f"{prom}/api/v1/query_exemplars",
                     params={"query": query, "start": now - 600, "end": now + 60}, timeout=10)
    resp.raise_for_status()
    return [e for series in resp.json()["data"] for e in series["exemplars"]]


def test_prometheus_finds_the_sent_span_by_its_trace_id(served: tuple[int, str]) -> None:
    otlp, prom = served
    resp = httpx.post(f"http://127.0.0.1:{otlp}/v1/traces", content=_request(TRACE, SPAN, 2300),
                      headers={"Content-Type": "application/x-protobuf"}, timeout=10)
    assert resp.status_code == 200, resp.text
    wanted = {"llm_latency_ms_total_bucket": 2300.0, "llm_latency_ms_ttft_bucket": 150.0,
              "llm_tokens_total": None, "gen_ai_client_operation_duration_seconds_bucket": 2.3,
              "gen_ai_client_token_usage_bucket": None}
    found: dict[str, list[dict[str, object]]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(found) < len(wanted):
        for query in wanted:
            hits = [e for e in _exemplars(prom, query)
                    if e["labels"] == {"trace_id": TRACE, "span_id": SPAN}]  # type: ignore[comparison-overlap]
            if hits:
                found[query] = hits
        time.sleep(0.5)
    assert set(found) == set(wanted), f"exemplars found only on {sorted(found)}"
    for query, value in wanted.items():
        if value is not None:
            assert float(found[query][0]["value"]) == value  # type: ignore[arg-type]
    cost = _exemplars(prom, "llm_cost_usd_micro_total")  # gpt-4o is priced
    assert [e["labels"] for e in cost] == [{"trace_id": TRACE, "span_id": SPAN}]
