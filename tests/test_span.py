from __future__ import annotations

import uuid
from typing import Any

import pytest

from llm_observe.errors import SpanValidationError
from llm_observe.span import MAX_TOKENS, LlmSpan, new_id

GOOD: dict[str, Any] = {
    "model": "gpt-4o", "provider": "OpenAI", "service_name": "checkout",
    "prompt_tokens": 120, "completion_tokens": 40, "latency_ms_total": 900,
    "latency_ms_ttft": 150, "finish_reason": "stop", "status": "success",
    "pii_detected": False, "injection_attempt": True, "retry_count": 2,
    "attempted_models": ["gpt-4o", "gpt-4o-mini"],
}


def test_a_full_record_round_trips_into_a_span() -> None:
    span = LlmSpan.from_dict(GOOD)
    assert (span.model, span.provider, span.service_name) == ("gpt-4o", "openai", "checkout")
    assert (span.prompt_tokens, span.completion_tokens) == (120, 40)
    assert (span.latency_ms_total, span.latency_ms_ttft) == (900, 150)
    assert span.injection_attempt and not span.pii_detected
    assert span.has_retries and span.attempted_models == ["gpt-4o", "gpt-4o-mini"]
    assert len(span.span_id) == 32 and span.span_id != span.trace_id


def test_minimal_record_gets_defaults() -> None:
    span = LlmSpan.from_dict({"model": "m", "provider": "p"})
    assert span.status == "success" and span.service_name == "default"
    assert span.latency_ms_total is None and span.retry_count == 0 and not span.has_retries


def test_provider_stop_reasons_are_normalised() -> None:
    assert LlmSpan.from_dict({**GOOD, "finish_reason": "end_turn"}).finish_reason == "stop"
    assert LlmSpan.from_dict({**GOOD, "finish_reason": "tool_use"}).finish_reason == "tool_calls"
    assert LlmSpan.from_dict({**GOOD, "finish_reason": "max_tokens"}).finish_reason == "length"


def test_every_bad_field_is_named_at_once() -> None:
    bad = {**GOOD, "prompt_tokens": -1, "completion_tokens": "12", "latency_ms_total": 12.5,
           "status": "ok", "pii_detected": "yes", "retry_count": 10**9,
           "attempted_models": "gpt-4o"}
    del bad["model"]
    with pytest.raises(SpanValidationError) as info:
        LlmSpan.from_dict(bad)
    named = {e.field for e in info.value.errors}
    assert named == {"model", "prompt_tokens", "completion_tokens", "latency_ms_total", "status",
                     "pii_detected", "retry_count", "attempted_models"}
    assert "must be >= 0" in str(info.value)


@pytest.mark.parametrize(("patch", "field"), [
    ({"prompt_tokens": MAX_TOKENS + 1}, "prompt_tokens"),
    ({"prompt_tokens": True}, "prompt_tokens"),
    ({"latency_ms_ttft": 5000}, "latency_ms_ttft"),  # ttft after the call ended
    ({"model": "  "}, "model"),
    ({"model": "x" * 300}, "model"),
    ({"cache_read_tokens": 500}, "cache_read_tokens"),  # more cached than prompt tokens
])
def test_absurd_values_are_rejected(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(SpanValidationError) as info:
        LlmSpan.from_dict({**GOOD, **patch})
    assert [e.field for e in info.value.errors] == [field]


def test_non_object_is_rejected() -> None:
    with pytest.raises(SpanValidationError, match="JSON object"):
        LlmSpan.from_dict(["model"])


def test_generated_ids_are_distinct_uuid4s() -> None:
    ids = [new_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for raw in ids[:500]:
        parsed = uuid.UUID(hex=raw)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, raw)
