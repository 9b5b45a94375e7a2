"""``@observe(service, endpoint)``: one span per call of a function or method.

Works on sync and async functions and on instance, class and static methods (wrapt
binds the descriptor, whichever side of ``@classmethod`` / ``@staticmethod`` the
decorator sits). The span carries service, endpoint, ``latency_ms_total``, ``status``
and ``is_sampled`` (the spec's 1% gate on the span id); its own span and trace ids
are the OTel ids. Nested decorated calls nest; concurrent asyncio tasks each get
their own span (contextvars). Generators are not streamed through: the span covers
creating the generator only (the spec advises against streaming use).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import wrapt

from llm_observe.instrument._guard import report
from llm_observe.instrument.spans import SpanHandle

F = TypeVar("F", bound=Callable[..., Any])


class ObservedCall(SpanHandle):
    """The span of one decorated call; adds ``is_sampled`` at the end."""

    def _end(self, exc: BaseException | None) -> None:
        try:
            from llm_observe.sampling import should_sample

            self.set_metadata("is_sampled", should_sample(self.span_id))
        except Exception:
            report("observe is_sampled")
        super()._end(exc)


def observe(service: str = "default", endpoint: str | None = None) -> Callable[[F], F]:
    """Decorate a function or method so each call is one span labelled service/endpoint."""

    def decorate(fn: F) -> F:
        target = getattr(fn, "__func__", fn)
        name = endpoint or getattr(target, "__qualname__", None) or repr(target)

        def handle() -> ObservedCall:
            return ObservedCall(None, None, service_name=service, endpoint=name, name=name)

        if inspect.iscoroutinefunction(target):
            @wrapt.decorator  # type: ignore[misc]
            async def async_wrapper(wrapped: Callable[..., Any], instance: Any,
                                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
                with handle():
                    return await wrapped(*args, **kwargs)

            return async_wrapper(fn)  # type: ignore[no-any-return,return-value]

        @wrapt.decorator  # type: ignore[misc]
        def sync_wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Any:
            with handle():
                return wrapped(*args, **kwargs)

        return sync_wrapper(fn)  # type: ignore[no-any-return,return-value]

    return decorate
