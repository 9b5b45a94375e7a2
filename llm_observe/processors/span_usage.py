"""The price engine's :class:`Usage` of a span, when the span reports more than the
four counts every door carries (prompt, completion, cache read, cache write).

The detailed counts (reasoning, 1-hour cache writes, audio and image tokens, the service
tier) are read from the span fields of the same names, the ones :class:`LlmSpan` defines:
a span that reports none of them is priced on the cost step's four-count fast path.
"""

from __future__ import annotations

import operator

from llm_observe.pricing.usage import Usage
from llm_observe.span import LlmSpan

# Usage fields beyond the four counts, under their span field names.
DETAIL_FIELDS = ("cache_write_1h_tokens", "reasoning_tokens", "audio_input_tokens",
                 "audio_output_tokens", "image_input_tokens", "image_output_tokens",
                 "service_tier")
# Only the fields LlmSpan carries are read: no per-span attribute misses on the hot path.
SPAN_DETAIL_FIELDS = tuple(f for f in DETAIL_FIELDS if f in LlmSpan.__dataclass_fields__)


# one C call reads them all (a tuple even for one field): the usual span has none
_READ = operator.attrgetter(*SPAN_DETAIL_FIELDS, SPAN_DETAIL_FIELDS[0]) \
    if SPAN_DETAIL_FIELDS else None


def span_usage(span: LlmSpan) -> Usage | None:
    """The span's Usage, or None when it reports no detail (the four-count path prices it)."""
    if _READ is None:
        return None
    values = _READ(span)
    if not any(values):
        return None
    return Usage(prompt_tokens=span.prompt_tokens, completion_tokens=span.completion_tokens,
                 cache_read_tokens=span.cache_read_tokens,
                 cache_write_tokens=span.cache_write_tokens,
                 **dict(zip(SPAN_DETAIL_FIELDS, values, strict=False)))
