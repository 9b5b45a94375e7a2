"""End to end: spans through ``serve``, a real Prometheus with the rendered rules, an alert fires.

``llm-observe serve --with-prometheus`` reads ``CONFIG_DIR/alerts.yaml`` (short ``for:``
here), renders the rules beside its scrape config and starts Debian's Prometheus; we send
prompt-injection attempts through the REST API and wait for Prometheus' own alerts API to
say LLMInjectionBurst is firing for that service, with its annotations expanded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.provisioning.conftest import free_port

CONFIG = Path(__file__).parents[2] / "config"
pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None,
                                reason="prometheus not installed (scripts/install.sh)")


def _serve(tmp: Path, config_dir: Path, api: int, metrics: int,
           prom: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
    env.update(LLM_OBSERVE_EMBEDDING_ENABLED="false", XDG_DATA_HOME=str(tmp / "xdg"))
    return subprocess.Popen(
        [sys.executable, "-m", "llm_observe.cli", "serve", "--port", str(api),
         "--metrics-port", str(metrics), "--otlp-port", "0", "--otlp-http-port", "0",
         "--config-dir", str(config_dir),
         "--with-prometheus", "--prometheus-port", str(prom)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_ready(proc: subprocess.Popen[str], timeout: float = 90.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "ready:" in line:
            assert "prometheus http://127.0.0.1:" in line, line
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")
    raise AssertionError("serve --with-prometheus did not become ready")


def _span(service: str, injection: bool) -> dict[str, Any]:
    return {"model": "gpt-4o", "provider": "openai", "service_name": service,
            "prompt_tokens": 100, "completion_tokens": 10, "latency_ms_total": 800,
            "status": "success", "injection_attempt": injection, "pii_detected": False}


def _wait_scraped(prom: httpx.Client, expr: str, value: float) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        result = prom.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
        if result and float(result[0]["value"][1]) == value:
            return
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never saw {expr} == {value}")


def _alerts(prom: httpx.Client) -> list[dict[str, Any]]:
    body = prom.get("/api/v1/alerts").json()
    assert body["status"] == "success", body
    return list(body["data"]["alerts"])


def test_injection_burst_goes_to_firing(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    for name in ("model_prices.yaml", "patterns.yaml"):
        shutil.copy(CONFIG / name, config_dir / name)
    (config_dir / "alerts.yaml").write_text(
        "burst_window: 1m\ninjection_burst: 2\ninjection_for: 5s\n")
    api, metrics, prom_port = free_port(), free_port(), free_port()
    proc = _serve(tmp_path, config_dir, api, metrics, prom_port)
    try:
        _wait_ready(proc)
        with httpx.Client(base_url=f"http://127.0.0.1:{api}", timeout=10) as client, \
                httpx.Client(base_url=f"http://127.0.0.1:{prom_port}", timeout=10) as prom:
            rules = prom.get("/api/v1/rules").json()["data"]["groups"]
            assert sum(len(g["rules"]) for g in rules) >= 16
            # Clean traffic first, scraped: increase() counts from a series' first sample
            for service in ("chatbot", "internal"):
                assert client.post("/v1/metrics/record",
                                   json=_span(service, False)).status_code == 200
            _wait_scraped(prom, "count(llm_injection_attempts_total)", 2)
            for i in range(6):
                spans = [_span("chatbot", True), _span("internal", i == 0)]
                for span in spans:
                    assert client.post("/v1/metrics/record", json=span).status_code == 200
            deadline, states = time.monotonic() + 90, {}
            while time.monotonic() < deadline:
                alerts = [a for a in _alerts(prom)
                          if a["labels"]["alertname"] == "LLMInjectionBurst"]
                states = {a["labels"]["service_name"]: a["state"] for a in alerts}
                if states.get("chatbot") == "firing":
                    break
                time.sleep(1)
            assert states == {"chatbot": "firing"}, states  # one attempt at "internal": silent
            (alert,) = alerts
            assert alert["labels"]["severity"] == "critical"
            notes = alert["annotations"]
            assert re.fullmatch(r"chatbot: \d+ prompt-injection attempts in 1m",
                                notes["summary"]), notes
            assert "error" not in notes["description"].lower(), notes
            assert "{{" not in notes["description"] and "service chatbot" in notes["description"]
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_a_bad_alerts_file_stops_serve_with_one_line(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    for name in ("model_prices.yaml", "patterns.yaml"):
        shutil.copy(CONFIG / name, config_dir / name)
    (config_dir / "alerts.yaml").write_text("error_ratio: 5\n")
    proc = _serve(tmp_path, config_dir, free_port(), free_port(), free_port())
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "ready" not in out
    assert err.strip().splitlines() == [
        f"llm-observe serve: error: {config_dir / 'alerts.yaml'}: error_ratio: "
        "must be a number in (0, 1)"]
