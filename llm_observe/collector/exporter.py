"""The exporter contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from llm_observe.span import LlmSpan


@runtime_checkable
class Exporter(Protocol):
    """A sink for enriched spans.

    Contract:
    - ``export(batch)`` runs on the collector's event loop and must not block it:
      a slow backend sits behind the exporter's own bounded queue. It may keep
      the spans (the pipeline hands them over) but must not mutate them.
    - ``has_room(n)`` says whether ``n`` more spans fit right now; the pipeline
      asks every exporter before processing a batch and answers the sender with
      backpressure (RESOURCE_EXHAUSTED / 503) instead of dropping.
    - ``export`` raises :class:`llm_observe.errors.RetryableError` only when it
      could not take the batch; every span it does take is either delivered or
      counted as dropped, never silently lost.
    - ``shutdown(timeout)`` drains what it can within ``timeout`` seconds.
    """

    name: str

    def has_room(self, n: int) -> bool: ...

    async def export(self, batch: Sequence[LlmSpan]) -> None: ...

    async def shutdown(self, timeout: float) -> None: ...
