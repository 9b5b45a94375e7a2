"""``llm-observe serve`` as a real process: start, serve, scrape, shut down, fail cleanly."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeProvider
from tests.fakes.provider import Settings as ProviderSettings

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LLM_OBSERVE_")}
    # The embedding warm-up is CPU the serve tests do not need; the OTLP/HTTP door stays
    # off unless a test asks for it (4318 may be taken by another run on this machine).
    base.update(LLM_OBSERVE_EMBEDDING_ENABLED="false", LLM_OBSERVE_OTLP_HTTP_PORT="0")
    base.update(extra)
    return base


class Served:
    def __init__(self, proc: subprocess.Popen[str], ready: str) -> None:
        self.proc = proc
        self.ready = ready

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err


def start(*args: str, environ: dict[str, str] | None = None) -> Served:
    proc = subprocess.Popen([sys.executable, "-m", "llm_observe.cli", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environ or env())
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "ready:" in line:
            return Served(proc, line)
        if not line and proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")
    proc.kill()
    raise AssertionError("serve did not become ready")


def call(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            raw = resp.read().decode()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read().decode(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


@pytest.fixture
def ports() -> Iterator[tuple[int, int]]:
    yield free_port(), free_port()


def test_serve_answers_records_scrapes_and_stops_on_sigterm(ports: tuple[int, int]) -> None:
    api, metrics = ports
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0")
    try:
        assert f"http://127.0.0.1:{api}/v1" in served.ready
        assert f"127.0.0.1:{metrics}/metrics" in served.ready
        status, health = call("GET", f"http://127.0.0.1:{api}/v1/metrics/health")
        assert status == 200 and health["initialized"] is True and health["port"] == metrics
        status, body = call("POST", f"http://127.0.0.1:{api}/v1/metrics/record",
                            {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 100,
                             "service_name": "serve-test"})
        assert status == 200 and body["cost_usd_micro"] == 250
        status, text = call("GET", f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200 and 'service_name="serve-test"' in text
    finally:
        code, err = served.stop(signal.SIGTERM)
    assert code == 0
    assert "Traceback" not in err


def test_ctrl_c_is_a_clean_stop(ports: tuple[int, int]) -> None:
    api, metrics = ports
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0")
    code, err = served.stop(signal.SIGINT)
    assert code == 0 and "Traceback" not in err
    with pytest.raises(OSError):  # the API is gone
        socket.create_connection(("127.0.0.1", api), timeout=1).close()


def test_environment_configures_and_options_override(ports: tuple[int, int]) -> None:
    api, metrics = ports
    environ = env(LLM_OBSERVE_PORT=str(api), LLM_OBSERVE_METRICS_PORT=str(free_port()),
                  LLM_OBSERVE_OTLP_PORT="0", LLM_OBSERVE_API_TOKEN="tok")
    served = start("--metrics-port", str(metrics), environ=environ)
    try:
        assert f":{api}/v1" in served.ready and f":{metrics}/metrics" in served.ready
        status, _ = call("GET", f"http://127.0.0.1:{api}/v1/version")
        assert status == 401  # the token from the environment is enforced
    finally:
        assert served.stop()[0] == 0


def test_no_metrics_init_leaves_the_scrape_endpoint_off(ports: tuple[int, int]) -> None:
    api, metrics = ports
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                   "--no-metrics-init")
    try:
        assert "metrics not initialized" in served.ready
        _, health = call("GET", f"http://127.0.0.1:{api}/v1/metrics/health")
        assert health["initialized"] is False
        status, body = call("POST", f"http://127.0.0.1:{api}/v1/metrics/init")
        assert status == 200 and body["port"] == metrics
        assert call("GET", f"http://127.0.0.1:{metrics}/metrics")[0] == 200
    finally:
        assert served.stop()[0] == 0


def test_otlp_receiver_listens_when_enabled(ports: tuple[int, int]) -> None:
    pytest.importorskip("llm_observe.receiver")
    api, metrics = ports
    otlp = free_port()
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", str(otlp))
    try:
        assert f"OTLP 127.0.0.1:{otlp}" in served.ready
        socket.create_connection(("127.0.0.1", otlp), timeout=2).close()
    finally:
        assert served.stop()[0] == 0


def run_to_exit(*args: str, environ: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "llm_observe.cli", "serve", *args],
                          capture_output=True, text=True, timeout=60, env=environ or env())
    return proc.returncode, proc.stderr


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_bad_price_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "model_prices.yaml").write_text(
        "- model: gpt-4o\n  provider: openai\n  input_price_per_1m: lots\n"
        "  output_price_per_1m: 10\n  version: v1\n")
    code, err = run_to_exit("--config-dir", str(tmp_path), "--port", str(free_port()),
                            "--otlp-port", "0")
    assert code == 2
    line = one_line(err)
    assert "model_prices.yaml" in line and "input_price_per_1m" in line


def test_missing_config_dir_is_exit_2() -> None:
    code, err = run_to_exit("--config-dir", "/nonexistent/llm-observe")
    assert code == 2 and "config_dir" in one_line(err)


def test_bad_environment_value_is_exit_2() -> None:
    code, err = run_to_exit(environ=env(LLM_OBSERVE_METRICS_PORT="nine"))
    assert code == 2 and "LLM_OBSERVE_METRICS_PORT" in one_line(err)


@pytest.mark.parametrize(("variable", "value", "needle"), [
    ("LLM_OBSERVE_REDIS_URL", "localhost:6379", "redis_url"),
    ("LLM_OBSERVE_LOG_LEVEL", "trace", "LLM_OBSERVE_LOG_LEVEL"),
    ("LLM_OBSERVE_LOG_FORMAT", "xml", "LLM_OBSERVE_LOG_FORMAT"),
])
def test_bad_redis_url_or_log_option_is_one_line_and_exit_2(variable: str, value: str,
                                                          needle: str) -> None:
    code, err = run_to_exit("--port", str(free_port()), "--otlp-port", "0",
                            environ=env(**{variable: value}))
    assert code == 2 and needle in one_line(err)


def test_json_log_format_writes_one_object_per_line(ports: tuple[int, int]) -> None:
    api, metrics = ports
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                   "--log-format", "json")
    code, err = served.stop()
    assert code == 0
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert lines and all({"ts", "level", "logger", "message"} <= set(x) for x in lines)
    assert any("shutting down" in x["message"] for x in lines)


def test_an_empty_host_is_refused_not_every_interface() -> None:
    code, err = run_to_exit("--host", "", "--otlp-port", "0")
    assert code == 2 and "host" in one_line(err)


def test_sigterm_is_not_held_up_by_a_test_call_to_a_slow_provider(
        ports: tuple[int, int]) -> None:
    # The provider takes 60 s; the test call runs in a thread of its own, so SIGTERM
    # stops the collector within its shutdown bound, not when the provider answers.
    api, metrics = ports
    with FakeProvider(ProviderSettings(delay_s=60)) as slow:
        served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                       environ=env(LLM_OBSERVE_OPENAI_BASE_URL=slow.openai_base_url,
                                   LLM_OBSERVE_OPENAI_API_KEY="k"))
        def test_call() -> None:
            with contextlib.suppress(OSError):  # cut off by the shutdown, as expected
                call("POST", f"http://127.0.0.1:{api}/v1/instrumentation/test-call",
                     {"method": "httpx", "provider": "openai"})

        caller = threading.Thread(target=test_call, daemon=True)
        caller.start()
        deadline = time.monotonic() + 10
        while not slow.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert slow.requests, "the test call never reached the provider"
        began = time.monotonic()
        code, _ = served.stop()
        assert code == 0
        assert time.monotonic() - began < 20


def test_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run_to_exit("--port", str(port), "--otlp-port", "0",
                                "--metrics-port", str(free_port()))
    assert code == 1
    assert f"127.0.0.1:{port}" in one_line(err)


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")
def test_with_prometheus_runs_a_prometheus_scraping_this_collector(
        ports: tuple[int, int], tmp_path: Path) -> None:
    from llm_observe.provisioning.local_prometheus import wait_ready

    api, metrics = ports
    ui = free_port()
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                   "--with-prometheus", "--prometheus-port", str(ui),
                   environ=env(XDG_DATA_HOME=str(tmp_path)))
    try:
        assert f"prometheus http://127.0.0.1:{ui}" in served.ready
        wait_ready(ui, timeout=30)
        urls: list[str] = []
        deadline = time.monotonic() + 30  # target discovery runs just after /-/ready
        while not urls and time.monotonic() < deadline:
            _, targets = call("GET", f"http://127.0.0.1:{ui}/api/v1/targets")
            urls = [t["scrapeUrl"] for t in targets["data"]["activeTargets"]]
            time.sleep(0.2)
        assert f"http://127.0.0.1:{metrics}/metrics" in urls
        assert (tmp_path / "llm-observe" / "prometheus" / "prometheus.yml").exists()
    finally:
        assert served.stop()[0] == 0
    with pytest.raises(OSError):  # Prometheus stopped with the collector
        socket.create_connection(("127.0.0.1", ui), timeout=1).close()
