"""Spans made with the real OTel SDK, OTLP-encoded and walked as the receiver does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
