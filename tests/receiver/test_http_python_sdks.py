"""Python producers end to end over OTLP/HTTP: the Langfuse SDK (its own OTLP path and Basic
auth, the token as secret key) and Pydantic Logfire (``send_to_logfire=False``, an OTLP/HTTP
endpoint), each tracing a real ``openai`` client against the fake provider, once whole and
once streamed, in a process of its own. Each call lands once, priced, with the provider's
token counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_serve import call, env, free_port, start
from tests.fakes.provider import FakeProvider
from tests.receiver.conftest import Scrape

APPS = Path(__file__).parent / "producers"
TOKEN = "s3cret-otlp-token"
pytest.importorskip("langfuse")
pytest.importorskip("logfire")


def _app(script: str, *argv: str, extra: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, str(APPS / script), *argv], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(extra or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _calls_landed(m: Scrape, service: str) -> None:
    for model in ("gpt-4o", "gpt-4o-mini"):
        labels = {"model": model, "provider": "openai", "service_name": service}
        assert m("llm_spans_total", **labels, status="success", has_retries="false") == 1
        assert m("llm_tokens_total", **labels, token_type="prompt") == 11
        assert m("llm_tokens_total", **labels, token_type="completion") == 4
        assert m("llm_cost_usd_micro_total", **labels) > 0  # priced: provider and model known


def test_langfuse_and_logfire_sdks_land_once_with_tokens() -> None:
    api, metrics, http = free_port(), free_port(), free_port()
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                   "--otlp-http-port", str(http),
                   environ={**env(), "LLM_OBSERVE_OTLP_TOKEN": TOKEN})
    base = f"http://127.0.0.1:{http}"
    try:
        with FakeProvider() as fake:
            assert _app("langfuse_app.py", base, fake.openai_base_url, TOKEN,
                        extra={"OTEL_SERVICE_NAME": "langfuse-app"}) == \
                "11 You said: Stream please"
            assert _app("logfire_app.py", fake.openai_base_url, "logfire-app", extra={
                "OTEL_EXPORTER_OTLP_ENDPOINT": base,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {TOKEN}",
            }) == "11 You said: Stream please"
            # a wrong secret key is refused, and counted
            _app("langfuse_app.py", base, fake.openai_base_url, "wrong-key")
        status, text = call("GET", f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200
        m = Scrape(text)
        # the Langfuse SDK takes its service from OTEL_SERVICE_NAME (without it, OTel's
        # unknown_service:<executable>); it names no provider: the model family gives it
        # (providers.registry.provider_of_model)
        _calls_landed(m, "langfuse-app")
        _calls_landed(m, "logfire-app")
        streamed = {"model": "gpt-4o-mini", "provider": "openai",
                    "service_name": "langfuse-app"}
        assert m("llm_latency_ms_ttft_count", **streamed) == 1  # completion_start_time
        assert m("llm_observe_receiver_requests_total", outcome="unauthenticated") >= 1
    finally:
        code, err = served.stop()
    assert code == 0 and "Traceback" not in err
