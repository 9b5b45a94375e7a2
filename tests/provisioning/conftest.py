"""Fixtures for the provisioning tests: a running collector fed with spans, a real Prometheus.

``metrics_source`` is ``llm-observe serve`` itself, started as a subprocess on free
loopback ports (no OTLP receiver, no embedding warm-up): spans go in through
``POST /v1/metrics/record`` and Prometheus scrapes the collector's own ``/metrics``,
so a dashboard written against a wrong metric name, label or unit fails here.
"""

from __future__ import annotations

import contextlib
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
from tests.redisd import redis_server

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
    """Scrape targets ``http://127.0.0.1:{port}/metrics`` (one per replica) plus a way to feed
    them spans (round robin over the replicas) and each replica's API URL."""

    ports: list[int]
    apis: list[str]
    record: Callable[[list[dict[str, Any]]], list[int | None]]  # -> cost_usd_micro per span

    @property
    def port(self) -> int:
        return self.ports[0]


def _start_serve(api: int, metrics: int, redis_url: str | None = None,
                 otlp_http: int = 0) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
    env["LLM_OBSERVE_EMBEDDING_ENABLED"] = "false"
    if redis_url:
        env["LLM_OBSERVE_REDIS_URL"] = redis_url
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_observe.cli", "serve", "--host", "127.0.0.1",
         "--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
         "--otlp-http-port", str(otlp_http)],
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


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


# One process, or three replicas sharing one Redis behind one Prometheus job: every
# dashboard query must give the same numbers for the same spans (docs/scale-out.md).
@pytest.fixture(scope="module", params=[1, 3], ids=["one-process", "three-replicas"])
def metrics_source(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsSource]:
    replicas: int = request.param
    with contextlib.ExitStack() as stack:
        redis_url = stack.enter_context(redis_server(tmp_path_factory.mktemp("redis"))) \
            if replicas > 1 else None
        ports = [(free_port(), free_port()) for _ in range(replicas)]
        for api, metrics in ports:
            stack.callback(_stop, _start_serve(api, metrics, redis_url))
        clients = [stack.enter_context(httpx.Client(base_url=f"http://127.0.0.1:{api}",
                                                    timeout=10.0)) for api, _ in ports]
        def record(spans: list[dict[str, Any]]) -> list[int | None]:
            # span i of a batch goes to replica i % N: the same span of batch A and batch B
            # meets the same replica, so every series exists from A on (test_dashboard_queries'
            # premise), and each replica holds part of every model's and service's series
            costs = []
            for i, span in enumerate(spans):
                resp = clients[i % replicas].post("/v1/metrics/record", json=span)
                assert resp.status_code == 200, resp.text
                costs.append(resp.json()["cost_usd_micro"])
            return costs

        yield MetricsSource(ports=[m for _, m in ports],
                            apis=[f"http://127.0.0.1:{a}" for a, _ in ports], record=record)


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
                                  alerts=DASHBOARD_ALERTS,
                                  more_ports=tuple(metrics_source.ports[1:]))
    try:
        wait_ready(ui_port, proc)
        yield PrometheusServer(url=f"http://127.0.0.1:{ui_port}", config_dir=out)
    finally:
        stop_local_prometheus(proc)
