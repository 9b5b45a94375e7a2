"""Fixtures for the provisioning tests: a running collector fed with spans, a real Prometheus.

``metrics_source`` is ``llm-observe serve`` itself, started as a subprocess on free
loopback ports (no OTLP receiver, no embedding warm-up): spans go in through
``POST /v1/metrics/record`` and Prometheus scrapes the collector's own ``/metrics``,
so a dashboard written against a wrong metric name, label or unit fails here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from llm_observe.provisioning.alerts import AlertParams
from llm_observe.provisioning.local_prometheus import (
    start_local_prometheus,
    stop_local_prometheus,
    wait_ready,
)

START_TIMEOUT_S = 60.0
# Thresholds the dashboard tests' span mix trips (long for: keeps them pending), so every
# dashboard's Alerts panel has rows to check (expected: genai_alert_checks.EXPECTED_ALERTS).
DASHBOARD_ALERTS = AlertParams(
    spend_budget_usd_per_hour=1e-6, spend_for="1h", min_calls=1, error_for="1h",
    retry_for="1h", latency_p95_ms=1000, latency_for="1h", ttft_p95_ms=500, ttft_for="1h",
    injection_burst=0, injection_for="1h", pii_burst=0, pii_for="1h")


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


def _start_serve(api: int, metrics: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
    env["LLM_OBSERVE_EMBEDDING_ENABLED"] = "false"
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_observe.cli", "serve", "--host", "127.0.0.1",
         "--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
         "--otlp-http-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "ready:" in line:
            return proc
        if not line and proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")
    proc.kill()
    raise AssertionError("llm-observe serve did not become ready")


@pytest.fixture(scope="module")
def metrics_source() -> Iterator[MetricsSource]:
    api, metrics = free_port(), free_port()
    proc = _start_serve(api, metrics)
    client = httpx.Client(base_url=f"http://127.0.0.1:{api}", timeout=10.0)

    def record(spans: list[dict[str, Any]]) -> list[int | None]:
        costs = []
        for span in spans:
            resp = client.post("/v1/metrics/record", json=span)
            assert resp.status_code == 200, resp.text
            costs.append(resp.json()["cost_usd_micro"])
        return costs

    try:
        yield MetricsSource(port=metrics, record=record)
    finally:
        client.close()
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


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
    proc = start_local_prometheus(out, metrics_source.port, ui_port, scrape_interval="1s",
                                  alerts=DASHBOARD_ALERTS)
    try:
        wait_ready(ui_port, proc)
        yield PrometheusServer(url=f"http://127.0.0.1:{ui_port}", config_dir=out)
    finally:
        stop_local_prometheus(proc)
