"""In-process instrumentation: auto-patching, decorator, manual and streaming spans.

Quick start::

    from llm_observe import init_auto_instrumentation
    init_auto_instrumentation()   # every OpenAI/Anthropic/LiteLLM/LangChain/HTTP LLM call -> a span

Spans go to the app's OpenTelemetry TracerProvider if it has one, else over OTLP gRPC
to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (default localhost:4317). See docs/instrumentation.md.
"""

from __future__ import annotations

from llm_observe.instrument import patching
from llm_observe.instrument.agents import OperationSpan, agent_span, tool_span
from llm_observe.instrument.client import instrument_client, uninstrument_clients
from llm_observe.instrument.context import capture_content, session, set_capture_content
from llm_observe.instrument.decorator import observe
from llm_observe.instrument.export import CountingBatchSpanProcessor
from llm_observe.instrument.patching import Patcher, TablePatcher, Wrap
from llm_observe.instrument.spans import (
    SpanHandle,
    current_span,
    llm_span,
    llm_span_with_tokens,
    llm_streaming_span,
)
from llm_observe.instrument.targets import BUILTIN
from llm_observe.instrument.tracing import get_tracer, use_tracer_provider

__all__ = [
    "CountingBatchSpanProcessor",
    "OperationSpan",
    "Patcher",
    "SpanHandle",
    "TablePatcher",
    "Wrap",
    "agent_span",
    "capture_content",
    "current_span",
    "init_auto_instrumentation",
    "instrument_client",
    "instrumentation_status",
    "is_instrumented",
    "llm_span",
    "llm_span_with_tokens",
    "llm_streaming_span",
    "observe",
    "register_patcher",
    "session",
    "set_capture_content",
    "tool_span",
    "uninstrument_all",
    "use_tracer_provider",
]

for _patcher in BUILTIN:
    patching.register_patcher(_patcher)


def init_auto_instrumentation() -> dict[str, str]:
    """Patch every supported LLM client globally (idempotent); returns each target's status
    ("patched", "waiting for import", "not installed", "failed")."""
    get_tracer()  # decide where spans go before the first call, not during it
    return patching.instrument_all()


def uninstrument_all() -> None:
    """Remove every patch (global and per-client); originals are restored identically."""
    patching.unpatch_all()
    uninstrument_clients()


def register_patcher(patcher: Patcher) -> None:
    """Add a custom patch target; patched at once if instrumentation is already on."""
    patching.register_patcher(patcher)


def instrumentation_status() -> dict[str, str]:
    """Each patch target's state; also what ``init_auto_instrumentation`` returns."""
    return patching.status()


def is_instrumented() -> bool:
    """True between ``init_auto_instrumentation()`` and ``uninstrument_all()``."""
    return patching.is_active()
