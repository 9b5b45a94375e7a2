"""Which OTLP spans are LLM calls, and how their attributes map onto :class:`LlmSpan`.

The key chains of every dialect and the cached per-key-set :class:`Plan` live in
:mod:`otlp.plan`; token usage under each dialect's cache-token rule and the
producer's reported cost in :mod:`otlp.usage` (full mapping and sources in
docs/attribute-mapping.md).

A span whose mapped fields are garbage (a token count that is a string,
negative or 1e30; an end time before its start or past 2**63; a first token outside
the span; a model that is not a string or holds a control character; a reported cost
that is NaN) raises :class:`SpanRejected`, naming the key: it is answered as rejected in
the OTLP partial success and never reaches the metrics (bounds: docs/receiver.md, "Bounds").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from llm_observe import semconv as sc
from llm_observe.agents.toolturn import shows_tool_call
from llm_observe.otlp import texts, usage
from llm_observe.otlp.plan import (
    LANGFUSE_LLM_TYPES,
    MAPPED_KEYS,
    MARKERS,
    NOT_LLM_OPERATIONS,
    Plan,
    plan_for,
)
from llm_observe.otlp.timing import latencies
from llm_observe.otlp.values import (
    SpanRejected,
    describe,
    finish_reason,
    flag,
    integer,
    label,
    models,
    provider_name,
    requested_model,
    resource_service,
    seconds_ms,
    small,
)
from llm_observe.otlp.wire import is_error_status
from llm_observe.providers.registry import provider_of_model
from llm_observe.span import MAX_RETRIES, MAX_TOKENS, LlmSpan

_M0, _M1, _M2, _M3 = MARKERS
_METHODS = frozenset({sc.METHOD_EXACT, sc.METHOD_HEURISTIC})
_STATUSES = frozenset({sc.STATUS_SUCCESS, sc.STATUS_ERROR})


def is_llm_span(attrs: Any, plan: Plan | None = None) -> bool:
    """True when the attributes describe one LLM call (see plan.MARKERS, NOT_LLM_OPERATIONS)."""
    plan = plan or plan_for(attrs)
    if plan.kind is not None:
        kind = small(attrs[plan.kind])
        if plan.kind == sc.LF_OBSERVATION_TYPE:
            return type(kind) is str and kind in LANGFUSE_LLM_TYPES
        return bool(kind == sc.OI_SPAN_KIND_LLM)
    if not plan.is_llm:
        return False
    ops = plan.ops
    if len(ops) == 1:  # the common case, without a generator
        return _is_llm_op(small(attrs[ops[0]]))
    return all(_is_llm_op(small(attrs[key])) for key in ops)


# Logfire's OpenAI/Anthropic instrumentation (logfire/_internal/integrations/llm_providers/
# llm_provider.py): a streamed call's request span ends when the stream is returned, with no
# usage and no output; the stream's end is logged as "streaming response from ... took {duration}s"
# with the usage and the response. That record is the call; the opener is not.
_LF_DURATION = "duration"
_USAGE = (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS)


def logfire_stream(a: Any, span: Any) -> bool | None:
    """For a Logfire record: True for a streaming-response log with usage (a call), False
    for the request span that opened a stream (not a call), None otherwise."""
    kind = small(a[sc.LOGFIRE_SPAN_TYPE])
    has_usage = _USAGE[0] in a or _USAGE[1] in a
    if kind == "log":
        return True if has_usage and (_M0 in a or _M1 in a) else None
    if kind == "span" and (_M0 in a or _M1 in a) and not has_usage \
            and sc.GEN_AI_OUTPUT_MESSAGES not in a and not is_error_status(span.status):
        return False
    return None


def _is_llm_op(op: Any) -> bool:
    # Not a string (an array, say: unhashable, so no set test) names no known operation.
    return type(op) is not str or op not in NOT_LLM_OPERATIONS


def map_span(span: Any, service_name: str,
             position: tuple[int, int, int] | None = None) -> LlmSpan | None:
    """The LlmSpan for an OTLP span (a ``wire.Span``), or None when it is no LLM call.

    Raises SpanRejected when a mapped value is garbage.
    """
    a = span.attributes
    # Cheap exit for the common non-LLM span: none of the marker keys.
    if not (_M0 in a or _M1 in a or sc.OI_SPAN_KIND in a or _M2 in a or _M3 in a
            or sc.LF_OBSERVATION_TYPE in a):
        return None
    p = plan_for(a)
    stream = logfire_stream(a, span) if p.logfire else None
    if not (stream or is_llm_span(a, p)) or stream is False:
        return None
    trace_id, span_id = span.trace_id, span.span_id
    if len(trace_id) != 16 or len(span_id) != 8:
        raise SpanRejected("trace_id/span_id", "must be 16 and 8 bytes (OTLP span ids)")
    model = label(a, p.model) if p.model else None
    actual = label(a, p.actual) if p.actual else None
    if p.invocation:
        requested = requested_model(p.invocation, a[p.invocation])
        if requested and requested != model:
            model, actual = requested, model
    provider = provider_name(a, p.provider) if p.provider else None
    if p.service:
        service_name = label(a, p.service) or service_name
    else:
        service_name = resource_service(service_name)

    prompt, completion, cache_read, cache_write, reasoning, reported, ttft = usage.read(
        span, a, p, provider)
    latency, ttft = latencies(span, a, p.latency, p.ttft, p.ttft_unit, ttft)
    if stream and _LF_DURATION in a:  # the record is zero-length; it says how long it took
        latency = seconds_ms(a, _LF_DURATION)
    start, events = span.start_time_unix_nano, span.events

    finish = finish_reason(a, p.finish) if p.finish else None
    if (finish is None or finish == "stop") and shows_tool_call(a, p):
        finish = sc.FINISH_TOOL_CALLS  # a tool-call turn reported as stop (agents.toolturn)
    if p.status:
        status = small(a[p.status])
        if type(status) is not str or status not in _STATUSES:
            raise SpanRejected(p.status, f"must be one of {sorted(_STATUSES)}, "
                                         f"got {describe(status)}")
    elif p.error_type or is_error_status(span.status):
        status = sc.STATUS_ERROR
    else:
        status = sc.STATUS_SUCCESS
    method = small(a[p.method]) if p.method else None
    prompt_roles = completion_roles = None
    prompt_text = completion_text = None
    if events or p.prompt_texts.roles or p.completion_texts.roles:  # who wrote what
        prompt_text, prompt_roles = texts.read_roles(span, a, events, p.prompt_texts)
        completion_text, completion_roles = texts.read_roles(span, a, events,
                                                             p.completion_texts)
    elif p.texts_in_attrs:  # one role a side (ours, OpenLIT's flat text): the plain read
        prompt_text = texts.read(span, a, events, p.prompt_texts)
        completion_text = texts.read(span, a, events, p.completion_texts)
    # In LlmSpan's field order (checked at import, see _WRITTEN).
    values = (
        model or actual or "unknown",
        provider or provider_of_model(model or actual) or "unknown", service_name, prompt,
        completion, latency, ttft, finish, status,
        flag(a, p.pii) if p.pii else False,
        flag(a, p.injection) if p.injection else False,
        integer(a, p.retry, MAX_RETRIES) if p.retry else 0,
        models(a, p.attempted) if p.attempted else [],
        span_id.hex(), trace_id.hex(), span.parent_span_id.hex() or None,
        label(a, p.endpoint) if p.endpoint else None,
        label(a, p.session) if p.session else None,
        actual, label(a, p.error_type) if p.error_type else None,
        start or None, cache_read, cache_write,
        prompt_text, completion_text,
        method if type(method) is str and method in _METHODS else None,
        None, None,  # cost_usd_micro, price_version: the cost stage sets them
        flag(a, p.sampled) if p.sampled else False, reasoning, reported,
    )
    out = LlmSpan(*values, source="otlp", position=position)
    if prompt_roles or completion_roles:  # who wrote each part (otlp/textroles.py)
        out.text_roles = {"prompt": prompt_roles or [], "completion": completion_roles or []}
    if p.details or p.service_tier:  # rare: the price structures' counts
        for field, key in p.details:
            setattr(out, field, integer(a, key, MAX_TOKENS))
        if p.service_tier:
            out.service_tier = label(a, p.service_tier)
    return out


# map_span passes LlmSpan's leading fields positionally (a third of the cost of keywords,
# once per span): the order comes from the dataclass, and the values tuple above is
# checked against it here, at import, so a reorder in span.py fails loudly instead of
# putting tokens into latency.
_WRITTEN = (  # the order of map_span's ``values``
    "model", "provider", "service_name", "prompt_tokens", "completion_tokens",
    "latency_ms_total", "latency_ms_ttft", "finish_reason", "status", "pii_detected",
    "injection_attempt", "retry_count", "attempted_models", "span_id", "trace_id",
    "parent_span_id", "endpoint", "session_id", "actual_model", "error_type",
    "start_time_ns", "cache_read_tokens", "cache_write_tokens", "prompt_text",
    "completion_text", "token_count_method", "cost_usd_micro", "price_version", "is_sampled",
    "reasoning_tokens", "reported_cost_usd_micro",
)


def check_field_order(fields: tuple[str, ...]) -> None:
    """Raise ImportError unless ``fields`` (LlmSpan's, in order) start as map_span writes."""
    if fields[:len(_WRITTEN)] != _WRITTEN:
        raise ImportError("LlmSpan's field order changed; map_span's values must follow "
                          f"{fields[:len(_WRITTEN)]}")


check_field_order(tuple(f.name for f in dataclasses.fields(LlmSpan)))


__all__ = ["MAPPED_KEYS", "NOT_LLM_OPERATIONS", "Plan",
           "SpanRejected", "is_llm_span", "map_span", "plan_for"]
