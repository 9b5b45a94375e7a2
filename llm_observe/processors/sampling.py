"""The deterministic 1% sampling gate (spec 4.9, ARCHITECTURE "Decisions").

A sender's ``is_sampled=true`` is honoured: the span stays sampled, is forwarded as sampled
and gets its prompt hash. It does not buy model time, though: the embedding processor embeds
sampled spans only within its budget (rate and queue bound), and spans that pass this gate
(``should_sample`` on the span id, whoever set the flag) go before sender-flagged ones.
A sender's ``is_sampled=false`` is not: the gate still samples 1% of every sender's spans.
"""

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
