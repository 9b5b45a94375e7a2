"""``agent_span(name)`` and ``tool_span(name)``: semconv agent-run and tool-call spans.

Each is a sync *and* async context manager, and a decorator (a fresh span per call, sync
or async functions), emitting the span the OTel GenAI conventions describe
(semantic-conventions-genai ``model/gen-ai/spans.yaml``): named ``invoke_agent {name}`` /
``execute_tool {name}``, kind INTERNAL (an agent or tool in this process), with
``gen_ai.operation.name``, ``gen_ai.agent.name`` / ``gen_ai.tool.name`` and
``gen_ai.tool.type``; optional ``gen_ai.conversation.id`` / ``gen_ai.tool.call.id`` (span
attributes only: the collector never makes them labels). Spans and ``llm_span``\\ s
started inside nest under it. When the block raises, the span ends with an error status
and ``error.type`` (the exception's qualified class name, as on LLM spans) and the
exception propagates unchanged. Our own failures are reported and swallowed
(``_guard``): the host app never sees them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import wrapt
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from llm_observe.instrument._guard import report
from llm_observe.instrument.record import type_name
from llm_observe.instrument.tracing import get_tracer

F = TypeVar("F", bound=Callable[..., Any])
MAX_NAME_CHARS = 256  # the collector cuts names there too (agents.classify)


class OperationSpan:
    """One agent run or tool call: context manager (sync and async) and decorator."""

    def __init__(self, operation: str, name_key: str, name: str,
                 attributes: dict[str, Any]) -> None:
        self._operation, self._name_key = operation, name_key
        self._name = str(name)[:MAX_NAME_CHARS] if name else ""
        self._attributes = {k: v for k, v in attributes.items() if v is not None}
        self._span: trace.Span | None = None
        self._token: object = None

    def __enter__(self) -> OperationSpan:
        try:
            attrs = {"gen_ai.operation.name": self._operation, **self._attributes}
            if self._name:
                attrs[self._name_key] = self._name
            span_name = f"{self._operation} {self._name}".strip()
            self._span = get_tracer().start_span(span_name, kind=SpanKind.INTERNAL,
                                                 attributes=attrs)
            self._token = otel_context.attach(trace.set_span_in_context(self._span))
        except Exception:
            report(f"{self._operation} span start")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        span, token = self._span, self._token
        self._span = self._token = None
        try:
            if token is not None:
                otel_context.detach(token)  # type: ignore[arg-type]
        except Exception:  # exited in another context than entered: nothing to undo
            report(f"{self._operation} span exit")
        if span is None:
            return
        try:
            if exc is not None and not isinstance(exc, GeneratorExit):
                span.set_attribute("error.type", type_name(exc))
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            span.end()
        except Exception:
            report(f"{self._operation} span end")

    async def __aenter__(self) -> OperationSpan:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.__exit__(exc_type, exc, tb)

    @property
    def span(self) -> trace.Span | None:
        """The underlying OpenTelemetry span while the block runs (None outside)."""
        return self._span

    def set_attribute(self, key: str, value: Any) -> None:
        """Add an attribute to the span (e.g. ``gen_ai.tool.call.result``). Never raises."""
        try:
            if self._span is not None:
                self._span.set_attribute(key, value)
        except Exception:
            report(f"{self._operation} set_attribute")

    def __call__(self, fn: F) -> F:
        """Decorator form: each call of ``fn`` is a span of its own, like this one."""
        make = self._fresh
        if inspect.iscoroutinefunction(getattr(fn, "__func__", fn)):
            @wrapt.decorator  # type: ignore[misc]
            async def async_wrapper(wrapped: Callable[..., Any], instance: Any,
                                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
                with make():
                    return await wrapped(*args, **kwargs)

            return async_wrapper(fn)  # type: ignore[no-any-return,return-value]

        @wrapt.decorator  # type: ignore[misc]
        def sync_wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Any:
            with make():
                return wrapped(*args, **kwargs)

        return sync_wrapper(fn)  # type: ignore[no-any-return,return-value]

    def _fresh(self) -> OperationSpan:
        return OperationSpan(self._operation, self._name_key, self._name, self._attributes)


def agent_span(name: str, *, conversation_id: str | None = None,
               agent_id: str | None = None) -> OperationSpan:
    """An ``invoke_agent`` span for agent ``name`` (``with agent_span("planner"):`` or
    ``@agent_span("planner")``)."""
    return OperationSpan("invoke_agent", "gen_ai.agent.name", name,
                         {"gen_ai.conversation.id": conversation_id,
                          "gen_ai.agent.id": agent_id})


def tool_span(name: str, *, tool_type: str = "function",
              call_id: str | None = None) -> OperationSpan:
    """An ``execute_tool`` span for tool ``name`` (``with tool_span("search"):`` or
    ``@tool_span("search")``); ``tool_type`` is semconv's function / extension / datastore."""
    return OperationSpan("execute_tool", "gen_ai.tool.name", name,
                         {"gen_ai.tool.type": tool_type, "gen_ai.tool.call.id": call_id})
