"""Node end to end: @opentelemetry/sdk-node exports GenAI spans over OTLP/HTTP, as JSON and
as protobuf, to a live ``llm-observe serve``; the spans land as metrics with their tokens.

The Node packages are pinned by tests/node/package-lock.json and installed by
scripts/install.sh (``npm ci``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_serve import call, free_port, start
from tests.receiver.conftest import Scrape

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed "
                                "(scripts/install.sh installs nodejs and npm with apt)")


def emit(url: str, protocol: str, service: str) -> str:
    assert (NODE_DIR / "node_modules" / "@opentelemetry" / "sdk-node").is_dir(), \
        "tests/node has no node_modules: run scripts/install.sh (npm ci in tests/node)"
    done = subprocess.run([NODE or "node", "emit_genai.mjs", url, protocol, service],
                          cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sdk_node_spans_land_as_metrics_over_http_json_and_protobuf() -> None:
    api, metrics, http = free_port(), free_port(), free_port()
    served = start("--port", str(api), "--metrics-port", str(metrics), "--otlp-port", "0",
                   "--otlp-http-port", str(http))
    try:
        assert f"OTLP/HTTP http://127.0.0.1:{http}/v1/traces" in served.ready
        url = f"http://127.0.0.1:{http}/v1/traces"
        assert "sent 4 spans as json" in emit(url, "json", "node-json")
        assert "sent 4 spans as proto" in emit(url, "proto", "node-proto")
        status, text = call("GET", f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200
        m = Scrape(text)
        for service in ("node-json", "node-proto"):
            chat = {"model": "gpt-4o", "provider": "openai", "service_name": service}
            assert m("llm_tokens_total", **chat, token_type="prompt") == 200
            assert m("llm_tokens_total", **chat, token_type="completion") == 50
            assert m("llm_spans_total", **chat, status="success", has_retries="false") == 2
            assert m("llm_latency_ms_ttft_sum", **chat) == pytest.approx(350)
            mini = {"model": "gpt-4o-mini", "provider": "openai", "service_name": service}
            assert m("llm_spans_total", **mini, status="error", has_retries="false") == 1
        assert m("llm_observe_receiver_spans_received_total", kind="other") == 2
    finally:
        code, err = served.stop()
    assert code == 0 and "Traceback" not in err
