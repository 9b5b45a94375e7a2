"""Manual spans: ``llm_span``, ``llm_span_with_tokens``, ``llm_streaming_span``.

Each returns a ``SpanHandle``: a sync *and* async context manager whose span exists
from ``__enter__`` (so spans and automatic LLM spans started inside nest under it),
with ``set_metadata(key, value)``. Leaving the block ends the span: ``success``, or
``error`` with the error type when the block raised — the exception then propagates
unchanged (the handle never swallows it).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from llm_observe.instrument._guard import report
from llm_observe.instrument.context import SCOPE, Scope, capture_content
from llm_observe.instrument.extract import anthropic, openai
from llm_observe.instrument.extract._common import Outcome, get
from llm_observe.instrument.record import LlmCall
from llm_observe.instrument.streams import AsyncStream, SyncStream

CURRENT: ContextVar[SpanHandle | None] = ContextVar("llm_observe_current_span", default=None)
_ANTHROPIC_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta",
                               "content_block_stop", "message_delta", "message_stop", "ping"})


def current_span() -> SpanHandle | None:
    """The innermost ``llm_span`` / ``@observe`` span of this context, if any."""
    return CURRENT.get()


class SpanHandle:
    """A manual span: context manager (sync and async) with ``set_metadata``."""

    def __init__(self, model: str | None, provider: str | None, *, service_name: str | None,
                 endpoint: str | None = None, name: str | None = None, prompt: Any = None,
                 metadata: dict[str, Any] | None = None) -> None:
        self._args = (model, provider, name, prompt)
        self._scope = (service_name, endpoint, (metadata or {}).get("session_id"))
        self._metadata = dict(metadata or {})
        self._call: LlmCall | None = None
        self._tokens: tuple[Token[Scope], Token[SpanHandle | None], object] | None = None

    # -- lifecycle -------------------------------------------------------------------
    def _start(self) -> LlmCall:
        if self._call is None:
            model, provider, name, prompt = self._args
            service, endpoint, _session = self._scope  # the session arrives as metadata
            attrs: dict[str, Any] = Scope(service=service, endpoint=endpoint).attributes()
            self._call = LlmCall(provider, model, prompt=prompt, eager=True, attributes=attrs,
                                 name=name)
            for key, value in self._metadata.items():
                self._call.set_metadata(key, value)
            if prompt is not None and capture_content():
                self._call.set_prompt(prompt)
            self._on_start(self._call)
        return self._call

    def _on_start(self, call: LlmCall) -> None:
        """Hook for subclasses (token pre-counting)."""

    def __enter__(self) -> SpanHandle:
        call = self._start()
        service, endpoint, session = self._scope
        outer = SCOPE.get()
        scope = Scope(service or outer.service, endpoint or outer.endpoint,
                      session or outer.session_id)
        assert call.span is not None
        ctx_token = otel_context.attach(trace.set_span_in_context(call.span, call.parent))
        self._tokens = (SCOPE.set(scope), CURRENT.set(self), ctx_token)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        tokens, self._tokens = self._tokens, None
        if tokens is not None:
            try:
                SCOPE.reset(tokens[0])
                CURRENT.reset(tokens[1])
                otel_context.detach(tokens[2])  # type: ignore[arg-type]
            except Exception:  # exited in another context than entered: nothing to undo
                report("span handle exit")
        self._end(exc)

    def _end(self, exc: BaseException | None) -> None:
        if self._call is not None:
            self._call.finish(None, exc if not isinstance(exc, GeneratorExit) else None)

    async def __aenter__(self) -> SpanHandle:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- what the user touches -------------------------------------------------------------
    def set_metadata(self, key: str, value: Any) -> None:
        """Record ``key`` (spec 2.2 keys map to their attribute; others go under
        ``llm_observe.metadata.``). Never raises."""
        try:
            self._start().set_metadata(key, value)
        except Exception:
            report("set_metadata")

    @property
    def span(self) -> trace.Span:
        """The underlying OpenTelemetry span."""
        span = self._start().span
        assert span is not None
        return span

    @property
    def span_id(self) -> str:
        return format(self.span.get_span_context().span_id, "016x")

    @property
    def trace_id(self) -> str:
        return format(self.span.get_span_context().trace_id, "032x")


class TokenSpanHandle(SpanHandle):
    """``llm_span_with_tokens``: counts the prompt locally before the call; the count is
    readable in the block (``prompt_tokens``, ``token_count_method``), e.g. to check a
    context window before sending."""

    prompt_tokens: int | None = None
    token_count_method: str | None = None

    def _on_start(self, call: LlmCall) -> None:
        from llm_observe.instrument.counting import count_prompt

        model, _provider, _name, prompt = self._args
        try:
            tokens, method = count_prompt(prompt, model or "")
        except Exception:
            report("llm_span_with_tokens count")
            return
        self.prompt_tokens, self.token_count_method = tokens, method
        call.set_metadata("prompt_tokens", tokens)
        call.set_metadata("token_count_method", method)


class AutoAccumulator:
    """Accumulates text chunks, OpenAI chunks or Anthropic events, whichever arrives."""

    __slots__ = ("_inner", "outcome")

    def __init__(self) -> None:
        self.outcome = Outcome()
        self._inner: Any = None

    def add(self, item: Any) -> None:
        if isinstance(item, (str, bytes)):
            text = item.decode("utf-8", "replace") if isinstance(item, bytes) else item
            self.outcome.text_parts.append(text)
            return
        inner = self._inner
        if inner is None:
            if get(item, "choices") is not None:
                inner = openai.ChunkAccumulator()
            elif get(item, "type") in _ANTHROPIC_EVENTS:
                inner = anthropic.EventAccumulator()
            else:
                return
            inner.outcome = self.outcome
            self._inner = inner
        inner.add(item)


class StreamingSpanHandle(SpanHandle):
    """``llm_streaming_span``: ``wrap(stream)`` returns the stream, observed."""

    _wrapped: SyncStream | AsyncStream | None = None

    def wrap(self, stream: Any) -> Any:
        """Observe a generator / iterator / async iterator; the span ends with the stream."""
        call = self._start()
        shell = AsyncStream if hasattr(stream, "__aiter__") else SyncStream
        self._wrapped = shell(stream, call, AutoAccumulator())
        return self._wrapped

    def _end(self, exc: BaseException | None) -> None:
        wrapped = self._wrapped
        # A stream handed out of the block un-iterated (e.g. to a streaming HTTP response)
        # ends the span itself; one that was being read when the block ended counts as closed.
        if exc is None and wrapped is not None and not wrapped._self_started:
            return
        if wrapped is not None:
            wrapped._self_finish(exc if not isinstance(exc, GeneratorExit) else None)
        else:
            super()._end(exc)


def llm_span(model: str, provider: str, service_name: str = "default",
             **metadata: Any) -> SpanHandle:
    """A manual LLM span (sync or async context manager); metadata keys as in set_metadata."""
    return SpanHandle(model, provider, service_name=service_name, metadata=metadata)


def llm_span_with_tokens(model: str, provider: str, prompt: str | list[dict[str, Any]],
                         service_name: str = "default", **metadata: Any) -> TokenSpanHandle:
    """An ``llm_span`` that counts ``prompt`` first: sets prompt_tokens and token_count_method."""
    return TokenSpanHandle(model, provider, service_name=service_name, prompt=prompt,
                           metadata=metadata)


def llm_streaming_span(model: str, provider: str, service_name: str = "default",
                       prompt: Any = None, **metadata: Any) -> StreamingSpanHandle:
    """An ``llm_span`` for a streamed answer: ``span.wrap(stream)`` records TTFT, text and
    tokens (provider usage chunk if any, else counted locally), ending with the stream."""
    return StreamingSpanHandle(model, provider, service_name=service_name, prompt=prompt,
                               metadata=metadata)
