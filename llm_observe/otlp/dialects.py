"""Which OTLP spans are LLM calls, and how their attributes map onto :class:`LlmSpan`.

Five dialects share one table (full mapping and sources in docs/attribute-mapping.md):
our own ``llm_observe.*`` keys, the OTel GenAI semantic conventions (current and
deprecated keys), OpenLLMetry, OpenInference and OpenLIT. For each field the
keys are tried in order and the first present wins; our own keys come first
(the in-process library writes exact values there), then the GenAI semconv,
then each peer's. The keys do not clash between dialects, so one chain per
field serves every dialect with no dialect detection.

Cost: the attributes arrive as a upb map (:mod:`receiver.wire`), so each key
test is one C hash probe (~35 ns) and only values that are present are decoded
(by the cached readers of :mod:`receiver.values`).

A span whose mapped fields are garbage (a token count that is a string,
negative or 1e30; an end time before its start or past 2**63; a first token outside
the span; a model that is not a string or holds a control character) raises
:class:`SpanRejected`, naming the key: it is answered as rejected in the OTLP
partial success and never reaches the metrics (bounds: docs/receiver.md, "Bounds").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from llm_observe import semconv as sc
from llm_observe.otlp import texts
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
    small,
)
from llm_observe.otlp.wire import is_error_status
from llm_observe.span import MAX_RETRIES, MAX_TOKENS, LlmSpan

# --- which spans are LLM calls ---------------------------------------------------
# Any of these keys marks a span as an LLM call (OpenInference decides by its kind).
_MARKERS = (sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.SPAN_KIND_LLM,
            sc.LLM_REQUEST_MODEL)
_M0, _M1, _M2, _M3 = _MARKERS
# Operations that carry gen_ai.* keys but are not one model call: agent and tool
# spans wrap the LLM spans (counting them would count the calls twice). Values
# from GenAI semconv gen_ai.operation.name, OpenLIT and OpenLLMetry span kinds.
NOT_LLM_OPERATIONS = frozenset({
    "invoke_agent", "create_agent", "execute_tool", "invoke_workflow", "execute_task",
    "agent", "framework", "vectordb", "retrieval", "workflow", "task", "tool", "rerank",
    # Embedding calls are no chat/completion call (no completion, no TTFT); OpenInference's
    # EMBEDDING kind is left out the same way.
    "embeddings", "embedding",
})

# --- key chains: first present wins ---------------------------------------------
_MODEL = (sc.GEN_AI_REQUEST_MODEL, sc.LLM_REQUEST_MODEL, sc.OI_REQUEST_MODEL_NAME,
          sc.OI_MODEL_NAME)
_ACTUAL_MODEL = (sc.ACTUAL_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.LLM_RESPONSE_MODEL,
                 sc.OI_RESPONSE_MODEL_NAME)
_PROVIDER = (sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_SYSTEM, sc.OI_PROVIDER, sc.OI_SYSTEM,
             sc.LLM_VENDOR)
_PROMPT_TOKENS = (sc.PROMPT_TOKENS, sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS,
                  sc.OI_TOKEN_COUNT_PROMPT, sc.LLM_USAGE_PROMPT_TOKENS, sc.LLM_USAGE_INPUT_TOKENS)
_COMPLETION_TOKENS = (sc.COMPLETION_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS,
                      sc.GEN_AI_USAGE_COMPLETION_TOKENS, sc.OI_TOKEN_COUNT_COMPLETION,
                      sc.LLM_USAGE_COMPLETION_TOKENS, sc.LLM_USAGE_OUTPUT_TOKENS)
_TOTAL_TOKENS = (sc.GEN_AI_USAGE_TOTAL_TOKENS, sc.OI_TOKEN_COUNT_TOTAL, sc.LLM_USAGE_TOTAL_TOKENS)
_CACHE_READ = (sc.CACHE_READ_TOKENS, sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
               sc.OLLM_USAGE_CACHE_READ_INPUT_TOKENS, sc.OI_TOKEN_COUNT_CACHE_READ,
               sc.LLM_USAGE_CACHE_READ_INPUT_TOKENS)
_CACHE_WRITE = (sc.CACHE_WRITE_TOKENS, sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                sc.OLLM_USAGE_CACHE_CREATION_INPUT_TOKENS, sc.OI_TOKEN_COUNT_CACHE_WRITE,
                sc.LLM_USAGE_CACHE_CREATION_INPUT_TOKENS)
# TTFT in seconds: GenAI semconv, OpenLIT, and a key other tools use.
_TTFT_SECONDS = (sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, sc.OPENLIT_SERVER_TTFT,
                 sc.GEN_AI_RESPONSE_TIME_TO_FIRST_TOKEN)
_FINISH = (sc.FINISH_REASON, sc.GEN_AI_RESPONSE_FINISH_REASONS, "gen_ai.completion.0.finish_reason",
           sc.OLLM_RESPONSE_FINISH_REASON, sc.OLLM_GEN_AI_RESPONSE_FINISH_REASON,
           sc.OI_FINISH_REASON)
_SESSION = (sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID)
_METHODS = frozenset({sc.METHOD_EXACT, sc.METHOD_HEURISTIC})
_STATUSES = frozenset({sc.STATUS_SUCCESS, sc.STATUS_ERROR})

# Every attribute key map_span reads (besides the text families of otlp/texts.py).
MAPPED_KEYS = (*_MARKERS, *_MODEL, *_ACTUAL_MODEL, *_PROVIDER, *_PROMPT_TOKENS,
               *_COMPLETION_TOKENS, *_TOTAL_TOKENS, *_CACHE_READ, *_CACHE_WRITE, *_TTFT_SECONDS,
               *_FINISH, *_SESSION, sc.OI_SPAN_KIND, sc.GEN_AI_OPERATION_NAME, sc.OLLM_SPAN_KIND,
               sc.OLLM_REQUEST_TYPE, sc.OI_INVOCATION_PARAMETERS, sc.SERVICE, sc.SERVICE_NAME,
               sc.LATENCY_MS_TOTAL, sc.LATENCY_MS_TTFT, sc.STATUS, sc.ERROR_TYPE,
               sc.RETRY_COUNT, sc.ATTEMPTED_MODELS, sc.ENDPOINT, sc.TOKEN_COUNT_METHOD,
               sc.PII_DETECTED, sc.INJECTION_ATTEMPT, sc.IS_SAMPLED)

PLAN_MAX_KEYS = 128  # spans with more attributes are planned without the cache
PLAN_MAX_KEY_CHARS = 8192  # nor are key sets longer than this: the cache holds the keys
_PLAN_CACHE_SIZE = 1024


class Plan:
    """Which key feeds which field, for one set of attribute keys.

    Spans from one instrumentation share their key set, so the chains of
    ``in`` tests are resolved once per key set and cached; a span then reads
    only the keys that are present.
    """

    __slots__ = ("actual", "attempted", "cache_read", "cache_write", "completion",
                 "completion_texts", "endpoint", "error_type", "finish", "injection",
                 "invocation", "is_llm", "kind", "latency", "method", "model", "ops", "pii",
                 "prompt", "prompt_texts", "provider", "retry", "sampled", "service", "session",
                 "status", "texts_in_attrs", "total", "ttft_ms", "ttft_s")

    def __init__(self, attrs: Any) -> None:
        def first(keys: tuple[str, ...]) -> str | None:
            return next((k for k in keys if k in attrs), None)

        def opt(key: str) -> str | None:
            return key if key in attrs else None

        self.kind = opt(sc.OI_SPAN_KIND)
        self.is_llm = self.kind is not None or any(k in attrs for k in _MARKERS)
        self.ops = tuple(k for k in (sc.GEN_AI_OPERATION_NAME, sc.OLLM_SPAN_KIND,
                                     sc.OLLM_REQUEST_TYPE) if k in attrs)
        self.model, self.actual = first(_MODEL), first(_ACTUAL_MODEL)
        # OpenInference's llm.model_name is the model that answered; the requested
        # one is only in the invocation parameters (JSON).
        self.invocation = (opt(sc.OI_INVOCATION_PARAMETERS)
                           if self.model == sc.OI_MODEL_NAME and self.actual is None else None)
        # OpenLIT puts service.name on the span too (its application_name).
        self.provider, self.service = first(_PROVIDER), first((sc.SERVICE, sc.SERVICE_NAME))
        self.prompt, self.completion = first(_PROMPT_TOKENS), first(_COMPLETION_TOKENS)
        self.total = first(_TOTAL_TOKENS)
        self.cache_read, self.cache_write = first(_CACHE_READ), first(_CACHE_WRITE)
        self.latency, self.ttft_ms = opt(sc.LATENCY_MS_TOTAL), opt(sc.LATENCY_MS_TTFT)
        self.ttft_s = first(_TTFT_SECONDS)
        self.finish, self.session = first(_FINISH), first(_SESSION)
        self.status, self.error_type = opt(sc.STATUS), opt(sc.ERROR_TYPE)
        self.retry, self.attempted = opt(sc.RETRY_COUNT), opt(sc.ATTEMPTED_MODELS)
        self.endpoint, self.method = opt(sc.ENDPOINT), opt(sc.TOKEN_COUNT_METHOD)
        self.pii, self.injection = opt(sc.PII_DETECTED), opt(sc.INJECTION_ATTEMPT)
        self.sampled = opt(sc.IS_SAMPLED)
        self.prompt_texts = texts.candidates(attrs, texts.PROMPT)
        self.completion_texts = texts.candidates(attrs, texts.COMPLETION)
        # Whether a text family is an attribute; event families are read only when the
        # span has events.
        self.texts_in_attrs = any(f.kind != "event" for _, f in
                                  self.prompt_texts + self.completion_texts)


_plans: dict[frozenset[str], Plan] = {}


def plan_for(attrs: Any) -> Plan:
    """The (cached) Plan for a span's attribute keys."""
    if len(attrs) > PLAN_MAX_KEYS:
        return Plan(attrs)  # rare and unbounded in variety: not cached
    keys = frozenset(attrs)
    plan = _plans.get(keys)
    if plan is None:
        if sum(map(len, keys)) > PLAN_MAX_KEY_CHARS:
            return Plan(attrs)
        if len(_plans) >= _PLAN_CACHE_SIZE:
            _plans.clear()
        plan = _plans[keys] = Plan(attrs)
    return plan


