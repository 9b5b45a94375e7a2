"""The Vercel AI SDK end to end: ``ai`` 7 (with ``@ai-sdk/otel``) and ``ai`` 6 (its
``experimental_telemetry`` ``ai.*`` spans) call the fake OpenAI-compatible provider, once
generating and once streaming; @opentelemetry/sdk-node exports their spans over OTLP/HTTP as
JSON and as protobuf to a live ``serve``. Each call lands once (the SDK's wrapper spans are
not counted again), with the provider's token counts and, when streamed, a time to first
token. The packages are pinned by tests/node/package-lock.json (scripts/install.sh)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_serve import call, free_port, start
from tests.fakes.provider import FakeProvider
from tests.receiver.conftest import Scrape

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed "
                                "(scripts/install.sh installs nodejs and npm with apt)")
RUNS = [(major, protocol) for major in ("v7", "v6") for protocol in ("json", "proto")]


def _run_sdk(url: str, protocol: str, service: str, base_url: str,
             major: str) -> dict[str, dict[str, object]]:
    assert (NODE_DIR / "node_modules" / "ai-v6").is_dir(), \
        "tests/node has no node_modules: run scripts/install.sh (npm ci in tests/node)"
    done = subprocess.run([NODE or "node", "vercel_ai.mjs", url, protocol, service, base_url,
                           major], cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_vercel_ai_sdk_calls_land_once_with_tokens_and_ttft() -> None:
    api, metrics, http = free_port(), free_port(), free_port()
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                   "--otlp-http-port", str(http))
    try:
        url = f"http://127.0.0.1:{http}/v1/traces"
        with FakeProvider() as fake:
            for major, protocol in RUNS:
                out = _run_sdk(url, protocol, f"vercel-{major}-{protocol}",
                               fake.openai_base_url, major)
                # what the SDK itself reports: the fake's usage
                assert out["generate"] == {"input": 11, "output": 4}
                assert out["stream"]["text"] == "You said: Stream please"
        status, text = call("GET", f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200
        m = Scrape(text)
        for major, protocol in RUNS:
            service = f"vercel-{major}-{protocol}"
            for model in ("gpt-4o", "gpt-4o-mini"):
                labels = {"model": model, "provider": "openai", "service_name": service}
                assert m("llm_spans_total", **labels, status="success",
                         has_retries="false") == 1, (service, model)
                assert m("llm_tokens_total", **labels, token_type="prompt") == 11
                assert m("llm_tokens_total", **labels, token_type="completion") == 4
            streamed = {"model": "gpt-4o-mini", "provider": "openai", "service_name": service}
            assert m("llm_latency_ms_ttft_count", **streamed) == 1, service
            assert 0 < m("llm_latency_ms_ttft_sum", **streamed) <= m(
                "llm_latency_ms_total_sum", **streamed)
            whole = {"model": "gpt-4o", "provider": "openai", "service_name": service}
            assert m("llm_latency_ms_ttft_count", **whole) == 0
    finally:
        code, err = served.stop()
    assert code == 0 and "Traceback" not in err
