"""Per-call context: the suppression key (one span per LLM call), scope and switches.

``ACTIVE`` holds the LLM call an automatic layer (SDK method, LiteLLM, LangChain,
HTTP catch-all) is recording in the current context. A layer below it — the OpenAI
SDK under LiteLLM, httpx under the OpenAI SDK — sees it set and records nothing
itself: it only reports the attempt (for retry_count / attempted_models). Being a
ContextVar, it is isolated per thread and per asyncio task.

``SCOPE`` carries service, endpoint and session from ``@observe`` / ``llm_span`` /
``session()`` so the automatic spans inside them are attributed the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context

from llm_observe import semconv

if TYPE_CHECKING:
    from llm_observe.instrument.record import LlmCall

ACTIVE: ContextVar[LlmCall | None] = ContextVar("llm_observe_active_call", default=None)


def run_active(call: LlmCall, wrapped: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
    """Run the wrapped call with ``call`` marked ACTIVE (so the layers below record nothing).

    If it raises, the span is ended with the error and the user's exception propagates
    unchanged (same object, bare ``raise``).
    """
    token = ACTIVE.set(call)
    try:
        return wrapped(*args, **kwargs)
    except BaseException as exc:
        call.finish(None, exc)
        raise
    finally:
        ACTIVE.reset(token)


async def run_active_async(call: LlmCall, wrapped: Callable[..., Any], args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
    """:func:`run_active` for a coroutine method: awaits it inside the same guard."""
    token = ACTIVE.set(call)
    try:
        return await wrapped(*args, **kwargs)
    except BaseException as exc:
        call.finish(None, exc)
        raise
    finally:
        ACTIVE.reset(token)

# OpenTelemetry's own "suppress instrumentation" context key (set by exporters and by
# opentelemetry-instrumentation's suppress_instrumentation()); honoured so our spans
# never trace the exporter's own traffic.
_OTEL_SUPPRESS = getattr(otel_context, "_SUPPRESS_INSTRUMENTATION_KEY", None)


def otel_suppressed() -> bool:
    """True when OpenTelemetry instrumentation is suppressed in the current context."""
    return _OTEL_SUPPRESS is not None and bool(otel_context.get_value(_OTEL_SUPPRESS))


@dataclass(frozen=True, slots=True)
class Scope:
    """Labels the automatic spans inherit from the code around them."""

    service: str | None = None
    endpoint: str | None = None
    session_id: str | None = None

    def attributes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.service is not None:
            out[semconv.SERVICE] = self.service
        if self.endpoint is not None:
            out[semconv.ENDPOINT] = self.endpoint
        if self.session_id is not None:
            out[semconv.SESSION_ID] = self.session_id
            out[semconv.GEN_AI_CONVERSATION_ID] = self.session_id
        return out


EMPTY_SCOPE = Scope()
SCOPE: ContextVar[Scope] = ContextVar("llm_observe_scope", default=EMPTY_SCOPE)


@contextmanager
def session(session_id: str) -> Iterator[None]:
    """Group every span started inside (automatic or manual) under ``session_id``."""
    token = SCOPE.set(replace(SCOPE.get(), session_id=session_id))
    try:
        yield
    finally:
        SCOPE.reset(token)


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in {"0", "false", "no", "off"}


_capture = {"content": _env_flag(semconv.ENV_CAPTURE_CONTENT, True)}


def set_capture_content(enabled: bool) -> None:
    """Turn prompt/completion text on spans on or off (default on; env
    LLM_OBSERVE_CAPTURE_CONTENT=false turns it off at start-up)."""
    _capture["content"] = bool(enabled)


def capture_content() -> bool:
    """Whether spans carry prompt and completion text."""
    return _capture["content"]
