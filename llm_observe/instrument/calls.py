"""The sync and async shells every patched SDK method shares.

A ``CallSpec`` says how to read one SDK method (provider, request, response, stream
accumulator); ``sync_wrapper`` / ``async_wrapper`` turn it into a wrapt wrapper:

1. another automatic layer is already recording this call (``ACTIVE``) or OTel
   instrumentation is suppressed -> report the attempt, call through untouched;
2. otherwise start an ``LlmCall``, mark it ``ACTIVE`` while the SDK runs (so the
   httpx layer underneath stays silent), then finish it from the response — or hand
   it to a stream wrapper that finishes it when the stream ends.

The user's exception is re-raised with a bare ``raise``: same object, same traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llm_observe.instrument._guard import dont_throw, report
from llm_observe.instrument.context import ACTIVE, otel_suppressed, run_active, run_active_async
from llm_observe.instrument.extract._common import Accumulator, Outcome, Request
from llm_observe.instrument.record import LlmCall
from llm_observe.instrument.streams import AsyncStream, SyncStream
from llm_observe.providers import Detection

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class CallSpec:
    """How to record one SDK method."""

    provider: Callable[[Any], str]  # instance -> provider name (when the request names none)
    request: Callable[[Any, tuple[Any, ...], dict[str, Any]], Request]  # instance, args, kwargs
    response: Callable[[Any, Outcome], None]
    accumulator: Callable[[], Accumulator]
    operation: str = "chat"
    # Anthropic's messages.stream() always streams whatever its kwargs say.
    always_streams: bool = False
    # The response wire format (providers.Detection.wire), to read a raw response's body.
    wire: str = "openai"

    def with_provider(self, provider: str) -> CallSpec:
        return dataclasses.replace(self, provider=lambda _instance: provider)


@dont_throw
def begin(spec: CallSpec, instance: Any, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> tuple[LlmCall, bool] | None:
    """Start recording a call: None when this layer must not record (:func:`passthrough`)
    or, via the guard, when anything about the call is unreadable."""
    if passthrough(spec, kwargs):
        return None
    req = spec.request(instance, args, kwargs)
    call = LlmCall(req.provider or spec.provider(instance), req.model, spec.operation, req.prompt)
    call.origin = spec
    return call, req.streaming or spec.always_streams


# The SDKs' raw-response wrappers (openai and anthropic, sync and async, legacy and new).
RAW_RESPONSE_TYPES = frozenset({"LegacyAPIResponse", "APIResponse", "AsyncAPIResponse"})


def _unread(response: Any) -> bool:
    """An httpx/httpx2 response whose body has not been read (nor started) yet."""
    return (hasattr(response, "stream") and not hasattr(response, "_content")
            and not getattr(response, "is_stream_consumed", True))


def passthrough(spec: CallSpec, kwargs: dict[str, Any]) -> bool:
    """True when this layer must not record: an outer layer is, or OTel is suppressed."""
    active = ACTIVE.get()
    if active is not None:
        # The same method re-entered under its own span is a fallback attempt (LiteLLM's
        # chain calls acompletion per model); a different SDK below it is transport.
        model = kwargs.get("model")
        if active.origin is spec and isinstance(model, str):
            active.note_attempt(model)
        return True
    return otel_suppressed()


def end(spec: CallSpec, call: LlmCall, result: Any, streaming: bool, is_async: bool) -> Any:
    """Finish ``call`` from ``result``, or wrap a stream result; returns what the user gets."""
    try:
        # By class name: getattr on a pydantic answer for a missing attribute costs ~5 µs.
        raw = (getattr(result, "http_response", None)
               if type(result).__name__ in RAW_RESPONSE_TYPES else None)
        if raw is not None and _unread(raw):
            # with_streaming_response / a raw streamed response: the body is still on the
            # wire; read the usage from it as the user reads it, as the HTTP catch-all does.
            from llm_observe.instrument.targets.httpx import wrap_body

            wrap_body(call, Detection(call.provider or "unknown", call.model, spec.operation,
                                      streaming, spec.wire), raw, is_async)
            return result
        # with_raw_response with the body read: parse() caches, the user sees no change.
        answer = result.parse() if raw is not None else result
        if streaming and raw is None:
            if is_async and hasattr(result, "__aiter__"):
                return AsyncStream(result, call, spec.accumulator())
            if not is_async and hasattr(result, "__iter__"):
                return SyncStream(result, call, spec.accumulator())
        out = Outcome()
        spec.response(answer, out)
        call.finish(out)
    except Exception:
        report("calls.end")
        call.finish(None)
    return result


def sync_wrapper(spec: CallSpec) -> Wrapper:
    """A wrapt wrapper recording a sync SDK method."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        started = begin(spec, instance, args, kwargs)
        if started is None:
            return wrapped(*args, **kwargs)
        call, streaming = started
        result = run_active(call, wrapped, args, kwargs)
        return end(spec, call, result, streaming, False)

    return wrapper


def async_wrapper(spec: CallSpec) -> Wrapper:
    """A wrapt wrapper recording an async SDK method (returns the awaitable)."""

    async def run(wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                  call: LlmCall, streaming: bool) -> Any:
        result = await run_active_async(call, wrapped, args, kwargs)
        return end(spec, call, result, streaming, True)

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        started = begin(spec, instance, args, kwargs)
        if started is None:
            return wrapped(*args, **kwargs)
        return run(wrapped, args, kwargs, *started)

    return wrapper
