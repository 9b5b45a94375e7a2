"""LlmCall: one LLM call being recorded, ended exactly once into one OTel span.

Automatic calls are *deferred*: attributes gather in a dict and the span is created
at the end, with the recorded start time and the parent context captured at the
start — one attribute pass through the SDK instead of two, and no context attach
on the hot path. Manual spans (``llm_span``, ``@observe``) are *eager*: the span
exists from the start so code inside can nest under it and read its ids.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from llm_observe import semconv
from llm_observe.instrument import fastspan
from llm_observe.instrument._guard import dont_throw
from llm_observe.instrument.context import EMPTY_SCOPE, SCOPE, capture_content
from llm_observe.instrument.extract._common import Outcome, flatten_with_roles
from llm_observe.instrument.tracing import get_tracer
from llm_observe.providers import semconv_provider

_UNSET = Status(StatusCode.UNSET)
_perf_ns = time.perf_counter_ns
_wall_ns = time.time_ns

# set_metadata keys of the spec (2.2) and the span record (2.1) -> attribute keys.
METADATA_KEYS: dict[str, str] = {
    "prompt_tokens": semconv.GEN_AI_USAGE_INPUT_TOKENS,
    "completion_tokens": semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
    "actual_model": semconv.GEN_AI_RESPONSE_MODEL,
    "session_id": semconv.SESSION_ID,
    "finish_reason": semconv.GEN_AI_RESPONSE_FINISH_REASONS,
    "retry_count": semconv.RETRY_COUNT,
    "attempted_models": semconv.ATTEMPTED_MODELS,
    "token_count_method": semconv.TOKEN_COUNT_METHOD,
    "latency_ms_ttft": semconv.LATENCY_MS_TTFT,
    "cache_read_tokens": semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    "cache_write_tokens": semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    "model": semconv.GEN_AI_REQUEST_MODEL,
    "provider": semconv.GEN_AI_PROVIDER_NAME,
    "service_name": semconv.SERVICE,
    "endpoint": semconv.ENDPOINT,
    "prompt": semconv.PROMPT_TEXT,
    "completion": semconv.COMPLETION_TEXT,
    "is_sampled": semconv.IS_SAMPLED,
}
_CONTENT_KEYS = frozenset({semconv.PROMPT_TEXT, semconv.COMPLETION_TEXT})
# Outcome.details -> attribute keys (read back by otlp/plan.py: DETAILS, REASONING)
DETAIL_KEYS: dict[str, str] = {
    "reasoning_tokens": semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    "cache_write_1h_tokens": semconv.CACHE_WRITE_1H_TOKENS,
    "audio_input_tokens": semconv.AUDIO_INPUT_TOKENS,
    "audio_output_tokens": semconv.AUDIO_OUTPUT_TOKENS,
    "service_tier": semconv.SERVICE_TIER,
}


def attribute_value(value: Any) -> Any:
    """A value OTel accepts: primitives and homogeneous lists as they are, else ``str``."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return str(value)


def type_name(error: BaseException | None) -> str:
    """``error.type`` per OTel: the exception's fully qualified class name."""
    cls = type(error)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


