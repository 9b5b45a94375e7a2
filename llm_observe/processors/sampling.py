"""The deterministic 1% sampling gate (spec 4.9, ARCHITECTURE "Decisions")."""

from __future__ import annotations

from llm_observe.sampling import SAMPLING_MODULUS, should_sample
from llm_observe.span import LlmSpan

__all__ = ["SAMPLING_MODULUS", "SamplingProcessor", "should_sample"]

class SamplingProcessor:
    """Sets ``is_sampled``; spans already marked sampled by their sender stay sampled."""

    name = "sampling"
    blocking = False

    def process(self, batch: list[LlmSpan]) -> None:
        for span in batch:
            if not span.is_sampled:
                span.is_sampled = should_sample(span.span_id)
