"""End to end through OTLP gRPC: an app with no TracerProvider of its own, three lines of
set-up, a real OpenAI call, and the span arriving at a real loopback TraceService."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tests.fakes import FakeProvider

ROOT = Path(__file__).resolve().parents[2]

APP = textwrap.dedent('''
    import os, sys
    from llm_observe.instrument import init_auto_instrumentation, observe
    status = init_auto_instrumentation()

    import openai
    client = openai.OpenAI(base_url=os.environ["FAKE_URL"], api_key="k")

    @observe("e2e-service", "ask")
    def ask():
        return client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "over otlp"}])

    print(ask().choices[0].message.content, flush=True)
''')  # the process exits normally: the SDK's atexit shutdown flushes the batch

APP_WITH_OWN_PROVIDER = textwrap.dedent('''
    import json, os
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)

    from llm_observe.instrument import init_auto_instrumentation, llm_span
    init_auto_instrumentation()
    with llm_span("gpt-4o", "openai", "own-provider"):
        pass
    print(json.dumps([s.name for s in memory.get_finished_spans()]), flush=True)
''')


class Collector(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.arrived = threading.Event()

    def Export(self, request: Any, context: Any) -> Any:  # the gRPC method name
        self.requests.append(request)
        self.arrived.set()
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def collector() -> Iterator[tuple[Collector, int]]:
    servicer = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, port
    server.stop(grace=None)


def run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True,
                          text=True, timeout=120, check=False)


def attribute_values(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


def test_default_setup_exports_over_otlp_grpc(collector: tuple[Collector, int],
                                              fake: FakeProvider) -> None:
    servicer, port = collector
    done = run(APP, FAKE_URL=fake.openai_base_url, OTEL_SERVICE_NAME="e2e-app",
               OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "You said: over otlp"
    assert servicer.arrived.wait(10)
    spans = {}
    for request in servicer.requests:
        for resource_spans in request.resource_spans:
            resource = {kv.key: kv.value.string_value
                        for kv in resource_spans.resource.attributes}
            assert resource["service.name"] == "e2e-app"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "llm_observe.instrument"
                for span in scope_spans.spans:
                    spans[span.name] = span
    assert set(spans) == {"ask", "chat gpt-4o"}
    llm = attribute_values(spans["chat gpt-4o"])
    assert llm["gen_ai.provider.name"] == "openai"
    assert llm["gen_ai.usage.input_tokens"] == 11
    assert llm["gen_ai.usage.output_tokens"] == 4
    assert llm["llm_observe.service_name"] == "e2e-service"  # inherited from @observe
    assert spans["chat gpt-4o"].parent_span_id == spans["ask"].span_id
    assert spans["chat gpt-4o"].trace_id == spans["ask"].trace_id


def test_an_apps_own_provider_is_used(collector: tuple[Collector, int]) -> None:
    servicer, port = collector
    done = run(APP_WITH_OWN_PROVIDER, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["chat gpt-4o"]
    assert not servicer.arrived.wait(1)  # nothing went to our default OTLP exporter
