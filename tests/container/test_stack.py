"""`llm-observe start | status | stop` with the real engine and the local image, as a user
runs them: spans sent to the three published doors become the spec's series in the
Prometheus inside, alert rules fire there, the Grafana password and the data survive a
stop/start, and only loopback can reach the ports.

The tests run in file order on one stack (the module's fixture), each a step of one
session: start, send, query, restart, stop.
"""

from __future__ import annotations

import re
import socket
import time
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from llm_observe.pricing import load_price_table
from llm_observe.pricing.loader import default_price_file
from tests.container.conftest import IMAGE, TAG, Stack, cli, firewall, http_json

pytestmark = pytest.mark.slow

MODEL, PROVIDER = "gpt-4o-mini", "openai"
PROMPT, COMPLETION = 1000, 100
# spans per door, each its own service, so every number below is one door's
DOORS = {"door-grpc": 3, "door-http": 2, "door-rest": 4}
PASSWORD = re.compile(r"user admin, password (\S+)\)")


def _otlp_spans(exporter: Any, service: str, n: int) -> None:
    """``n`` GenAI chat spans from the real OTel SDK, exported synchronously."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.container")
    for _ in range(n):
        with tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER,
                "gen_ai.request.model": MODEL, "gen_ai.response.model": MODEL,
                "gen_ai.usage.input_tokens": PROMPT, "gen_ai.usage.output_tokens": COMPLETION,
                "gen_ai.response.finish_reasons": ("stop",)}):
            pass
    provider.shutdown()


def _record(stack: Stack, body: dict[str, Any]) -> dict[str, Any]:
    api = f"http://127.0.0.1:{stack.ports['--api-port']}/v1/metrics/record"
    answer: dict[str, Any] = http_json(api, body)
    assert answer["recorded"] is True, answer
    return answer


def _unpriced(stack: Stack) -> None:
    _record(stack, {"model": "no-such-model", "provider": "acme", "service_name": "door-rest",
                    "prompt_tokens": 10, "completion_tokens": 1, "status": "success"})


def test_start_publishes_on_loopback_and_prints_the_password(stack: Stack) -> None:
    stack.started_at = time.monotonic()
    done = cli(*stack.start_args)
    assert done.returncode == 0, done.stderr
    stack.start_out = done.stdout
    assert f"started (container {stack.name}, image {IMAGE}:{TAG}" in done.stdout
    assert "published on 127.0.0.1 only" in done.stdout
    # the local build says what it lacks: `start` in one line, the entrypoint in its log
    absent = "not in this image (a local build): grafana tempo loki alloy"
    assert [ln for ln in done.stdout.splitlines() if "not in this image" in ln] == [
        f"  {absent}; their URLs do not answer"]
    stack.wait("the entrypoint's line", lambda: f"llm-observe: {absent}; starting the rest"
               in "".join(stack.engine("logs", stack.name)[1:]))
    (password,) = PASSWORD.findall(done.stdout)
    assert len(password) >= 20
    stack.notes["password"] = password
    rc, out, _ = stack.engine("container", "inspect", "--format",
                              "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                              stack.name)
    stack.notes["addresses"] = out.split()  # for the firewall check after the stop
    rules = firewall()  # the check after the stop can fail: the engine's rules name the ports
    if rules is not None:
        assert re.search(rf"--dport {stack.ports['--api-port']}\b", rules), rules
    # the engine's own view: every port on 127.0.0.1, nothing on another interface
    rc, out, _ = stack.engine("port", stack.name)
    assert rc == 0
    published = sorted(line.split(" -> ")[1] for line in out.splitlines())
    assert published == sorted(f"127.0.0.1:{p}" for p in stack.ports.values())


def test_status_says_running(stack: Stack) -> None:
    done = cli("status", "--name", stack.name)
    assert done.returncode == 0
    # podman names a locally built image localhost/<name>; docker keeps the name as given
    image = f"{IMAGE}:{TAG}" if stack.engine.name == "docker" else f"localhost/{IMAGE}:{TAG}"
    assert done.stdout == (f"llm-observe: running (container {stack.name}, image {image}, "
                           f"engine {stack.engine.name})\n")


def test_the_ports_answer_on_loopback_and_not_on_the_hosts_other_address(stack: Stack) -> None:
    api = stack.ports["--api-port"]
    health = stack.wait("the REST API", lambda: http_json(
        f"http://127.0.0.1:{api}/v1/metrics/health"))
    assert health["initialized"] is True
    stack.notes["api_up_s"] = time.monotonic() - stack.started_at
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this picks the outgoing address
        address = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("this host has no address but loopback")
    for port in stack.ports.values():
        with socket.socket() as s:
            s.settimeout(3)
            assert s.connect_ex((address, port)) != 0, f"{address}:{port} is reachable"


def test_spans_from_the_three_doors_are_the_spec_series_in_prometheus(stack: Stack) -> None:
    otlp, otlp_http = stack.ports["--otlp-port"], stack.ports["--otlp-http-port"]
    _otlp_spans(GrpcExporter(endpoint=f"127.0.0.1:{otlp}", insecure=True, timeout=10),
                "door-grpc", DOORS["door-grpc"])
    _otlp_spans(HttpExporter(endpoint=f"http://127.0.0.1:{otlp_http}/v1/traces", timeout=10),
                "door-http", DOORS["door-http"])
    price = load_price_table(default_price_file()).lookup(MODEL, PROVIDER)
    assert price is not None
    each = price.cost_usd_micro(PROMPT, COMPLETION)
    for _ in range(DOORS["door-rest"]):
        answer = _record(stack, {"model": MODEL, "provider": PROVIDER,
                                 "service_name": "door-rest", "prompt_tokens": PROMPT,
                                 "completion_tokens": COMPLETION, "status": "success",
                                 "finish_reason": "stop"})
        assert answer["cost_usd_micro"] == each
    _unpriced(stack)  # the first of two: LLMUnpricedModel wants an increase

    def series(name: str) -> dict[str, float]:
        got = stack.prom(f'{name}{{model="{MODEL}"}}')
        return {dict(k)["service_name"]: v for k, v in got.items()}

    spans = stack.wait("llm_spans_total of every door",
                       lambda: (s := series("llm_spans_total")) and len(s) == 3 and s)
    stack.notes["queryable_s"] = time.monotonic() - stack.started_at
    assert spans == {door: float(n) for door, n in DOORS.items()}
    labels = dict(next(iter(stack.prom('llm_spans_total{service_name="door-grpc"}'))))
    assert {k: labels[k] for k in ("model", "provider", "status", "has_retries")} == {
        "model": MODEL, "provider": PROVIDER, "status": "success", "has_retries": "false"}
    assert series("llm_cost_usd_micro_total") == {d: float(n * each) for d, n in DOORS.items()}
    assert each == 210  # gpt-4o-mini: 1000 x $0.15/1M + 100 x $0.60/1M = 210 micro-USD
    tokens = stack.prom(f'sum by (token_type) (llm_tokens_total{{model="{MODEL}"}})')
    total = sum(DOORS.values())
    assert {dict(k)["token_type"]: v for k, v in tokens.items()} == {
        "prompt": total * PROMPT, "completion": total * COMPLETION}
    stack.notes["recorded_at"] = time.time()


def test_the_alert_rules_are_loaded_and_fire_on_the_published_port(stack: Stack) -> None:
    prom = f"http://127.0.0.1:{stack.ports['--prometheus-port']}"
    rules = http_json(f"{prom}/api/v1/rules")["data"]["groups"]
    names = {r["name"] for g in rules for r in g["rules"] if r["type"] == "alerting"}
    assert {"LLMErrorRateHigh", "LLMUnpricedModel", "LLMInjectionBurst",
            "LLMObserveCollectorDown"} <= names
    assert all(r["health"] == "ok" for g in rules for r in g["rules"])
    time.sleep(6)  # one scrape (5 s) after the first unpriced span, then the second
    _unpriced(stack)

    def firing() -> list[dict[str, Any]]:
        alerts = http_json(f"{prom}/api/v1/alerts")["data"]["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "LLMUnpricedModel"
                and a["state"] == "firing"]

    (alert,) = stack.wait("LLMUnpricedModel firing", firing, timeout=60)
    assert (alert["labels"]["model"], alert["labels"]["provider"]) == ("no-such-model", "acme")
    assert float(alert["value"]) > 0
    # and the collector is up: its own alert stays quiet
    alerts = http_json(f"{prom}/api/v1/alerts")["data"]["alerts"]
    assert not [a for a in alerts if a["labels"]["alertname"] == "LLMObserveCollectorDown"]


def test_a_second_start_with_the_same_name_says_so_in_one_line(stack: Stack) -> None:
    done = cli(*stack.start_args)
    assert done.returncode == 0
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"llm-observe: already running (container {stack.name}")


def test_stop_and_start_keep_the_password_and_the_data(stack: Stack) -> None:
    done = cli("stop", "--name", stack.name)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"llm-observe: stopped {stack.name} "
                           f"(data kept in volume {stack.name}-data)\n")
    status = cli("status", "--name", stack.name)
    assert status.returncode == 3
    assert status.stdout == f"llm-observe: not running (no container named {stack.name})\n"
    assert stack.engine("container", "inspect", stack.name)[0] != 0

    again = cli(*stack.start_args)
    assert again.returncode == 0, again.stderr
    assert PASSWORD.findall(again.stdout) == [stack.notes["password"]]
    stack.notes["addresses"] += stack.engine("container", "inspect", "--format",
                                             "{{range .NetworkSettings.Networks}}{{.IPAddress}} "
                                             "{{end}}", stack.name)[1].split()
    # the entrypoint printed the password once, at the first start only
    _, logs, err = stack.engine("logs", stack.name)
    assert "Grafana admin password" not in logs + err
    # Prometheus's data directory is on the volume: the series recorded before the stop
    # are still there, at the time they were recorded
    at = stack.notes["recorded_at"]
    before = stack.wait("Prometheus after the restart", lambda: stack.prom(
        f'llm_spans_total{{service_name="door-rest",model="{MODEL}"}}', at=at))
    assert list(before.values()) == [float(DOORS["door-rest"])]


def test_stop_stops(stack: Stack) -> None:
    done = cli("stop", "--name", stack.name)
    assert done.returncode == 0
    assert cli("status", "--name", stack.name).returncode == 3
    rc, out, _ = stack.engine("ps", "--all", "--format", "{{.Names}}")
    assert rc == 0 and stack.name not in out.split()
    timings = {k: round(v, 1) for k, v in stack.notes.items() if k.endswith("_s")}
    print(f"\ncontainer timings (s from `start`): {timings}")
