"""llm-observe: observability for LLM calls.

The in-process public API lives here (spec 4.15): ``init_auto_instrumentation``,
``uninstrument_all``, ``instrument_client``, ``observe``, ``llm_span``,
``llm_span_with_tokens``, ``llm_streaming_span``, ``agent_span``, ``tool_span``,
``register_patcher``, ``count_tokens``
and friends. The instrumentation names load ``llm_observe.instrument`` (and the OTel
SDK) on first use, so ``import llm_observe`` and the CLI stay cheap. The collector
process is ``llm-observe serve`` (see ``llm_observe.cli``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "1.8.2"

from llm_observe.tokens import TokenCount, count_text_tokens, count_tokens

if TYPE_CHECKING:
    from llm_observe.instrument import (
        CountingBatchSpanProcessor,
        OperationSpan,
        Patcher,
        SpanHandle,
        TablePatcher,
        Wrap,
        agent_span,
        capture_content,
        current_span,
        init_auto_instrumentation,
        instrument_client,
        instrumentation_status,
        is_instrumented,
        llm_span,
        llm_span_with_tokens,
        llm_streaming_span,
        observe,
        register_patcher,
        session,
        set_capture_content,
        tool_span,
        uninstrument_all,
        use_tracer_provider,
    )

__all__ = [
    "CountingBatchSpanProcessor", "OperationSpan", "Patcher", "SpanHandle", "TablePatcher",
    "TokenCount", "Wrap", "__version__", "agent_span", "capture_content", "count_text_tokens",
    "count_tokens", "current_span",
    "init_auto_instrumentation", "instrument_client", "instrumentation_status",
    "is_instrumented", "llm_span", "llm_span_with_tokens", "llm_streaming_span", "observe",
    "register_patcher", "session", "set_capture_content", "tool_span", "uninstrument_all",
    "use_tracer_provider",
]
# Names served by llm_observe.instrument, loaded on first use.
_INSTRUMENT = frozenset(__all__) - {"TokenCount", "__version__", "count_text_tokens",
                                    "count_tokens"}


def __getattr__(name: str) -> Any:
    if name in _INSTRUMENT:
        from llm_observe import instrument

        value = getattr(instrument, name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'llm_observe' has no attribute {name!r}")
