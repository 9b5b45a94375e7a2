"""The collector under test (a real ``llm-observe serve``) and the load sent to it: OTLP/gRPC
requests of GenAI spans whose prompt holds PII, each acknowledged or not."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from prometheus_client.parser import text_string_to_metric_families

from tests.backends.servers import free_port
from tests.cli.test_serve import Served, env, start

EMAIL = "jane.doe@example.com"
PROMPT = f"Write to {EMAIL} about invoice 4411 and ask for the total."
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
T0 = 1_750_000_000_000_000_000


def request(first_id: int, n: int) -> ExportTraceServiceRequest:
    """``n`` chat spans with span ids ``first_id``..., one trace per request."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(KeyValue(key="service.name",
                                           value=AnyValue(string_value="backend-test")))
    ss = rs.scope_spans.add()
    for i in range(first_id, first_id + n):
        span = ss.spans.add(trace_id=first_id.to_bytes(16, "big"), span_id=i.to_bytes(8, "big"),
                            name="chat gpt-4o", kind=3, start_time_unix_nano=T0,
                            end_time_unix_nano=T0 + 800_000_000)
        for key, value in (("gen_ai.operation.name", "chat"), ("gen_ai.provider.name", "openai"),
                           ("gen_ai.request.model", "gpt-4o"), ("llm_observe.prompt", PROMPT),
                           ("llm_observe.completion", "The total is 42 EUR.")):
            span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
        for key, number in (("gen_ai.usage.input_tokens", 1000),
                            ("gen_ai.usage.output_tokens", 200)):
            span.attributes.append(KeyValue(key=key, value=AnyValue(int_value=number)))
    return req


class Collector:
    """``llm-observe serve`` with a destinations.yaml, write-ahead (an OK means on disk)."""

    def __init__(self, served: Served, otlp: int, metrics: int) -> None:
        self.served, self.otlp, self.metrics_port = served, otlp, metrics
        self.channel = grpc.insecure_channel(f"127.0.0.1:{otlp}")
        self.acked: set[int] = set()

    def send(self, first_id: int, n: int) -> bool:
        """One request; its span ids join ``acked`` when the collector answered OK."""
        try:
            self.channel.unary_unary(EXPORT)(request(first_id, n).SerializeToString(),
                                             timeout=20)
        except grpc.RpcError:
            return False
        self.acked.update(range(first_id, first_id + n))
        return True

    def metric(self, name: str, **labels: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=10) as answer:
            text = answer.read().decode()
        return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
                   if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


@contextmanager
def collector(tmp: Path, destinations_yaml: str) -> Iterator[Collector]:
    config = tmp / "config"
    config.mkdir(exist_ok=True)
    for packaged in (Path(__file__).parents[2] / "config").glob("*.yaml"):  # as shipped
        (config / packaged.name).write_bytes(packaged.read_bytes())
    (config / "destinations.yaml").write_text(destinations_yaml)
    otlp, api, metrics = free_port(), free_port(), free_port()
    served = start("--config-dir", str(config), "--otlp-port", str(otlp), "--port", str(api),
                   "--metrics-port", str(metrics),
                   environ=env(LLM_OBSERVE_SPOOL_DIR=str(tmp / "spool"),
                               LLM_OBSERVE_WRITE_AHEAD="true"))
    c = Collector(served, otlp, metrics)
    try:
        yield c
    finally:
        c.channel.close()
        code, err = served.stop()
        assert code == 0 and "Traceback" not in err, err[-3000:]
