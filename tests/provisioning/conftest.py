"""Fixtures for the provisioning tests: a /metrics source fed with spans, a real Prometheus.

``metrics_source`` is a stand-in for ``llm-observe serve``: the real exporter
(llm_observe.collector.prometheus.LlmMetrics, the spec 2.6 series) on a fresh
registry, served by prometheus_client's HTTP server on 127.0.0.1. The cost is
computed here from a small price table because the stand-in has no pipeline.

Switching to the real collector is local to this fixture: start
``llm-observe serve --host 127.0.0.1 --port API --metrics-port M --otlp-port 0``
as a subprocess on free ports, wait for ``GET /v1/metrics/health``, and make
``record`` POST the spans to ``/v1/metrics/record-batch`` and return each
result's ``cost_usd_micro``. The tests only use ``port`` and ``record``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import start_http_server
from prometheus_client.metrics_core import Metric

from llm_observe.collector.prometheus import LlmMetrics
from llm_observe.provisioning.local_prometheus import (
    start_local_prometheus,
    stop_local_prometheus,
    wait_ready,
)
from llm_observe.span import LlmSpan

# USD per 1M tokens (input, output) — the stand-in's own table, not the shipped one.
STAND_IN_PRICES = {
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "claude-3-5-sonnet": (3.0, 15.0),
}


def free_port() -> int:
    """A port nothing listens on right now (bind 0, read it, close)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class MetricsSource:
    """A scrape target: ``http://127.0.0.1:{port}/metrics`` plus a way to feed it spans."""

    port: int
    record: Callable[[list[dict[str, Any]]], list[int | None]]  # -> cost_usd_micro per span


class _AtomicRegistry(CollectorRegistry):
    """A scrape never sees half a batch (serve records a batch within one loop turn)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def collect(self) -> Iterable[Metric]:
        with self.lock:
            metrics = list(super().collect())
        yield from metrics


@pytest.fixture(scope="module")
def metrics_source() -> Iterator[MetricsSource]:
    registry = _AtomicRegistry()
    metrics = LlmMetrics(registry)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)

    def record(spans: list[dict[str, Any]]) -> list[int | None]:
        batch = [LlmSpan.from_dict(s) for s in spans]
        for span in batch:
            price = STAND_IN_PRICES.get(span.model)
            if price is not None:
                span.cost_usd_micro = round(span.prompt_tokens * price[0]
                                            + span.completion_tokens * price[1])
        with registry.lock:
            metrics.record(batch)
        return [span.cost_usd_micro for span in batch]

    try:
        yield MetricsSource(port=int(server.server_port), record=record)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@dataclass
class PrometheusServer:
    url: str
    config_dir: Path


@pytest.fixture(scope="module")
def prometheus(metrics_source: MetricsSource,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """Debian's prometheus with the rendered config, scraping the source every second."""
    out = tmp_path_factory.mktemp("prometheus")
    ui_port = free_port()
    proc = start_local_prometheus(out, metrics_source.port, ui_port, scrape_interval="1s")
    try:
        wait_ready(ui_port, proc)
        yield PrometheusServer(url=f"http://127.0.0.1:{ui_port}", config_dir=out)
    finally:
        stop_local_prometheus(proc)