class LlmCall:
    """An LLM call in progress. Not thread-safe: one call belongs to one consumer."""

    __slots__ = ("attempts", "attrs", "done", "first_ns", "kind", "model", "models", "name",
                 "origin", "parent", "prompt", "provider", "span", "start_ns", "start_wall_ns")

    def __init__(self, provider: str | None, model: str | None, operation: str = "chat",
                 prompt: Any = None, *, eager: bool = False,
                 attributes: dict[str, Any] | None = None, name: str | None = None) -> None:
        """Start recording. ``provider=None`` makes a plain (non-LLM) span, as ``@observe``'s."""
        self.start_wall_ns = _wall_ns()
        self.start_ns = _perf_ns()
        self.provider = provider
        self.model = model
        self.prompt = prompt
        self.first_ns = 0
        self.attempts = 0
        self.models: list[str] = []
        self.done = False
        self.origin: object = None  # the layer that started it (fallback attempts re-enter it)
        self.parent = otel_context.get_current()
        self.name = name or (f"{operation} {model}" if model else operation)
        attrs: dict[str, Any] = {}
        if provider is not None:
            attrs[semconv.GEN_AI_OPERATION_NAME] = operation
            attrs[semconv.GEN_AI_PROVIDER_NAME] = semconv_provider(provider)
        if model:
            attrs[semconv.GEN_AI_REQUEST_MODEL] = model
        scope = SCOPE.get()
        if scope is not EMPTY_SCOPE:
            attrs.update(scope.attributes())
        if attributes:
            attrs.update(attributes)
        self.kind = SpanKind.CLIENT if provider is not None else SpanKind.INTERNAL
        self.span: Span | None = None
        if eager:
            self.span = get_tracer().start_span(
                self.name, context=self.parent, kind=self.kind, attributes=attrs,
                start_time=self.start_wall_ns)
            attrs = {}
        self.attrs = attrs

    # -- during the call ---------------------------------------------------------------
    def note_attempt(self, model: str | None = None, *, http: bool = False) -> None:
        """A layer below this one made an attempt (an HTTP send, or a fallback model call)."""
        if http:
            self.attempts += 1
        elif model and (not self.models or self.models[-1] != model):
            self.models.append(model)

    def first_chunk(self) -> None:
        if not self.first_ns:
            self.first_ns = _perf_ns()

    def set_metadata(self, key: str, value: Any) -> None:
        """Set a spec metadata key (2.2) or any other key (under ``llm_observe.metadata.``)."""
        name = METADATA_KEYS.get(key) or semconv.METADATA_PREFIX + key
        if name in _CONTENT_KEYS and not capture_content():
            return
        if name == semconv.GEN_AI_RESPONSE_FINISH_REASONS:
            self.attrs[semconv.FINISH_REASON] = semconv.normalize_finish_reason(str(value))
            value = (str(value),)
        elif name == semconv.SESSION_ID:
            self.attrs[semconv.GEN_AI_CONVERSATION_ID] = str(value)
        if name == semconv.PROMPT_TEXT:
            self.attrs.pop(semconv.PROMPT_ROLES, None)  # they described another text
        self.attrs[name] = attribute_value(value)

    def set_prompt(self, messages: Any) -> None:
        """The prompt text and who wrote each message of it (``llm_observe.prompt.roles``)."""
        text, roles = flatten_with_roles(messages)
        self.attrs[semconv.PROMPT_TEXT] = text
        if roles:
            self.attrs[semconv.PROMPT_ROLES] = roles
        else:
            self.attrs.pop(semconv.PROMPT_ROLES, None)

    # -- the end -----------------------------------------------------------------------
    def finish(self, outcome: Outcome | None = None, error: BaseException | None = None,
               error_type: str | None = None) -> None:
        """End the call: fill attributes from ``outcome``, mark ``error``, emit the span. Once.

        ``error_type`` marks a failure that raised nothing (an HTTP 5xx seen by the
        catch-all); ``error`` is the exception the user's code is about to receive.
        """
        if self.done:
            return
        self.done = True
        end_ns = _perf_ns()
        attrs = self.attrs
        attrs[semconv.LATENCY_MS_TOTAL] = (end_ns - self.start_ns) // 1_000_000
        if self.first_ns:
            ttft_ns = self.first_ns - self.start_ns
            attrs[semconv.LATENCY_MS_TTFT] = ttft_ns // 1_000_000
            attrs[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = ttft_ns / 1e9
        if outcome is not None:
            self._apply(outcome)
        self._retries()
        failed = error is not None or error_type is not None
        attrs[semconv.STATUS] = semconv.STATUS_ERROR if failed else semconv.STATUS_SUCCESS
        if failed:
            attrs[semconv.ERROR_TYPE] = error_type or type_name(error)
        self._emit(end_ns, error, error_type)

    @dont_throw
    def _apply(self, out: Outcome) -> None:
        attrs = self.attrs
        if out.response_model:
            attrs[semconv.GEN_AI_RESPONSE_MODEL] = out.response_model
        if out.response_id:
            attrs[semconv.GEN_AI_RESPONSE_ID] = out.response_id
        if out.finish_reason:
            # GenAI semconv keeps the provider's value; ours is the spec's vocabulary
            # (Anthropic stop_reason end_turn -> stop, spec 2.2).
            attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = (out.finish_reason,)
            attrs[semconv.FINISH_REASON] = semconv.normalize_finish_reason(out.finish_reason)
        text = out.text if out.text_parts else ""
        if capture_content():
            if self.prompt is not None:
                self.set_prompt(self.prompt)
            if text:
                attrs[semconv.COMPLETION_TEXT] = text
        prompt_tokens, completion_tokens = out.prompt_tokens, out.completion_tokens
        if prompt_tokens is None or completion_tokens is None:
            # The provider sent no usage (a stream without include_usage, a cut stream):
            # count locally rather than report zero tokens and zero cost.
            prompt_tokens, completion_tokens = self._count(out, text)
        if prompt_tokens is not None:
            attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] = prompt_tokens
        if completion_tokens is not None:
            attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = completion_tokens
        if out.cache_read:
            attrs[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = out.cache_read
        if out.cache_write:
            attrs[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = out.cache_write
        if out.details:
            for name, value in out.details.items():
                attrs[DETAIL_KEYS[name]] = value if name == "service_tier" else int(value)

    def _count(self, out: Outcome, text: str) -> tuple[int | None, int | None]:
        from llm_observe.instrument.counting import count_completion, count_prompt

        model = out.response_model or self.model or ""
        prompt_tokens, completion_tokens = out.prompt_tokens, out.completion_tokens
        methods = []
        if prompt_tokens is None and self.prompt is not None \
                and semconv.GEN_AI_USAGE_INPUT_TOKENS not in self.attrs:
            prompt_tokens, method = count_prompt(self.prompt, model)
            methods.append(method)
        if completion_tokens is None and semconv.GEN_AI_USAGE_OUTPUT_TOKENS not in self.attrs:
            completion_tokens, method = count_completion(text, model)
            methods.append(method)
        if methods:
            # One label per span: heuristic if any part was estimated.
            self.attrs[semconv.TOKEN_COUNT_METHOD] = (
                semconv.METHOD_HEURISTIC if semconv.METHOD_HEURISTIC in methods
                else semconv.METHOD_EXACT)
        return prompt_tokens, completion_tokens

    def _retries(self) -> None:
        retries = max(self.attempts, len(self.models)) - 1
        if retries > 0 and semconv.RETRY_COUNT not in self.attrs:
            self.attrs[semconv.RETRY_COUNT] = retries
        if len(self.models) > 1 and semconv.ATTEMPTED_MODELS not in self.attrs:
            self.attrs[semconv.ATTEMPTED_MODELS] = tuple(self.models)

    @dont_throw
    def _emit(self, end_ns: int, error: BaseException | None, error_type: str | None) -> None:
        span = self.span
        if span is None and error is None:
            status = Status(StatusCode.ERROR, error_type) if error_type else _UNSET
            if fastspan.emit(get_tracer(), self.name, self.kind, self.parent, self.attrs,
                             self.start_wall_ns, self.start_wall_ns + (end_ns - self.start_ns),
                             status):
                return
        if span is None:
            span = get_tracer().start_span(
                self.name, context=self.parent, kind=self.kind, attributes=self.attrs,
                start_time=self.start_wall_ns)
        elif self.attrs:
            span.set_attributes(self.attrs)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:512]))
            span.record_exception(error)
        elif error_type is not None:
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end_time=self.start_wall_ns + (end_ns - self.start_ns))