def is_llm_span(attrs: Any, plan: Plan | None = None) -> bool:
    """True when the attributes describe one LLM call (see _MARKERS, NOT_LLM_OPERATIONS)."""
    plan = plan or plan_for(attrs)
    if plan.kind is not None:
        return bool(small(attrs[plan.kind]) == sc.OI_SPAN_KIND_LLM)
    if not plan.is_llm:
        return False
    ops = plan.ops
    if len(ops) == 1:  # the common case, without a generator
        return _is_llm_op(small(attrs[ops[0]]))
    return all(_is_llm_op(small(attrs[key])) for key in ops)


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
    if not (_M0 in a or _M1 in a or sc.OI_SPAN_KIND in a or _M2 in a or _M3 in a):
        return None
    p = plan_for(a)
    if not is_llm_span(a, p):
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

    prompt = integer(a, p.prompt, MAX_TOKENS) if p.prompt else None
    completion = integer(a, p.completion, MAX_TOKENS) if p.completion else None
    cache_read = integer(a, p.cache_read, MAX_TOKENS) if p.cache_read else 0
    cache_write = integer(a, p.cache_write, MAX_TOKENS) if p.cache_write else 0
    if completion is None and prompt is not None and p.total:
        total = integer(a, p.total, MAX_TOKENS)
        if total >= prompt:
            completion = total - prompt
    prompt = prompt or 0
    if cache_read + cache_write > prompt:
        # Anthropic-style report: cached tokens beside (not inside) the input count.
        prompt += cache_read + cache_write
        if prompt > MAX_TOKENS:
            raise SpanRejected("prompt tokens", f"with cached tokens exceed {MAX_TOKENS}")

    latency, ttft = latencies(span, a, p.latency, p.ttft_ms, p.ttft_s)
    start, events = span.start_time_unix_nano, span.events

    finish = finish_reason(a, p.finish) if p.finish else None
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
    # In LlmSpan's field order (checked at import, see _WRITTEN).
    values = (
        model or actual or "unknown", provider or "unknown", service_name, prompt,
        completion or 0, latency, ttft, finish, status,
        flag(a, p.pii) if p.pii else False,
        flag(a, p.injection) if p.injection else False,
        integer(a, p.retry, MAX_RETRIES) if p.retry else 0,
        models(a, p.attempted) if p.attempted else [],
        span_id.hex(), trace_id.hex(), span.parent_span_id.hex() or None,
        label(a, p.endpoint) if p.endpoint else None,
        label(a, p.session) if p.session else None,
        actual, label(a, p.error_type) if p.error_type else None,
        start or None, cache_read, cache_write,
        texts.read(span, a, events, p.prompt_texts) if p.texts_in_attrs or events else None,
        (texts.read(span, a, events, p.completion_texts)
         if p.texts_in_attrs or events else None),
        method if type(method) is str and method in _METHODS else None,
        None, None,  # cost_usd_micro, price_version: the cost stage sets them
        flag(a, p.sampled) if p.sampled else False,
    )
    return LlmSpan(*values, source="otlp", position=position)


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
)


def check_field_order(fields: tuple[str, ...]) -> None:
    """Raise ImportError unless ``fields`` (LlmSpan's, in order) start as map_span writes."""
    if fields[:len(_WRITTEN)] != _WRITTEN:
        raise ImportError("LlmSpan's field order changed; map_span's values must follow "
                          f"{fields[:len(_WRITTEN)]}")


check_field_order(tuple(f.name for f in dataclasses.fields(LlmSpan)))


__all__ = ["MAPPED_KEYS", "NOT_LLM_OPERATIONS", "Plan",
           "SpanRejected", "is_llm_span", "map_span", "plan_for"]
