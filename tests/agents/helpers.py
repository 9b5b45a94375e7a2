"""Spans made with the real OTel SDK, OTLP-encoded and walked as the receiver does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Tracer

from llm_observe.otlp.walk import Walked, decode_request, walk
from tests.receiver.conftest import record_spans


def walked(spans: Sequence[ReadableSpan]) -> Walked:
    return walk(decode_request(encode_spans(spans).SerializeToString()))


def walk_built(build: Callable[[Tracer], None], **kw: Any) -> Walked:
    w = walked(record_spans(build, **kw))
    assert not w.rejected, w.rejected
    return w


DATA = Path(__file__).resolve().parents[1] / "data" / "agents"


def captured(name: str) -> Any:
    """A captured OTLP request (tests/data/agents, written by scripts/capture_agent_spans.py
    from real openai-agents + OpenInference runs against a scripted fake provider)."""
    return decode_request((DATA / f"{name}.pb").read_bytes())


def split(request: Any, parts: int) -> list[Any]:
    """The request's spans cut into ``parts`` requests in order (as an SDK's batch processor
    could have exported them), each a fresh request with the same resource and scope."""
    from llm_observe.otlp.wire import Request
    flat = [(rs, ss, span) for rs in request.resource_spans for ss in rs.scope_spans
            for span in ss.spans]
    size = -(-len(flat) // parts)
    out = []
    for i in range(0, len(flat), size):
        req = Request()
        for rs, ss, span in flat[i:i + size]:
            r = req.resource_spans.add()
            r.resource = rs.resource
            s = r.scope_spans.add()
            s.scope = ss.scope
            s.spans.append(span)
        out.append(req)
    return out


class Run:
    """A whole collector (build_collector: every stage and exporter as serve has them)."""

    def __init__(self) -> None:
        from llm_observe.collector.assembly import build_collector
        from llm_observe.collector.settings import Settings
        self.collector = build_collector(Settings(embedding_enabled=False))

    def send(self, request: Any) -> Walked:
        from llm_observe.pipeline.contracts import Batch
        w = walk(request)
        asyncio.run(self.collector.pipeline.submit(Batch(w.llm, w)))
        return w

    def send_spans(self, spans: Sequence[ReadableSpan]) -> Walked:
        """SDK spans OTLP-encoded and sent through the pipeline."""
        return self.send(decode_request(encode_spans(spans).SerializeToString()))

    def value(self, name: str, **labels: str) -> float:
        """Sum of a sample over every label set matching ``labels``."""
        total = 0.0
        for metric in self.collector.registry.collect():
            for sample in metric.samples:
                if sample.name == name and all(sample.labels.get(k) == v
                                               for k, v in labels.items()):
                    total += sample.value
        return total
