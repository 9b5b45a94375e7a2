"""OTLP spans built here, not received: an LLM span from the REST doors (no origin
request) and a tool-call transition span (the toolchain processor), for the forwarder's
encoder (:mod:`otlp.encode`)."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from llm_observe import semconv as sc
from llm_observe.otlp.wire import (
    ERROR_STATUS,
    SPAN_KIND_CLIENT,
    SPAN_KIND_INTERNAL,
    Span,
    encode_value,
)
from llm_observe.providers import semconv_provider
from llm_observe.span import LlmSpan, TransitionSpan


def id_bytes(value: str | None, size: int) -> bytes:
    """An OTLP id of ``size`` bytes from our hex id (longer hex is cut; non-hex is hashed)."""
    if not value:
        return b""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) >= size:
        return raw[:size]
    return hashlib.sha256(value.encode()).digest()[:size]


def fresh_span(span: LlmSpan) -> Any:
    """A ``wire.Span`` for a span that did not come in over OTLP (REST doors)."""
    latency_ns = (span.latency_ms_total or 0) * 1_000_000
    start = span.start_time_ns if span.start_time_ns is not None else time.time_ns() - latency_ns
    message = Span(trace_id=id_bytes(span.trace_id, 16), span_id=id_bytes(span.span_id, 8),
                   parent_span_id=id_bytes(span.parent_span_id, 8),
                   name=f"chat {span.model}", kind=SPAN_KIND_CLIENT,
                   start_time_unix_nano=start, end_time_unix_nano=start + latency_ns)
    if span.status == sc.STATUS_ERROR:
        message.status = ERROR_STATUS
    values: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_PROVIDER_NAME: semconv_provider(span.provider),
        sc.GEN_AI_REQUEST_MODEL: span.model,
        sc.GEN_AI_RESPONSE_MODEL: span.actual_model,
        sc.GEN_AI_USAGE_INPUT_TOKENS: span.prompt_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: span.completion_tokens,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: span.cache_read_tokens or None,
        sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: span.cache_write_tokens or None,
        sc.GEN_AI_RESPONSE_FINISH_REASONS: [span.finish_reason] if span.finish_reason else None,
        sc.GEN_AI_CONVERSATION_ID: span.session_id,
        sc.ERROR_TYPE: span.error_type,
        sc.SERVICE: span.service_name,
        sc.ENDPOINT: span.endpoint,
        sc.STATUS: span.status,
        sc.LATENCY_MS_TOTAL: span.latency_ms_total,
        sc.LATENCY_MS_TTFT: span.latency_ms_ttft,
        sc.RETRY_COUNT: span.retry_count or None,
        sc.ATTEMPTED_MODELS: span.attempted_models or None,
        sc.PROMPT_TEXT: span.prompt_text,
        sc.COMPLETION_TEXT: span.completion_text,
    }
    attrs = message.attributes
    for key, value in values.items():
        if value is not None:
            attrs[key] = encode_value(value)
    return message


def transition_bytes(transition: TransitionSpan) -> bytes:
    """The serialized OTLP span of a tool-call transition."""
    message = Span(trace_id=id_bytes(transition.trace_id, 16),
                   span_id=id_bytes(transition.span_id, 8),
                   parent_span_id=id_bytes(transition.parent_span_id, 8),
                   name=transition.name, kind=SPAN_KIND_INTERNAL,
                   start_time_unix_nano=transition.start_time_ns,
                   end_time_unix_nano=transition.end_time_ns)
    for key, value in transition.attributes.items():
        message.attributes[key] = encode_value(value)
    data: bytes = message.SerializeToString()
    return data
